"""MAYA's search space is the paper's Table 12 (Appendix D.1) and starts from the defaults.

The paper's values are written out here by hand from ``../shared/papers/maya_paper.txt``, not imported
from the module under test, so a wrong entry in ``TABLE12`` fails this file.
"""

from __future__ import annotations

import pytest
from autogluon.common import space

from autogluon_maya import MayaModel
from autogluon_maya.maya.defaults import PROBLEM_TYPES, resolve_defaults
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
    else:  # the paper's choices, and the default first where the table lacks it (batch_size "auto")
        assert type(sp) is space.Categorical
        default = resolve_defaults("binary")[name]
        assert set(sp.data) == values[0] | {default} and len(sp.data) == len(set(sp.data))
        assert sp.data[0] == default


def test_the_papers_tuned_configurations_lie_inside_the_space():
    """Configurations the paper reports (10 and 15 layers, a single head) must be reachable."""
    ss = maya_search_space()
    assert ss["num_layers"].lower <= 10 <= ss["num_layers"].upper
    assert ss["num_layers"].lower <= 15 <= ss["num_layers"].upper
    assert 1 in ss["num_heads"].data


def _first_trial(spaces: dict) -> dict:
    """What AutoGluon's HPO tries first: every space's default (ray_hpo passes them as points_to_evaluate)."""
    return {k: v.default if isinstance(v, space.Space) else v for k, v in spaces.items()}


@pytest.mark.parametrize("recipe", ["default", "paper"])
@pytest.mark.parametrize("problem_type", PROBLEM_TYPES)
def test_the_first_trial_is_the_tasks_default_configuration(problem_type, recipe, tmp_path):
    """Both ways into HPO start at the default of the fit's problem type and recipe: the model's own search
    space (``hyperparameter_tune`` with plain hyperparameters) and ``maya_search_space()`` passed by a user,
    which does not know the problem type."""
    want = resolve_defaults(problem_type, recipe)
    hp = {} if recipe == "default" else {"recipe": "paper"}
    for given in ({}, maya_search_space()):
        model = MayaModel(problem_type=problem_type, path=str(tmp_path), name="m", hyperparameters={**given, **hp})
        model.initialize()
        first = _first_trial(model._get_search_space())
        first.pop(model.seed_name)
        assert first == want
        assert sum(isinstance(v, space.Space) for v in model._get_search_space().values()) == len(PAPER_TABLE12)


def test_space_defaults_follow_overrides_and_are_clipped():
    ss = maya_search_space({"hidden_size": 10_000, "dropout": 0.25, "batch_size": 2048, "num_heads": 8,
                            "learning_rate": 1.0})
    assert ss["hidden_size"].default == 256  # clipped to the paper's upper bound
    assert ss["dropout"].default == 0.25
    assert ss["learning_rate"].default == 5e-3
    assert ss["batch_size"].data == [2048, 1024, 4096]
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
    assert ss["hidden_size"].default == resolve_defaults("binary")["hidden_size"]


def test_model_searchspace_starts_from_user_hyperparameters(tmp_path):
    model = MayaModel(problem_type="binary", path=str(tmp_path), name="m",
                      hyperparameters={"hidden_size": 128, "num_heads": 8})
    model.initialize()
    ss = model._get_default_searchspace()
    assert set(ss) == set(PAPER_TABLE12)
    assert ss["hidden_size"].default == 128
    assert ss["num_heads"].data[0] == 8
