"""Why a fit stopped: the rule (patience, max_epochs, time), the epoch and the member, recorded in the model's
info (``get_info()["maya_fit"]["stop"]``) with whether it ended before half of its time.  Driven by epoch
budgets, constant validation scores, a clock of the test's own and a clock that stands still."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from autogluon_maya import MayaModel
from benchlib.ensemble import maya_stops
from autogluon_maya.common.training import TimeBudget
from autogluon_maya.maya import trainer
from autogluon_maya.maya.defaults import resolve_defaults
from autogluon_maya.maya.members import MEMBER_SEED_STRIDE as S
from autogluon_maya.maya.members import MemberJudge, MemberSettings, stop_rule, train_members

from .nets import maya_network


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _fake_train(clock: Clock, seconds: dict, reasons: dict, epochs: dict):
    """``train`` for train_members: member ``seed`` trains ``seconds[seed]`` and stops for ``reasons[seed]``."""

    def train(net, seed, budget, threads, reserve_passes, max_epochs):
        start = clock.t
        clock.t += min(seconds[seed], max(0.0, budget.remaining()))
        return {"steps": 10, "epochs": epochs[seed], "best_epoch": epochs[seed] - 1, "best_score": 0.5,
                "history": [(epochs[seed] - 1, start + 0.9 * (clock.t - start), 0.5)], "validation_seconds": 1.0,
                "batch_size": 32, "best_is_average": None, "stop_reason": reasons[seed]}

    return train


def test_the_last_networks_rule_ends_a_fit_that_trained_every_member():
    clock = Clock()
    train = _fake_train(clock, {0: 5.0, S: 5.0}, {0: "max_epochs", S: "early stopping"}, {0: 30, S: 12})
    _, report = train_members(lambda s: s, train, TimeBudget(100.0, clock=clock), MemberSettings(2, 1, 1, 0),
                              MemberJudge(lambda net: np.full(4, 0.5), lambda p: 0.0 if len(p) else 0.0))
    assert {k: report["stop"][k] for k in ("rule", "epoch", "member")} == {"rule": "patience", "epoch": 12,
                                                                           "member": 2}
    assert report["stop"]["members"].startswith("2 of 2 member(s) kept")


def test_a_member_judged_not_worth_keeping_is_named():
    clock = Clock()
    scores = iter([0.9, 0.1])  # the first member alone, then the average with the second: worse
    train = _fake_train(clock, {0: 5.0, S: 5.0}, {0: "early stopping", S: "max_epochs"}, {0: 20, S: 30})
    _, report = train_members(lambda s: s, train, TimeBudget(100.0, clock=clock), MemberSettings(2, 1, 1, 0),
                              MemberJudge(lambda net: np.full(4, 0.5), lambda p: next(scores)))
    assert report["stop"]["rule"] == "max_epochs" and report["stop"]["member"] == 2
    assert "1 of 2 member(s) kept" in report["stop"]["members"] and "member 2 dropped" in report["stop"]["members"]


def test_no_time_for_a_further_member_is_a_stop_for_time():
    clock = Clock()
    train = _fake_train(clock, {0: 90.0, S: 5.0}, {0: "early stopping", S: "max_epochs"}, {0: 40, S: 3})
    _, report = train_members(lambda s: s, train, TimeBudget(100.0, clock=clock), MemberSettings(2, 1, 1, 0),
                              MemberJudge(lambda net: np.full(4, 0.5), lambda p: 0.0))
    assert report["stop"]["rule"] == "time" and report["stop"]["epoch"] == 40 and report["stop"]["member"] == 1
    assert "another member needs" in report["stop"]["members"]


def test_patience_stops_the_trainer_at_the_epoch_it_counts_to(one_torch_thread_seeded):
    """A validation score that never improves after epoch 1, patience 3, 8 steps an epoch: stop after epoch 4."""
    x = torch.randn(64, 3)
    y = (x[:, 0] > 0).long()
    fitted = trainer.FittedMaya(maya_network(3, [], 2, "class", 2, hidden_size=8, num_heads=2))
    params = {**resolve_defaults("binary"), "patience": 3, "batch_size": 8, "validation_every": 1,
              "adaptive_threads": False}
    summary = trainer.train_maya(fitted, trainer.TrainData(x, torch.zeros(64, 0, dtype=torch.long), y, y, None),
                                 trainer.TrainConfig(params=params, loss_fn=trainer.make_loss("class"),
                                                     device=torch.device("cpu"), seed=0, max_epochs=50),
                                 TimeBudget(None), val_score_fn=lambda f: 0.5)
    assert (stop_rule(summary["stop_reason"]), summary["epochs"]) == ("patience", 4)
    assert [stop_rule(r) for r in ("max_epochs", "time: not enough left for another step", "infeasible: x")] == \
        ["max_epochs", "time", "time"]


def test_a_model_that_ends_before_half_its_time_records_why_in_its_info(tmp_path, one_torch_thread_seeded):
    """Two epochs a member on a clock that stands still: the fit uses none of its 60 s and says it stopped
    early, by max_epochs at epoch 2 of its last member."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(200, 3)), columns=list("abc"))
    y = pd.Series((X["a"] > 0).astype(int))
    model = MayaModel(path=str(tmp_path / "m"), name="m", problem_type="binary",
                      hyperparameters={"max_epochs": 2, "hidden_size": 16, "num_heads": 2, "adaptive_threads": False,
                                       "ensemble_members": 2, "parallel_members": 1})
    model._budget_clock = lambda: 0.0
    model.fit(X=X.iloc[:160], y=y.iloc[:160], X_val=X.iloc[160:], y_val=y.iloc[160:], time_limit=60, num_cpus=1,
              num_gpus=0)
    stop = model.get_info()["maya_fit"]["stop"]
    assert {k: stop[k] for k in ("rule", "epoch", "member", "seconds", "stopped_early")} == {
        "rule": "max_epochs", "epoch": 2, "member": 2, "seconds": 0.0, "stopped_early": True}
    assert stop["time_limit"] == model.get_info()["maya_fit"]["stop"]["time_limit"] > 30
    # what the ensemble benchmark records per MAYA model: the rules counted over a bag's folds
    info = model.get_info()
    assert maya_stops(info) == {"max_epochs": 1, "early": 1}
    assert maya_stops({"children_info": {"S1F1": info, "S1F2": info, "S1F3": {}}}) == {"max_epochs": 2, "early": 2}
    assert maya_stops({}) == {}
