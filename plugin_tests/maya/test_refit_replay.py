"""refit_full after bagging replays every fold's record, not fold 1's: the refit trains the rounded mean over the
folds of the members kept, member i for the rounded mean of the folds' i-th best epoch counts (the rule AutoGluon's
BaggedEnsembleModel applies to integers, and to every model's epoch and iteration counts).  Through the real
bagged refit path: TabularPredictor with 2 folds, then refit_full."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from autogluon_maya.common.refit import refit_keys
from autogluon_maya.maya.defaults import MEMBER_SEED_STRIDE, pop_replay, replay_record

REPLAY_COUNT_KEY = "refit_members"  # the record's keys in params_trained (common.refit)
REPLAY_EPOCHS_PREFIX = "refit_member_epochs_"

from .test_prior_fallback import autogluon_log_level  # noqa: F401  (a fixture)


def _rounded_mean(values) -> int:
    return int(round(sum(values) / len(values)))  # Python's round, as AutoGluon's


def test_a_bagged_refit_replays_the_folds_combined_record(tmp_path, autogluon_log_level, one_torch_thread_seeded):
    from autogluon.tabular import TabularPredictor

    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(240, 3)), columns=list("abc"))
    data = X.assign(y=(X["a"] + 0.5 * X["b"] > 0).astype(int))
    hp = {"max_epochs": 8, "patience": None, "hidden_size": 16, "num_heads": 2, "ensemble_members": 3,
          "parallel_members": 1, "adaptive_threads": False, "num_embeddings": None}
    pred = TabularPredictor(label="y", path=str(tmp_path / "ag"), verbosity=0).fit(
        data, hyperparameters={"MAYA": hp}, num_bag_folds=2, fit_weighted_ensemble=False,
        ag_args_ensemble={"fold_fitting_strategy": "sequential_local"}, ag_args_fit={"num_cpus": 1, "num_gpus": 0},
        raise_on_model_failure=True)
    bag = pred._trainer.load_model("Maya_BAG_L1")
    folds = [bag.load_child(name) for name in bag.models]
    records = [f.params_trained for f in folds]
    for fold, record in zip(folds, records):  # each fold records its own kept members
        kept = [m["best_epoch"] for m in fold._fit_summary["members"]]
        assert record[REPLAY_COUNT_KEY] == len(kept)
        assert [record[f"{REPLAY_EPOCHS_PREFIX}{i + 1}"] for i in range(len(kept))] == kept
        assert sorted(k for k in record if k.startswith(REPLAY_EPOCHS_PREFIX)) == [
            f"{REPLAY_EPOCHS_PREFIX}{i}" for i in (1, 2, 3)]  # every slot, so that folds combine key by key
    count = _rounded_mean([r[REPLAY_COUNT_KEY] for r in records])
    want = [[MEMBER_SEED_STRIDE * i, _rounded_mean([r[f"{REPLAY_EPOCHS_PREFIX}{i + 1}"] for r in records])]
            for i in range(count)]
    fold_one = pop_replay(dict(records[0]), seed=0)
    assert want != fold_one, "the folds' records must differ for this test to tell them from fold 1's"

    refit = pred.refit_full()
    full = pred._trainer.load_model(refit["Maya_BAG_L1"])
    (child,) = [full.load_child(name) for name in full.models]
    replayed = [[m["seed"], m["epochs"]] for m in child._fit_summary["members"]]
    assert replayed == want
    assert all(m["stop_reason"] == "max_epochs" for m in child._fit_summary["members"])  # exactly those epochs


def test_the_record_fills_every_slot_and_an_explicit_list_wins():
    rec = refit_keys(replay_record([7, 3], [7, 9, 3], slots=3))
    assert rec == {REPLAY_COUNT_KEY: 2, f"{REPLAY_EPOCHS_PREFIX}1": 7, f"{REPLAY_EPOCHS_PREFIX}2": 3,
                   f"{REPLAY_EPOCHS_PREFIX}3": 5}  # the slot it did not fill: its kept members' rounded mean
    assert refit_keys(replay_record([], [4, 6], slots=2)) == {REPLAY_COUNT_KEY: 0, f"{REPLAY_EPOCHS_PREFIX}1": 5,
                                                  f"{REPLAY_EPOCHS_PREFIX}2": 5}  # fell back to the prior
    params = {**rec, "member_replay": [[11, 2]], "hidden_size": 16}
    assert pop_replay(params, seed=100) == [[11, 2]] and params == {"hidden_size": 16}
    assert pop_replay(dict(rec), seed=100) == [[100, 7], [100 + MEMBER_SEED_STRIDE, 3]]
    assert pop_replay({"hidden_size": 16}, seed=0) is None
    # folds that could train different numbers of members: a slot the combined record lacks gets the mean of
    # the slots it has, as replay_record fills its own
    assert pop_replay({REPLAY_COUNT_KEY: 3, f"{REPLAY_EPOCHS_PREFIX}1": 4, f"{REPLAY_EPOCHS_PREFIX}2": 8}, seed=0) \
        == [[0, 4], [MEMBER_SEED_STRIDE, 8], [2 * MEMBER_SEED_STRIDE, 6]]
    with pytest.raises(ValueError, match="refit_members=2"):  # members to replay, no epoch count at all
        pop_replay({REPLAY_COUNT_KEY: 2}, seed=0)
    # a model saved by an earlier version recorded the same under other names; its refit reads them
    assert pop_replay({"member_replay_count": 2, "member_replay_epochs_1": 7, "member_replay_epochs_2": 3}, seed=100) \
        == [[100, 7], [100 + MEMBER_SEED_STRIDE, 3]]
    with pytest.raises(ValueError, match="unknown refit key 'refit_member_epoch_1'"):  # a misspelt refit key
        pop_replay({REPLAY_COUNT_KEY: 1, "refit_member_epoch_1": 3}, seed=0)
