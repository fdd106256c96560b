"""Report logic of the ensemble benchmark (examples/benchmarks/mixed_ensemble_benchmark.py) on hand-made
numbers: errors, relative error reduction, win/tie/loss and the sign test, the tree-wrong/neural-right counts,
PAMA of the individual models, the P1 row cap and the over-time rule; then the script's resume and report
on synthetic result rows, with a stand-in for the child fit (no model is fitted)."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from benchlib.ensemble import (
    base_name,
    best_by_validation,
    final_weights,
    error_of,
    family,
    max_rows_for_train,
    mean_finite,
    outcome,
    over_time,
    p1_train_rows,
    pama_of_models,
    relative_error_reduction,
    sign_test,
    stack_level,
    tree_wrong_neural_right,
    win_tie_loss,
)
from benchlib.ensemble_report import neural_models_section, report_paths, versions_section
from benchlib.ensemble_store import version_of, versions
from benchlib.protocol import Dataset, p1_split

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "benchmarks" / "mixed_ensemble_benchmark.py"


# --- errors and relative error reduction ---------------------------------------------------------------

def test_error_is_one_minus_accuracy_or_rmse():
    assert error_of(0.9, "accuracy") == pytest.approx(0.1)
    assert error_of(2.5, "root_mean_squared_error") == 2.5
    with pytest.raises(ValueError, match="roc_auc"):
        error_of(0.9, "roc_auc")
    with pytest.raises(ValueError, match="outside"):
        error_of(1.2, "accuracy")


def test_relative_error_reduction():
    # accuracy .91 vs .90: errors .09 vs .10 -> A removes 10 % of B's errors
    assert relative_error_reduction(0.09, 0.10) == pytest.approx(0.10)
    # RMSE 2.4 vs 2.0: 20 % more error
    assert relative_error_reduction(2.4, 2.0) == pytest.approx(-0.20)
    assert relative_error_reduction(0.0, 0.0) == 0.0
    assert math.isnan(relative_error_reduction(0.1, 0.0))
    with pytest.raises(ValueError):
        relative_error_reduction(-0.1, 0.2)


def test_outcome_ties_equal_accuracies_despite_float_noise():
    assert outcome(1 - 0.8, 0.2) == "tie"  # 0.19999999999999996 vs 0.2
    assert outcome(0.1, 0.2) == "win"
    assert outcome(0.2, 0.1) == "loss"


# --- win / tie / loss and the sign test ------------------------------------------------------------------

def test_win_tie_loss_and_two_sided_sign_test():
    # 8 wins, 1 tie, 3 losses: the tie is dropped; P(X >= 8 | n=11, p=.5) = (165+55+11+1)/2048 = 232/2048,
    # two-sided: 464/2048 = 0.2265625
    pairs = [(0.1, 0.2)] * 8 + [(0.2, 0.2)] + [(0.3, 0.2)] * 3
    wtl = win_tie_loss(pairs)
    assert (wtl.wins, wtl.ties, wtl.losses, wtl.n) == (8, 1, 3, 12)
    assert wtl.p_value == pytest.approx(464 / 2048)
    # 6 of 6: two-sided 2 / 64
    assert sign_test(6, 0) == pytest.approx(2 / 64)
    assert sign_test(0, 6) == pytest.approx(2 / 64)
    assert win_tie_loss([(0.2, 0.2)] * 3).p_value == 1.0


def test_mean_finite_leaves_out_undefined_reductions():
    mean, left_out = mean_finite([0.1, -0.05, float("nan")])
    assert mean == pytest.approx(0.025) and left_out == 1
    assert math.isnan(mean_finite([float("nan")])[0])


# --- tree wrong, neural right ------------------------------------------------------------------------------

def test_tree_wrong_neural_right_counts():
    y = np.array(["a", "b", "a", "b", "a", "b"])
    tree = np.array(["a", "a", "b", "b", "a", "a"])      # wrong on rows 1, 2, 5
    maya = np.array(["a", "b", "a", "a", "b", "a"])      # right on 0, 1, 2
    tabswift = np.array(["b", "a", "a", "b", "a", "b"])  # right on 2, 3, 4, 5
    c = tree_wrong_neural_right(y, tree, {"Maya_BAG_L1": maya, "TabSwift_BAG_L1": tabswift})
    assert c["n"] == 6 and c["tree_wrong"] == 3
    assert c["right_when_tree_wrong"] == {"Maya_BAG_L1": 2, "TabSwift_BAG_L1": 2}  # {1, 2} and {2, 5}
    assert c["any_right_when_tree_wrong"] == 3  # {1, 2, 5}
    assert c["tree_right_when_all_wrong"] == 0  # rows 0, 3, 4: one neural model is right on each
    none = tree_wrong_neural_right(y, tree, {})
    assert none["any_right_when_tree_wrong"] == 0 and none["tree_right_when_all_wrong"] is None
    with pytest.raises(ValueError, match="Maya"):
        tree_wrong_neural_right(y, tree, {"Maya": maya[:3]})


def test_best_tree_is_chosen_on_validation():
    val = {"LightGBM_BAG_L1": 0.80, "CatBoost_BAG_L1": 0.85, "XGBoost_BAG_L1": 0.85, "Maya_BAG_L1": 0.99,
           "LightGBM_BAG_L2": float("nan")}
    trees = ["LightGBM_BAG_L1", "CatBoost_BAG_L1", "XGBoost_BAG_L1", "LightGBM_BAG_L2"]
    assert best_by_validation(val, trees) == "CatBoost_BAG_L1"  # tie with XGBoost: the first
    assert best_by_validation({"a": -2.0, "b": -1.0}, ["a", "b"]) == "b"  # RMSE negated: higher is better
    assert best_by_validation(val, ["missing"]) is None


def test_final_weights_are_the_picked_models_members():
    weights = {"WeightedEnsemble_L2": {"CatBoost_BAG_L1": 0.6, "Maya_BAG_L1": 0.4},
               "WeightedEnsemble_L3": {"Maya_BAG_L2": 0.7, "CatBoost_BAG_L2": 0.3}}
    assert final_weights({"best_model": "WeightedEnsemble_L3", "weights": weights}) == {"Maya_BAG_L2": 0.7,
                                                                                       "CatBoost_BAG_L2": 0.3}
    assert final_weights({"best_model": "Maya_BAG_L1", "weights": weights}) == {"Maya_BAG_L1": 1.0}
    assert final_weights({"best_model": "Maya_BAG_L1", "weights": None}) == {"Maya_BAG_L1": 1.0}
    assert final_weights({"best_model": "WeightedEnsemble_L2", "weights": {}}) == {}  # weights not recorded
    assert final_weights({}) == {}


def test_model_names():
    assert family("CatBoost_BAG_L1") == "GBDT" and family("Maya_d128_BAG_L2") == "MAYA"
    assert family("TabSwift_BAG_L1") == "TabSwift" and family("TabM_BAG_L1") == "TabM"
    assert family("RealMLP_BAG_L1") == "RealMLP" and family("WeightedEnsemble_L3") == "ensemble"
    assert family("KNN_BAG_L1") == "other"
    assert stack_level("CatBoost_BAG_L1") == 1 and stack_level("WeightedEnsemble_L3") == 3
    assert stack_level("CatBoost") is None
    assert base_name("Maya_d128_BAG_L1") == "Maya_d128" and base_name("WeightedEnsemble_L2") == "WeightedEnsemble"


# --- PAMA of the individual models ----------------------------------------------------------------------

def test_pama_of_models():
    # d1 accuracy: A .90 best; d2 RMSE: B 1.0 best (lower); d3 accuracy: A .70, B not fitted -> A best.
    scores = {"d1": {"A": 0.90, "B": 0.80}, "d2": {"A": 2.0, "B": 1.0}, "d3": {"A": 0.70}}
    higher = {"d1": True, "d2": False, "d3": True}
    p = pama_of_models(scores, higher)
    assert p["A"] == pytest.approx(200 / 3) and p["B"] == pytest.approx(100 / 3)
    assert list(p.index) == ["A", "B"]
    # within 15 %: d1 .80 >= .90 - .135 counts B; d2 -2.0 < -1.0 - 0.15 does not count A
    p15 = pama_of_models(scores, higher, tolerance=0.15)
    assert p15["A"] == pytest.approx(200 / 3) and p15["B"] == pytest.approx(200 / 3)


# --- P1 sizes and the time rule ---------------------------------------------------------------------------

def test_max_rows_for_train_matches_the_p1_split():
    assert max_rows_for_train(10000) == 15627
    for m in (1, 7, 100, 999, 6400, 10000):
        n = max_rows_for_train(m)
        assert p1_train_rows(n) <= m < p1_train_rows(n + 1)
    with pytest.raises(ValueError):
        max_rows_for_train(0)
    # the rounding model is sklearn's: split real frames of 15,627 and 15,628 rows
    for n, expected in ((15627, 10000), (15628, 10001)):
        df = pd.DataFrame({"x": np.arange(n), "y": np.arange(n) % 3})
        train, val, test = p1_split(Dataset("synthetic", df, "y", "multiclass"), seed=0)
        assert len(train) == expected == p1_train_rows(n)


def test_over_time_rule():
    assert not over_time(632.0, 600)  # 600 x 1.05 + 2
    assert over_time(632.01, 600)
    assert not over_time(60.0, 60) and over_time(66.0, 60)


# --- the script: resume, accumulation and the report ----------------------------------------------------

@pytest.fixture
def bench(monkeypatch):
    spec = importlib.util.spec_from_file_location("mixed_ensemble_benchmark", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "mixed_ensemble_benchmark", module)
    spec.loader.exec_module(module)
    return module


def _fake_fit(errors: dict, calls: list, fail: set = frozenset()):
    """Stand-in for the child fit: a finished row with the given test error per (dataset, config)."""

    def run_child(spec, log_path):
        key = (spec["dataset"], spec["config"])
        calls.append(key)
        if key in fail:
            return {"status": "error", "error": "RuntimeError: boom"}
        acc = 1.0 - errors[key]
        neural = {"ours": ["Maya_BAG_L1", "TabSwift_BAG_L1"], "ag_dl": ["TabM_BAG_L1"], "gbdt": [],
                  "all": ["Maya_BAG_L1", "TabSwift_BAG_L1", "TabM_BAG_L1"]}[spec["config"]]
        models = {"CatBoost_BAG_L1": {"family": "GBDT", "level": 1, "test": acc - 0.01, "val": 0.8, "fit_s": 5.0,
                                      "fit_share": 0.5}}
        models.update({m: {"family": family(m), "level": 1, "test": acc - 0.02, "val": 0.7, "fit_s": 2.0,
                           "fit_share": 0.2} for m in neural})
        return {"status": "ok", "task": "binary", "metric": "accuracy", "test_score": acc, "test_error": errors[key],
                "val_score": 0.8, "best_model": "WeightedEnsemble_L2", "neural_weight": 0.3 if neural else 0.0,
                "neural_fitted_l1": neural, "models": models, "skipped": {}, "weights": {}, "fit_s": 100.0,
                "over_time": False, "predict_s_per_1k": 0.5, "n_train": 640,
                "tree_vs_neural": {"tree_model": "CatBoost_BAG_L1", "n": 200, "tree_wrong": 20,
                                   "right_when_tree_wrong": {m: 5 for m in neural},
                                   "any_right_when_tree_wrong": 7 if neural else 0,
                                   "tree_right_when_all_wrong": 4 if neural else None}}

    return run_child



def test_a_candidate_entry_changes_ours_only(bench):
    """``--ours-add``: a config is merged into the preset's (its fit order and stacking flags stay unless it
    names them); a list replaces the preset's entry; gbdt and ag_dl do not change."""
    plain = {c: bench.config_hyperparameters(c, "light", False) for c in bench.CONFIGS}
    add = {"MAYA": {"ag_args_fit": {"max_time_limit_ratio": 0.5}},
           "TABSWIFT": [{"fine_tune": "auto", "ag_args": {"name_suffix": "_ft", "priority": 10}}]}
    hp = {c: bench.config_hyperparameters(c, "light", False, add) for c in bench.CONFIGS}
    assert hp["ours"]["MAYA"] == {**plain["ours"]["MAYA"], "ag_args_fit": {"max_time_limit_ratio": 0.5}}
    assert hp["ours"]["MAYA"]["ag_args"] == plain["ours"]["MAYA"]["ag_args"]  # the priority stays
    assert hp["ours"]["TABSWIFT"] == add["TABSWIFT"]
    assert hp["gbdt"] == plain["gbdt"] and hp["ag_dl"] == plain["ag_dl"]
    hp["ours"]["TABSWIFT"][0]["fine_tune"] = False  # the caller's dict is not shared
    assert add["TABSWIFT"][0]["fine_tune"] == "auto"


def test_a_candidate_run_has_ours_rows_of_its_own_and_shares_the_others(bench, tmp_path, monkeypatch):
    """Rows written before the setting existed count as fits without a candidate; a candidate refits ours only,
    its child gets the entries, and its report sets the candidate's ours beside the shared gbdt fit."""
    data = _datasets(tmp_path, ["d1"])
    monkeypatch.setattr(bench, "code_version", lambda out: {"commit": "c", "code_commit": "c", "package_commit": "c"})
    out = tmp_path / "out"
    argv = ["--data-dir", data, "--datasets", "d1", "--configs", "gbdt,ours", "--time-limit", "60", "--out", str(out)]
    calls, specs = [], []
    fake = _fake_fit({("d1", "gbdt"): 0.2, ("d1", "ours"): 0.1}, calls)
    monkeypatch.setattr(bench, "run_child", lambda spec, log: specs.append(spec) or fake(spec, log))
    bench.main(argv)
    old = [{k: v for k, v in r.items() if k != "ours_add"} for r in bench.read_rows(out)]  # before the setting
    (out / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    calls.clear()
    bench.main(argv)
    assert calls == []  # done: no candidate either way
    base_report = (out / "results.md").read_text()

    add = {"MAYA": {"ag_args_fit": {"max_time_limit_ratio": 0.5}}}
    fake = _fake_fit({("d1", "gbdt"): 0.2, ("d1", "ours"): 0.05}, calls)
    bench.main(argv + ["--ours-add", json.dumps(add)])
    assert calls == [("d1", "ours")]  # gbdt is shared
    assert json.loads(specs[-1]["ours_add"]) == add and json.loads(bench.read_rows(out)[-1]["ours_add"]) == add
    report = (out / "results_candidate.md").read_text()  # beside the base run's report, which stays
    assert "ours with the candidate entries" in report and "+75.00%" in report  # (0.2 - 0.05) / 0.2 vs gbdt
    assert (out / "results.md").read_text() == base_report and "candidate entries" not in base_report
    with pytest.raises(SystemExit):
        bench.parse_args(argv + ["--ours-add", '["MAYA"]'])

def test_every_fit_keeps_a_log_of_its_own(bench, tmp_path, monkeypatch):
    """Seed 0 keeps the names of the first runs; another seed and a candidate write logs beside them."""
    data = _datasets(tmp_path, ["d1"])
    monkeypatch.setattr(bench, "code_version", lambda out: {"commit": "c", "code_commit": "c", "package_commit": "c"})
    out = tmp_path / "out"
    argv = ["--data-dir", data, "--datasets", "d1", "--configs", "ours", "--time-limit", "60", "--out", str(out)]
    logs, calls = [], []
    fake = _fake_fit({("d1", "ours"): 0.1}, calls)
    monkeypatch.setattr(bench, "run_child", lambda spec, log: logs.append(log.name) or fake(spec, log))
    bench.main(argv)
    bench.main(argv + ["--seed", "1"])
    bench.main(argv + ["--seed", "1", "--ours-add", '{"MAYA": {"ag_args": {"priority": 10}}}'])
    assert logs == ["d1_ours.log", "d1_ours_seed1.log", "d1_ours_seed1_candidate.log"]


def test_each_split_seed_has_its_own_report(bench, tmp_path, monkeypatch):
    """Rows of two split seeds in one folder: a seed-1 run leaves seed 0's report as it was and writes its own
    beside it; --report-only rebuilds the latest seed's report, or the seed given."""
    data = _datasets(tmp_path, ["d1"])
    monkeypatch.setattr(bench, "code_version", lambda out: {"commit": "c", "code_commit": "c", "package_commit": "c"})
    out = tmp_path / "out"
    argv = ["--data-dir", data, "--datasets", "d1", "--configs", "gbdt,ours", "--time-limit", "60", "--out", str(out)]
    monkeypatch.setattr(bench, "run_child", _fake_fit({("d1", "gbdt"): 0.2, ("d1", "ours"): 0.1}, []))
    bench.main(argv)
    seed0 = (out / "results.md").read_text()
    assert "(64/16/20, seed 0," in seed0 and "ours vs gbdt: no dataset" not in seed0
    bench.main(argv + ["--seed", "1", "--configs", "ours"])
    assert (out / "results.md").read_text() == seed0
    seed1 = (out / "results_seed1.md").read_text()
    assert "(64/16/20, seed 1," in seed1 and "ours vs gbdt: no dataset with both fits yet" in seed1
    assert all((out / f).stat().st_size > 0 for f in ("error_reduction_seed1.png", "pama_seed1.png"))

    for f in ("results.md", "results_seed1.md"):
        (out / f).unlink()
    bench.main(["--report-only", "--out", str(out)])
    assert (out / "results_seed1.md").read_text() == seed1 and not (out / "results.md").exists()
    bench.main(["--report-only", "--seed", "0", "--out", str(out)])
    assert (out / "results.md").read_text() == seed0
    with pytest.raises(SystemExit, match="no results of split seed 2"):
        bench.main(["--report-only", "--seed", "2", "--out", str(out)])


def test_report_paths_name_the_seed_and_the_candidate(bench, tmp_path):
    names = {v: sorted(p.name for p in report_paths(tmp_path, v).values()) for v in (None, 0, "0", "", 1, "1")}
    assert names[None] == names[0] == names["0"] == names[""] == ["error_reduction.png", "pama.png", "results.md"]
    assert names[1] == names["1"] == ["error_reduction_seed1.png", "pama_seed1.png", "results_seed1.md"]
    assert report_paths(tmp_path, 1, candidate=True)["results.md"].name == "results_seed1_candidate.md"
    assert report_paths(tmp_path, 0, candidate=True)["pama.png"].name == "pama_candidate.png"


def _datasets(tmp_path, names):
    for n in names:
        (tmp_path / "data" / n).mkdir(parents=True)
        (tmp_path / "data" / n / "meta.json").write_text("{}")
    return str(tmp_path / "data")


def test_resume_skips_done_pairs_retries_failures_and_accumulates(bench, tmp_path, monkeypatch):
    data = _datasets(tmp_path, ["d1", "d2"])
    errors = {(d, c): e for d, es in {"d1": (0.20, 0.10, 0.15, 0.12), "d2": (0.30, 0.33, 0.30, 0.29)}.items()
              for c, e in zip(bench.CONFIGS, es)}
    monkeypatch.setattr(bench, "code_version", lambda out: {"commit": "abc1234-dirty", "code_commit": "abc1234"})
    out = tmp_path / "out"
    argv = ["--data-dir", data, "--datasets", "d1,d2", "--time-limit", "60", "--out", str(out)]

    calls = []
    monkeypatch.setattr(bench, "run_child", _fake_fit(errors, calls, fail={("d2", "ag_dl")}))
    bench.main(argv)
    assert len(calls) == 8
    rows = bench.read_rows(out)
    assert [r["status"] for r in rows].count("error") == 1
    assert all(r["commit"] == "abc1234-dirty" and "5-fold bagging" in r["ensembling"] for r in rows)

    calls.clear()  # second run: only the failed pair is fitted again, rows accumulate
    monkeypatch.setattr(bench, "run_child", _fake_fit(errors, calls))
    bench.main(argv)
    assert calls == [("d2", "ag_dl")]
    assert len(bench.read_rows(out)) == 9

    calls.clear()  # other settings are other results
    bench.main(argv[:-2] + ["--num-bag-folds", "3", "--configs", "gbdt", "--out", str(out)])
    assert calls == [("d1", "gbdt"), ("d2", "gbdt")]

    calls.clear()
    bench.main(argv + ["--refit", "--configs", "ours", "--datasets", "d1"])
    assert calls == [("d1", "ours")]


def test_refit_stale_reruns_only_pairs_not_yet_run_by_this_package_version(bench, tmp_path, monkeypatch):
    data = _datasets(tmp_path, ["d1", "d2"])
    errors = {(d, c): 0.2 for d in ("d1", "d2") for c in bench.CONFIGS}
    out = tmp_path / "out"
    argv = ["--data-dir", data, "--datasets", "d1,d2", "--time-limit", "60", "--out", str(out)]
    calls = []
    monkeypatch.setattr(bench, "run_child", _fake_fit(errors, calls))
    monkeypatch.setattr(bench, "code_version", lambda out: {"commit": "p1", "code_commit": "p1",
                                                            "package_commit": "p1"})
    bench.main(argv)
    assert len(calls) == 8

    calls.clear()  # the package changed: ours is stale everywhere, the other configurations are not asked for
    monkeypatch.setattr(bench, "code_version", lambda out: {"commit": "p2", "code_commit": "p2",
                                                            "package_commit": "p2"})
    bench.main(argv + ["--configs", "ours", "--refit-stale", "--datasets", "d1"])
    assert calls == [("d1", "ours")]
    calls.clear()  # resumed: what p2 already ran is done
    bench.main(argv + ["--configs", "ours", "--refit-stale"])
    assert calls == [("d2", "ours")]
    calls.clear()
    bench.main(argv + ["--configs", "ours", "--refit-stale"])
    assert calls == []
    order, latest = versions(bench.read_rows(out), None)
    assert order == ["p1", "p2"] and {d for d, v in latest if v == "p2"} == {"d1", "d2"}


def test_report_from_rows(bench, tmp_path, monkeypatch):
    data = _datasets(tmp_path, ["d1", "d2", "d3"])
    # ours vs gbdt: d1 .10 vs .20 (+50 %, win), d2 .33 vs .30 (-10 %, loss), d3 .25 vs .25 (tie)
    # all vs ag_dl: d1 .12 vs .15 (+20 %), d2 .24 vs .30 (+20 %), d3 .40 vs .50 (+20 %)
    errors = {(d, c): e for d, es in {"d1": (0.20, 0.10, 0.15, 0.12), "d2": (0.30, 0.33, 0.30, 0.24),
                                       "d3": (0.25, 0.25, 0.50, 0.40)}.items() for c, e in zip(bench.CONFIGS, es)}
    monkeypatch.setattr(bench, "code_version", lambda out: {"commit": "abc1234", "code_commit": "abc1234"})
    monkeypatch.setattr(bench, "run_child", _fake_fit(errors, []))
    out = tmp_path / "out"
    bench.main(["--data-dir", data, "--datasets", "d1,d2,d3", "--time-limit", "60", "--out", str(out)])
    text = bench.write_report(out)  # --report-only: the settings of the latest row
    assert "ours vs gbdt on 3 datasets: **1 wins / 1 ties / 1 losses**" in text
    assert "median over the 3 datasets with all 4 fits: gbdt 0.50 s, ours 0.50 s, ag_dl 0.50 s, all 0.50 s" in text
    # (50 - 10 + 0) / 3; median 0; the best dataset d1 (+50 %) left out: (-10 + 0) / 2
    assert ("mean relative error reduction **+13.33%**, median +0.00%; worst dataset -10.00% (d2); without the "
            "best dataset (d1): mean -5.00%") in text
    assert "all vs ag_dl on 3 datasets: **3 wins / 0 ties / 0 losses**" in text
    assert "- all ≥ ag_dl on ≥ 2 of 3: 3 — met" in text
    assert "- mean relative error reduction of all over ag_dl ≥ 1 %: +20.00% — met" in text
    # ours vs ag_dl: d1 .10 vs .15 (+33.3 %), d2 .33 vs .30 (-10 %), d3 .25 vs .50 (+50 %)
    assert "ours vs ag_dl on 3 datasets: **2 wins / 0 ties / 1 losses**" in text
    # targets: ours >= gbdt on 2 of 3 (need 2) met; worst -10 % missed; mean +13.3 % met; >= ag_dl on 2 (need 2)
    assert "- ours ≥ gbdt on ≥ 2 of 3: 2 — met" in text
    assert "worst -10.00% — **missed**" in text and "+13.33% — met" in text
    assert "- ours ≥ ag_dl on ≥ 2 of 3: 2 — met" in text
    # all vs ag_dl +20 % everywhere; all vs gbdt: d1 (.20 - .12) / .20 = +40 %, d3 (.25 - .40) / .25 = -60 %
    assert ("| d1 | binary | 640 | acc ↑ | 0.8000 | **0.9000** | 0.8500 | 0.8800 | +50.00% | +33.33% | +20.00% | "
            "+40.00% | ours |") in text
    assert ("| d3 | binary | 640 | acc ↑ | **0.7500** | **0.7500** | 0.5000 | 0.6000 | +0.00% | +50.00% | +20.00% | "
            "-60.00% | gbdt=ours |") in text
    assert "| d1 | ours | 200 | 20 | 7 | Maya 5, TabSwift 5 | 4 |" in text
    # individual models (test acc): CatBoost from the gbdt fit = gbdt - .01, the neural ones = their fit - .02.
    # d1: Maya = TabSwift .88 > TabM .83 > CatBoost .79; d2: CatBoost .69 > TabM .68 > .65; d3: CatBoost .74 best
    assert "| CatBoost | GBDT | 67 | 67 |" in text
    assert "| Maya | MAYA | 33 | 33 |" in text and "| TabM | TabM | 0 | 0 |" in text
    assert (out / "error_reduction.png").stat().st_size > 0 and (out / "pama.png").stat().st_size > 0


def test_report_reads_the_earlier_csv_with_mixed_as_ours(bench, tmp_path):
    out = tmp_path / "old"
    out.mkdir()
    header = ("dataset,config,status,task,metric,test_score,val_score,best_model,n_models,nn_weight,weights,models,"
              "fit_s,n_train,n_val,n_test,preset,time_limit,max_rows,seed,num_bag_folds,num_stack_levels,smoke,"
              "num_cpus,num_gpus,error,finished")
    rows = ['cpu_act,gbdt,ok,regression,root_mean_squared_error,2.5,2.4,WeightedEnsemble_L3,8,0.0,"{}",x,'
            "100,5242,1311,1639,light,150.0,10000,0,3,1,False,1,,,2026-11-29 15:35:45",
            'cpu_act,mixed,ok,regression,root_mean_squared_error,2.0,2.1,WeightedEnsemble_L3,8,0.25,'
            '"{""Maya_BAG_L1"": 0.25}",LightGBM_BAG_L1 Maya_BAG_L1 Maya_BAG_L2,'
            "160,5242,1311,1639,light,150.0,10000,0,3,1,False,1,,,2026-11-29 15:40:45"]
    (out / "results.csv").write_text("\n".join([header, *rows]) + "\n")
    text = bench.write_report(out)
    assert ("| cpu_act | regression | 5242 | RMSE ↓ | 2.5000 | **2.0000** | — | +20.00% | n/a | ours | 0.25 / — |"
            in text)
    assert json.loads(json.dumps(bench.read_rows(out)[1]["weights"])) == {"WeightedEnsemble_L3": {"Maya_BAG_L1": 0.25}}
    assert "with neither MAYA nor TabSwift fitted: none" in text  # Maya_BAG_L1 is among the old row's models
    assert "fits over time_limit × 1.05 + 2 s: cpu_act/ours" in text  # 160 s > 150 x 1.05 + 2


def test_skipped_models_say_why(bench):
    expected = ["LightGBM_BAG_L1", "Maya_BAG_L1", "TabSwift_BAG_L1", "TabM_BAG_L1", "RealMLP_BAG_L1", "KNN_BAG_L1",
                "LightGBM_BAG_L2"]
    failures = {"Maya_BAG_L1": {"exc_type": "TimeLimitExceeded", "exc_str": "", "total_time": 3.0},
                "TabSwift_BAG_L1": {"exc_type": "NotEnoughMemoryError", "exc_str": "needs 9 GB"},
                "TabM_BAG_L1": {"exc_type": "RuntimeError", "exc_str": "boom"}}
    skipped = bench.skipped_models(expected, ["LightGBM_BAG_L1"], failures, {"KNN_BAG_L1": "too many rows"},
                                   {"RealMLP_BAG_L1": {"allotted_s": 0.5, "fitted": False}})
    assert {m: s["reason"] for m, s in skipped.items()} == {
        "Maya_BAG_L1": "time", "TabSwift_BAG_L1": "memory", "TabM_BAG_L1": "error", "KNN_BAG_L1": "constraint",
        "RealMLP_BAG_L1": "not started", "LightGBM_BAG_L2": "not started"}
    assert "0.5 s" in skipped["RealMLP_BAG_L1"]["detail"] and "stack level" in skipped["LightGBM_BAG_L2"]["detail"]
    assert "boom" in skipped["TabM_BAG_L1"]["detail"]


def test_expected_model_names_follow_autogluon_naming(bench):
    hp = {"GBM": {}, "MAYA": [{"ag_args": {"priority": 20}}, {"ag_args": {"name_suffix": "_d128"}}],
          "TABSWIFT": {"ag_args": {"valid_stacker": False}}, "CAT": {"ag_args": {"valid_base": False}}}
    assert bench.expected_models(hp, 1) == ["LightGBM_BAG_L1", "LightGBM_BAG_L2", "Maya_BAG_L1", "Maya_BAG_L2",
                                            "Maya_d128_BAG_L1", "Maya_d128_BAG_L2", "TabSwift_BAG_L1",
                                            "CatBoost_BAG_L2"]


def test_configurations_share_the_trees(bench):
    hp = {c: bench.config_hyperparameters(c, "light", smoke=False) for c in bench.CONFIGS}
    trees = {k: hp["gbdt"][k] for k in ("GBM", "CAT", "XGB")}
    assert set(hp["gbdt"]) == {"GBM", "CAT", "XGB"}
    assert {k: hp["ours"][k] for k in trees} == trees and {"MAYA", "TABSWIFT"} <= set(hp["ours"])
    assert {k: hp["ag_dl"][k] for k in trees} == trees and set(hp["ag_dl"]) - set(trees) == {"TABM", "REALMLP"}
    # ag_dl as a user writes it: AutoGluon's own defaults and schedule, nothing of ours
    assert hp["ag_dl"]["TABM"] == hp["ag_dl"]["REALMLP"] == {}
    # all: every family; TabM, MAYA, RealMLP after LightGBM (90) and before CatBoost (70), each an equal share
    assert set(hp["all"]) == set(trees) | {"MAYA", "TABSWIFT", "TABM", "REALMLP"}
    assert {k: hp["all"][k] for k in trees} == trees and hp["all"]["TABSWIFT"] == hp["ours"]["TABSWIFT"]
    schedule = [(hp["all"][k]["ag_args"]["priority"], hp["all"][k]["ag_args_fit"]["max_time_limit_ratio"])
                for k in ("TABM", "MAYA", "REALMLP")]
    priorities = [p for p, _ in schedule]
    assert all(90 > p > 70 for p in priorities) and priorities == sorted(priorities, reverse=True)
    # each takes at most an equal share of what is left for itself and the families after it: 1/5, 1/4, 1/3
    assert [r for _, r in schedule] == pytest.approx([1 / 5, 1 / 4, 1 / 3])
    left = 1.0
    for _, r in schedule:
        left -= r * left
    assert left == pytest.approx(2 / 5)  # CatBoost and XGBoost keep at least this share of the level


def _ours_row(dataset, version, val, test, metric="accuracy", **extra):
    return {"dataset": dataset, "config": "ours", "status": "ok", "metric": metric, "package_commit": version,
            "val_score": val, "test_score": test, "fit_s": 100.0, "neural_weight": 0.1,
            "best_model": "WeightedEnsemble_L2", "time_limit": 60.0, **extra}


def test_versions_section_compares_each_package_version_with_the_one_before(bench):
    rows = [_ours_row("d1", "aaa1111", 0.80, 0.70), _ours_row("d2", "aaa1111", 2.0, 3.0, "root_mean_squared_error"),
            _ours_row("d1", "bbb2222", 0.90, 0.60),  # val error .20 -> .10: +50 %; test .30 -> .40: -33 %
            _ours_row("d2", "bbb2222", 2.5, 2.0, "root_mean_squared_error"),  # val 2.0 -> 2.5: -25 %; test +33 %
            _ours_row("d1", "bbb2222", 0.95, 0.65, time_limit=120.0),  # other settings: not counted
            {"dataset": "d1", "config": "gbdt", "status": "ok", "metric": "accuracy", "val_score": 0.85,
             "test_score": 0.75, "time_limit": 60.0}]
    order, latest = versions(rows, {"time_limit": 60.0})
    assert order == ["aaa1111", "bbb2222"] and latest[("d1", "bbb2222")]["val_score"] == 0.90
    text = "\n".join(versions_section(rows, {"time_limit": 60.0}))
    # validation: d1 win, d2 loss; mean (+50 - 25) / 2 = +12.5 %.  test: d1 loss (-33.3 %), d2 win (+33.3 %)
    assert "- bbb2222 vs aaa1111 on 2 datasets, validation: 1 wins / 0 ties / 1 losses, mean relative error " \
           "reduction +12.50%" in text
    assert "- bbb2222 vs aaa1111 on 2 datasets, test: 1 wins / 0 ties / 1 losses, mean relative error " \
           "reduction +0.00%" in text
    assert "| d1 | bbb2222 | 0.9000 | 0.6000 | 100 | 0.10 | WeightedEnsemble_L2 | 0.8500 / 0.7500 |" in text
    assert "| d2 | aaa1111 | 2.0000 | 3.0000 | 100 | 0.10 | WeightedEnsemble_L2 | — |" in text


def test_version_of_rows_without_a_package_commit(bench, tmp_path):
    from benchlib.provenance import git, package_commit

    assert version_of({"package_commit": "ccc3333"}) == "ccc3333"
    # no repository to look the commit up in: the recorded code commit stands in
    assert version_of({"commit": "ddd4444-dirty", "code_commit": "ddd4444"}) == "ddd4444"
    repo = Path(__file__).resolve().parents[2]
    if not (repo / ".git").exists():
        pytest.skip("not a git checkout")
    head = git(repo, "rev-parse", "--short", "HEAD")
    assert version_of({"commit": head + "-dirty"}, repo) == package_commit(repo) + "-dirty"


def test_neural_models_section_sets_each_neural_model_beside_the_best_tree_of_its_level(bench):
    def m(level, val, share, allotted=None):
        return {"level": level, "val": val, "wall_s": 100 * share, "fit_share": share, "allotted_s": allotted}

    reg = {"metric": "root_mean_squared_error", "best_model": "WeightedEnsemble_L3",
           "weights": {"WeightedEnsemble_L3": {"LightGBM_BAG_L2": 0.7, "Maya_BAG_L1": 0.3}},
           "models": {"LightGBM_BAG_L1": m(1, 3.0, 0.1), "CatBoost_BAG_L1": m(1, 2.0, 0.3),
                      "Maya_BAG_L1": m(1, 2.5, 0.2, 50.0), "LightGBM_BAG_L2": m(2, 1.5, 0.1),
                      "Maya_BAG_L2": m(2, 1.4, 0.25, 40.0), "WeightedEnsemble_L3": m(3, 1.3, 0.0)}}
    clf = {"metric": "accuracy", "best_model": "TabM_BAG_L2",  # a single model picked: all its weight
           "models": {"CatBoost_BAG_L1": m(1, 0.80, 0.4), "TabM_BAG_L1": m(1, 0.70, 0.2),
                      "CatBoost_BAG_L2": m(2, 0.81, 0.1), "TabM_BAG_L2": m(2, 0.85, 0.05)}}
    latest = {("d1", "ours"): reg, ("d1", "gbdt"): {"metric": "accuracy", "models": {}}, ("d2", "ag_dl"): clf}
    text = "\n".join(neural_models_section(latest, ["d1", "d2"]))
    # regression: the best tree is the lowest RMSE of its own level (2.0 at L1, 1.5 at L2)
    assert "| d1 | ours | Maya@L1 | 50 | 20 | 20% | 2.5000 | 2.0000 | 0.30 |" in text
    assert "| d1 | ours | Maya@L2 | 40 | 25 | 25% | 1.4000 | 1.5000 | 0.00 |" in text
    # classification: the highest accuracy of the level; no allotted time recorded
    assert "| d2 | ag_dl | TabM@L1 | — | 20 | 20% | 0.7000 | 0.8000 | 0.00 |" in text
    assert "| d2 | ag_dl | TabM@L2 | — | 5 | 5% | 0.8500 | 0.8100 | 1.00 |" in text
    assert "LightGBM@L" not in text and "| d1 | gbdt" not in text
    assert "- `ours`: 1 level-2 neural stackers fitted, 25-25 % of their fit's wall time each; weighted in the " \
           "final model: 0 of 1" in text
    assert "- `ag_dl`: 1 level-2 neural stackers fitted, 5-5 % of their fit's wall time each; weighted in the " \
           "final model: 1 of 1" in text


def test_the_documented_recipe_builds_the_all_configuration(bench):
    """docs/ensemble_benchmark.md gives users the ``hyperparameters`` of ``all`` as a recipe: it must build
    exactly what the benchmark measured."""
    import re

    doc = (SCRIPT.parents[2] / "docs" / "ensemble_benchmark.md").read_text()
    code = re.search(r"<!-- recipe:all -->\n```python\n(.*?)```", doc, re.S).group(1)
    scope: dict = {}
    exec(code, scope)
    assert scope["hp"] == bench.config_hyperparameters("all", "light", smoke=False)
