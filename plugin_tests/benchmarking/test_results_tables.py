"""Every results table in README.md and docs/ is the table its raw results file gives
(``python examples/benchmarks/results_tables.py`` rebuilds them; ``--check`` is this test)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchlib import tables
from benchlib.tables import common, ensemble_benchmark, experiments
from benchlib.repo import find_repo

REPO = Path(__file__).resolve().parents[2]


def _docs():
    return [p for p in tables.doc_paths() if "<!-- table:" in p.read_text()]


def test_docs_hold_marked_tables():
    names = {m.group(2) for p in _docs() for m in tables.REGION.finditer(p.read_text())}
    assert {"maya-multiclass", "quick", "tabswift-zero-shot"} <= names, names


def test_the_tables_find_the_checkout_they_sit_in(tmp_path):
    """From the helpers' own folder, whatever the working directory (the tests run in a temporary one)."""
    assert tables.REPO == REPO and tables.RESULTS == REPO / "examples" / "benchmarks" / "results"
    (tmp_path / "checkout" / "a" / "b").mkdir(parents=True)
    (tmp_path / "checkout" / "pyproject.toml").write_text("")
    assert find_repo(tmp_path / "checkout" / "a" / "b") == tmp_path / "checkout"
    with pytest.raises(FileNotFoundError, match="no repository checkout"):
        find_repo(Path("/"))


def test_the_check_command_runs_from_another_directory(tmp_path):
    """``python examples/benchmarks/results_tables.py --check`` exits 0 on the committed tables and names
    its usage in ``--help``; the working directory is a temporary folder, not the repository."""
    script = REPO / "examples" / "benchmarks" / "results_tables.py"
    checked = subprocess.run([sys.executable, str(script), "--check"], cwd=tmp_path, capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    usage = subprocess.run([sys.executable, str(script), "--help"], cwd=tmp_path, capture_output=True, text=True)
    assert usage.returncode == 0 and "results_tables.py --check" in usage.stdout, usage.stderr


def test_every_page_of_the_docs_is_checked(tmp_path):
    """README.md and any docs/*.md, a page added later included; nothing else."""
    (tmp_path / "docs").mkdir()
    for name in ("README.md", "docs/b.md", "docs/a.md", "docs/notes.txt", "other.md"):
        (tmp_path / name).write_text("x")
    assert tables.doc_paths(tmp_path) == [tmp_path / "README.md", tmp_path / "docs/a.md", tmp_path / "docs/b.md"]
    assert tables.REPO / "docs" / "ensemble_benchmark.md" in tables.doc_paths()


@pytest.mark.parametrize("path", _docs(), ids=lambda p: p.name)
def test_every_table_matches_its_results_file(path):
    stale = tables.differences(path.read_text())
    assert not stale, (f"{path.name}: {stale} differ from their results files; "
                       "run `python examples/benchmarks/results_tables.py` and commit")


def test_a_hand_edited_figure_is_caught():
    text = tables.render("<!-- table:quick -->\n<!-- /table -->\n")
    assert tables.differences(text) == []
    edited = re.sub(r"\| 0\.8084 \|", "| 0.8184 |", text, count=1)  # MAYA's telco_churn score, typed over
    assert edited != text
    assert tables.differences(edited) == ["quick"]


def test_an_unknown_table_name_is_named():
    assert tables.differences("<!-- table:no-such-table -->\nx\n<!-- /table -->\n") == ["no-such-table"]
    with pytest.raises(KeyError, match="no-such-table"):
        tables.render("<!-- table:no-such-table -->\nx\n<!-- /table -->\n")


def test_a_candidate_pair_names_each_seed_and_pairs_rows_of_the_same_seed(tmp_path, monkeypatch):
    """``ensemble_pair(..., seeds=(0, 1))`` gives one row per (dataset, seed), each comparing the shipped and the
    candidate fit of that seed; with one seed the rows are named by dataset alone."""
    import json

    def row(seed, candidate, val):
        return {"dataset": "letter", "config": "ours", "status": "ok", "seed": seed, "task": "multiclass",
                "ours_add": '{"MAYA": {}}' if candidate else None, "val_score": val, "test_score": val - 0.01,
                "neural_weight": 0.5, "models": {"Maya_BAG_L1": {"val": val, "allotted_s": 100.0}}}

    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "results.jsonl").write_text("\n".join(json.dumps(r) for r in [
        row(0, False, 0.91), row(0, True, 0.92), row(1, True, 0.94), row(1, False, 0.93)]))
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    common.rows.cache_clear()
    try:
        both = experiments.ensemble_pair("f", "f", candidate=True, seeds=(0, 1))
        one = experiments.ensemble_pair("f", "f", candidate=True, seeds=(1,))
    finally:
        common.rows.cache_clear()
    assert "| letter, seed 0 | 0.9100 → 0.9200 |" in both and "| letter, seed 1 | 0.9300 → 0.9400 |" in both
    assert "| letter | 0.9300 → 0.9400 |" in one and "seed" not in one.split("\n", 2)[2]


def _ensemble_folder(tmp_path, monkeypatch, scores):
    """An ensemble-benchmark folder of ok rows: ``scores[(dataset, seed)] = {config: test accuracy}``."""
    import json

    lines = [json.dumps({"dataset": d, "seed": s, "config": c, "status": "ok", "task": "binary",
                         "metric": "accuracy", "test_score": v, "ours_add": None, "fit_s": 590.0, "weights": {},
                         "best_model": "WeightedEnsemble_L2"})
             for (d, s), by_config in scores.items() for c, v in by_config.items()]
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "results.jsonl").write_text("\n".join(lines))
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    common.rows.cache_clear()


def test_two_seed_tables_average_seeds_and_judge_targets_only_when_complete(tmp_path, monkeypatch):
    """Errors .10 (trees) -> .08 (ours): +20 %; a pair missing a configuration is left out; the verdicts wait for
    all 24 pairs, then say met or missed."""
    scores = {("a", 0): {"gbdt": 0.90, "ours": 0.92, "ag_dl": 0.90},   # ours +20 %, ag_dl 0 %
              ("a", 1): {"gbdt": 0.80, "ours": 0.78, "ag_dl": 0.84},   # ours -10 %, ag_dl +20 %
              ("b", 0): {"gbdt": 0.50, "ours": 0.60}}                   # no ag_dl: not counted
    _ensemble_folder(tmp_path, monkeypatch, scores)
    try:
        per_table = ensemble_benchmark.ensemble_two_seeds("two")
        targets = ensemble_benchmark.ensemble_two_seeds_targets("two")
        monkeypatch.setattr(ensemble_benchmark, "TWO_SEED_PAIRS", 2)  # as if these two pairs were the whole benchmark
        judged = ensemble_benchmark.ensemble_two_seeds_targets("two")
    finally:
        common.rows.cache_clear()
    assert "| a, accuracy | 0, 1 | 0.8500 | 0.8500 | **0.8700** | +5.00 % | +10.00 % |" in per_table
    assert "| b," not in per_table
    ours = next(line for line in targets.splitlines() if line.startswith("| + MAYA + TabSwift vs trees"))
    assert "1 of 2 (target ≥ 18: 2 of 24 pairs measured)" in ours and "+5.00 %" in ours
    ours = next(line for line in judged.splitlines() if line.startswith("| + MAYA + TabSwift vs trees"))
    assert "≥ 18: missed" in ours and "≥ +3.00 %: met" in ours and "+5.00 % (a) (target ≥ -3.00 %: met)" in ours
    dl = next(line for line in judged.splitlines() if line.startswith("| + TabM + RealMLP vs trees"))
    assert dl.startswith("| + TabM + RealMLP vs trees alone | 2 of 2 | +10.00 % |")  # a tie counts as at least as good


def test_all_configurations_table_gives_median_worst_and_without_best(tmp_path, monkeypatch):
    """all vs ag_dl: errors .10 -> .08 on a (+20 %, both seeds), .20 -> .21 on b (-5 %, one seed), .40 -> .40 on c
    (0 %): mean +8.75 %, median (0 + 20) / 2 = +10 %, worst table b, without the best table a: (-5 + 0) / 2."""
    scores = {("a", 0): {"ag_dl": 0.90, "all": 0.92}, ("a", 1): {"ag_dl": 0.90, "all": 0.92},
              ("b", 0): {"ag_dl": 0.80, "all": 0.79}, ("c", 0): {"ag_dl": 0.60, "all": 0.60, "gbdt": 0.60}}
    _ensemble_folder(tmp_path, monkeypatch, scores)
    try:
        partial = ensemble_benchmark.ensemble_all_targets("two")
        monkeypatch.setattr(ensemble_benchmark, "TWO_SEED_PAIRS", 4)  # as if these four pairs were the whole benchmark
        judged = ensemble_benchmark.ensemble_all_targets("two")
        fits = ensemble_benchmark.ensemble_all_fits("two")
    finally:
        common.rows.cache_clear()
    line = next(x for x in partial.splitlines() if x.startswith("| every family vs + TabM + RealMLP"))
    assert "3 of 4 (≥ 16: 4 of 24 measured)" in line and "+8.75 %" in line and "+10.00 %" in line
    assert "-5.00 % (b)" in line and "-2.50 % (without a)" in line
    line = next(x for x in judged.splitlines() if x.startswith("| every family vs + TabM + RealMLP"))
    assert "≥ 16: missed" in line and "(≥ +1.00 %: met)" in line
    assert next(x for x in judged.splitlines() if x.startswith("| + MAYA + TabSwift vs trees")).endswith(
        "| 0 of 4 pairs measured |  |  |  |  |")
    assert "| c, seed 0 | 0.6000 (" in fits


def test_an_added_model_is_judged_on_the_final_validation_error(tmp_path, monkeypatch):
    """Validation accuracy .80 -> .84: errors .20 -> .16, a 20 % reduction; a dataset without a candidate row is
    left out; the added model's weight is read from the final model's weights, and the pairs with weight counted."""
    import json

    def row(dataset, candidate, val, extra_weight=0.0):
        models = {"Maya_plr_BAG_L1": {"val": 0.81, "wall_s": 44.0}} if candidate else {}
        return {"dataset": dataset, "config": "ours", "status": "ok", "seed": 0, "task": "binary",
                "metric": "accuracy", "ours_add": '{"MAYA": []}' if candidate else None, "val_score": val,
                "test_score": val - 0.05, "fit_s": 200.0 if candidate else 120.0, "models": models,
                "best_model": "WeightedEnsemble_L2",
                "weights": {"WeightedEnsemble_L2": {"Maya_plr_BAG_L1": extra_weight}} if candidate else {}}

    for folder, rows in (("base", [row("a", False, 0.80), row("b", False, 0.70), row("c", False, 0.80)]),
                         ("cand", [row("a", True, 0.84, 0.25), row("c", True, 0.80)])):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "results.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    common.rows.cache_clear()
    try:
        out = experiments.ensemble_extra("base", "cand", "Maya_plr_BAG_L1")
    finally:
        common.rows.cache_clear()
    assert "| a, seed 0 | 0.8000 → 0.8400 | 0.7500 → 0.7900 | 0.8100 | 44 | 0.25 | 120 → 200 |" in out
    assert "| b, seed 0" not in out
    assert "better / level / worse** | 1 / 1 / 0 |" in out and "| +10.00 % |" in out  # (20 % + 0 %) / 2
    assert "carries weight in the final model** | 1 of 2 |" in out


def test_two_seed_level1_compares_maya_with_realmlp_and_reads_the_final_weights(tmp_path, monkeypatch):
    """Validation at level 1, regression shown as RMSE but compared lower-is-better; a table's seeds side by side
    whatever the file order; the weights are the picked model's, level-2 versions included; a TabSwift not fitted
    in time is shown as — and left out of its count."""
    import json

    def row(d, seed, config, task, models, weights, best="WeightedEnsemble_L2"):
        return {"dataset": d, "seed": seed, "config": config, "status": "ok", "task": task, "metric": "accuracy",
                "test_score": 0.9, "ours_add": None, "best_model": best,
                "models": {k: {"val": v} for k, v in models.items()}, "weights": {best: weights}}

    lines = [
        row("a", 0, "gbdt", "binary", {"LightGBM_BAG_L1": 0.80}, {"LightGBM_BAG_L1": 1.0}),
        row("a", 0, "ours", "binary", {"LightGBM_BAG_L1": 0.80, "CatBoost_BAG_L1": 0.82, "Maya_BAG_L1": 0.84,
                                       "TabSwift_BAG_L1": 0.81}, {"Maya_BAG_L1": 0.6, "CatBoost_BAG_L1": 0.4}),
        row("a", 0, "ag_dl", "binary", {"RealMLP_BAG_L1": 0.83, "TabM_BAG_L1": 0.85}, {"TabM_BAG_L1": 1.0}),
        row("r", 0, "gbdt", "regression", {"LightGBM_BAG_L1": 3.0}, {"LightGBM_BAG_L1": 1.0}),
        row("r", 0, "ours", "regression", {"LightGBM_BAG_L1": 3.0, "XGBoost_BAG_L1": 2.9, "Maya_BAG_L1": 2.0,
                                            "TabSwift_BAG_L1": 3.5}, {"TabSwift_BAG_L1": 1.0}),
        row("r", 0, "ag_dl", "regression", {"RealMLP_BAG_L1": 2.0}, {"LightGBM_BAG_L1": 1.0}),
        row("a", 1, "gbdt", "binary", {"LightGBM_BAG_L1": 0.80}, {"LightGBM_BAG_L1": 1.0}),
        row("a", 1, "ours", "binary", {"LightGBM_BAG_L1": 0.80, "Maya_BAG_L1": 0.70, "TabSwift_BAG_L1": 0.85},
            {"Maya_BAG_L1": 0.25, "Maya_BAG_L2": 0.25, "TabSwift_BAG_L1": 0.5}, best="WeightedEnsemble_L3"),
        row("a", 1, "ag_dl", "binary", {"RealMLP_BAG_L1": 0.75}, {"LightGBM_BAG_L1": 1.0}),
        row("r", 1, "gbdt", "regression", {"LightGBM_BAG_L1": 3.0}, {"LightGBM_BAG_L1": 1.0}),
        row("r", 1, "ours", "regression", {"LightGBM_BAG_L1": 3.0, "Maya_BAG_L1": 2.5},
            {"LightGBM_BAG_L1": 1.0}),
        row("r", 1, "ag_dl", "regression", {"RealMLP_BAG_L1": 2.0}, {"RealMLP_BAG_L1": 0.3, "LightGBM_BAG_L1": 0.7}),
    ]
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "results.jsonl").write_text("\n".join(json.dumps(r) for r in lines))
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    common.rows.cache_clear()
    try:
        out = ensemble_benchmark.ensemble_two_seeds_level1("two").splitlines()
    finally:
        common.rows.cache_clear()
    assert out[2] == "| a, seed 0 | 0.8200 (CatBoost) | 0.8400 | 0.8300 | 0.8500 | 0.8100 | 0.60 / 0.00 | 1.00 |"
    assert out[3] == "| a, seed 1 | 0.8000 (LightGBM) | 0.7000 | 0.7500 | — | 0.8500 | 0.50 / 0.50 | 0.00 |"
    assert out[4] == "| r, seed 0 ↓ | 2.9000 (XGBoost) | 2.0000 | 2.0000 | — | 3.5000 | 0.00 / 1.00 | 0.00 |"
    assert out[5] == "| r, seed 1 ↓ | 3.0000 (LightGBM) | 2.5000 | 2.0000 | — | — | 0.00 / 0.00 | 0.30 |"
    assert out[6] == ("| pairs (4) |  | ≥ RealMLP: 2 of 4 |  |  | above the best tree: 1 of 3 fitted "
                      "| 2 / 2 of 4 weighted | 2 of 4 weighted |")


def test_final_weights_name_the_level_two_models_instead_of_calling_them_trees_only():
    """A final model on level-2 trees uses every level-1 model's predictions: it is not "trees only"."""
    def row(weights):
        return {"best_model": "WeightedEnsemble_L3", "weights": {"WeightedEnsemble_L3": weights}}

    assert ensemble_benchmark.final_weight_text(row({"CatBoost_BAG_L2": 0.04, "XGBoost_BAG_L2": 0.96})) == "trees L2 1.00"
    assert ensemble_benchmark.final_weight_text(row({"XGBoost_BAG_L1": 0.06, "RealMLP_BAG_L2": 0.94})) == "RealMLP L2 0.94"
    mixed = {"LightGBM_BAG_L1": 0.2, "Maya_BAG_L1": 0.2, "Maya_BAG_L2": 0.2, "CatBoost_BAG_L2": 0.4}
    assert ensemble_benchmark.final_weight_text(row(mixed)) == "MAYA 0.20, MAYA L2 0.20, trees L2 0.40"
    assert ensemble_benchmark.final_weight_text(row({"LightGBM_BAG_L1": 0.5, "CatBoost_BAG_L1_FULL": 0.5})) == "trees only"


def test_all_configurations_per_table_averages_only_seeds_with_all_four(tmp_path, monkeypatch):
    """Seed 0 of a has all four fits, seed 1 lacks ``all``: a's row is seed 0 alone (errors .10 trees, .08 ours,
    .05 ag_dl, .04 all: ours +20 % over trees, -60 % against ag_dl; all +20 % over ag_dl); b has no full seed."""
    scores = {("a", 0): {"gbdt": 0.90, "ours": 0.92, "ag_dl": 0.95, "all": 0.96},
              ("a", 1): {"gbdt": 0.50, "ours": 0.50, "ag_dl": 0.50},
              ("b", 0): {"gbdt": 0.70, "ours": 0.70, "ag_dl": 0.70}}
    _ensemble_folder(tmp_path, monkeypatch, scores)
    try:
        per_table = ensemble_benchmark.ensemble_all_per_table("two")
    finally:
        common.rows.cache_clear()
    assert "| a, accuracy | 0 | 0.9000 | 0.9200 | 0.9500 | **0.9600** | +20.00 % | -60.00 % | +20.00 % |" in per_table
    assert "| b," not in per_table


def test_a_report_table_is_the_one_under_its_heading_in_order(tmp_path):
    """``report_table`` picks the n-th table of a section, not one of another section, and names a missing one."""
    report = tmp_path / "results.md"
    report.write_text("# Title\n\n| a |\n|---|\n| 0 |\n\n## Leaderboard\n\ntext\n\n| b |\n|---|\n| 1 |\n\n"
                      "## Ensembles\n\n| c |\n|---|\n| 2 |\n\nmore text\n\n| d |\n|---|\n| 3 |\n")
    assert common.report_table(report, "Leaderboard") == "| b |\n|---|\n| 1 |\n"
    assert common.report_table(report, "Ensembles", 1) == "| d |\n|---|\n| 3 |\n"
    assert common.report_table(report) == "| a |\n|---|\n| 0 |\n"
    with pytest.raises(KeyError, match="no table 2 under '## Ensembles'"):
        common.report_table(report, "Ensembles", 2)
