"""Ensemble members: the member loop (``members.train_members``) driven by a clock of the test's own, and the
plumbing of a real fit (members averaged, refit_full replaying the kept ones)."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import psutil
import pytest
import torch
from autogluon.core.metrics import log_loss
from autogluon.core.utils.exceptions import TimeLimitExceeded

from autogluon_maya import MayaModel
from autogluon_maya.common.training import TimeBudget
from autogluon_maya.maya.defaults import REPLAY_KEY
from autogluon_maya.maya.members import (AUTO_MEMBERS, MEMBER_SEED_STRIDE, MEMBER_TIME, PARALLEL_MAX_ACTIVATION_BYTES,
                                         MemberJudge, MemberSettings, plan_further_members, resolve_members,
                                         resolve_parallel, train_members)
from plugin_tests.resources import fit_on_cores

# a parallel pair needs two physical cores: MAYA asks AutoGluon for physical cores only
TWO_CORES = pytest.mark.skipif((psutil.cpu_count(logical=False) or 1) < 2,
                               reason="a parallel pair of members needs 2 physical CPU cores")
SMALL = {"max_epochs": 6, "hidden_size": 16, "num_heads": 2, "num_layers": 1, "patience": 3, "parallel_members": 1}
S = MEMBER_SEED_STRIDE


class Clock:
    """Seconds that pass only when a fake member trains."""

    def __init__(self):
        self.t = 0.0
        self.lock = threading.Lock()

    def __call__(self) -> float:
        return self.t


def fake_trainer(clock: Clock, seconds: dict, best_share: float = 0.5, calls: list | None = None,
                 steps: dict | None = None):
    """``build`` and ``train`` for train_members: the network is its seed; member ``seed`` trains for
    ``seconds[seed]`` (or to the end of its budget if that comes first), its best epoch at ``best_share`` of it."""

    def train(net, seed, budget, threads, reserve_passes, max_epochs):
        assert net == seed
        start = clock.t
        took = min(seconds[seed], max(0.0, budget.remaining()))
        clock.t += took
        if calls is not None:
            calls.append(dict(seed=seed, threads=threads, reserve=reserve_passes, max_epochs=max_epochs,
                              share=budget.remaining() + took))
        n = (steps or {}).get(seed, 10)
        history = [(5, start + best_share * took, 0.5)] if n else []
        return {"steps": n, "epochs": 10 if n else 0, "best_epoch": 5 if n else 0, "best_score": 0.5,
                      "history": history, "validation_seconds": 1.0, "batch_size": 32, "best_is_average": None,
                      "stop_reason": "early stopping" if took == seconds[seed] else "time: end of share"}

    return lambda seed: seed, train


def _members(trainer, clock, limit, val_proba=None, judge=None, **kw):
    settings = MemberSettings(**{**dict(max_members=3, parallel=1, num_cpus=2, seed=0), **kw})
    return train_members(*trainer, TimeBudget(limit, safety=1.0, clock=clock), settings,
                         MemberJudge(val_proba, judge) if val_proba is not None else None)


def test_auto_fills_a_time_limit_and_trains_one_member_without():
    assert resolve_members("auto", 600.0) == AUTO_MEMBERS > 1
    assert resolve_members("auto", None) == 1
    assert resolve_members(2, None) == 2


def test_a_member_starts_only_while_the_time_left_holds_one():
    """A further member needs MEMBER_TIME x the first one's time to its best epoch plus a validation pass."""
    clock = Clock()
    kept, report = _members(fake_trainer(clock, {0: 20.0, S: 20.0, 2 * S: 20.0}), clock, limit=30.0)
    need = MEMBER_TIME * 10.0  # best at half of 20 s
    assert [s for _, s in kept] and len(kept) == 1
    assert report["members_stop"] == f"time: another member needs ~{need:.1f} s, 9.0 s left"  # 30 - 20 - 1 s pass
    clock = Clock()
    kept, report = _members(fake_trainer(clock, {0: 20.0, S: 20.0, 2 * S: 20.0}), clock, limit=20 + 1 + need + 1)
    assert len(kept) == 2 and report["members_started_with_seconds"][1] >= need


def test_the_time_left_is_split_evenly_among_the_members_it_holds():
    clock, calls = Clock(), []
    kept, report = _members(fake_trainer(clock, {0: 10.0, S: 100.0, 2 * S: 100.0}, calls=calls), clock, limit=60.0)
    # 50 s left, one pass (1 s) held back: two members of (49 / 2 - 1) s each, both cut at the end of their share
    assert [c["seed"] for c in calls] == [0, S, 2 * S] and len(kept) == 3
    assert report["members_started_with_seconds"][1] == pytest.approx(49 / 2 - 1)
    assert [s["train_seconds"] for _, s in kept[1:]] == pytest.approx([23.5, 24.5])  # the third: planned again
    assert clock.t <= 60.0


def test_time_a_member_leaves_unused_goes_to_another_member():
    """The plan is made again before each member: the time left after the first holds one more, but that one
    early-stops in a tenth of its share, and what it left holds a third."""
    clock = Clock()
    # after the first member 11 s are left, 10 s after the pass held back: one member of 1.1 x 5 s (+ a 1 s pass)
    kept, report = _members(fake_trainer(clock, {0: 10.0, S: 3.0, 2 * S: 3.0}), clock, limit=21.0)
    assert report["members_started_with_seconds"] == pytest.approx([21.0, 9.0, 6.0])
    assert len(kept) == 3, report["members_stop"]


def test_a_member_that_hurts_the_average_is_dropped_and_the_next_still_trains():
    clock = Clock()
    y = np.array([0.0, 1.0, 2.0])
    probas = {0: y + 0.1, S: y - 5.0, 2 * S: y - 0.1}  # member 2 is far off; member 3 cancels member 1's error
    kept, report = _members(fake_trainer(clock, {0: 1.0, S: 1.0, 2 * S: 1.0}), clock, limit=None,
                            val_proba=lambda net: probas[net], judge=lambda p: -float(np.mean((p - y) ** 2)))
    assert [net for net, _ in kept] == [0, 2 * S]
    assert len(report["members_dropped"]) == 1 and report["members_dropped"][0].startswith("member 2 dropped")
    assert [m["ensemble_score"] for m in report["members"]] == pytest.approx([-0.01, 0.0])


def test_without_validation_every_member_is_kept_and_a_failed_one_ends_the_fit():
    clock = Clock()
    kept, report = _members(fake_trainer(clock, {0: 1.0, S: 1.0, 2 * S: 1.0}, steps={S: 0}), clock, limit=None)
    assert [net for net, _ in kept] == [0] and report["members_stop"].startswith("member 2:")
    with pytest.raises(TimeLimitExceeded, match="MAYA skipped"):
        _members(fake_trainer(clock, {0: 1.0}, steps={0: 0}), clock, limit=None)


def test_refit_replays_exactly_the_kept_members():
    """refit_full's replay: the given seeds, each for its own epoch count, none planned away or dropped."""
    clock, calls = Clock(), []
    kept, report = _members(fake_trainer(clock, {0: 10.0, 2 * S: 10.0}, calls=calls), clock, limit=12.0,
                            replay=[[0, 7], [2 * S, 3]], val_proba=lambda net: np.zeros(2), judge=lambda p: 0.0)
    assert [(c["seed"], c["max_epochs"]) for c in calls] == [(0, 7), (2 * S, 3)]
    assert [net for net, _ in kept] == [0, 2 * S]


def test_a_parallel_pair_shares_the_cores_and_keeps_a_pass_back():
    clock, calls = Clock(), []
    kept, report = _members(fake_trainer(clock, {0: 5.0, S: 5.0, 2 * S: 5.0}, calls=calls), clock, limit=None,
                            parallel=2, num_cpus=4, val_proba=lambda net: np.zeros(2), judge=lambda p: 0.0)
    assert [(c["threads"], c["reserve"]) for c in calls] == [(2, 1), (2, 1), (4, 0)]
    assert [s["parallel"] for _, s in kept] == [2, 2, 1]
    assert report["members_started_with_seconds"][:2] == [float("inf")] * 2


def test_a_member_that_fails_in_a_pair_stops_the_other():
    """The second member of a parallel pair raises: the first, training on the pair's budget, sees it end at
    its next check instead of training on, and the error reaches the caller."""
    second_failed = threading.Event()
    seen = []

    def train(net, seed, budget, threads, reserve_passes, max_epochs):
        if seed == S:
            second_failed.set()
            raise RuntimeError("member 2 broke")
        assert second_failed.wait(10)
        seen.append(budget.remaining())
        return {"history": [], "best_epoch": 0}

    with pytest.raises(RuntimeError, match="member 2 broke"):
        train_members(lambda seed: seed, train, TimeBudget(100.0), MemberSettings(2, parallel=2, num_cpus=2, seed=0))
    assert seen and seen[0] <= 0


def test_the_plan_splits_the_time_left_evenly_among_the_members_it_holds():
    plan = plan_further_members(time_left=100.0, validation_seconds=2.0, first_seconds_to_best=20.0, max_further=2)
    # 98 s after the first member's validation pass; a member needs 1.1 x 20 s + a 2 s pass: 4 fit, 2 allowed
    assert plan.further == 2 and plan.seconds == pytest.approx(98.0 / 2 - 2.0)
    plan = plan_further_members(time_left=40.0, validation_seconds=2.0, first_seconds_to_best=20.0, max_further=2)
    assert (plan.further, plan.seconds) == (1, pytest.approx(36.0))
    plan = plan_further_members(time_left=20.0, validation_seconds=2.0, first_seconds_to_best=20.0, max_further=2)
    assert plan.further == 0 and "needs ~22.0 s" in plan.reason


def test_resolve_parallel_shares_cores_only_between_small_cpu_members():
    assert resolve_parallel("auto", 3, 2, "cpu") == 2
    assert resolve_parallel("auto", 3, 2, "cuda") == 1  # a GPU runs one network at a time anyway
    assert resolve_parallel("auto", 1, 2, "cpu") == 1  # nothing to pair
    assert resolve_parallel("auto", 3, 1, "cpu") == 1  # one core
    assert resolve_parallel(1, 3, 2, "cpu") == 1
    assert resolve_parallel(3, 3, 2, "cpu") == 2  # no more at once than cores
    assert resolve_parallel("auto", 3, 2, "cpu", step_bytes=PARALLEL_MAX_ACTIVATION_BYTES + 1) == 1


# ---- real fits --------------------------------------------------------------------------------------------
def _data(problem_type, n=360, seed=0):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n, 4)), columns=list("abcd"))
    signal = np.sin(2 * X["a"]) + X["b"] * X["c"]
    if problem_type == "regression":
        y = signal + 0.3 * rng.normal(size=n)
    elif problem_type == "multiclass":
        y = np.digitize(signal, [-0.4, 0.4])
    else:
        y = (signal > 0).astype(int)
    return X, pd.Series(y, name="y")


def _fit(tmp_path, problem_type, hp, time_limit=None, validate=True):
    X, y = _data(problem_type)
    model = MayaModel(path=str(tmp_path / "m"), name="m", problem_type=problem_type, hyperparameters={**SMALL, **hp})
    val = dict(X_val=X.iloc[280:], y_val=y.iloc[280:]) if validate else {}
    fit_on_cores(model, 1, X=X.iloc[:280], y=y.iloc[:280], time_limit=time_limit, **val)
    return model, X.iloc[280:], y.iloc[280:]


@pytest.mark.parametrize("problem_type", ["regression", "binary", "multiclass"])
def test_members_are_kept_unless_the_average_validates_worse(problem_type, tmp_path, one_torch_thread_seeded):
    """No time limit: all three members train, so the first is scored once the second exists and every kept
    member carries the score of the average it joined."""
    model, X_val, y_val = _fit(tmp_path, problem_type, {"ensemble_members": 3})
    summary = model._fit_summary
    members = summary["members"]
    assert summary["members_stop"] == "ensemble_members=3", summary["members_stop"]
    assert len(members) + len(summary["members_dropped"]) == 3, (members, summary["members_dropped"])
    assert 1 <= len(members) == len(model.model) <= 3
    assert len({m["seed"] for m in members}) == len(members)  # different seeds
    judged = [m["ensemble_score"] for m in members]
    assert None not in judged, members
    assert all(b >= a for a, b in zip(judged, judged[1:])), judged
    # the kept average is what the model predicts, judged by log loss for classification
    proba = np.asarray(model.predict(X_val) if problem_type == "regression" else model.predict_proba(X_val))
    judge = model.stopping_metric if problem_type == "regression" else log_loss
    assert model.score_with_y_pred_proba(y=y_val.to_numpy(), y_pred_proba=proba, metric=judge) \
        == pytest.approx(judged[-1], rel=1e-5)


def test_prediction_is_the_mean_of_the_members_probabilities(tmp_path, one_torch_thread_seeded):
    """Two members forced (no validation to drop one): probabilities are averaged, not logits."""
    model, X_val, _ = _fit(tmp_path, "binary", {"ensemble_members": 2}, validate=False)
    assert len(model.model) == 2
    enc = model.preprocess(X_val)
    x_num, x_cat = torch.as_tensor(enc.x_num), torch.as_tensor(enc.x_cat)
    raws = [m.predict_raw(x_num, x_cat) for m in model.model.members]
    assert not torch.allclose(raws[0], raws[1])  # the seeds gave different networks
    expected = np.mean([torch.softmax(r.float(), 1)[:, 1].numpy() for r in raws], axis=0)
    np.testing.assert_allclose(model.predict_proba(X_val), expected, rtol=1e-5, atol=1e-6)  # positive class


def test_refit_full_replays_the_kept_members_seeds_and_epochs(tmp_path, one_torch_thread_seeded):
    """A fit whose second member is dropped: refit_full trains the first and third members' seeds, each for
    its own best epoch count, at the fit's depth, and with the same seed and epochs trains the same network."""
    model, _, _ = _fit(tmp_path, "regression", {"ensemble_members": 3, "max_epochs": 8, "patience": None})
    kept = [[m["seed"], m["best_epoch"]] for m in model._fit_summary["members"]]
    rec = model.params_trained
    assert rec["refit_members"] == len(kept)
    assert [rec[f"refit_member_epochs_{i + 1}"] for i in range(len(kept))] == [e for _, e in kept]
    replay = [[0, 5], [2 * S, 2]]  # as a fit that dropped member 2 would have recorded it
    X, y = _data("regression")
    refit = MayaModel(path=str(tmp_path / "r"), name="r", problem_type="regression",
                      hyperparameters={**model.params, **model.params_trained, REPLAY_KEY: replay})
    fit_on_cores(refit, 1, X=X, y=y)
    assert [[m["seed"], m["epochs"]] for m in refit._fit_summary["members"]] == replay
    assert [len(m.net.blocks) for m in refit.model.members] == [SMALL["num_layers"]] * 2
    again = MayaModel(path=str(tmp_path / "a"), name="a", problem_type="regression",
                      hyperparameters={**model.params, **model.params_trained, REPLAY_KEY: replay[1:]})
    fit_on_cores(again, 1, X=X, y=y)
    for a, b in zip(refit.model.members[1].state_dict().values(), again.model.members[0].state_dict().values()):
        torch.testing.assert_close(a, b)


@TWO_CORES
def test_the_first_two_members_train_at_once_each_on_its_own_random_stream(tmp_path, one_torch_thread_seeded):
    """With ``parallel_members=2`` the first two members train at the same time (each starts before the
    other ends), and a fit is still reproducible: each member draws its dropout masks from its own generator,
    not from torch's global one, whose draws would depend on how the two threads interleave."""
    hp = {"ensemble_members": 2, "parallel_members": 2, "max_epochs": 8, "dropout": 0.3, "decoder_dropout": 0.3}
    preds, X_val = [], None
    for run in range(2):
        torch.manual_seed(0)
        X, y = _data("binary")
        model = MayaModel(path=str(tmp_path / f"run{run}"), name="m", problem_type="binary",
                          hyperparameters={**SMALL, **hp})
        model.fit(X=X.iloc[:280], y=y.iloc[:280], num_cpus=2)
        X_val = X.iloc[280:]
        s = model._fit_summary["members"]
        assert len(s) == 2 and [m["parallel"] for m in s] == [2, 2]
        first, second = s
        assert second["started_at"] < first["started_at"] + first["train_seconds"]
        assert first["started_at"] < second["started_at"] + second["train_seconds"]
        preds.append(np.asarray(model.predict_proba(X_val)))
        enc = model.preprocess(X_val)
        raws = [m.predict_raw(torch.as_tensor(enc.x_num), torch.as_tensor(enc.x_cat)) for m in model.model.members]
        assert not torch.allclose(raws[0], raws[1])  # two networks from two seeds, not one trained twice
    np.testing.assert_array_equal(preds[0], preds[1])
