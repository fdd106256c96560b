"""Too little training must never give a model worse than the prior: a fit whose validation score is below the
prior's (the class frequencies, the mean) predicts the prior instead and says why; without validation data a fit
must have time for about one epoch.  Budgets here are epochs, an injected step cost and a clock that stands
still, never wall time."""

from __future__ import annotations

import contextlib
import logging

import numpy as np
import pandas as pd
import pytest
from autogluon.core.metrics import log_loss
from autogluon.core.utils.exceptions import TimeLimitExceeded

from autogluon_maya import MayaModel
from benchlib.ensemble import prior_fallbacks
from autogluon_maya.maya import schedule

TINY = {"hidden_size": 16, "num_heads": 2, "ensemble_members": 1, "adaptive_threads": False,
        "num_branch": 4}  # the network these tiny fits were sized with


def _nine_classes(n: int, seed: int = 0):
    """Nine classes, one at 30 %, and a weak signal: few steps leave a network near uniform probabilities."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=list("abcd"))
    y = pd.Series(rng.choice(9, size=n, p=[0.3] + [0.7 / 8] * 8))
    y[X["a"] > 1.0] = 3
    return X, y


@contextlib.contextmanager
def autogluon_log(caplog, level: int = logging.INFO):
    """AutoGluon's loggers do not propagate to the root logger, where caplog listens: listen on theirs, at
    ``level`` (a predictor's verbosity sets their level for the process); both restored afterwards."""
    ag = logging.getLogger("autogluon")
    previous = ag.level
    ag.addHandler(caplog.handler)
    ag.setLevel(level)
    try:
        yield
    finally:
        ag.removeHandler(caplog.handler)
        ag.setLevel(previous)


@pytest.fixture
def autogluon_log_level():
    """A TabularPredictor sets the level of AutoGluon's loggers from its verbosity: put it back afterwards."""
    ag = logging.getLogger("autogluon")
    previous = ag.level
    yield
    ag.setLevel(previous)


def _frequencies(y: pd.Series, k: int = 9) -> np.ndarray:
    return np.bincount(y.to_numpy(), minlength=k) / len(y)


def test_a_network_trained_for_a_handful_of_steps_gives_way_to_the_prior(tmp_path, caplog, one_torch_thread_seeded):
    """One epoch (9 steps) validates below the class frequencies on log loss: the model predicts the training
    class frequencies, no worse than the prior on validation, and its info and the log say why."""
    X, y = _nine_classes(400)
    model = MayaModel(path=str(tmp_path / "m"), name="m", problem_type="multiclass", eval_metric="log_loss",
                      hyperparameters={**TINY, "max_epochs": 1})
    with autogluon_log(caplog):
        model.fit(X=X.iloc[:300], y=y.iloc[:300], X_val=X.iloc[300:], y_val=y.iloc[300:], num_cpus=1, num_gpus=0)
    info = model.get_info()["maya_fit"]
    prior = _frequencies(y.iloc[:300])
    assert info["validation"]["maya"] < info["validation"]["prior"]  # the network alone was worse
    assert info["validation"]["prior"] == pytest.approx(
        log_loss(y.iloc[300:].to_numpy(), np.tile(prior, (100, 1))), rel=1e-5)
    assert info["fallback"]["to"] == "prior" and "worse than the prior" in info["fallback"]["reason"]
    assert info["members_kept"] == 0 and len(model.model) == 0
    np.testing.assert_allclose(model.predict_proba(X.iloc[300:]), np.tile(prior, (100, 1)), rtol=1e-6)
    assert model.score(X.iloc[300:], y.iloc[300:]) >= info["validation"]["prior"] - 1e-9
    assert "MAYA predicts the prior instead" in caplog.text
    assert prior_fallbacks(model.get_info()) == 1  # what the ensemble benchmark records per model
    # refit_full replays no network: the refit predicts the prior of all rows
    assert model.params_trained["refit_members"] == 0
    refit = MayaModel(path=str(tmp_path / "r"), name="r", problem_type="multiclass", eval_metric="log_loss",
                      hyperparameters={**model.params, **model.params_trained})
    refit.fit(X=X, y=y, num_cpus=1, num_gpus=0)
    np.testing.assert_allclose(refit.predict_proba(X.iloc[:3]), np.tile(_frequencies(y), (3, 1)),
                               rtol=1e-6)


def test_a_network_that_beats_the_prior_is_kept(tmp_path, one_torch_thread_seeded):
    """Scored by accuracy on validation rows without the training majority class, the prior (which predicts that
    class) scores 0, so any network ties or beats it: the network trained at the table's settings is kept."""
    from autogluon_maya.maya.defaults import resolve_defaults

    X, y = _nine_classes(400)
    val = (y.index >= 300) & (y != 0)
    model = MayaModel(path=str(tmp_path / "m"), name="m", problem_type="multiclass", eval_metric="accuracy",
                      hyperparameters={"hidden_size": 16, "num_heads": 2, "ensemble_members": 1,
                                       "adaptive_threads": False, "max_epochs": 1})
    model.fit(X=X.iloc[:300], y=y.iloc[:300], X_val=X[val], y_val=y[val], num_cpus=1, num_gpus=0)
    info = model.get_info()["maya_fit"]
    assert info["validation"]["prior"] == 0.0 and info["validation"]["maya"] >= 0.0
    assert info["fallback"] is None and len(model.model) == 1 and model.params_trained["refit_members"] == 1
    net, table = model.model.members[0].net, resolve_defaults("multiclass")
    assert [len(block.branch_norms) for block in net.blocks] == [table["num_branch"]] * table["num_layers"]
    assert net.tokenizer.num_weight is not None and net.tokenizer.num_embedding is None  # the table's linear token
    assert not np.allclose(model.predict_proba(X.iloc[300:]), np.tile(_frequencies(y.iloc[:300]), (100, 1)))


def test_each_fold_of_a_bag_is_judged_on_its_own_validation_rows(tmp_path, one_torch_thread_seeded):
    """Bagged, every fold compares itself with the prior on its own held-out rows, and none scores below it."""
    from autogluon.core.models import BaggedEnsembleModel

    X, y = _nine_classes(400)
    base = MayaModel(path=str(tmp_path), name="m", problem_type="multiclass", eval_metric="log_loss",
                     hyperparameters={**TINY, "max_epochs": 1})
    bag = BaggedEnsembleModel(model_base=base, path=str(tmp_path), name="bag",
                              hyperparameters={"fold_fitting_strategy": "sequential_local"})
    bag.fit(X=X, y=y, k_fold=2, num_cpus=1, num_gpus=0)
    folds = [bag.load_child(name) for name in bag.models]
    judged = [f.get_info()["maya_fit"]["validation"] for f in folds]
    assert len(folds) == 2 and judged[0]["prior"] != judged[1]["prior"]  # two different sets of held-out rows
    for fold, v in zip(folds, judged):
        assert fold.val_score >= v["prior"] - 1e-9, (fold.val_score, v)
        assert (fold.get_info()["maya_fit"]["fallback"] is not None) == (v["maya"] < v["prior"])


def _steps_cost(monkeypatch, seconds: float):
    """Every training step is estimated at ``seconds`` (the trainer's own estimate measures steps)."""
    monkeypatch.setattr(schedule, "estimate_step_seconds", lambda *a, **k: seconds)


@pytest.mark.parametrize("validation", [False, True])
def test_without_validation_a_fit_needs_time_for_about_one_epoch(tmp_path, monkeypatch, validation,
                                                                 one_torch_thread_seeded):
    """1,200 rows at batch 128 are 10 steps an epoch; at 1 s a step, 8 steps fit in the 11.4 s of a 12 s limit
    (the clock stands still) but an epoch and its context encoding (15 s) do not.  Without validation data the
    fit declines, naming the reason; with it, it trains (and is judged against the prior)."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(1300, 3)), columns=list("abc"))
    y = pd.Series((X["a"] > 0).astype(int))
    _steps_cost(monkeypatch, 1.0)
    model = MayaModel(path=str(tmp_path / "m"), name="m", problem_type="binary",
                      hyperparameters={**TINY, "max_epochs": 1})
    model._budget_clock = lambda: 0.0
    val = dict(X_val=X.iloc[1200:], y_val=y.iloc[1200:]) if validation else {}
    if validation:
        model.fit(X=X.iloc[:1200], y=y.iloc[:1200], time_limit=12, num_cpus=1, num_gpus=0, **val)
        assert model._fit_summary["steps"] == 10
        return
    with pytest.raises(TimeLimitExceeded, match="without validation data a fit must train about one epoch"):
        model.fit(X=X.iloc[:1200], y=y.iloc[:1200], time_limit=12, num_cpus=1, num_gpus=0)


def test_one_epoch_fits_is_the_epochs_steps_and_its_encoding():
    assert schedule.one_epoch_fits(128, 1.0, 1200, 15.0) == ""
    assert schedule.one_epoch_fits(128, 1.0, 1200, 14.9).startswith("infeasible")
    assert schedule.one_epoch_fits(128, 1.0, 1200, float("inf")) == ""
