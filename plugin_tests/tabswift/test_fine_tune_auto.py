"""fine_tune="auto" (the default): fine-tune only with validation rows and time for a minimum useful number of
steps, keep the fine-tuned weights only when validation says they beat the pretrained ones, record the
decision in the model's info and in params_trained so that refits repeat it."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest
import torch
from autogluon.tabular import TabularPredictor

from autogluon_maya import TabSwiftModel
from autogluon_maya.tabswift.defaults import DEFAULT_PARAMS, SHIPPED_CHECKPOINT
from autogluon_maya.tabswift.ensemble import TabSwiftEnsemble
from autogluon_maya.tabswift.finetune import AUTO_MARGIN, Deadlines, Schedule, auto_rule, fine_tune_auto
from autogluon_maya.tabswift.model import AUTO_CHOICES, FINE_TUNE_CHOICE_KEY, replay_steps
from autogluon_maya.tabswift.network import REGRESSION
from autogluon_maya.tabswift.checkpoints_io.format import load_checkpoint
from plugin_tests.resources import fit_on_cores
from plugin_tests.resources import torch_globals_kept  # noqa: F401  (a fixture)

pytestmark = pytest.mark.usefixtures("torch_globals_kept")

# few, small steps: each validation check (every 3 steps) can move the decision
SMALL = {"checkpoint_path": "shipped", "n_estimators": 2, "max_context_rows": 256, "fine_tune_steps": 6,
         "fine_tune_min_steps": 3, "fine_tune_eval_every": 3, "fine_tune_rows": 128,
         "fine_tune_episodes_per_step": 2, "fine_tune_lr": 3e-4}


def _regression_frame(n: int, seed: int):
    """A table the shipped prior handles badly (zero-shot RMSE several times the noise): fine-tuning on it
    improves validation within a few steps."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.normal(size=n)})
    return X, pd.Series(50 + 10 * (np.sin(2 * X["a"]) + X["b"] * X["c"]) + rng.normal(size=n), name="y")


def _separable_frame(n: int, seed: int):
    """Two classes far apart on one feature: zero-shot validation accuracy is already 1.0, so no fine-tuning
    step can validate strictly better."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = pd.DataFrame({"a": np.where(y == 1, 5.0, -5.0) + 0.1 * rng.normal(size=n), "b": rng.normal(size=n)})
    return X, pd.Series(y, name="y")


def _model(tmp_path, problem_type: str, hp: dict, name: str = "m") -> TabSwiftModel:
    metric = "root_mean_squared_error" if problem_type == "regression" else "accuracy"
    return TabSwiftModel(path=str(tmp_path / name), name=name, problem_type=problem_type, eval_metric=metric,
                         hyperparameters=hp)


def _holds_shipped_weights(model) -> bool:
    shipped = load_checkpoint(SHIPPED_CHECKPOINT).state_dict()
    held = model.model.network.state_dict()
    return set(held) == set(shipped) and all(torch.equal(shipped[k], held[k].cpu()) for k in shipped)


@pytest.fixture
def model_log():
    """INFO records of the TabSwift model's logger (verbosity 2), whatever the levels set earlier."""
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    log = logging.getLogger("autogluon.ext.autogluon_maya.tabswift.model")
    level = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        yield records
    finally:
        log.removeHandler(handler)
        log.setLevel(level)


# ---- the rule, on numbers -----------------------------------------------------------------------------

def test_auto_rule_order_and_time_arithmetic():
    base = dict(has_val=True, n_classes=2, max_classes=10, context_rows=100, step_seconds=0.5, min_steps=20,
                eval_every=10, eval_seconds=1.0, check_seconds=2.0, margin=2.0)
    # 20 steps x 0.5 s + (1 + 20 / 10) checks x 1 s = 13 s, x2 = 26 s, + 2 s final check = 28 s
    assert auto_rule(**base, seconds_left=28.0)["fine_tune"] is True
    late = auto_rule(**base, seconds_left=27.9)
    assert late["fine_tune"] is False and late["rule"] == "time" and late["seconds_needed"] == pytest.approx(28.0)
    assert "too little time" in late["reason"]
    assert auto_rule(**base, seconds_left=None)["rule"] == "no_time_limit"
    # the rules before time, in order: validation rows, classes, context
    assert auto_rule(**{**base, "has_val": False}, seconds_left=None)["rule"] == "no_validation"
    assert auto_rule(**{**base, "n_classes": 11}, seconds_left=None)["rule"] == "too_many_classes"
    assert auto_rule(**{**base, "context_rows": 1}, seconds_left=None)["rule"] == "context_too_small"
    assert auto_rule(**{**base, "n_classes": None}, seconds_left=1e9)["rule"] == "time_fits"  # regression
    assert AUTO_MARGIN >= 1.0


# ---- through the model --------------------------------------------------------------------------------

def test_auto_is_the_default_and_keeps_fine_tuned_weights_that_validate_better(tmp_path, model_log):
    """No time limit, validation rows, a table the prior handles badly: "auto" fine-tunes and keeps the
    result, which the whole ensemble (4 members; fine-tuning validates with 2) scores better than zero-shot.
    The recorded fine-tuned score is the kept model's own validation score."""
    assert DEFAULT_PARAMS["fine_tune"] == "auto"
    X, y = _regression_frame(400, seed=1)
    model = _model(tmp_path, "regression", {**SMALL, "n_estimators": 4, "fine_tune_eval_members": 2})
    fit_on_cores(model, 1, X=X.iloc[:250], y=y.iloc[:250], X_val=X.iloc[250:], y_val=y.iloc[250:])
    d = model.get_info()["tabswift_fine_tune"]
    assert d["requested"] == "auto" and d["rule"] == "no_time_limit" and d["fine_tuned"] is True, d
    assert d["steps_run"] >= d["best_step"] > 0 and d["val_members"] == 4
    assert d["fine_tuned_val_score"] > d["zero_shot_val_score"]
    # (predict returns float32, the fit scored the ensemble's float64 output)
    assert model.score(X.iloc[250:], y.iloc[250:]) == pytest.approx(d["fine_tuned_val_score"], rel=1e-6)
    assert not _holds_shipped_weights(model)
    assert model.params_trained["fine_tune"] is True
    assert model.params_trained["fine_tune_steps"] == d["best_step"]
    assert model.params_trained[FINE_TUNE_CHOICE_KEY] == AUTO_CHOICES[True]
    assert any("fine_tune='auto': fine-tuned weights kept" in r.getMessage() for r in model_log)


def test_auto_keeps_zero_shot_when_no_step_validates_better(tmp_path):
    """Zero-shot already classifies every validation row: fine-tuning runs (ample time) but no step beats
    step 0, the pretrained weights, so they are kept bit for bit -- a tie is not an improvement."""
    X, y = _separable_frame(300, seed=2)
    model = _model(tmp_path, "binary", SMALL)
    fit_on_cores(model, 1, X=X.iloc[:200], y=y.iloc[:200], X_val=X.iloc[200:], y_val=y.iloc[200:])
    d = model.get_info()["tabswift_fine_tune"]
    assert d["zero_shot_val_score"] == 1.0, "zero-shot must be perfect for this test to mean anything"
    assert d["rule"] == "no_time_limit" and d["steps_run"] > 0, d  # it did fine-tune ...
    assert d["fine_tuned"] is False and d["best_step"] == 0  # ... and kept nothing of it
    assert "zero-shot kept" in d["reason"]
    assert _holds_shipped_weights(model)
    assert model.params_trained["fine_tune"] is False and model.params_trained["fine_tune_steps"] == 0
    assert model.params_trained[FINE_TUNE_CHOICE_KEY] == AUTO_CHOICES[False]


def test_auto_with_too_little_time_keeps_zero_shot_and_says_why(tmp_path, model_log):
    """A minimum step count no step cost can fit in 60 s: the fit decides from its measured step estimate,
    before spending a validation pass, and records the numbers it decided on."""
    X, y = _regression_frame(300, seed=3)
    model = _model(tmp_path, "regression", {**SMALL, "fine_tune_min_steps": 10**7, "fine_tune_steps": 10**7})
    fit_on_cores(model, 1, X=X.iloc[:200], y=y.iloc[:200], X_val=X.iloc[200:], y_val=y.iloc[200:], time_limit=60)
    d = model.get_info()["tabswift_fine_tune"]
    assert d["fine_tuned"] is False and d["rule"] == "time" and d["steps_run"] == 0, d
    assert "too little time" in d["reason"]
    est = d["estimate"]
    assert est["min_steps"] == 10**7 and est["step_seconds"] > 0
    assert est["seconds_needed"] > est["seconds_left"] and est["seconds_left"] <= 0.7 * 60
    assert d["zero_shot_val_score"] is None  # decided on the step estimate alone: no validation pass spent
    assert _holds_shipped_weights(model)
    assert model.params_trained["fine_tune"] is False
    assert model.params_trained[FINE_TUNE_CHOICE_KEY] == AUTO_CHOICES[False]
    assert any("fine_tune='auto': zero-shot (rule time)" in r.getMessage() for r in model_log)


def test_the_minimum_is_at_most_the_steps_asked_for(tmp_path):
    """fine_tune_steps=6 with the default minimum of 20: the rule needs time for 6 steps, not 20 (a 600 s limit
    leaves it), so asking for a short run does not turn fine-tuning off."""
    X, y = _regression_frame(300, seed=3)
    model = _model(tmp_path, "regression", {**SMALL, "fine_tune_min_steps": 20})
    fit_on_cores(model, 1, X=X.iloc[:200], y=y.iloc[:200], X_val=X.iloc[200:], y_val=y.iloc[200:], time_limit=600)
    d = model.get_info()["tabswift_fine_tune"]
    assert d["rule"] == "time_fits" and d["estimate"]["min_steps"] == SMALL["fine_tune_steps"] == 6, d
    assert d["steps_run"] > 0


def test_auto_without_validation_rows_stays_zero_shot(tmp_path):
    X, y = _regression_frame(200, seed=4)
    model = fit_on_cores(_model(tmp_path, "regression", SMALL), 1, X=X, y=y)
    d = model.get_info()["tabswift_fine_tune"]
    assert d["fine_tuned"] is False and d["rule"] == "no_validation" and d["steps_run"] == 0
    assert _holds_shipped_weights(model)


def test_an_unknown_fine_tune_value_is_an_error(tmp_path):
    X, y = _regression_frame(60, seed=5)
    with pytest.raises(ValueError, match="fine_tune must be True, False or 'auto'"):
        _model(tmp_path, "regression", {**SMALL, "fine_tune": "sometimes"}).fit(X=X, y=y, num_cpus=1, num_gpus=0)


# ---- the whole-ensemble check, with the validation scores given -------------------------------------

@pytest.mark.parametrize("tuned_whole, kept", [(-2.0, False), (-0.5, True)])
def test_the_whole_ensemble_decides_when_fine_tuning_validated_with_fewer_members(one_torch_thread_seeded,
                                                                                  tuned_whole, kept):
    """Fine-tuning (real steps) picks a later step on the members it validates with; the whole ensemble is
    then scored again and must beat its zero-shot score (-1.0 here), else the pretrained weights -- and the
    exit heads' fitness for them -- come back."""
    X, y = _regression_frame(200, seed=6)
    net = load_checkpoint(SHIPPED_CHECKPOINT)
    ens = TabSwiftEnsemble(net, REGRESSION, n_estimators=4, max_context_rows=256).fit(X, y.to_numpy())
    pretrained = {k: v.clone() for k, v in net.state_dict().items()}
    subset = iter(range(100))  # every check on the subset improves: fine-tuning's best step is its last
    whole = iter([-1.0, tuned_whole])  # zero-shot, then the best step
    out = fine_tune_auto(ens, lambda: float(next(subset)), lambda: next(whole),
                         Schedule(steps=4, lr=1e-4, episodes_per_step=1, rows=64, eval_every=2, patience=5, seed=0),
                         Deadlines(None, None), eval_share=0.5, min_steps=2)
    d = out["decision"]
    assert d["best_step"] == 4 and d["zero_shot_val_score"] == -1.0 and d["fine_tuned_val_score"] == tuned_whole
    assert d["fine_tuned"] is kept and out["best_step"] == (4 if kept else 0)
    unchanged = all(torch.equal(pretrained[k], v) for k, v in net.state_dict().items())
    assert unchanged is not kept
    assert net.exit_heads_stale is kept  # fine-tuning marks them stale; restoring the weights unmarks them


# ---- refits repeat the decision ------------------------------------------------------------------------

def test_a_bags_refit_replays_the_mean_step_count_of_the_folds_that_fine_tuned():
    """Five folds, three fine-tuned (300, 100, 200 steps), two kept zero-shot: AutoGluon compresses their records
    into one (a rounded mean of the step counts, zero-shot folds as 0: 120); the refit runs the mean over the
    three folds that fine-tuned (200), not 120."""
    from autogluon.core.models import BaggedEnsembleModel

    from autogluon_maya.common.refit import read_refit_record, refit_keys
    from autogluon_maya.tabswift.refit_records import TabSwiftRefitRecord

    records = []
    for kept, steps in [(True, 300), (False, 0), (True, 100), (False, 0), (True, 200)]:
        record = TabSwiftRefitRecord(checkpoint_choice="", fine_tune_choice=AUTO_CHOICES[kept],
                                     fine_tune_seconds=float(steps), fine_tune_share=1.0 if kept else 0.0,
                                     fine_tune_horizon=400, prior_share=0.0, prior_checked=1.0)
        records.append({"fine_tune": kept, "fine_tune_steps": steps, **refit_keys(record)})
    compressed = BaggedEnsembleModel._get_compressed_params(None, model_params_list=records)
    assert compressed["fine_tune"] is True and compressed["fine_tune_steps"] == 120
    assert replay_steps(compressed["fine_tune_steps"], read_refit_record(dict(compressed), TabSwiftRefitRecord)) == 200
    assert replay_steps(37, TabSwiftRefitRecord(fine_tune_share=1.0)) == 37  # one model's own record
    assert replay_steps(37) == 37  # a user's explicit count


def test_refit_of_a_bag_repeats_the_folds_fine_tuning(tmp_path, monkeypatch):
    """The folds have validation rows and fine-tune; the all-rows refit has none, where "auto" alone would
    stay zero-shot: it fine-tunes because its folds did, for their mean best step count, and says so."""
    # the replay's wall-clock bound (2 x the folds' fine-tuning seconds) is not what this test is about: on a
    # busy machine it can end the replay early; it is tested apart (test_bag_bookkeeping)
    monkeypatch.setattr("autogluon_maya.tabswift.fine_tune_policy.REPLAY_TIME_FACTOR", 1e6)
    X, y = _regression_frame(300, seed=7)
    data = X.assign(y=y)
    pred = TabularPredictor(label="y", problem_type="regression", path=str(tmp_path / "ag"), verbosity=0).fit(
        data, hyperparameters={"TABSWIFT": {**SMALL, "ag_args_ensemble": {"refit_folds": False}}},
        num_bag_folds=2, num_cpus=1, num_gpus=0, fit_weighted_ensemble=False, raise_on_model_failure=True)
    bag = pred._trainer.load_model("TabSwift_BAG_L1")
    folds = [bag.load_child(c).get_info()["tabswift_fine_tune"] for c in bag.models]
    assert len(folds) == 2 and all(f["fine_tuned"] for f in folds), folds
    refit = pred._trainer.load_model(pred.refit_full(model="TabSwift_BAG_L1")["TabSwift_BAG_L1"])
    child = refit.load_child(refit.models[0])
    d = child.get_info()["tabswift_fine_tune"]
    assert d["repeats"] == AUTO_CHOICES[True] and d["fine_tuned"] is True and d["rule"] == "replay", d
    assert d["steps_run"] == round(np.mean([f["best_step"] for f in folds])) > 0
    assert not _holds_shipped_weights(child)
