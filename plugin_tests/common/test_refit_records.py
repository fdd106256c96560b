"""The record a refit repeats (``common.refit``), for both models: written by a fit into ``params_trained``, combined
over a bag's folds as AutoGluon combines them (``BaggedEnsembleModel._get_compressed_params``, key by key over the
first fold's keys), read back by the refit.  A key a writer drops, or a value written with a type that changes how
the bag averages it, changes the record read back."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest
from autogluon.core.models import BaggedEnsembleModel

from autogluon_maya.common.refit import REFIT_PREFIX, read_refit_record, refit_keys, write_refit_record


def _bag(records):
    """AutoGluon's combination of its folds' params_trained, by its own code."""
    return BaggedEnsembleModel._get_compressed_params(None, model_params_list=records)


def _only_settings_left(params: dict, record_type) -> bool:
    return not any(k.startswith(REFIT_PREFIX) or k in record_type.legacy_keys
                   or any(k.startswith(p) for p in record_type.legacy_keys if p.endswith("_")) for k in params)


# ---- MAYA ---------------------------------------------------------------------------------------------------------

def test_maya_record_round_trip_over_three_folds():
    from autogluon_maya.maya.defaults import MEMBER_SEED_STRIDE, MayaRefitRecord, pop_replay, replay_record

    folds = [replay_record([7, 3], [7, 9, 3], slots=3),  # kept two; the empty slot: their rounded mean (5)
             replay_record([5, 6, 4], [5, 6, 4], slots=3),
             replay_record([], [4, 6], slots=3)]  # fell back to the prior
    records = []
    for record in folds:
        params_trained = {"hidden_size": 16, "batch_size": 64}
        write_refit_record(params_trained, record)
        records.append(params_trained)
    assert set(records[0]) == set(records[1]) == set(records[2])
    combined = _bag(records)
    params = dict(combined)
    got = read_refit_record(params, MayaRefitRecord)
    # members: round(5 / 3) = 2; slots: round(17 / 3), round(14 / 3), round(14 / 3)
    assert got == MayaRefitRecord(members=2, member_epochs=(6, 5, 5))
    assert params == {"hidden_size": 16, "batch_size": 64}  # the settings left for the model's check
    assert pop_replay(dict(combined), seed=10) == [[10, 6], [10 + MEMBER_SEED_STRIDE, 5]]


# ---- TabSwift -----------------------------------------------------------------------------------------------------

def _tabswift_fold(kept: bool, steps: int, seconds: float, fell_back: bool, checked: bool) -> dict:
    """The params_trained a validated fine_tune="auto" fit writes (``_record_for_refits``, the model's own code)."""
    from autogluon_maya import TabSwiftModel
    from autogluon_maya.tabswift.defaults import DEFAULT_PARAMS
    from autogluon_maya.tabswift.fit_context import FitContext, make_plan

    model = TabSwiftModel()
    model.params_trained, model.model = {}, SimpleNamespace(tau=0.5)
    p = dict(DEFAULT_PARAMS)
    plan = make_plan(p, classification=True, has_val=True, headless=False, prior=(None, ""))
    summary = {"fine_tune_decision": {"fine_tuned": kept, "best_step": steps}, "fine_tune_seconds": seconds,
               "prior_check": {"checked": checked, "fallback": fell_back}}
    ctx = FitContext(params=p, plan=plan, ensemble=None, budget=None, time_limit=None, seed=0, summary=summary)
    model._record_for_refits(ctx, SimpleNamespace(replay="shipped", requested="auto", reason="the shipped weights"))
    return model.params_trained


def test_tabswift_record_round_trip_over_three_folds():
    from autogluon_maya import TabSwiftModel
    from autogluon_maya.tabswift.fine_tune_policy import REPLAY_TIME_FACTOR, replay_seconds, replay_steps
    from autogluon_maya.tabswift.refit_records import AUTO_CHOICES, TabSwiftRefitRecord

    records = [_tabswift_fold(True, 300, 3.0, fell_back=False, checked=True),
               _tabswift_fold(False, 0, 0.0, fell_back=True, checked=True),
               _tabswift_fold(True, 100, 1.0, fell_back=False, checked=False)]
    assert set(records[0]) == set(records[1]) == set(records[2])
    full = TabSwiftRefitRecord(**{f.name: "" for f in dataclasses.fields(TabSwiftRefitRecord)})
    assert {k for k in records[0] if k.startswith(REFIT_PREFIX)} == set(refit_keys(full))  # every field written
    combined = _bag(records)
    # the settings the refit runs with
    assert combined["fine_tune"] is True and combined["fine_tune_steps"] == 133  # round(400 / 3)
    assert combined["checkpoint_path"] == "shipped" and combined["tau"] == 0.5
    params = dict(combined)
    got = read_refit_record(params, TabSwiftRefitRecord)
    assert got == TabSwiftRefitRecord(
        checkpoint_choice="checkpoint_path='auto': the shipped weights", fine_tune_choice=AUTO_CHOICES[True],
        fine_tune_seconds=pytest.approx(4.0 / 3), fine_tune_share=pytest.approx(2 / 3), fine_tune_horizon=400,
        prior_share=pytest.approx(1 / 3), prior_checked=pytest.approx(2 / 3))
    assert [type(v).__name__ for v in dataclasses.astuple(got)] == ["str", "str", "float", "float", "int", "float",
                                                                     "float"]  # ints: a rounded mean
    assert _only_settings_left(params, TabSwiftRefitRecord)
    # what the refit makes of it: the means over the folds that fine-tuned, and over those that checked
    assert replay_steps(combined["fine_tune_steps"], got) == 200
    assert replay_seconds(got) == pytest.approx(REPLAY_TIME_FACTOR * 2.0)
    assert TabSwiftModel._prior_share_of_checked(got)[0] == pytest.approx(0.5)


def test_a_model_saved_by_an_earlier_version_refits_from_its_old_key_names():
    from autogluon_maya.tabswift.refit_records import TabSwiftRefitRecord

    old = {"fine_tune": True, "fine_tune_steps": 3, "checkpoint_chosen": "why", "fine_tune_chosen": "",
           "fine_tune_seconds": 2.0, "fine_tune_share": 0.5, "fine_tune_schedule_steps": 30, "prior_share": 0.0,
           "prior_checked": 1.0, "n_estimators": 2}
    got = read_refit_record(old, TabSwiftRefitRecord)
    assert got == TabSwiftRefitRecord("why", "", 2.0, 0.5, 30, 0.0, 1.0)
    assert old == {"fine_tune": True, "fine_tune_steps": 3, "n_estimators": 2}


# ---- the convention -----------------------------------------------------------------------------------------------

def test_no_default_setting_is_a_refit_key():
    from autogluon_maya.maya.defaults import CHECKS, DEFAULT_PARAMS as MAYA_DEFAULTS, PAPER, MayaRefitRecord
    from autogluon_maya.tabswift.defaults import DEFAULT_PARAMS as TABSWIFT_DEFAULTS
    from autogluon_maya.tabswift.refit_records import TabSwiftRefitRecord

    for settings, record_type in [(MAYA_DEFAULTS, MayaRefitRecord), (PAPER, MayaRefitRecord),
                                  (CHECKS, MayaRefitRecord), (TABSWIFT_DEFAULTS, TabSwiftRefitRecord)]:
        fields = {f.name for f in dataclasses.fields(record_type)}
        params = dict(settings)
        assert read_refit_record(params, record_type) is None and params == dict(settings)
        assert not any(k.startswith(REFIT_PREFIX) or k in fields for k in settings), sorted(settings)


def test_the_keys_are_flat_scalars_and_an_unknown_refit_key_is_an_error():
    from autogluon_maya.maya.defaults import MayaRefitRecord

    with pytest.raises(TypeError, match="refit_members"):  # None would not average with the other folds' ints
        refit_keys(MayaRefitRecord(members=None, member_epochs=(3,)))
    with pytest.raises(TypeError, match="refit_member_epochs_1"):
        refit_keys(MayaRefitRecord(members=1, member_epochs=([3],)))
    with pytest.raises(ValueError, match="unknown refit key 'refit_member'"):
        read_refit_record({"refit_member": 1}, MayaRefitRecord)
    assert read_refit_record({"hidden_size": 8}, MayaRefitRecord) is None
    # a slot a bag's first fold lacked: None in its place (the model fills it)
    assert read_refit_record({"refit_members": 3, "refit_member_epochs_1": 4, "refit_member_epochs_3": 8},
                             MayaRefitRecord) == MayaRefitRecord(members=3, member_epochs=(4, None, 8))
