"""``examples/benchmarks/scaling.py`` and its ``benchlib.scaling_point`` / ``benchlib.scaling_report`` without a
model fit: the synthetic task, the exponent fit, the order of the to-do list and its resume, and the report from
hand-made rows with every status."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import scaling as sc
from benchlib import scaling_point as sp
from benchlib import scaling_report as sr
from benchlib.results import append_result, read_results


def test_synthetic_is_deterministic_per_seed_and_its_target_reads_the_signal_columns_only():
    a, again, other = sp.synthetic(2000, 8, 3), sp.synthetic(2000, 8, 3), sp.synthetic(2000, 8, 4)
    pd.testing.assert_frame_equal(a, again)
    assert not np.allclose(a.to_numpy(), other.to_numpy())
    assert list(a.columns) == [f"x{i}" for i in range(8)] + ["y"]
    # the documented formula, and the noise around it: mean 0, sd 0.5
    expected = a.x0 + 2 * np.sin(a.x1) + a.x2 * a.x3 + 0.5 * np.abs(a.x4)
    np.testing.assert_allclose(sp.signal(a), expected)
    noise = a["y"] - expected
    assert abs(noise.mean()) < 0.05 and noise.std() == pytest.approx(sp.NOISE_SD, abs=0.03)
    # moving a column moves the target exactly when it is one of the named columns
    X = a.drop(columns="y")
    for col in X.columns:
        moved = X.assign(**{col: X[col] + 1.0})
        assert (not np.allclose(sp.signal(moved), sp.signal(X))) == (col in sp.SIGNAL_COLS), col
    # a smaller table of one seed is the first rows of a larger one (the rows axis trains on nested tables)
    pd.testing.assert_frame_equal(sp.synthetic(500, 8, 3).drop(columns="y"), X.iloc[:500])
    with pytest.raises(ValueError):
        sp.synthetic(10, 4, 0)


def _point(n, model="M", status="ok", **kw):
    row = {"task": f"synthetic_r{n}_c10", "kind": "synthetic", "model": model, "status": status, "rows": n,
           "cols": 10, "time_limit": 120.0}
    return {**row, **kw}


def test_exponents_recover_a_known_power_law_from_the_ok_points_only():
    sizes = [1_000, 10_000, 100_000, 1_000_000]
    rows = [_point(n, fit_s=0.002 * n ** 0.8, predict_s_per_1k=0.05 * n ** 0.5, mem_peak_mb=300 * n ** 0.25)
            for n in sizes]
    # points that did not end ok carry numbers off the law: they must not enter the fit
    rows += [_point(10 ** 7, status="timeout", fit_s=1.0), _point(10 ** 8, status="declined", fit_s=1e9),
             _point(1000, model="N", fit_s=5.0, predict_s_per_1k=0.1, mem_peak_mb=400.0)]
    ex = sr.exponents(pd.DataFrame(rows), "rows").set_index("model")
    assert ex.loc["M", "fit_s"] == pytest.approx(0.8)
    assert ex.loc["M", "predict_s_per_1k"] == pytest.approx(0.5)
    assert ex.loc["M", "mem_peak_mb"] == pytest.approx(0.25)
    assert ex.loc["M", "sizes"] == sizes and ex.loc["M", "points"] == 4
    assert ex.loc["M", "at_limit"] == 1  # 0.002 * 1e6 ** 0.8 = 126 s of a 120 s limit
    assert pd.isna(ex.loc["N", "fit_s"])  # one size: no slope
    assert sr.fit_exponent([10, 100], [3.0, 3.0]) == pytest.approx(0.0)
    assert sr.fit_exponent([10, 10], [1.0, 2.0]) is None


def _meta(folder, name, task, n_rows, n_features):
    (folder / name).mkdir()
    (folder / name / "meta.json").write_text(json.dumps({"task": task, "target": "t", "n_rows": n_rows,
                                                         "n_features": n_features}))


def _result(table, task, status):
    return {"dataset": task.dataset, "model": task.model, "seed": task.seed, "config": task.config,
            "task": table.name, "status": status}


def test_the_todo_list_runs_cheapest_first_and_a_rerun_resumes(tmp_path):
    _meta(tmp_path, "small", "binary", 50_000, 8)      # 10,000 query rows held out: 40,000 x 8
    _meta(tmp_path, "big", "regression", 200_000, 3)   # 20,000 held out: 180,000 x 3
    small, big = sc.real_table(tmp_path, "small"), sc.real_table(tmp_path, "big")
    assert (small.rows, small.cols, small.problem_type) == (40_000, 8, "binary")
    assert (big.rows, big.cols) == (180_000, 3)
    assert sc.real_table(tmp_path, "absent") is None
    tables = sc.synthetic_tables([1_000, 10_000, 100_000, 1_000_000], [10, 100, 500], row_cols=10, col_rows=10_000)
    assert [t.name for t in tables].count("synthetic_r10000_c10") == 1 and len(tables) == 6  # the shared point once
    points = sc.todo_list(list(reversed(tables)) + [big, small], ["MAYA", "GBM"], 120)
    assert [t.name for t, _ in points[::2]] == [
        "synthetic_r1000_c10", "synthetic_r10000_c10", "small", "big", "synthetic_r10000_c100",
        "synthetic_r100000_c10", "synthetic_r10000_c500", "synthetic_r1000000_c10"]  # 1e6 cells: fewer rows first
    assert [t.cost for t, _ in points] == sorted(t.cost for t, _ in points)
    assert [task.model for _, task in points[:4]] == ["MAYA", "GBM", "MAYA", "GBM"]

    done = [_result(t, task, s) for (t, task), s in zip(points, ["ok", "failed", "declined", "timeout"])]
    assert sc.pending(points, done) == points[4:]
    retried = sc.pending(points, done, retry_failed=True)
    assert retried == [points[1], points[3], *points[4:]]  # a decline is AutoGluon's answer: it stays
    # another time limit is another experiment: nothing of it is done
    assert len(sc.pending(sc.todo_list(tables, ["MAYA"], 60), done)) == len(tables)
    # an ok point without the model's own memory reading runs again on request; one with it does not
    assert sc.pending(points, done, remeasure_memory=True) == [points[0], *points[4:]]
    done[0]["model_fit_peak_mb"] = 512.0
    assert sc.pending(points, done, remeasure_memory=True) == points[4:]
    assert sc.pending(points, done, again=True) == points


def test_the_model_memory_reading_starts_at_the_models_fit_and_keeps_the_earlier_peak(monkeypatch, tmp_path):
    """A peak reached before the model's fit (here a 400 MB array, freed) is not the model's; the process's peak
    still counts it."""
    from autogluon.tabular import TabularPredictor
    from autogluon.tabular.registry import ag_model_registry

    if sp._rss_mb() is None or not sp._reset_peak_rss():
        pytest.skip("needs Linux /proc/self/clear_refs")
    monkeypatch.setattr(ag_model_registry.key_to_cls("GBM"), "fit", ag_model_registry.key_to_cls("GBM").fit)
    reading = sp.watch_model_fit("GBM")
    big = np.ones(400 * 2**20 // 8)
    earlier_peak = sp._peak_rss_mb()
    del big
    train = sp.synthetic(300, 5, seed=0)
    TabularPredictor(label=sp.TARGET, problem_type="regression", path=str(tmp_path / "ag"), verbosity=0).fit(
        train, hyperparameters={"GBM": {"num_boost_round": 5}}, num_cpus=1, fit_weighted_ensemble=False)
    assert 0 <= reading["model_fit_increase_mb"] < 300
    assert reading["model_fit_increase_mb"] == pytest.approx(
        reading["model_fit_peak_mb"] - reading["model_fit_start_mb"], abs=0.11)
    assert reading["model_fit_peak_mb"] < earlier_peak - 300
    assert sp.whole_peak_mb(reading) >= earlier_peak - 5  # the kernel's per-thread RSS counters lag a little


def test_the_report_builds_from_every_status_and_shows_them(tmp_path):
    rows = [_point(1_000, "GBM", fit_s=2.0, predict_s_per_1k=0.01, mem_peak_mb=400.0, rmse=0.61,
                   mem_estimate_ratio=0.15, within_limit=True),
            _point(10_000, "GBM", fit_s=20.0, predict_s_per_1k=0.01, mem_peak_mb=800.0, rmse=0.55,
                   within_limit=True),
            _point(1_000, "MAYA", fit_s=130.0, predict_s_per_1k=0.4, mem_peak_mb=600.0, rmse=0.52, epochs=73,
                   s_per_epoch=0.22, context_rows=800, within_limit=False),
            _point(10_000, "MAYA", status="declined", fit_s=3.1,
                   reason="NotEnoughMemoryError | Warning: Not enough memory to safely train model. Estimated to "
                          "require 41.000 GB out of 20.000 GB available memory"),
            _point(1_000_000, "GBM", status="timeout", error="hard timeout after 840 s, in phase 'predict'",
                   phase="predict"),
            _point(1_000_000, "MAYA", status="failed", error="child process died, exit code -9 (killed: out of "
                                                             "memory?), in phase 'fit'"),
            {**_point(39_074, "GBM", fit_s=9.0, predict_s_per_1k=0.02, mem_peak_mb=700.0, accuracy=0.87,
                      roc_auc=0.925), "task": "adult", "kind": "real", "cols": 14}]
    for r in rows:
        append_result(tmp_path / "results.jsonl", {"dataset": r["task"], "seed": 0, "config": "c", "num_cpus": 2,
                                                   "package_commit": "abc1234", **r})
    assert len(read_results(tmp_path / "results.jsonl")) == len(rows)
    text = sr.report(tmp_path)
    assert (tmp_path / "results.md").read_text() == text
    assert (tmp_path / "scaling.png").stat().st_size > 0
    csv = pd.read_csv(tmp_path / "results.csv")
    assert len(csv) == len(rows) and sorted(csv["status"]) == sorted(r["status"] for r in rows)

    rows_section = text.split("## Rows axis")[1].split("## ")[0]
    for status in ("declined", "timeout", "failed"):
        assert f"| {status} |" in rows_section
    assert "Estimated to require 41.000 GB" in text  # the reason AutoGluon logged
    assert "hard timeout after 840 s, in phase 'predict'" in text
    assert "exit code -9" in text
    assert "| 130.0 (120, over) |" in text and "| 2.0 (120) |" in text
    assert "RMSE 0.52" in text and "acc 0.8700, AUC 0.9250" in text.split("## Real tables")[1]
    exps = text.split("## Exponents over training rows")[1]
    assert "| GBM | 1.00 | 0.00 | 0.30 | 1,000–10,000 (2 sizes) | 0 |" in exps  # log10(800/400) = 0.30
    assert "| MAYA | — | — | — | 1,000 (1 size) | 1 |" in exps
    # a folder with no results yet still gets its report
    assert "No results yet." in sr.report(tmp_path / "empty") and (tmp_path / "empty" / "scaling.png").exists()


def test_tabswift_estimate_is_recomputed_for_the_weights_the_fit_loaded():
    """"auto" sizes TabSwift's pre-fit estimate for the released network; a fit that loaded the shipped weights is
    judged against the estimate for those, the released ones against their own pre-fit estimate."""
    from autogluon_maya.tabswift.memory import estimate_fit_memory

    row = {"model": "TABSWIFT", "status": "ok", "tabswift_weights": "shipped", "n_train_internal": 9000,
           "n_val_internal": 1000, "cols": 10, "mem_estimate_mb": 2092.8, "model_fit_increase_mb": 450.0}
    X = pd.DataFrame(np.zeros((9000, 10)))
    shipped = estimate_fit_memory(X, {"checkpoint_path": "shipped"}, X_val=X.iloc[:1000]) / 2**20
    released = estimate_fit_memory(X, {"checkpoint_path": "auto"}, X_val=X.iloc[:1000]) / 2**20
    assert sr.tabswift_estimate_as_loaded_mb(row) == pytest.approx(shipped)
    assert sr._estimate_model_ratio(row) == pytest.approx(shipped / 450.0)
    without_val = sr.tabswift_estimate_as_loaded_mb({**row, "n_val_internal": 0})
    assert without_val < shipped  # no validation rows: no fine-tuning term, as in the fit
    if released > shipped:  # "auto" expects the released network where a download may happen
        assert sr._estimate_model_ratio(row) < 2092.8 / 450.0
    assert sr.tabswift_estimate_as_loaded_mb({**row, "tabswift_weights": "released"}) is None
    assert sr.tabswift_estimate_as_loaded_mb({**row, "model": "MAYA"}) is None
    assert sr._estimate_model_ratio({**row, "model": "MAYA"}) == pytest.approx(2092.8 / 450.0)
