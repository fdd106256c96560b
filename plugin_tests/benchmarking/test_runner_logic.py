"""Logic of the benchmark runner (examples/benchmarks/benchmark.py) without any model fit: P1 splits, result keys
and resume, ranks, PAMA, our use of bencheval and autorank for the rank statistics, and the report files,
on hand-made tables whose expected values are worked out by hand in the comments."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from benchlib import (
    Task,
    append_result,
    average_ranks,
    config_hash,
    critical_difference,
    normalized_scores,
    pama,
    read_results,
    score_matrix,
    todo,
)
from benchlib.protocol import Dataset, p1_split

CFG = config_hash(300, None, {})


def _row(dataset, model, task, seed=0, status="ok", config=CFG, **metrics):
    row = {"dataset": dataset, "model": model, "seed": seed, "config": config, "task": task, "status": status,
           "time_limit": 300.0, "max_rows": None, "hyperparameters": {}, "fit_s": 10.0 + len(model),
           "predict_s_per_1k": 0.01, "mem_fit_peak_mb": 500.0}
    row.update(metrics)
    return row


def _table():
    """d1 binary accuracy: A .90 (mean of .88/.92), B .80, C .80  -> ranks A 1, B 2.5, C 2.5 (tie)
    d2 regression RMSE:  A 2.0, B 1.0, C 3.0                  -> ranks B 1, A 2, C 3
    d3 multiclass acc:   A failed, B .70, C .75               -> ranks C 1, B 2, A 3 (failed = last)
    average ranks: A (1+2+3)/3 = 2.00, B (2.5+1+2)/3 = 1.83, C (2.5+3+1)/3 = 2.17"""
    b, m = "binary", "multiclass"
    return [
        _row("d1", "A", b, 0, accuracy=0.88, roc_auc=0.90), _row("d1", "A", b, 1, accuracy=0.92, roc_auc=0.94),
        _row("d1", "B", b, 0, accuracy=0.80, roc_auc=0.85), _row("d1", "B", b, 1, accuracy=0.80, roc_auc=0.85),
        _row("d1", "C", b, 0, accuracy=0.80, roc_auc=0.95), _row("d1", "C", b, 1, accuracy=0.80, roc_auc=0.95),
        _row("d2", "A", "regression", rmse=2.0), _row("d2", "B", "regression", rmse=1.0),
        _row("d2", "C", "regression", rmse=3.0),
        _row("d3", "A", m, status="error: RuntimeError: boom"),
        _row("d3", "B", m, accuracy=0.70, roc_auc=0.80), _row("d3", "C", m, accuracy=0.75, roc_auc=0.81),
    ]


# --- P1 split ------------------------------------------------------------------------------------

def _synthetic(n=1000):
    rng = np.random.default_rng(0)
    y = np.array(["a"] * 500 + ["b"] * 300 + ["c"] * 200)
    rng.shuffle(y)
    return Dataset("synthetic", pd.DataFrame({"x1": rng.normal(size=n), "x2": rng.integers(0, 5, n), "y": y}),
                   "y", "multiclass")


def test_p1_split_is_reproducible_sized_and_stratified():
    ds = _synthetic()
    first, again, other = p1_split(ds, 0), p1_split(ds, 0), p1_split(ds, 1)
    for a, b in zip(first, again):
        assert list(a.index) == list(b.index)
    assert list(first[2].index) != list(other[2].index)
    assert [len(p) for p in first] == [640, 160, 200]
    assert sorted(np.concatenate([p.index for p in first])) == list(range(1000))
    full = ds.data["y"].value_counts(normalize=True)
    for part in first:
        share = part["y"].value_counts(normalize=True).reindex(full.index, fill_value=0.0)
        assert (share - full).abs().max() <= 1.0 / len(part) + 1e-12


def test_p1_split_regression_sizes():
    ds = _synthetic()
    ds = Dataset("reg", ds.data.assign(y=np.arange(1000.0)), "y", "regression")
    assert [len(p) for p in p1_split(ds, 3)] == [640, 160, 200]


# --- keys and resume -----------------------------------------------------------------------------

def test_config_hash_is_short_stable_and_order_free():
    assert CFG == config_hash(300.0, None, None) == "21cf8eb9"
    assert config_hash(60, 1000, {"a": 1, "b": 2}) == config_hash(60.0, 1000, {"b": 2, "a": 1}) == "b4e04beb"
    assert config_hash(300, 1000, {}) != CFG
    assert config_hash(300, None, {"a": 1}) != CFG


def test_resume_skips_finished_keys(tmp_path):
    path = tmp_path / "results.jsonl"
    tasks = [Task(d, m, s, 300) for d in ("d1", "d2") for s in (0, 1) for m in ("A", "B")]
    append_result(path, _row("d1", "A", "binary", 0, accuracy=0.9, roc_auc=float("nan")))
    append_result(path, _row("d1", "B", "binary", 0, status="error: ImportError: pytabkit"))
    append_result(path, _row("d1", "A", "binary", 1, config=config_hash(60, None, {}), accuracy=0.8))  # other config
    with open(path, "a") as f:
        f.write('{"dataset": "d2", "model": "A", "se')  # a line cut short by a kill
    with pytest.warns(UserWarning, match="unreadable"):
        rows = read_results(path)
    assert len(rows) == 3 and rows[0]["roc_auc"] is None  # NaN stored as null
    pending = [t.key[:3] for t in todo(tasks, rows)]
    assert ("d1", "A", 0) not in pending and ("d1", "B", 0) not in pending
    assert ("d1", "A", 1) in pending and len(pending) == 6
    retry = [t.key[:3] for t in todo(tasks, rows, retry_failed=True)]
    assert ("d1", "B", 0) in retry and len(retry) == 7
    # a later success for the failed key replaces it
    append_result(path, _row("d1", "B", "binary", 0, accuracy=0.7))
    with pytest.warns(UserWarning):
        assert len(todo(tasks, read_results(path), retry_failed=True)) == 6


# --- ranks, PAMA, CD -----------------------------------------------------------------------------

def test_average_ranks_with_tie_and_failure():
    sm = score_matrix(_table())
    assert sm.values.loc["d1", "A"] == pytest.approx(0.90)
    avg = average_ranks(sm.oriented)
    assert list(avg.index) == ["B", "A", "C"]
    assert avg.to_dict() == pytest.approx({"A": 2.0, "B": 5.5 / 3, "C": 6.5 / 3})
    # the normalized scores (failed = -1) rank exactly as the scores do
    assert average_ranks(normalized_scores(sm.oriented)).to_dict() == pytest.approx(avg.to_dict())


def test_average_ranks_put_every_failure_last_and_tie_failures():
    """d1: A .9, B failed, C failed, D .5 -> A 1, D 2, B and C share 3.5; d2: all four finished, D best,
    then C, B, A -> A 4, B 3, C 2, D 1.  Means: A 2.5, B 3.25, C 2.75, D 1.5."""
    oriented = pd.DataFrame({"A": [0.9, 0.1], "B": [np.nan, 0.2], "C": [np.nan, 0.3], "D": [0.5, 0.4]},
                            index=["d1", "d2"])
    assert average_ranks(oriented).to_dict() == pytest.approx({"A": 2.5, "B": 3.25, "C": 2.75, "D": 1.5})
    assert average_ranks(oriented.iloc[:0]).empty


def test_score_matrix_leaves_out_pending_datasets_and_rare_models():
    rows = _table() + [_row("d4", "A", "binary", accuracy=0.5), _row("d4", "B", "binary", accuracy=0.6),
                       _row("d1", "D", "binary", accuracy=0.99)]
    sm = score_matrix(rows)
    assert sm.excluded_models == ["D"]  # run on 1 of 4 datasets
    assert sm.excluded_datasets == ["d4"]  # C not run there yet
    assert list(sm.values.index) == ["d1", "d2", "d3"]


def test_pama_strict_with_tie_and_with_tolerance():
    """d1..d3 as in _table plus d5 (binary): A .60, B .60, C .50 (A and B tie for best).
    tolerance 0: best sets d1 {A}, d2 {B}, d3 {C}, d5 {A, B} -> A 50 %, B 50 %, C 25 %.
    tolerance 0.2: d1 >= .72 {A, B, C}; d2 RMSE <= 1.2 {B}; d3 >= .60 {B, C} (A failed); d5 >= .48
    {A, B, C} -> A 50 %, B 100 %, C 75 %."""
    rows = _table() + [_row("d5", "A", "binary", accuracy=0.6), _row("d5", "B", "binary", accuracy=0.6),
                       _row("d5", "C", "binary", accuracy=0.5)]
    oriented = score_matrix(rows).oriented
    assert pama(oriented).to_dict() == pytest.approx({"A": 50.0, "B": 50.0, "C": 25.0})
    assert pama(oriented, tolerance=0.2).to_dict() == pytest.approx({"A": 50.0, "B": 100.0, "C": 75.0})


def _ranked_rows(order_per_dataset):
    """One binary dataset per entry; the models in the entry's order get accuracies .9, .8, .7, ..."""
    rows = []
    for i, order in enumerate(order_per_dataset):
        rows += [_row(f"d{i}", m, "binary", accuracy=0.9 - 0.1 * j) for j, m in enumerate(order)]
    return rows


def _abcd(n=6):
    """A first and D last on every dataset, B and C alternating second and third.
    Average ranks A 1.0, B 2.5, C 2.5, D 4.0.  Friedman: rank sums 6, 15, 15, 24 over n = 6 datasets,
    chi2 = 12 / (6*4*5) * (36 + 225 + 225 + 576) - 3*6*5 = 16.2 with 3 degrees of freedom.
    Nemenyi: CD = 2.569 * sqrt(4*5 / (6*6)) = 1.915 (q_0.05 for 4 models, Demsar 2006), so A is within
    CD of B and C (1.5) but not of D (3.0), and B, C are within CD of D (1.5): two overlapping groups."""
    return _ranked_rows(["ABCD" if i % 2 == 0 else "ACBD" for i in range(n)])


def test_critical_difference_nemenyi_groups_from_autorank():
    from scipy.stats import chi2

    sm = score_matrix(_abcd())
    cd = critical_difference(normalized_scores(sm.oriented))
    assert cd.test == "Friedman test" and cd.significant
    assert cd.p_value == pytest.approx(chi2.sf(16.2, 3))
    assert cd.cd == pytest.approx(1.915, abs=1e-3)
    assert cd.avg_ranks.to_dict() == pytest.approx({"A": 1.0, "B": 2.5, "C": 2.5, "D": 4.0})
    assert [sorted(g) for g in cd.groups] == [["A", "B", "C"], ["B", "C", "D"]]
    # autorank ranked the same way round (1 = highest score) and holds the models in our order
    assert list(cd.ranking.rankdf.index) == list(cd.avg_ranks.index)
    assert cd.ranking.rankdf["meanrank"].to_dict() == pytest.approx(cd.avg_ranks.to_dict())


def test_rank_groups_are_the_runs_within_cd_that_reach_further():
    from benchlib.stats import rank_groups

    # 1.0 reaches 2.5 (index 2); 2.0 reaches 3.5 (index 3), further; 2.5 reaches 3.5 too: inside, not a bar
    assert rank_groups([1.0, 2.0, 2.5, 3.5, 6.0], cd=1.5) == [(0, 2), (1, 3)]
    assert rank_groups([1.0, 3.0, 5.0], cd=1.5) == []  # every model apart from the rest: no bar
    assert rank_groups([1.0, 1.2, 1.4], cd=1.5) == [(0, 2)]


def test_critical_difference_without_significance_and_with_few_datasets():
    # each model first on two of six datasets, second on two, third on two: equal average ranks
    sm = score_matrix(_ranked_rows(["ABC", "BCA", "CAB"] * 2))
    cd = critical_difference(normalized_scores(sm.oriented))
    assert cd.test == "Friedman test" and cd.p_value == pytest.approx(1.0) and not cd.significant
    assert cd.groups == [["A", "B", "C"]] and "no significant differences" in cd.note
    # every model tied everywhere: Friedman's statistic is undefined, reported as p = 1
    tied = critical_difference(pd.DataFrame(1.0, index=[f"d{i}" for i in range(5)], columns=["A", "B", "C"]))
    assert tied.p_value == 1.0 and tied.groups == [["A", "B", "C"]]
    few = critical_difference(normalized_scores(score_matrix(_abcd(4)).oriented))
    assert few.p_value is None and few.ranking is None and few.groups == []
    assert "too few" in few.note and "at least 5 datasets" in few.note
    assert few.avg_ranks.to_dict() == pytest.approx({"A": 1.0, "B": 2.5, "C": 2.5, "D": 4.0})


def test_critical_difference_of_two_models_is_a_wilcoxon_test():
    """B beats A on all 6 datasets: one-sided Wilcoxon signed-rank p = 1/2^6; with A winning one of the
    six the exact one-sided p is larger than .05 and both models form one group."""
    sm = score_matrix(_ranked_rows(["BA"] * 6))
    cd = critical_difference(normalized_scores(sm.oriented))
    assert cd.test.startswith("One-sided Wilcoxon") and cd.cd is None
    assert cd.p_value == pytest.approx(1 / 64) and cd.groups == []
    mixed = critical_difference(normalized_scores(score_matrix(_ranked_rows(["BA"] * 5 + ["AB"])).oriented))
    assert mixed.p_value > 0.05 and mixed.groups == [["B", "A"]]


def test_roc_auc_matches_sklearn():
    from sklearn.metrics import roc_auc_score

    from benchlib.p1 import roc_auc

    rng = np.random.default_rng(0)
    y = rng.choice(["a", "b", "c"], 300)
    raw = rng.uniform(size=(300, 3)) + 0.8 * (y[:, None] == np.array(["a", "b", "c"]))
    proba = pd.DataFrame(raw / raw.sum(1, keepdims=True), columns=["a", "b", "c"])
    assert roc_auc(y, proba) == pytest.approx(roc_auc_score(y, proba.to_numpy(), multi_class="ovr",
                                                            average="macro", labels=["a", "b", "c"]))
    yb = (y == "a").astype(int)
    pb = pd.DataFrame({0: 1 - proba["a"], 1: proba["a"]})
    assert roc_auc(yb, pb, positive_class=1) == pytest.approx(roc_auc_score(yb, proba["a"]))
    assert roc_auc(np.ones(5, int), pb.iloc[:5], positive_class=1) is None


# --- report --------------------------------------------------------------------------------------

def test_report_writes_markdown_and_figures(tmp_path):
    from benchlib.report import REPORT_FILES, write_report

    for row in _table():
        append_result(tmp_path / "results.jsonl", row)
    paths = write_report(tmp_path)
    for name in REPORT_FILES:
        assert paths[name].exists() and paths[name].stat().st_size > 0
    md = paths["results.md"].read_text()
    lines = {line.split("|")[1].strip(): line for line in md.splitlines() if line.startswith("| ") and
             line.split("|")[1].strip() in ("A", "B", "C")}
    assert lines["B"].startswith("| B | 1.83 |")
    assert lines["A"].startswith("| A | 2.00 |")
    assert lines["C"].startswith("| C | 2.17 |")
    assert "**0.9000 ± 0.0283**" in md  # d1 accuracy of A: mean .90, std of (.88, .92) with ddof 1
    assert "error: RuntimeError: boom" in md
    assert "too few for significance tests" in md and "Friedman" not in md  # 3 datasets: ranks only
    json.loads((tmp_path / "results.jsonl").read_text().splitlines()[0])


def test_report_on_empty_and_single_dataset(tmp_path):
    from benchlib.report import REPORT_FILES, write_report

    paths = write_report(tmp_path / "empty")
    assert all(paths[n].exists() for n in REPORT_FILES)
    assert "No results yet" in paths["results.md"].read_text()
    for row in _table()[:6]:
        append_result(tmp_path / "one" / "results.jsonl", row)
    paths = write_report(tmp_path / "one", report_dir=tmp_path / "one" / "report")
    assert all(paths[n].exists() and paths[n].parent.name == "report" for n in REPORT_FILES)
    assert "too few for significance tests" in paths["results.md"].read_text()


def test_report_gives_the_tests_and_draws_autoranks_diagram(tmp_path, monkeypatch):
    import autorank

    from benchlib.report import write_report

    drawn = []

    def spy(result, **kwargs):
        drawn.append(list(result.rankdf.index))
        return plot_stats(result, **kwargs)

    plot_stats = autorank.plot_stats
    monkeypatch.setattr(autorank, "plot_stats", spy)
    for row in _abcd():
        append_result(tmp_path / "results.jsonl", row)
    md = write_report(tmp_path)["results.md"].read_text()
    assert "Friedman test p = 0.001032." in md  # chi2 = 16.2, 3 degrees of freedom (see _abcd)
    assert ("Not significantly different (Friedman test, then Nemenyi's critical difference of 1.915 in average "
            "rank; autorank, alpha = 0.05): {A, B, C}; {B, C, D}.") in md
    assert drawn == [["A (1.00)", "B (2.50)", "C (2.50)", "D (4.00)"]]
    # no significant difference: no CD diagram, the figure lists the ranks instead
    drawn.clear()
    for row in _ranked_rows(["ABC", "BCA", "CAB"] * 2):
        append_result(tmp_path / "flat" / "results.jsonl", row)
    md = write_report(tmp_path / "flat")["results.md"].read_text()
    assert "Friedman test p = 1." in md and "no significant differences" in md and drawn == []


def test_report_when_every_fit_failed(tmp_path):
    """A run whose fits all failed (e.g. a wrong --data-dir) must still report the failures, not crash on
    the timing columns that only successful fits write."""
    from benchlib.report import write_report

    for ds in ("d1", "d2"):
        append_result(tmp_path / "results.jsonl", {"dataset": ds, "model": "A", "seed": 0, "config": CFG, "task": None,
                                                  "status": "error: FileNotFoundError: no such dataset",
                                                  "time_limit": 300.0, "max_rows": None, "hyperparameters": {}})
    text = write_report(tmp_path)["results.md"].read_text()
    assert "0 ok, 2 failed" in text and "FileNotFoundError: no such dataset" in text, text


def test_a_failed_fit_is_a_row_with_its_reason_and_the_code_version(tmp_path):
    """A fit that cannot run (here: no such table) becomes a recorded failure, not the end of the run, and
    every row says which package version ran it; the next run resumes past it."""
    from benchlib.provenance import code_version
    from benchlib.runner import run_benchmark

    results = tmp_path / "results.jsonl"
    tasks = [Task("no_such_table", "GBM", 0, 10.0)]
    rows = run_benchmark(tasks, tmp_path / "data", results, num_cpus=1, log=lambda _: None)
    assert len(rows) == 1 and rows[0]["status"].startswith("error:")
    assert "no_such_table" in rows[0]["status"] + rows[0].get("traceback", "")
    assert rows[0]["package_commit"] == code_version()["package_commit"]
    assert read_results(results)[0]["package_commit"] == rows[0]["package_commit"]
    assert run_benchmark(tasks, tmp_path / "data", results, num_cpus=1, log=lambda _: None) == []


def test_prediction_scores_by_hand():
    from benchlib.p1 import prediction_scores

    y = pd.Series(["a", "b", "b", "a"])
    proba = pd.DataFrame({"a": [0.9, 0.4, 0.2, 0.3], "b": [0.1, 0.6, 0.8, 0.7]})
    # predictions a, b, b, b: 3 of 4 right; AUC of "b": b-scores 0.6, 0.8 against a-scores 0.1, 0.7 -> 3 of 4 pairs
    out = prediction_scores("binary", y, ["a", "b", "b", "b"], proba, positive_class="b")
    assert out == {"accuracy": 0.75, "roc_auc": pytest.approx(0.75)}
    # multiclass ignores the positive class: the mean of the per-class AUCs (here both 0.75)
    assert prediction_scores("multiclass", y, ["a", "b", "b", "b"], proba, positive_class="b")["roc_auc"] == \
        pytest.approx(0.75)
    assert prediction_scores("regression", [1.0, 2.0, 3.0], [1.0, 2.0, 5.0]) == {"rmse": pytest.approx((4 / 3) ** 0.5)}


def test_redo_before_reruns_older_rows_and_resumes():
    tasks = [Task("d1", "A", s, 300) for s in (0, 1)]
    old = dict(_row("d1", "A", "binary", 0, accuracy=0.9), started="2026-12-04T22:32:01")
    new = dict(_row("d1", "A", "binary", 1, accuracy=0.8), started="2026-12-06T08:00:00")
    assert todo(tasks, [old, new]) == []
    # the row started before the cut is fitted again, the newer one is not
    assert [t.key[:3] for t in todo(tasks, [old, new], redo_before="2026-12-06T07:00")] == [("d1", "A", 0)]
    # once the rerun's row is written, a resumed rerun has nothing left to do
    redone = dict(old, started="2026-12-06T07:10:00")
    assert todo(tasks, [old, new, redone], redo_before="2026-12-06T07:00") == []
