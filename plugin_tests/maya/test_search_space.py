"""MAYA's search space is the paper's Table 12 (Appendix D.1) and starts from the defaults.

The paper's values are written out here by hand from ``../shared/papers/maya_paper.txt``, not imported
from the module under test, so a wrong entry in ``TABLE12`` fails this file.
"""

from __future__ import annotations

import pytest
from autogluon.common import space

from autogluon_maya import MayaModel
from autogluon_maya.maya.defaults import DEFAULT_PARAMS, TASK_DEFAULTS
from autogluon_maya.maya.search_space import maya_search_space, round_hidden_size

# Table 12, as printed: UniformInt[a,b] -> ("int", a, b); Uniform -> ("uniform", a, b);
# LogUniform -> ("loguniform", a, b); Categorical[...] -> ("cat", {...})
PAPER_TABLE12 = {
    "num_layers": ("int", 1, 16),
    "hidden_size": ("int", 64, 256),
    "num_heads": ("cat", {1, 4, 8, 32}),
    "num_branch": ("int", 2, 8),
    "intermediate_factor": ("cat", {0.8, 1, 1.3, 2}),
    "dropout": ("uniform", 0, 0.3),
    "add_act": ("cat", {True, False}),
    "if_bias": ("cat", {True, False}),
    "act_type": ("cat", {"relu", "prelu"}),
    "num_decoder_layers": ("int", 1, 16),
    "decoder_intermediate_factor": ("cat", {0.8, 1, 1.3, 2}),
    "decoder_dropout": ("uniform", 0, 0.3),
    "decoder_if_bias": ("cat", {True, False}),
    "decoder_act_type": ("cat", {"relu", "prelu"}),
    "qk_shared_weights": ("cat", {True, False}),
    "batch_size": ("cat", {1024, 2048, 4096}),
    "learning_rate": ("loguniform", 1e-5, 5e-3),
    "weight_decay": ("uniform", 0, 0.3),
}


def test_space_has_exactly_the_papers_eighteen_entries():
    assert len(PAPER_TABLE12) == 18
    assert set(maya_search_space()) == set(PAPER_TABLE12)


@pytest.mark.parametrize("name", sorted(PAPER_TABLE12))
def test_space_entry_equals_the_papers(name):
    kind, *values = PAPER_TABLE12[name]
    sp = maya_search_space()[name]
    if kind == "int":
        assert type(sp) is space.Int
        assert (sp.lower, sp.upper) == tuple(values)
    elif kind in ("uniform", "loguniform"):
        assert type(sp) is space.Real
        assert (sp.lower, sp.upper) == pytest.approx(tuple(values))
        assert bool(sp.log) == (kind == "loguniform")
    else:
        assert type(sp) is space.Categorical
        assert len(sp.data) == len(values[0])
        assert set(sp.data) == values[0]


def test_the_papers_tuned_configurations_lie_inside_the_space():
    """Configurations the paper reports (10 and 15 layers, a single head) must be reachable."""
    ss = maya_search_space()
    assert ss["num_layers"].lower <= 10 <= ss["num_layers"].upper
    assert ss["num_layers"].lower <= 15 <= ss["num_layers"].upper
    assert 1 in ss["num_heads"].data


def test_search_starts_from_the_defaults_where_the_table_allows():
    ss = maya_search_space()
    for name, sp in ss.items():
        if isinstance(sp, (space.Real, space.Int)):
            assert sp.lower <= sp.default <= sp.upper, name
            if DEFAULT_PARAMS[name] == "auto":  # task-dependent: the space starts from the regression value
                assert sp.default == TASK_DEFAULTS["regression"][name], name
            elif DEFAULT_PARAMS[name] is not None and sp.lower <= DEFAULT_PARAMS[name] <= sp.upper:
                assert sp.default == DEFAULT_PARAMS[name], name
        elif DEFAULT_PARAMS[name] in sp.data:
            # AutoGluon tries a Categorical's first choice first: the default
            assert sp.data[0] == DEFAULT_PARAMS[name], name


def test_space_defaults_follow_overrides_and_are_clipped():
    ss = maya_search_space({"hidden_size": 10_000, "dropout": 0.25, "batch_size": 2048, "num_heads": 8,
                            "learning_rate": 1.0})
    assert ss["hidden_size"].default == 256  # clipped to the paper's upper bound
    assert ss["dropout"].default == 0.25
    assert ss["learning_rate"].default == 5e-3
    assert ss["batch_size"].data[0] == 2048 and set(ss["batch_size"].data) == {1024, 2048, 4096}
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
    assert set(ss) == set(PAPER_TABLE12)
    assert ss["hidden_size"].default == DEFAULT_PARAMS["hidden_size"]


def test_model_searchspace_starts_from_user_hyperparameters(tmp_path):
    model = MayaModel(problem_type="binary", path=str(tmp_path), name="m",
                      hyperparameters={"hidden_size": 128, "num_heads": 8})
    model.initialize()
    ss = model._get_default_searchspace()
    assert set(ss) == set(PAPER_TABLE12)
    assert ss["hidden_size"].default == 128
    assert ss["num_heads"].data[0] == 8
