"""TABSWIFT against AutoGluon's model contract and the behaviour its users expect, using the shipped
checkpoint (the one users get by default)."""

import os
from functools import lru_cache

import numpy as np
import pandas as pd
import pytest
from autogluon.tabular import TabularPredictor
from autogluon.tabular.testing import FitHelper

from autogluon_maya import TabSwiftModel
from autogluon_maya.tabswift.defaults import SHIPPED_CHECKPOINT
from autogluon_maya.tabswift.model import WEIGHTS_NAME
from plugin_tests.resources import fit_memory_in_fresh_process, memory_report
from plugin_tests.resources import torch_globals_kept  # noqa: F401  (a fixture)

# tests fit models (which seed torch) or set torch's thread count: both are put back after each
pytestmark = pytest.mark.usefixtures("torch_globals_kept")

FAST = {"n_estimators": 2, "max_context_rows": 512, "fine_tune": False}  # zero-shot: fine-tuning has its own tests


def test_shipped_checkpoint_loads_and_describes_itself():
    from autogluon_maya.tabswift.model import describe_checkpoint
    from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint

    net = load_checkpoint(SHIPPED_CHECKPOINT)
    assert net.n_exit_layers == net.config.n_layers - 1  # early exit heads are part of the shipped model
    text = describe_checkpoint(SHIPPED_CHECKPOINT)
    assert "pretrained by autogluon_maya.pretraining" in text and "synthetic tasks" in text
    # the log names every stage the shipped weights went through, with the totals, not only the last stage
    import json

    lineage = json.loads(SHIPPED_CHECKPOINT.with_suffix(".json").read_text())["metadata"]["lineage"]
    assert len(lineage) >= 3 and any("stage 2" in s["step"] for s in lineage), lineage
    for stage in lineage:
        assert f"{stage['step']}: {stage['tasks']:,} tasks" in text, (stage, text)
    assert f"on {sum(s['tasks'] for s in lineage):,} synthetic tasks" in text, text


def test_verify_model_all_problem_types():
    """binary, multiclass, regression; plus bagging (2 folds, sequential, refit_folds) and refit_full."""
    FitHelper.verify_model(model_cls=TabSwiftModel, model_hyperparameters=FAST,
                           problem_types=["binary", "multiclass", "regression"], verify_load_wo_cuda=True)


def _frame(n=300, n_classes=2, seed=0, regression=False):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n),
                      "color": pd.Categorical(rng.choice(["red", "green", "blue"], size=n)),
                      "noise": rng.normal(size=n)})
    signal = 2 * X["a"] - X["b"] + (X["color"] == "red") * 1.5
    if regression:
        X["y"] = 1000 + 250 * signal + rng.normal(scale=10, size=n)
    else:
        X["y"] = pd.qcut(signal + 0.3 * rng.normal(size=n), n_classes, labels=False).astype(int)
    X.loc[rng.choice(n, 30, replace=False), "a"] = np.nan  # missing values
    return X


def _fit(train, path, hp, **kw):
    return TabularPredictor(label="y", path=str(path), verbosity=0).fit(
        train, hyperparameters={"TABSWIFT": hp}, raise_on_model_failure=True, num_cpus=1, **kw)


def test_weights_are_kept_out_of_the_pickle_and_reload_identically(tmp_path):
    train, test = _frame(300).iloc[:240], _frame(300).iloc[240:]
    pred = _fit(train, tmp_path / "ag", FAST)
    model_dir = tmp_path / "ag" / "models" / "TabSwift"
    assert (model_dir / f"{WEIGHTS_NAME}.safetensors").is_file()
    assert (model_dir / f"{WEIGHTS_NAME}.json").is_file()
    weights_bytes = (model_dir / f"{WEIGHTS_NAME}.safetensors").stat().st_size
    assert (model_dir / "model.pkl").stat().st_size < weights_bytes / 4  # context + preprocessors only
    before = pred.predict_proba(test)
    again = TabularPredictor.load(str(tmp_path / "ag")).predict_proba(test)
    np.testing.assert_allclose(again.values, before.values, atol=1e-6)


def test_categorical_and_missing_inputs_beat_chance(tmp_path):
    data = _frame(600, n_classes=2, seed=1)
    pred = _fit(data.iloc[:450], tmp_path / "ag", FAST)
    acc = (pred.predict(data.iloc[450:]) == data["y"].iloc[450:]).mean()
    assert acc > 0.7  # chance is 0.5; the signal is linear in a, b and the category


def test_regression_is_returned_in_target_units(tmp_path):
    data = _frame(400, regression=True, seed=2)
    pred = _fit(data.iloc[:300], tmp_path / "ag", FAST)
    y_hat, y = pred.predict(data.iloc[300:]), data["y"].iloc[300:]
    assert abs(y_hat.mean() - y.mean()) < 0.5 * y.std()  # standardization undone (target mean ~1000)
    assert 0.3 * y.std() < y_hat.std() < 2 * y.std()
    assert np.corrcoef(y_hat, y)[0, 1] > 0.5


def test_25_classes_through_autogluon(tmp_path):
    rng = np.random.default_rng(3)
    n = 500
    X = pd.DataFrame({"x": rng.uniform(0, 25, size=n), "z": rng.normal(size=n)})
    X["y"] = np.floor(X["x"]).astype(int).clip(0, 24)
    pred = _fit(X.iloc[:400], tmp_path / "ag", {**FAST, "n_estimators": 1})
    proba = pred.predict_proba(X.iloc[400:])
    assert proba.shape[1] == 25
    np.testing.assert_allclose(proba.sum(1), 1.0, atol=1e-5)


def _tau_rule(table, base, tol):
    """The documented rule, written out independently: the lowest τ whose validation score is within
    ``tol`` (relative) of the score without early exit; None when no candidate qualifies."""
    ok = [t for t, score, _ in table if base - score <= tol * max(abs(base), 1e-12)]
    return min(ok) if ok else None


def test_tau_auto_is_chosen_on_validation_within_tolerance(tmp_path):
    from autogluon_maya.tabswift.model import TAU_CANDIDATES

    data = _frame(400, seed=4)
    # tau_max_loss=1.0 accepts every candidate: a τ must be chosen, the lowest one, and it must exit early
    pred = _fit(data.iloc[:320], tmp_path / "ag", {**FAST, "tau": "auto", "tau_max_loss": 1.0},
                tuning_data=data.iloc[320:])
    model = pred._trainer.load_model("TabSwift")
    s = model._fit_summary
    assert [t for t, _, _ in s["tau_table"]] == list(TAU_CANDIDATES)  # every candidate was scored
    assert s["tau"] == min(TAU_CANDIDATES) and model.model.tau == s["tau"]
    assert s["tau_mean_exit_layer"] < model.model.network.config.n_layers  # queries really left early
    # the τ is carried to refit_full: the all-rows model predicts with the same threshold
    full = pred._trainer.load_model(pred.refit_full(model="TabSwift")["TabSwift"])
    assert full.model.tau == s["tau"]

    # a tight tolerance: the choice follows the rule on the recorded table (which may be None)
    pred = _fit(data.iloc[:320], tmp_path / "ag2", {**FAST, "tau": "auto", "tau_max_loss": 0.02},
                tuning_data=data.iloc[320:])
    s = pred._trainer.load_model("TabSwift")._fit_summary
    assert s["tau"] == _tau_rule(s["tau_table"], s["val_score_no_exit"], 0.02)


def test_fine_tuning_never_ends_below_zero_shot_on_validation(tmp_path):
    data = _frame(400, seed=5)
    hp = {**FAST, "fine_tune": True, "fine_tune_steps": 6, "fine_tune_eval_every": 3, "fine_tune_rows": 128}
    val = data.iloc[320:]
    pred = _fit(data.iloc[:320], tmp_path / "ag", hp, tuning_data=val)
    model = pred._trainer.load_model("TabSwift")
    s = model._fit_summary
    assert s["fine_tune_steps"] >= 3
    # the recorded best score is the validation score of the weights actually kept (FAST has 2 members,
    # the number fine-tuning validates with), recomputed here from the saved model
    assert len(model.model.members_) == 2
    X_val = pred.transform_features(val.drop(columns="y"))
    kept = model.score_with_y_pred_proba(y=pred.transform_labels(val["y"]).to_numpy(),
                                         y_pred_proba=model.predict_proba(X_val))
    assert kept == pytest.approx(s["best_val_score"], abs=1e-9)
    assert kept >= s["zero_shot_val_score"]
    assert model.params_trained["fine_tune_steps"] == s["best_step"]
    # the kept weights are the best step's: the pretrained ones exactly when no step beat zero-shot
    import torch

    from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint

    pretrained = load_checkpoint(SHIPPED_CHECKPOINT).state_dict()
    tuned = model.model.network.state_dict()
    unchanged = all(torch.equal(pretrained[k], tuned[k].cpu()) for k in pretrained)
    assert unchanged == (s["best_step"] == 0)


def test_corrupt_checkpoint_is_a_clear_error(tmp_path):
    import shutil

    bad = tmp_path / "bad"
    for suffix in (".safetensors", ".json"):
        shutil.copy(SHIPPED_CHECKPOINT.with_name(SHIPPED_CHECKPOINT.name + suffix), bad.with_name("bad" + suffix))
    raw = bytearray(bad.with_name("bad.safetensors").read_bytes())
    raw[-10] ^= 0xFF
    bad.with_name("bad.safetensors").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match="checksum"):
        _fit(_frame(100), tmp_path / "ag", {**FAST, "checkpoint_path": str(bad)})


def test_row_cap_skips_instead_of_failing(tmp_path):
    data = _frame(300)
    pred = TabularPredictor(label="y", path=str(tmp_path / "ag"), verbosity=0).fit(
        data, hyperparameters={"TABSWIFT": {**FAST, "ag.max_rows": 100}, "DUMMY": {}}, num_cpus=1)
    assert "TabSwift" not in pred.model_names()
    # skipped because of the row cap, not because it crashed
    assert "TabSwift" not in pred._trainer._models_failed_to_train_errors
    assert "max_rows" in pred._trainer._models_skipped_by_constraint.get("TabSwift", ""), \
        pred._trainer._models_skipped_by_constraint
    # ... and a cap above the table size trains it
    pred = TabularPredictor(label="y", path=str(tmp_path / "ag2"), verbosity=0).fit(
        data, hyperparameters={"TABSWIFT": {**FAST, "ag.max_rows": 1000}, "DUMMY": {}}, num_cpus=1)
    assert "TabSwift" in pred.model_names()


def test_memory_estimate_grows_with_context():
    def est(n, f=10, **hp):
        X = pd.DataFrame(np.zeros((n, f)))
        return TabSwiftModel._estimate_memory_usage_static(X=X, hyperparameters=hp, num_classes=2)

    assert est(4_000) > est(500)
    assert est(20_000) == est(2_048)  # above max_context_rows (2048) the context, not the table, is held
    assert est(20_000, max_context_rows=16_000) > est(20_000)


def test_memory_estimate_follows_the_checkpoint_and_fine_tuning(tmp_path, monkeypatch):
    """The caches scale with the network the fit loads: the released size (24 x 192, 64 registers; "hub" before
    a conversion) against the shipped one (6 x 128); fine-tuning adds its episodes' backward pass, and "auto"
    counts it only where validation rows are given."""
    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "empty_cache"))
    X = pd.DataFrame(np.zeros((2_000, 10)))

    def est(**kw):
        hp = {"fine_tune": False, **kw.pop("hp", {})}
        return TabSwiftModel._estimate_memory_usage_static(X=X, hyperparameters=hp, num_classes=2, **kw)

    shipped, released = est(hp={"checkpoint_path": "shipped"}), est(hp={"checkpoint_path": "hub"})
    assert released - shipped >= 8 * 2 * (24 * 192 * 2_064 - 6 * 128 * 2_016) * 4  # the K/V caches alone
    assert est(hp={"fine_tune": True}) > shipped
    assert est(hp={"fine_tune": "auto"}) == shipped  # no validation rows: zero-shot
    assert est(hp={"fine_tune": "auto"}, X_val=X.iloc[:100]) == est(hp={"fine_tune": True})


def test_memory_estimate_of_auto_counts_released_weights_waiting_in_the_hub_cache(tmp_path, monkeypatch):
    """checkpoint_path="auto" with the released swift.ckpt in the local Hugging Face hub cache (not converted yet):
    the fit will convert and load the released network, so the estimate is the released size, not the shipped."""
    from huggingface_hub import constants

    from autogluon_maya.tabswift.checkpoints_io.hub import FILENAME, REPO_ID

    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "empty_cache"))
    monkeypatch.delenv("AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT", raising=False)
    hub_cache = tmp_path / "hf"
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hub_cache))
    X = pd.DataFrame(np.zeros((2_000, 10)))

    def est(path):
        return TabSwiftModel._estimate_memory_usage_static(
            X=X, hyperparameters={"fine_tune": False, "checkpoint_path": path}, num_classes=2)

    assert est("auto") == est("shipped")  # nothing cached: "auto" falls back to the shipped network
    repo = hub_cache / ("models--" + REPO_ID.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text("0" * 40)
    (repo / "snapshots" / ("0" * 40)).mkdir(parents=True)
    (repo / "snapshots" / ("0" * 40) / FILENAME).write_bytes(b"not read by the estimate")
    assert est("auto") == est("hub") > est("shipped")


def test_memory_estimate_of_auto_counts_a_download_where_one_may_happen(tmp_path, monkeypatch):
    """checkpoint_path="auto" not decided yet in this process, nothing cached: a fit that may download loads the
    released network, so the estimate is the released size; where it may not, the shipped one."""
    import autogluon_maya.tabswift.checkpoints_io.choice as choice
    from huggingface_hub import constants

    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "empty_cache"))
    monkeypatch.delenv("AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    monkeypatch.setattr(choice, "auto_choice_made", lambda: None)
    X = pd.DataFrame(np.zeros((2_000, 10)))

    def est(path, gpu=False):
        method = TabSwiftModel._estimate_gpu_memory_usage_static if gpu else \
            TabSwiftModel._estimate_memory_usage_static
        return method(X=X, hyperparameters={"fine_tune": False, "checkpoint_path": path}, num_classes=2)

    monkeypatch.setattr(choice, "auto_may_download", lambda: True)
    assert est("auto") == est("hub") > est("shipped")
    assert est("auto", gpu=True) == est("hub", gpu=True) > est("shipped", gpu=True)
    monkeypatch.setattr(choice, "auto_may_download", lambda: False)
    assert est("auto") == est("shipped")
    assert est("auto", gpu=True) == est("shipped", gpu=True)


def test_memory_estimate_of_auto_follows_the_weights_auto_chose_in_this_process(tmp_path, monkeypatch):
    """Once a fit's checkpoint_path="auto" has chosen its weights, the estimates of later "auto" fits in the process
    are sized by those weights (here a tiny network), not by what the caches alone would suggest (the shipped)."""
    import autogluon_maya.tabswift.checkpoints_io.choice as sources
    from huggingface_hub import constants

    from autogluon_maya.tabswift.config import TINY
    from autogluon_maya.tabswift.network import TabSwiftNetwork
    from autogluon_maya.tabswift.checkpoints_io.format import save_checkpoint

    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "empty_cache"))
    monkeypatch.delenv("AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hf"))
    X = pd.DataFrame(np.zeros((2_000, 10)))

    def est(path, gpu=False):
        method = TabSwiftModel._estimate_gpu_memory_usage_static if gpu else \
            TabSwiftModel._estimate_memory_usage_static
        return method(X=X, hyperparameters={"fine_tune": False, "checkpoint_path": path}, num_classes=2)

    assert est("auto") == est("shipped")  # nothing chosen yet, nothing cached: the shipped network
    tiny = tmp_path / "tiny"
    save_checkpoint(TabSwiftNetwork(TINY), tiny)
    monkeypatch.setattr(sources, "auto_choice_made", lambda: tiny)
    assert est("auto") == est(str(tiny)) < est("shipped")
    assert est("auto", gpu=True) == est(str(tiny), gpu=True) < est("shipped", gpu=True)


def test_gpu_memory_estimate_follows_the_network_size_and_the_context(tmp_path, monkeypatch):
    """AutoGluon checks a GPU fit against the device's free memory and sizes parallel folds by the model's static
    GPU estimate: the released network (24 blocks x 192, 64 registers; "hub" before a conversion) needs more than
    the shipped one (6 x 128, 16 registers) by at least its members' larger caches, and more context rows, members
    or fine-tuning need more."""
    from autogluon_maya.tabswift.config import RELEASED
    from autogluon_maya.tabswift.network import TabSwiftNetwork

    monkeypatch.setenv("AUTOGLUON_MAYA_CACHE", str(tmp_path / "empty_cache"))
    assert TabSwiftModel.can_estimate_gpu_memory_usage_static()

    def gpu(rows=2_000, **hp):
        return TabSwiftModel.estimate_gpu_memory_usage_static(
            X=pd.DataFrame(np.zeros((rows, 10))), hyperparameters={"fine_tune": False, **hp},
            problem_type="binary", num_classes=2)

    shipped, released = gpu(checkpoint_path="shipped"), gpu(checkpoint_path="hub")
    # 8 members' float32 keys and values and float16 block inputs (10 bytes per token and width)
    assert released - shipped >= 8 * 10 * (24 * 192 * (2_000 + 64) - 6 * 128 * (2_000 + 16))
    weights = 4 * sum(p.numel() for p in TabSwiftNetwork(RELEASED).parameters())
    assert weights < released - 8 * 10 * 24 * 192 * (2_000 + 64) < 2 ** 30  # the network, not the caches alone
    assert gpu(500, checkpoint_path="hub") < released < gpu(4_000, checkpoint_path="hub", max_context_rows=4_000)
    assert gpu(checkpoint_path="hub", n_estimators=16) > released
    assert gpu(checkpoint_path="hub", fine_tune=True) > released


@lru_cache(maxsize=None)
def _fit_memory(rows: int) -> dict:
    """Peak memory of a default fit (8 members) on ``rows`` rows of 10 features and a 60-row prediction, and the
    model's estimate, measured once in a fresh process (two tests read it)."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(rows + 60, 10)), columns=[f"c{i}" for i in range(10)])
    y = pd.Series((X["c0"] - 0.5 * X["c1"] > 0).astype(int))
    return fit_memory_in_fresh_process("TabSwiftModel", X.iloc[:rows], y.iloc[:rows], X.iloc[rows:], {})


# 500 rows: the whole table is the context; 4,000: a context of max_context_rows (2,048).  An estimate below the
# peak lets AutoGluon start fits that do not fit; one far above it declines fits that fit and cuts parallel folds.
@pytest.mark.parametrize("rows", [500, 4_000])
def test_memory_estimate_is_within_2x_of_the_measured_peak(rows):
    r = _fit_memory(rows)
    assert r["increase"] <= r["estimate"] <= 2 * r["increase"], memory_report(r)
    assert r["proba"].shape == (60,) and np.isfinite(r["proba"]).all()


@pytest.mark.parametrize("share, replayed", [(None, 3), (0.5, 6)])
def test_fine_tuning_without_validation_replays_the_step_count(tmp_path, share, replayed):
    """The refit_full / refit_folds path: no validation rows, so the recorded step count runs and the tuned
    weights are kept (this path once crashed calling a missing score function).  A bag's record, where half
    the folds fine-tuned (``refit_fine_tune_share`` 0.5), averages 3 steps over all folds: 6 over those that did."""
    import torch

    from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint

    data = _frame(200, seed=6)
    model = TabSwiftModel(path=str(tmp_path / "m"), name="ts", problem_type="binary", eval_metric="accuracy",
                          hyperparameters={**FAST, "fine_tune": True, "fine_tune_steps": 3, "fine_tune_rows": 64,
                                           "refit_fine_tune_horizon": 30, "refit_fine_tune_share": share})
    model.fit(X=data.drop(columns="y"), y=data["y"])
    assert model._fit_summary["fine_tune_steps"] == replayed and model._fit_summary["best_step"] == replayed
    pretrained = load_checkpoint(SHIPPED_CHECKPOINT).state_dict()
    tuned = model.model.network.state_dict()
    assert any(not torch.equal(pretrained[k], tuned[k].cpu()) for k in pretrained)
    proba = model.predict_proba(data.drop(columns="y").iloc[:20])
    assert proba.shape == (20,) and np.isfinite(proba).all()


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs 2 cores to give the model 2")
@pytest.mark.parametrize("adaptive", [True, False])
def test_fit_and_predict_run_on_the_thread_count_chosen_at_fit(tmp_path, monkeypatch, adaptive):
    """Given 2 cores, the fit times one episode with 1 and 2 threads (here: a stub that says 1 is faster,
    as it is beside a busy process) and runs the validation passes and every later predict on that count;
    ``adaptive_threads=False`` keeps the 2 it was given and probes nothing."""
    import torch

    import autogluon_maya.common.training as training
    from plugin_tests.resources import fit_on_cores

    probes = []
    monkeypatch.setattr(training, "faster_thread_count",
                        lambda run, n: (probes.append(n), run(), (1, {1: 0.01, n: 0.1}))[-1])
    threads_seen = []
    real = TabSwiftModel._ensemble_proba
    monkeypatch.setattr(TabSwiftModel, "_ensemble_proba",
                        lambda self, X: (threads_seen.append(torch.get_num_threads()), real(self, X))[1])
    data = _frame(200)
    model = TabSwiftModel(path=str(tmp_path / "m"), name="ts", problem_type="binary", eval_metric="accuracy",
                          hyperparameters={**FAST, "tau": "auto", "adaptive_threads": adaptive})
    X, y = data.drop(columns="y"), data["y"]
    model.fit(X=X.iloc[:150], y=y.iloc[:150], X_val=X.iloc[150:], y_val=y.iloc[150:], num_cpus=2, num_gpus=0)
    assert model.fit_num_cpus == 2
    expected = 1 if adaptive else 2
    assert probes == ([2] if adaptive else []) and model._fit_summary["threads"] == expected
    assert threads_seen and set(threads_seen) == {expected}, threads_seen  # the tau search's validation passes
    threads_seen.clear()
    torch.set_num_threads(2)
    model.predict_proba(X.iloc[150:])
    assert threads_seen == [expected] and torch.get_num_threads() == 2  # the caller's count is restored
    # saved and loaded, the model predicts on the cores it was given, not the fit's probe
    model.save()
    threads_seen.clear()
    torch.set_num_threads(1)
    TabSwiftModel.load(model.path).predict_proba(X.iloc[150:])
    assert threads_seen == [2] and torch.get_num_threads() == 1
    assert model._fit_threads == expected  # saving did not change the model in memory
    # one core: nothing to choose
    probes.clear()
    one = fit_on_cores(TabSwiftModel(path=str(tmp_path / "one"), name="one", problem_type="binary",
                                     eval_metric="accuracy", hyperparameters=FAST), 1, X=X, y=y)
    assert probes == [] and one._fit_summary["threads"] == 1
