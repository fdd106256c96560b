"""``ensemble_members``: networks of one fit trained from different seeds, predictions averaged; a further
member is trained only while the time limit holds one and kept unless the average validates worse (log loss
for classification)."""

from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd
import pytest
import torch

from autogluon.core.metrics import log_loss

from autogluon_maya import MayaModel
from autogluon_maya.maya.members import AUTO_MEMBERS, resolve_members, smoothed_log_loss
from autogluon_maya.maya.model import MEMBER_SEED_STRIDE

# a parallel pair needs two cores (AutoGluon hands the model the machine's count)
TWO_CORES = pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="a parallel pair of members needs 2 CPU cores")
# one member at a time: these tests check the planner of sequential members (the parallel first pair has its own)
SMALL = {"max_epochs": 6, "hidden_size": 16, "num_heads": 2, "num_layers": 1, "patience": 3, "parallel_members": 1}


def test_auto_fills_a_time_limit_and_trains_one_member_without():
    assert resolve_members("auto", 600.0) == AUTO_MEMBERS > 1
    assert resolve_members("auto", None) == 1
    assert resolve_members(2, None) == 2
    with pytest.raises(ValueError, match="ensemble_members"):
        resolve_members(0, None)


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
    model.fit(X=X.iloc[:280], y=y.iloc[:280], num_cpus=1, time_limit=time_limit, **val)
    return model, X.iloc[280:], y.iloc[280:]


@pytest.mark.parametrize("problem_type", ["regression", "binary", "multiclass"])
def test_members_are_kept_unless_the_average_validates_worse(problem_type, tmp_path, one_torch_thread_seeded):
    # multiclass with label smoothing: members are judged against the smoothed targets (smoothed_log_loss)
    smoothing = 0.1 if problem_type == "multiclass" else 0.0
    model, X_val, y_val = _fit(tmp_path, problem_type, {"ensemble_members": 3, "label_smoothing": smoothing})
    members = model._fit_summary["members"]
    assert 1 <= len(members) == len(model.model) <= 3
    assert model.params_trained["ensemble_members"] == len(members)
    assert len({m["seed"] for m in members}) == len(members)  # different seeds
    # no kept member lowered the averaged validation score that judges members (log loss for classification)
    judged = [m["ensemble_member_score"] for m in members]
    assert all(b >= a for a, b in zip(judged, judged[1:])), judged
    # the kept average is what the model predicts: both recorded scores are those of its predictions
    proba = np.asarray(model.predict(X_val) if problem_type == "regression" else model.predict_proba(X_val))
    y = y_val.to_numpy()
    score = model.score_with_y_pred_proba(y=y, y_pred_proba=proba, metric=model.stopping_metric)
    assert score == pytest.approx(members[-1]["ensemble_val_score"], rel=1e-5, abs=1e-6)
    judge = model.stopping_metric if problem_type == "regression" else smoothed_log_loss(smoothing)
    assert model.score_with_y_pred_proba(y=y, y_pred_proba=proba, metric=judge) == pytest.approx(judged[-1], rel=1e-5)


def test_a_member_that_hurts_the_average_is_dropped_and_the_next_still_trains(tmp_path, monkeypatch,
                                                                                one_torch_thread_seeded):
    """The second member's predictor is turned against the labels after training: the average with it scores
    worse, so it goes, and the third member still trains in its planned share and is kept."""
    from autogluon_maya.maya import trainer

    real = trainer.train_maya

    def second_one_inverted(fitted, **kw):
        summary = real(fitted, **kw)
        if kw["seed"] == MEMBER_SEED_STRIDE:  # member 2 of a fit seeded 0
            with torch.no_grad():
                fitted.net.predictor.weight.mul_(-1.0)
                fitted.net.predictor.bias.mul_(-1.0)
            summary["context_fresh"] = False
        return summary

    monkeypatch.setattr(trainer, "train_maya", second_one_inverted)
    model, _, _ = _fit(tmp_path, "binary", {"ensemble_members": 3, "random_seed": 0})
    s = model._fit_summary
    assert len(s["members_dropped"]) == 1 and s["members_dropped"][0].startswith("member 2 dropped"), s["members_dropped"]
    assert [m["seed"] for m in s["members"]] == [0, 2 * MEMBER_SEED_STRIDE]
    assert len(model.model) == 2 and len(s["members_started_with_seconds"]) == 3


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


def test_a_member_starts_only_while_the_time_limit_holds_one(tmp_path, one_torch_thread_seeded):
    """Another member needs 1.1x the first member's time to its best epoch: with a limit barely above one
    first member there is no room for one; the fit says so and ends within its limit."""
    hp = {"max_epochs": 60, "patience": None}  # ~5 s per member on one core
    _fit(tmp_path / "warm", "regression", {**hp, "max_epochs": 2})  # first fit of the process pays start-up
    first, _, _ = _fit(tmp_path / "a", "regression", {**hp, "ensemble_members": 1})
    limit = 1.1 * first._fit_summary["train_seconds"]
    t0 = time.time()
    model, _, _ = _fit(tmp_path / "b", "regression", {**hp, "ensemble_members": 3}, time_limit=limit)
    assert time.time() - t0 <= 1.05 * limit + 2
    s = model._fit_summary
    member = s["members"][0]
    assert 0 < member["seconds_to_best"] <= member["train_seconds"]
    need = 1.1 * member["seconds_to_best"]
    # every member after the first (kept, dropped or failed) started with the time it needs left
    assert all(left >= need for left in s["members_started_with_seconds"][1:]), (need, s["members_started_with_seconds"])
    if s["members_stop"].startswith("time"):
        assert float(s["members_stop"].split("~")[1].split(" s")[0]) == pytest.approx(need, abs=0.06)


def test_a_member_starts_when_the_time_to_the_first_best_epoch_fits(tmp_path, one_torch_thread_seeded):
    """Early stopping's patience is not part of what another member needs: a limit that holds the first
    member's whole run plus its time to the best epoch (x1.1) holds a second member."""
    hp = {"max_epochs": 60, "patience": 5}
    _fit(tmp_path / "warm", "regression", {**hp, "max_epochs": 2})
    first, _, _ = _fit(tmp_path / "a", "regression", {**hp, "ensemble_members": 1})
    f = first._fit_summary
    if f["stop_reason"] != "early stopping" or f["seconds_to_best"] > 0.8 * f["train_seconds"]:
        pytest.skip(f"needs an early-stopped first member with patience to spare: {f['stop_reason']}")
    limit = (f["train_seconds"] + 1.1 * f["seconds_to_best"] + 0.05 * f["train_seconds"] + 1.0) / 0.95
    model, _, _ = _fit(tmp_path / "b", "regression", {**hp, "ensemble_members": 2}, time_limit=limit)
    s = model._fit_summary
    assert len(s["members"]) == 2 or s["members_dropped"], s["members_stop"]


def test_refit_full_replays_the_kept_number_of_members(tmp_path, one_torch_thread_seeded):
    model, _, _ = _fit(tmp_path, "regression", {"ensemble_members": 2})
    kept = len(model.model)
    X, y = _data("regression")
    refit = MayaModel(path=str(tmp_path / "r"), name="r", problem_type="regression",
                      hyperparameters={**model.params, **model.params_trained})
    refit.fit(X=X, y=y, num_cpus=1)
    assert len(refit.model) == kept


def test_the_time_left_is_split_evenly_among_the_members_it_holds(tmp_path, one_torch_thread_seeded):
    """With room for two more members (member_time small), the second gets about half the time left and is
    cut at the end of its share, so the third still starts; the fit ends within its limit."""
    hp = {"max_epochs": 60, "patience": None}  # ~5 s per member on one core, never early-stopped
    _fit(tmp_path / "warm", "regression", {**hp, "max_epochs": 2}, validate=False)
    first, _, _ = _fit(tmp_path / "a", "regression", {**hp, "ensemble_members": 1}, validate=False)
    one = first._fit_summary["train_seconds"]
    limit = 2.2 * one / 0.95  # after the first member, about 1.2 members' worth of time
    t0 = time.time()
    model, _, _ = _fit(tmp_path / "b", "regression", {**hp, "ensemble_members": 3, "member_time": 0.2},
                       time_limit=limit, validate=False)
    assert time.time() - t0 <= 1.05 * limit + 2
    s = model._fit_summary
    assert len(s["members"]) == 3, s["members_stop"]
    second, third = s["members"][1], s["members"][2]
    share = s["members_started_with_seconds"][1]
    assert share == pytest.approx(s["members_started_with_seconds"][2], rel=0.35)  # even halves
    # about half of what the first member left (same fit, so load cannot skew it), not all of it
    assert share < 0.6 * (0.95 * limit - s["members"][0]["train_seconds"])
    assert second["train_seconds"] <= share + 0.5 and second["stop_reason"].startswith("time")
    assert third["train_seconds"] <= s["members_started_with_seconds"][2] + 0.5


def test_time_a_member_leaves_unused_goes_to_another_member(tmp_path, one_torch_thread_seeded):
    """The plan is made again before each member: when the time left after the first holds only one more
    member but that member ends early (here at max_epochs), a third still starts in what it left."""
    hp = {"max_epochs": 6, "patience": None, "ensemble_members": 3, "member_time": 10.0}
    _fit(tmp_path / "warm", "regression", {**hp, "max_epochs": 2}, validate=False)
    first, _, _ = _fit(tmp_path / "a", "regression", {**hp, "ensemble_members": 1}, validate=False)
    one = first._fit_summary["train_seconds"]
    # after the first member ~15 members' time is left: one needs 10 (member_time x its time), so the plan
    # before member 2 holds one more; member 2 takes ~1 of it, and the ~14 left still hold one
    limit = 16 * one / 0.95
    t0 = time.time()
    model, _, _ = _fit(tmp_path / "b", "regression", hp, time_limit=limit, validate=False)
    assert time.time() - t0 <= 1.05 * limit + 2
    s = model._fit_summary
    need = hp["member_time"] * s["members"][0]["seconds_to_best"]
    assert s["members_started_with_seconds"][1] < 2 * need  # the first plan held one more member, not two
    assert len(s["members"]) == 3, s["members_stop"]
    assert s["members"][1]["train_seconds"] < 0.5 * s["members_started_with_seconds"][1]  # it ended early


@pytest.mark.parametrize("hp, depths", [
    ({"deeper_member": 2.0}, [1, 2]),  # the time left holds many first members, so one deeper member takes it all
    ({"deeper_member": "auto"}, [1, 1, 1]),  # classification's "auto" is off (defaults.TASK_DEFAULTS)
    ({"ensemble_members": 3, "deeper_member": 2.0}, [1, 1, 1]),  # an explicit count is kept as asked, every member at num_layers
    ({"deeper_member": None}, [1, 1, 1]),  # the rule switched off
    pytest.param({"parallel_members": 2, "deeper_member": 2.0}, [1, 1, 2], marks=TWO_CORES),  # a parallel first pair, then the deeper member takes the rest
])
def test_with_much_time_left_the_one_further_auto_member_is_one_block_deeper(hp, depths, tmp_path,
                                                                               one_torch_thread_seeded):
    """A first member of ~1 s under a 40 s limit leaves far more than ``deeper_member`` (2) times its time:
    with ``ensemble_members="auto"`` the second member gets num_layers + 1 and is the last.  Without
    validation no member is dropped, so the depths are those trained; refit_full replays them."""
    model, _, _ = _fit(tmp_path, "binary", {"ensemble_members": "auto", **hp}, time_limit=40.0, validate=False)
    assert [len(m.net.blocks) for m in model.model.members] == depths
    assert [m["num_layers"] for m in model._fit_summary["members"]] == depths
    assert model.params_trained["member_layers"] == depths
    X, y = _data("binary")
    refit = MayaModel(path=str(tmp_path / "r"), name="r", problem_type="binary",
                      hyperparameters={**model.params, **model.params_trained})
    refit.fit(X=X, y=y, num_cpus=1)
    assert [len(m.net.blocks) for m in refit.model.members] == depths


def _plan(**kw):
    from autogluon_maya.maya.members import plan_further_members

    args = dict(time_left=100.0, validation_seconds=2.0, first_train_seconds=30.0, first_seconds_to_best=20.0,
                max_further=2, num_layers=1, member_time=1.1, deeper_member=2.0, may_deepen=True)
    return plan_further_members(**{**args, **kw})


def test_the_plan_splits_the_time_left_evenly_among_the_members_it_holds():
    # 98 s after the first member's validation pass; a member needs 1.1 x 20 s + a 2 s pass: 4 fit, 2 allowed
    plan = _plan(may_deepen=False)
    assert (plan.further, plan.num_layers) == (2, 1)
    assert plan.seconds == pytest.approx(98.0 / 2 - 2.0)  # each share leaves room for its validation pass
    plan = _plan(may_deepen=False, time_left=40.0)  # 38 s hold one member of 24 s
    assert (plan.further, plan.seconds) == (1, pytest.approx(36.0))
    plan = _plan(time_left=20.0)
    assert plan.further == 0 and "needs ~22.0 s" in plan.reason


def test_the_plan_gives_all_the_time_to_one_deeper_member_only_past_the_threshold():
    # 98 - 2 = 96 s >= 2 x 30 s: one member, one block deeper, all the time left but its validation pass
    plan = _plan()
    assert (plan.further, plan.num_layers, plan.seconds) == (1, 2, pytest.approx(96.0))
    # just under 2 x the first member's training time: two members of the first one's depth instead
    plan = _plan(first_train_seconds=48.5)
    assert (plan.further, plan.num_layers) == (2, 1)
    assert _plan(deeper_member=None).num_layers == 1
    assert _plan(may_deepen=False).num_layers == 1


def test_resolve_parallel_shares_cores_only_between_cpu_members():
    from autogluon_maya.maya.members import resolve_parallel

    assert resolve_parallel("auto", 3, 2, "cpu") == 2
    assert resolve_parallel("auto", 3, 2, "cuda") == 1  # a GPU runs one network at a time anyway
    assert resolve_parallel("auto", 1, 2, "cpu") == 1  # nothing to pair
    assert resolve_parallel("auto", 3, 1, "cpu") == 1  # one core
    assert resolve_parallel(1, 3, 2, "cpu") == 1  # (1 == True in Python: not "auto")
    assert resolve_parallel(3, 3, 2, "cpu") == 2  # no more at once than cores
    with pytest.raises(ValueError, match="parallel_members"):
        resolve_parallel(0, 3, 2, "cpu")


@TWO_CORES
def test_a_member_that_fails_in_a_pair_stops_the_other(tmp_path, monkeypatch, one_torch_thread_seeded):
    """The second member of a parallel pair raises at once: the error reaches the caller as soon as the first
    member notices (its next step), not after it has trained its 2,000 epochs (~1 min here)."""
    from autogluon_maya.maya import trainer

    real = trainer.train_maya

    def second_fails(fitted, **kw):
        if kw["seed"] == MEMBER_SEED_STRIDE:
            time.sleep(0.5)  # let the first member start
            raise RuntimeError("member 2 broke")
        return real(fitted, **kw)

    monkeypatch.setattr(trainer, "train_maya", second_fails)
    t0 = time.time()
    with pytest.raises(RuntimeError, match="member 2 broke"):
        _fit(tmp_path, "binary", {"ensemble_members": 2, "parallel_members": 2, "max_epochs": 2000, "patience": None},
             validate=False)
    assert time.time() - t0 < 10


@TWO_CORES
def test_the_first_two_members_train_at_once_each_on_its_own_random_stream(tmp_path, one_torch_thread_seeded):
    """With ``parallel_members=2`` the first two members train at the same time (each starts before the
    other ends), and a fit is still reproducible: each member draws its dropout masks from its own generator,
    not from torch's global one, whose draws would depend on how the two threads interleave."""
    hp = {"ensemble_members": 2, "parallel_members": 2, "max_epochs": 8, "dropout": 0.3, "decoder_dropout": 0.3}
    preds, X_val = [], None
    for run in range(2):
        torch.manual_seed(0)
        model, X_val, _ = _fit(tmp_path / f"run{run}", "binary", hp, validate=False)
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


def test_members_are_judged_against_the_targets_they_were_trained_on():
    """With label smoothing s the member score is the cross-entropy against (1 - s) one-hot + s / classes: the
    smoothed probabilities score best (plain log loss prefers the sharper ones, which would drop members that
    are as smoothed as they were trained to be); s = 0 is plain log loss."""
    s, k = 0.1, 4
    y = np.array([0, 1, 2, 3, 1])
    onehot = np.eye(k)[y]
    smoothed = (1 - s) * onehot + s / k
    sharper = 0.99 * onehot + 0.01 / k
    scorer = smoothed_log_loss(s)
    assert scorer(y, smoothed) > scorer(y, sharper)  # greater is better
    assert log_loss(y, smoothed) < log_loss(y, sharper)  # the bias it removes
    manual = -np.mean(np.sum(smoothed * np.log(sharper), axis=1))
    assert scorer(y, sharper) == pytest.approx(-manual, rel=1e-9)
    assert smoothed_log_loss(0.0) is log_loss
    # binary: AutoGluon hands over the positive class's probability only
    yb, pb = np.array([0, 1, 1, 0]), np.array([0.2, 0.7, 1.0, 0.0])  # saturated float32 softmax gives 1.0 / 0.0
    full = np.stack([1 - pb, pb], axis=1)
    target = (1 - s) * np.eye(2)[yb] + s / 2
    assert scorer(yb, pb) == pytest.approx(np.mean(np.sum(target * np.log(np.clip(full, 1e-15, 1)), axis=1)),
                                           rel=1e-9)
    assert np.isfinite(scorer(yb, pb))
