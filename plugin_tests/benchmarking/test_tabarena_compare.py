"""``examples/benchmarks/tabarena_compare.py`` on a ``results.csv`` made up here: which tables enter the
leaderboard, who is best where, and what the report says without the raw predictions."""

import json

import pandas as pd
import pytest

pytest.importorskip("bencheval")

import tabarena_compare as tc  # noqa: E402

TABLES = {"t_binary": ("binary", "roc_auc"), "t_multi": ("multiclass", "log_loss"), "t_reg": ("regression", "rmse")}


def _results(errors: dict[str, dict[str, float | None]]) -> pd.DataFrame:
    """``results.csv`` rows as ``tabarena_run.py`` writes them; ``None`` is a missing fit."""
    rows = []
    for table, by_method in errors.items():
        problem_type, metric = TABLES[table]
        for method, err in by_method.items():
            rows.append({"table": table, "method": method, "config": f"{method}_c1_default_BAG_L1",
                         "dataset": f"{table}-0", "task": problem_type, "problem_type": problem_type,
                         "metric": metric, "train_rows": 100, "test_rows": 25,
                         "status": "missing" if err is None else "ok", "test_error": err,
                         "val_error": None if err is None else err * 1.1,
                         "fit_s": None if err is None else 10.0, "predict_s": None if err is None else 0.1})
    return pd.DataFrame(rows)


def _errors(best: str, base: float, missing: str | None = None) -> dict[str, float | None]:
    """The seven methods' errors on one table: ``best`` lowest, the others distinct and above it."""
    errs = {m: base * (1.2 + 0.1 * i) for i, m in enumerate(tc.METHODS)}
    errs[best] = base
    if missing is not None:
        errs[missing] = None
    return errs


@pytest.fixture
def run_dir(tmp_path):
    results = _results({"t_binary": _errors("MAYA", 0.05), "t_multi": _errors("MAYA", 0.3),
                        "t_reg": _errors("CatBoost", 2.0, missing="TabSwift")})
    results.to_csv(tmp_path / "results.csv", index=False)
    (tmp_path / "settings.json").write_text(json.dumps({"settings": {"seed": 0, "time_limit": 300.0},
                                                        "code": {"commit": "abc1234"}}))
    return tmp_path


def test_a_table_with_a_missing_fit_is_left_out_and_named(run_dir, capsys):
    tc.main(["--out", str(run_dir), "--elo-rounds", "5"])
    report = (run_dir / "results.md").read_text()
    assert "Left out of the leaderboard (a method has no result there): t_reg." in report
    board = pd.read_csv(run_dir / "leaderboard.csv", index_col=0)
    assert set(board.index) == set(tc.METHODS)
    # MAYA is best on both tables that enter; CatBoost's win on t_reg does not count
    assert board.loc["MAYA", "rank=1_count"] == 2
    assert board.loc["CatBoost", "rank=1_count"] == 0
    assert board.loc["MAYA", "winrate"] == 1.0
    summary = json.loads((run_dir / "compare.json").read_text())
    assert summary["tables"] == ["t_binary", "t_multi"] and summary["excluded"] == ["t_reg"]


def test_without_the_raw_predictions_the_ensembles_are_said_to_be_missing(run_dir, capsys):
    tc.main(["--out", str(run_dir), "--elo-rounds", "5"])
    report = (run_dir / "results.md").read_text()
    assert "Not simulated: no EvaluationRepository" in report
    assert not (run_dir / "ensembles.csv").exists()
    assert json.loads((run_dir / "compare.json").read_text())["ensembles"] is None


def test_the_best_method_is_bold_in_the_per_table_errors(run_dir, capsys):
    tc.main(["--out", str(run_dir), "--elo-rounds", "5"])
    report = (run_dir / "results.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| t_binary"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    header = next(line for line in report.splitlines() if line.startswith("| table"))
    names = [c.strip() for c in header.strip("|").split("|")]
    bold = [names[i] for i, c in enumerate(cells) if c.startswith("**")]
    assert bold == ["MAYA"], row


def test_fillna_keeps_the_table_and_flags_the_imputed_pair(run_dir, capsys):
    tc.main(["--out", str(run_dir), "--elo-rounds", "5", "--fillna", "CatBoost"])
    summary = json.loads((run_dir / "compare.json").read_text())
    assert summary["tables"] == ["t_binary", "t_multi", "t_reg"]
    assert summary["imputed"] == ["t_reg/TabSwift"]
    assert "Imputed with CatBoost's result" in (run_dir / "results.md").read_text()


def test_the_ensembles_that_measure_what_one_model_adds_leave_out_exactly_that_model():
    ens = tc.ENSEMBLES
    assert set(ens["all seven"]) == set(tc.METHODS) and len(tc.METHODS) == 7
    for name, dropped in (("all without MAYA", "MAYA"), ("all without TabSwift", "TabSwift")):
        assert set(ens["all seven"]) - set(ens[name]) == {dropped}
    assert set(ens["trees + MAYA + TabSwift"]) - set(ens["trees"]) == {"MAYA", "TabSwift"}
    assert set(ens["trees + TabM + RealMLP"]) - set(ens["trees"]) == {"TabM", "RealMLP"}


def test_no_complete_table_is_an_error_naming_the_way_out(tmp_path):
    _results({"t_reg": _errors("CatBoost", 2.0, missing="MAYA"),
              "t_binary": _errors("CatBoost", 0.05, missing="TabSwift")}).to_csv(tmp_path / "results.csv", index=False)
    with pytest.raises(SystemExit, match="no table has a result of every method"):
        tc.main(["--out", str(tmp_path), "--elo-rounds", "5"])


def _earlier_ensembles(out, tables, ensemble_size=40, package_commit=None):
    """An ``ensembles.csv`` as an earlier call wrote it (``package_commit`` None: the fixture's run names no
    package): on each table the trees are worst, "all without TabSwift" (the last set) best."""
    rows = []
    for table in tables:
        problem_type, metric = TABLES[table]
        for i, (name, members) in enumerate(tc.ENSEMBLES.items()):
            rows.append({"table": table, "ensemble": name, "members": " + ".join(members), "complete": True,
                         "metric": metric, "problem_type": problem_type, "test_error": 0.5 - 0.05 * i,
                         "val_error": 0.5 - 0.05 * i, "fit_s": 10.0, "predict_s": 0.1,
                         "weights": json.dumps({m: round(1 / len(members), 4) for m in members}),
                         "ensemble_size": ensemble_size, "package_commit": package_commit})
    pd.DataFrame(rows).to_csv(out / "ensembles.csv", index=False)


def test_ensembles_of_tables_without_predictions_on_disk_are_kept_and_named(run_dir, capsys):
    _earlier_ensembles(run_dir, ["t_binary", "t_multi"])
    tc.main(["--out", str(run_dir), "--elo-rounds", "5"])
    summary = json.loads((run_dir / "compare.json").read_text())
    assert summary["ensemble_sources"] == {"simulated": [], "kept": ["t_binary", "t_multi"]}
    assert summary["ensemble_tables"] == ["t_binary", "t_multi"]
    board = pd.read_csv(run_dir / "ensemble_leaderboard.csv", index_col=0)
    assert board.loc["trees", "relative_error"] == pytest.approx(1.0)
    assert board.loc["all without TabSwift", "rank=1_count"] == 2  # the lowest error of the made-up rows
    report = (run_dir / "results.md").read_text()
    assert "kept from the earlier `ensembles.csv`" in report and "t_binary, t_multi" in report
    # written back whole, with the columns that decide what a later call keeps
    again = pd.read_csv(run_dir / "ensembles.csv")
    assert set(again["ensemble_size"]) == {40}
    assert len(again) == 2 * len(tc.ENSEMBLES) and set(again["table"]) == {"t_binary", "t_multi"}


def test_earlier_ensembles_of_another_ensemble_size_are_not_kept(run_dir, capsys):
    _earlier_ensembles(run_dir, ["t_binary", "t_multi"], ensemble_size=25)
    tc.main(["--out", str(run_dir), "--elo-rounds", "5"])
    assert json.loads((run_dir / "compare.json").read_text())["ensembles"] is None
    assert "Not simulated: no EvaluationRepository" in (run_dir / "results.md").read_text()


def test_what_each_addition_changes_counts_tables_and_averages_the_relative_error():
    # errors per member set on two tables; "all seven" ties "all without TabSwift" on t_multi (to float noise)
    errors = {"t_binary": {"trees": 0.2, "trees + MAYA + TabSwift": 0.1, "trees + TabM + RealMLP": 0.3,
                           "all seven": 0.1, "all without MAYA": 0.3, "all without TabSwift": 0.2},
              "t_multi": {"trees": 1.0, "trees + MAYA + TabSwift": 1.5, "trees + TabM + RealMLP": 0.5,
                          "all seven": 0.5, "all without MAYA": 0.4, "all without TabSwift": 0.5 + 1e-13}}
    ens = pd.DataFrame([{"table": t, "ensemble": e, "test_error": v} for t, by in errors.items()
                        for e, v in by.items()])
    added = tc.additions(ens, ["t_binary", "t_multi"]).set_index("addition")
    row = added.loc["MAYA + TabSwift to the trees"]
    assert row["rel_error_before"] == pytest.approx(1.0)
    assert row["rel_error_after"] == pytest.approx((0.5 + 1.5) / 2)
    assert (row["better"], row["worse"], row["same"]) == (1, 1, 0)
    row = added.loc["TabSwift to the other six"]
    assert row["rel_error_before"] == pytest.approx((1.0 + 0.5) / 2)
    assert (row["better"], row["worse"], row["same"]) == (1, 0, 1)
    row = added.loc["MAYA to the other six"]
    assert (row["better"], row["worse"], row["same"]) == (1, 1, 0)


def test_kept_rows_are_checked_by_the_package_that_made_their_results(run_dir, capsys):
    # rows built from results of another package than results.csv now holds for their tables
    pd.read_csv(run_dir / "results.csv").assign(package_commit="new0000").to_csv(run_dir / "results.csv", index=False)
    _earlier_ensembles(run_dir, ["t_binary", "t_multi"], package_commit="old0000")
    tc.main(["--out", str(run_dir), "--elo-rounds", "5"])
    assert json.loads((run_dir / "compare.json").read_text())["ensembles"] is None
    _earlier_ensembles(run_dir, ["t_binary", "t_multi"], package_commit="new0000")
    tc.main(["--out", str(run_dir), "--elo-rounds", "5"])
    assert json.loads((run_dir / "compare.json").read_text())["ensemble_sources"]["kept"] == ["t_binary", "t_multi"]


def test_earlier_ensembles_that_do_not_say_what_made_them_are_not_kept(run_dir, capsys):
    _earlier_ensembles(run_dir, ["t_binary", "t_multi"])
    pd.read_csv(run_dir / "ensembles.csv").drop(columns=["ensemble_size", "package_commit"]).to_csv(
        run_dir / "ensembles.csv", index=False)
    tc.main(["--out", str(run_dir), "--elo-rounds", "5"])
    assert json.loads((run_dir / "compare.json").read_text())["ensembles"] is None
