"""MAYA's search space agrees with TABLE12 entry by entry and starts from the defaults."""

from __future__ import annotations

import pytest
from autogluon.common import space

from autogluon_maya import MayaModel
from autogluon_maya.maya.defaults import DEFAULT_PARAMS
from autogluon_maya.maya.search_space import TABLE12, maya_search_space, round_hidden_size


def _clip(v, lo, hi):
    return min(max(v, lo), hi)


@pytest.mark.parametrize("name", sorted(TABLE12))
def test_space_matches_table12_entry(name):
    entry, sp = TABLE12[name], maya_search_space()[name]
    kind = entry[0]
    if kind == "real":
        _, lo, hi, log = entry
        assert type(sp) is space.Real
        assert (sp.lower, sp.upper, sp.log) == (lo, hi, log)
        assert sp.default == _clip(DEFAULT_PARAMS[name], lo, hi)
    elif kind == "int":
        _, lo, hi = entry
        assert type(sp) is space.Int
        assert (sp.lower, sp.upper) == (lo, hi)
        assert sp.default == _clip(int(DEFAULT_PARAMS[name]), lo, hi)
    else:
        assert kind == "cat"
        assert type(sp) is space.Categorical
        assert len(sp.data) == len(entry) - 1
        assert set(sp.data) == set(entry[1:])
        if DEFAULT_PARAMS[name] in entry[1:]:
            # AutoGluon tries a Categorical's first choice first: the default
            assert sp.data[0] == DEFAULT_PARAMS[name] and sp.default == DEFAULT_PARAMS[name]


def test_space_covers_table12_exactly_and_defaults_are_in_range():
    ss = maya_search_space()
    assert set(ss) == set(TABLE12)
    assert set(TABLE12) <= set(DEFAULT_PARAMS)
    for name, sp in ss.items():
        if isinstance(sp, (space.Real, space.Int)):
            assert sp.lower <= sp.default <= sp.upper, name
            if getattr(sp, "log", False):
                assert sp.lower > 0, name
        else:
            assert sp.default in sp.data, name


def test_space_defaults_follow_overrides_and_are_clipped():
    ss = maya_search_space({"hidden_size": 10_000, "dropout": 0.25, "batch_size": 1024, "num_heads": 8,
                            "learning_rate": 1.0})
    assert ss["hidden_size"].default == TABLE12["hidden_size"][2]  # clipped to the upper bound
    assert ss["dropout"].default == 0.25
    assert ss["learning_rate"].default == TABLE12["learning_rate"][2]
    assert ss["batch_size"].data[0] == 1024 and set(ss["batch_size"].data) == {256, 512, 1024}
    assert ss["num_heads"].data[0] == 8


@pytest.mark.parametrize("hidden,heads,expected", [(100, 8, 104), (3, 4, 4), (64, 4, 64),
                                                    (66, 4, 68), (70, 8, 72), (1, 8, 8), (0, 4, 4), (511, 8, 512)])
def test_round_hidden_size(hidden, heads, expected):
    assert round_hidden_size(hidden, heads) == expected


def test_round_hidden_size_is_a_nearest_multiple():
    for heads in (2, 4, 8):
        for hidden in range(1, 600):
            r = round_hidden_size(hidden, heads)
            assert r % heads == 0 and r >= heads, (hidden, heads, r)
            if hidden >= heads:
                assert abs(r - hidden) <= heads / 2, (hidden, heads, r)


def test_round_hidden_size_ties_round_up():
    assert round_hidden_size(100, 8) == 104
    assert round_hidden_size(20, 8) == 24


def test_model_default_searchspace_has_table12_keys(tmp_path):
    model = MayaModel(problem_type="binary", path=str(tmp_path), name="m")
    ss = model._get_default_searchspace()
    assert set(ss) == set(TABLE12)
    assert ss["hidden_size"].default == DEFAULT_PARAMS["hidden_size"]


def test_model_searchspace_starts_from_user_hyperparameters(tmp_path):
    model = MayaModel(problem_type="binary", path=str(tmp_path), name="m",
                      hyperparameters={"hidden_size": 128, "num_heads": 8})
    model.initialize()
    ss = model._get_default_searchspace()
    assert set(ss) == set(TABLE12)
    assert ss["hidden_size"].default == 128
    assert ss["num_heads"].data[0] == 8
