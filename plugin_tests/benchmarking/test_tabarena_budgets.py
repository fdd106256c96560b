"""``examples/benchmarks/tabarena_budgets.py`` on two ``results.csv`` made up here: MAYA's rank among TabM,
RealMLP and MAYA at each budget, its wins and losses, the pairs still missing at the high budget, and the files it
writes."""

import json

import pandas as pd
import pytest
import tabarena_budgets as tb

METRICS = {"t1": "roc_auc", "t2": "log_loss", "t3": "rmse"}


def _folder(path, limit, errors):
    """A ``tabarena_run.py`` folder at ``limit`` seconds per config: ``errors`` maps table -> method ->
    (test error, fit seconds); a ``None`` error is a failed fit."""
    path.mkdir(parents=True, exist_ok=True)
    rows = []
    for table, by_method in errors.items():
        for method, (err, fit_s) in by_method.items():
            rows.append({"table": table, "method": method, "config": f"{method}_c1_default_BAG_L1",
                         "dataset": f"{table}-0", "metric": METRICS[table],
                         "status": "missing" if err is None else "ok",
                         "test_error": err, "fit_s": None if err is None else fit_s, "time_limit_s": limit,
                         "at_limit": None if err is None else fit_s / limit >= 0.9})
    pd.DataFrame(rows).to_csv(path / "results.csv", index=False)
    (path / "settings.json").write_text(json.dumps({"settings": {"time_limit": limit}}))
    return path


#: at 300 s: MAYA ranks 3, 1, 2 among the three; CatBoost ran up to its limit on t3 only
LOW = {"t1": {"TabM": (0.10, 290), "RealMLP": (0.20, 100), "MAYA": (0.30, 50), "CatBoost": (0.05, 20),
              "LightGBM": (0.06, 5), "XGBoost": (0.07, 5)},
       "t2": {"TabM": (0.50, 295), "RealMLP": (0.40, 280), "MAYA": (0.30, 100), "CatBoost": (0.35, 30),
              "LightGBM": (0.36, 5), "XGBoost": (0.37, 5)},
       "t3": {"TabM": (3.0, 299), "RealMLP": (1.0, 299), "MAYA": (2.0, 299), "CatBoost": (2.5, 295),
              "LightGBM": (2.6, 5), "XGBoost": (2.7, 5)}}
#: at 1,200 s: MAYA ranks 1, 1.5 (tied with RealMLP), 2; CatBoost rerun on t3
HIGH = {"t1": {"TabM": (0.20, 1000), "RealMLP": (0.30, 400), "MAYA": (0.10, 1150)},
        "t2": {"TabM": (0.50, 1190), "RealMLP": (0.25, 800), "MAYA": (0.25, 300)},
        "t3": {"TabM": (3.0, 1195), "RealMLP": (1.0, 900), "MAYA": (2.0, 600), "CatBoost": (2.2, 1100)}}


@pytest.fixture
def folders(tmp_path):
    return _folder(tmp_path / "low", 300.0, LOW), _folder(tmp_path / "high", 1200.0, HIGH)


def _run(low, high, out=None, tables="t1,t2,t3"):
    tb.main(["--low", str(low), "--high", str(high), "--tables", tables] + (["--out", str(out)] if out else []))
    target = out or high
    return pd.read_csv(target / "budgets.csv"), (target / "budgets.md").read_text()


def _maya_ranks(frame):
    maya = frame[frame["method"] == "MAYA"]
    return {(t, int(b)): r for t, b, r in zip(maya["table"], maya["budget_s"], maya["rank_of_3"])}


def test_ranks_wins_and_the_sign_test_at_each_budget(folders):
    low, high = folders
    frame, report = _run(low, high)
    assert _maya_ranks(frame) == {("t1", 300): 3, ("t2", 300): 1, ("t3", 300): 2,
                                  ("t1", 1200): 1, ("t2", 1200): 1.5, ("t3", 1200): 2}
    summ = {int(r["budget_s"]): r for r in tb.summary(frame, [300.0, 1200.0])}
    assert summ[300]["tables"] == summ[1200]["tables"] == 3
    assert summ[300]["maya_mean_rank"] == pytest.approx(2.0)
    assert summ[1200]["maya_mean_rank"] == pytest.approx(1.5)
    # 300 s: MAYA beats TabM on t2, t3, loses on t1; beats RealMLP on t2, loses on t1, t3
    assert (summ[300]["vs_TabM_wins"], summ[300]["vs_TabM_losses"]) == (2, 1)
    assert (summ[300]["vs_RealMLP_wins"], summ[300]["vs_RealMLP_losses"]) == (1, 2)
    # 1,200 s: the tie with RealMLP on t2 is neither a win nor a loss
    assert (summ[1200]["vs_TabM_wins"], summ[1200]["vs_TabM_losses"]) == (3, 0)
    assert (summ[1200]["vs_RealMLP_wins"], summ[1200]["vs_RealMLP_losses"]) == (1, 1)
    assert summ[1200]["vs_TabM_p"] == pytest.approx(0.25)  # 3 of 3 under a fair coin: 2 x 1/8
    # configs at >= 90 % of their limit: at 300 s TabM on all three, RealMLP on t2, t3, MAYA on t3; at 1,200 s
    # TabM on t2, t3 (1,000 of 1,200 s on t1 is 83 %), MAYA on t1
    assert [summ[300][f"{m}_at_limit"] for m in tb.NEURAL] == [3, 2, 1]
    assert [summ[1200][f"{m}_at_limit"] for m in tb.NEURAL] == [2, 0, 1]
    assert "| 1,200 s | 3 | 1.50 | 3–0 (p = 0.25) | 1–1 (p = 1.00) | 2, 0, 1 |" in report
    assert "Every expected (table, method) pair has a 1,200 s result." in report


def test_the_trees_are_the_low_budget_reference_unless_rerun(folders):
    low, high = folders
    frame, report = _run(low, high)
    at_high = frame[frame["budget_s"] == 1200]
    assert set(at_high.loc[at_high["method"].isin(tb.TREES), "method"]) == {"CatBoost"}
    assert set(at_high.loc[at_high["method"] == "CatBoost", "table"]) == {"t3"}
    # t3's 1,200 s row: TabM at its limit (†), the best of three in bold, MAYA's rank; CatBoost's rerun error
    # (1,100 of 1,200 s: at its limit), the other trees —
    assert "|  |  | 1,200 s | 3† | **1** | 2 | 2 | 2.2† | — | — |" in report


def test_a_missing_high_budget_result_is_named_and_its_table_left_out_of_the_summary(tmp_path):
    high_errors = {t: dict(by) for t, by in HIGH.items()}
    del high_errors["t2"]["MAYA"]  # not run yet
    high_errors["t3"]["TabM"] = (None, None)  # failed
    del high_errors["t3"]["CatBoost"]  # expected (at its limit at 300 s on t3) but not rerun yet
    low, high = _folder(tmp_path / "low", 300.0, LOW), _folder(tmp_path / "high", 1200.0, high_errors)
    frame, report = _run(low, high)
    assert ("Still missing at 1,200 s: 3 of the 10 expected (table, method) pairs, t2 (MAYA); "
            "t3 (TabM, CatBoost).") in report
    assert "|  |  | 1,200 s | 0.5† | **0.25** | missing | — | — | — | — |" in report
    assert pd.isna(_maya_ranks(frame)[("t2", 1200)])
    summ = tb.summary(frame, [300.0, 1200.0])
    assert [s["tables"] for s in summ] == [1, 1]  # t1 alone has all three at both budgets
    assert summ[0]["maya_mean_rank"] == 3 and summ[1]["maya_mean_rank"] == 1


def test_without_a_high_budget_folder_every_pair_is_missing_and_the_files_are_written(tmp_path):
    low = _folder(tmp_path / "low", 300.0, LOW)
    out = tmp_path / "report"
    frame, report = _run(low, tmp_path / "not_yet", out=out, tables="t1,t3,t9")
    assert ("Still missing at 1,200 s: 7 of the 7 expected (table, method) pairs, t1 (TabM, RealMLP, MAYA); "
            "t3 (TabM, RealMLP, MAYA, CatBoost).") in report
    assert "| 1,200 s | 0 | — | — | — | — |" in report
    assert "|  |  | 1,200 s | missing | missing | missing | — | — | — | — |" in report
    assert list(dict.fromkeys(frame["table"])) == ["t1", "t3"]  # t9 is not in the low folder
    assert (out / "score_vs_budget.png").stat().st_size > 0
    assert not (tmp_path / "not_yet").exists()
