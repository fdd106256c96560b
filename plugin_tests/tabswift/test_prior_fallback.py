"""A TabSwift fit that has scored its ensemble on validation and loses to the prior (the class frequencies,
the mean) predicts the prior instead, says why in its info, and hands the decision to its refits.

The validation rows here are made to contradict the training rows (the opposite rule), so the in-context
learner validates far below the prior whatever the weights: the test does not depend on how good the
shipped checkpoint is."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from autogluon.core.models import BaggedEnsembleModel

from autogluon_maya import TabSwiftModel
from benchlib.ensemble import prior_fallbacks
from autogluon_maya.tabswift.model import WEIGHTS_NAME
from autogluon_maya.tabswift.checkpoints_io.format import checkpoint_paths
from plugin_tests.resources import fit_on_cores
from plugin_tests.resources import torch_globals_kept  # noqa: F401  (a fixture)

pytestmark = pytest.mark.usefixtures("torch_globals_kept")

# zero-shot is scored by fine_tune="auto" before it fine-tunes (no time limit: it does); one step is enough
SMALL = {"checkpoint_path": "shipped", "n_estimators": 2, "max_context_rows": 256, "fine_tune_steps": 1,
         "fine_tune_min_steps": 1, "fine_tune_eval_every": 1, "fine_tune_rows": 64,
         "fine_tune_episodes_per_step": 1}


def _binary(n: int, seed: int):
    """Class 1 for a > 0 (about 70 % of the rows, so the prior is not a coin)."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(loc=0.5, size=n), "b": rng.normal(size=n)})
    return X, pd.Series((X["a"] > 0).astype(int), name="y")


def _regression(n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    return X, pd.Series(10.0 * X["a"] + rng.normal(size=n), name="y")


def _model(tmp_path, problem_type: str, hp: dict, name: str = "m") -> TabSwiftModel:
    metric = "root_mean_squared_error" if problem_type == "regression" else "accuracy"
    return TabSwiftModel(path=str(tmp_path / name), name=name, problem_type=problem_type, eval_metric=metric,
                         hyperparameters=hp)


@pytest.mark.parametrize("problem_type", ["binary", "regression"])
def test_a_fit_that_validates_below_the_prior_predicts_the_prior(tmp_path, problem_type):
    X, y = (_binary if problem_type == "binary" else _regression)(300, seed=3)
    X_tr, y_tr, X_val = X.iloc[:200], y.iloc[:200], X.iloc[200:]
    y_val = 1 - y.iloc[200:] if problem_type == "binary" else -y.iloc[200:]  # the opposite rule
    model = _model(tmp_path, problem_type, SMALL)
    fit_on_cores(model, 1, X=X_tr, y=y_tr, X_val=X_val, y_val=y_val)
    check = model.get_info()["tabswift_prior_check"]
    assert check["checked"] and check["fallback"] and check["tabswift"] < check["prior"], check
    assert "worse than the prior's" in check["reason"]
    expected = y_tr.mean()  # the positive class's frequency, or the mean
    assert np.allclose(model.predict_proba(X.iloc[:50]), expected, atol=1e-5)
    assert model.score(X_val, y_val) == pytest.approx(check["prior"], rel=1e-5)
    assert model.params_trained["refit_prior_share"] == 1.0 and model.params_trained["refit_prior_checked"] == 1.0
    # the ensemble benchmark counts it, in a model's own info and among a bag's folds
    assert prior_fallbacks(model.get_info()) == 1
    assert prior_fallbacks({"children_info": {"S1F1": model.get_info(), "S1F2": {"tabswift_prior_check": {}}}}) == 1

    # saved and loaded, it still predicts the prior; the network it no longer uses is not kept or saved
    assert model.model.network is None and model.get_device() == "cpu"
    model.save()
    assert not any(p.exists() for p in checkpoint_paths(Path(model.path) / WEIGHTS_NAME))
    loaded = TabSwiftModel.load(model.path)
    assert np.allclose(loaded.predict_proba(X.iloc[:5]), expected, atol=1e-5)
    # refit_full's model (all rows, no validation) repeats the decision without fine-tuning first
    refit = model.convert_to_refit_full_template()
    fit_on_cores(refit, 1, X=X, y=y)
    assert np.allclose(refit.predict_proba(X.iloc[:5]), y.mean(), atol=1e-5)
    assert refit.get_info()["tabswift_fine_tune"]["rule"] == "prior"
    assert refit.get_info()["tabswift_prior_check"]["fallback"] is True
    assert refit.model.network is None  # the all-rows model a bag keeps saves no weights either
    refit.set_device("cpu")
    refit.save()
    assert not any(p.exists() for p in checkpoint_paths(Path(refit.path) / WEIGHTS_NAME))


@pytest.mark.parametrize("fine_tune", ["auto", False])
def test_a_fit_that_beats_the_prior_keeps_its_network(tmp_path, fine_tune):
    """Kept; zero-shot, the check's validation pass leaves the members' context encodings cached for the
    prediction AutoGluon makes next."""
    X, y = _binary(300, seed=3)
    model = _model(tmp_path, "binary", {**SMALL, "fine_tune": fine_tune})
    fit_on_cores(model, 1, X=X.iloc[:200], y=y.iloc[:200], X_val=X.iloc[200:], y_val=y.iloc[200:])
    check = model.get_info()["tabswift_prior_check"]
    assert check["checked"] and not check["fallback"] and check["tabswift"] > check["prior"], check
    assert model.params_trained["refit_prior_share"] == 0.0 and model.params_trained["refit_prior_checked"] == 1.0
    assert prior_fallbacks(model.get_info()) == 0
    if fine_tune is False:
        assert model.model.cache_nbytes > 0
    proba = model.predict_proba(X.iloc[200:])
    assert proba.std() > 0.1  # not one value for every row
    model.save()
    assert all(p.exists() for p in checkpoint_paths(Path(model.path) / WEIGHTS_NAME))
    # the saved context caches hold float16 block inputs (2e-4 apart here)
    np.testing.assert_allclose(TabSwiftModel.load(model.path).predict_proba(X.iloc[200:]), proba, atol=1e-3)


def test_a_zero_shot_fit_scores_its_ensemble_for_the_check(tmp_path):
    """fine_tune=False (the light preset's TabSwift) measures nothing on validation by itself: the check scores
    the ensemble once, and the same validation rows predicted afterwards give that score."""
    X, y = _binary(300, seed=3)
    model = _model(tmp_path, "binary", {**SMALL, "fine_tune": False})
    X_val, y_val = X.iloc[200:], 1 - y.iloc[200:]
    fit_on_cores(model, 1, X=X.iloc[:200], y=y.iloc[:200], X_val=X_val, y_val=y_val)
    check = model.get_info()["tabswift_prior_check"]
    assert check["checked"] and check["fallback"] and check["tabswift"] < check["prior"], check
    assert np.allclose(model.predict_proba(X.iloc[:50]), y.iloc[:200].mean(), atol=1e-5)
    assert model.model.cache_nbytes == 0  # the check's context encodings are not kept for predictions it won't make


def test_no_validation_pass_without_half_of_the_time_limit_left(tmp_path):
    """A fit that has used more than half of its time limit before the check does not spend more on it: on a
    clock that moves 60 s per reading, at least 60 of 100 s are gone by then."""
    X, y = _binary(300, seed=3)
    model = _model(tmp_path, "binary", {**SMALL, "fine_tune": False})
    readings = iter(range(0, 10 ** 6, 60))
    model._budget_clock = lambda: float(next(readings))
    fit_on_cores(model, 1, X=X.iloc[:200], y=y.iloc[:200], X_val=X.iloc[200:], y_val=1 - y.iloc[200:],
                 time_limit=100)
    check = model.get_info()["tabswift_prior_check"]
    assert not check["checked"] and not check["fallback"] and "no time to score" in check["reason"], check
    # recorded so that a bag's refit leaves this fold out of the vote
    assert model.params_trained["refit_prior_share"] == 0.0 and model.params_trained["refit_prior_checked"] == 0.0
    assert model.predict_proba(X.iloc[:50]).std() > 0.1


@pytest.mark.parametrize("folds, reason, falls_back", [
    ([(1.0, 1.0)] * 3 + [(0.0, 1.0)] * 2, "60% of the fits that compared", True),
    ([(1.0, 1.0)] * 2 + [(0.0, 1.0)] * 3, "40% of the fits that compared", False),
    ([(1.0, 1.0), (0.0, 1.0)], "50% of the fits that compared", False),
    # two folds had no time to check: two of the three that did fell back
    ([(1.0, 1.0)] * 2 + [(0.0, 1.0)] + [(0.0, 0.0)] * 2, "67% of the fits that compared", True),
    # fewer than half checked: their verdict does not overrule the networks of the other folds
    ([(1.0, 1.0)] * 2 + [(0.0, 0.0)] * 3, "40% of its fits fell back, 40% compared with the prior", False),
    ([(0.0, 0.0)] * 5, "none of its fits compared with the prior", False),
])
def test_a_refit_repeats_most_checked_folds_decision(tmp_path, folds, reason, falls_back):
    """Each fold records ``refit_prior_share`` (1.0 fell back) and ``refit_prior_checked`` (1.0 compared with the
    prior);
    AutoGluon compresses each to its mean over the folds, and the refit without validation rows predicts the
    prior where more than half of the folds that checked fell back, if at least half checked: 3 of 5 yes, 2 of 5
    no, a tie no, 2 of the 3 that checked yes; 2 of 5 checked (both fell back) no, none checked no."""
    records = [{"refit_prior_share": s, "refit_prior_checked": c} for s, c in folds]
    compressed = BaggedEnsembleModel._get_compressed_params(None, model_params_list=records)
    X, y = _binary(200, seed=5)
    refit = _model(tmp_path, "binary", {**SMALL, "fine_tune": False, **compressed})
    fit_on_cores(refit, 1, X=X, y=y)
    check = refit.get_info()["tabswift_prior_check"]
    assert check["fallback"] is falls_back
    assert reason in check["reason"], check["reason"]
    proba = refit.predict_proba(X.iloc[:50])
    if falls_back:
        assert np.allclose(proba, y.mean(), atol=1e-5)
    else:
        assert proba.std() > 0.1


def test_the_share_counts_only_the_folds_that_checked():
    """Bag means 0.4 / 0.6: two of the three folds that checked fell back; 0.4 / 0.4: fewer than half checked, so
    the share among all folds; a record without ``prior_checked`` is read as that share; not a refit: None."""
    def share(p):
        from autogluon_maya.tabswift.refit_records import TabSwiftRefitRecord

        return TabSwiftModel._prior_share_of_checked(TabSwiftRefitRecord(**p))[0]

    assert share({"prior_share": 0.4, "prior_checked": 0.6}) == pytest.approx(2 / 3)
    assert share({"prior_share": 0.4, "prior_checked": 0.4}) == 0.4
    assert share({"prior_share": 0.6}) == 0.6
    assert share({"prior_share": None, "prior_checked": 0.0}) is None
    assert TabSwiftModel._prior_share_of_checked(None) == (None, "")


def test_the_score_judged_is_the_one_of_the_model_as_it_predicts():
    """With early exit in use, the score measured at that tau (a tau="auto" search's table, or an explicit tau's
    check: the no-exit score less its relative loss); without, the no-exit score of a tau check, else the score
    fine_tune="auto" measured for the weights it kept; None where nothing measured the model as it predicts."""
    from types import SimpleNamespace

    model = TabSwiftModel()

    def judged(tau, summary):
        model.model = SimpleNamespace(tau=tau)
        return model._validated_score(summary)

    table = {"tau_table": [(0.9, -2.0, 5.0), (0.5, -2.5, 3.0)], "val_score_no_exit": -1.9}
    assert judged(0.5, table) == -2.5
    assert judged(None, table) == -1.9
    checked = {"tau_requested": 0.7, "tau_requested_val_loss": 0.01, "val_score_no_exit": -2.0}
    assert judged(0.7, checked) == pytest.approx(-2.02)
    assert judged(0.7, {}) is None  # an explicit tau nothing checked
    auto = {"fine_tune_decision": {"requested": "auto", "fine_tuned": True, "fine_tuned_val_score": 0.8,
                                   "zero_shot_val_score": 0.7}}
    assert judged(None, auto) == 0.8
    assert judged(None, {"fine_tune_decision": {**auto["fine_tune_decision"], "fine_tuned": False}}) == 0.7
    assert judged(None, {"fine_tune_decision": {"requested": True, "zero_shot_val_score": 0.7}}) is None
