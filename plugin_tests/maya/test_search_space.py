"""MAYA's GPU search space is the paper's Table 12 (Appendix D.1), its CPU space stays within what the trainer
accepts on a CPU, and both start from the defaults.

The paper's values are written out here by hand from its Table 12 (Li et al., "Multi-branch of Attention Yields
Accurate Results for Tabular Data", arXiv:2502.12507), not imported from the module under test, so a wrong entry
in ``TABLE12`` fails this file.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from autogluon.common import space

from autogluon_maya import MayaModel
from autogluon_maya.maya.defaults import AUTO_BATCH_ROWS, PROBLEM_TYPES, resolve_defaults
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
    assert set(maya_search_space(device="gpu")) == set(PAPER_TABLE12)
    assert set(maya_search_space(device="cpu")) == set(PAPER_TABLE12)


@pytest.mark.parametrize("name", sorted(PAPER_TABLE12))
def test_gpu_space_entry_equals_the_papers(name):
    kind, *values = PAPER_TABLE12[name]
    sp = maya_search_space(device="gpu")[name]
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
    ss = maya_search_space(device="gpu")
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
    for given in ({}, maya_search_space(device="gpu"), maya_search_space(device="cpu")):
        model = MayaModel(problem_type=problem_type, path=str(tmp_path), name="m", hyperparameters={**given, **hp})
        model.initialize()
        spaces = model._get_search_space()
        first = _first_trial(spaces)
        first.pop(model.seed_name)
        assert first == want
        assert sum(isinstance(v, space.Space) for v in spaces.values()) == len(PAPER_TABLE12)
        for name, sp in given.items():  # restarted at the fit's default, within the range given
            if isinstance(sp, (space.Int, space.Real)):
                assert (spaces[name].lower, spaces[name].upper) == (sp.lower, sp.upper), name
            elif isinstance(sp, space.Categorical):
                assert set(spaces[name].data) - {want[name]} <= set(sp.data), name


def test_space_defaults_follow_overrides_and_are_clipped():
    ss = maya_search_space({"hidden_size": 10_000, "dropout": 0.25, "batch_size": 2048, "num_heads": 8,
                            "learning_rate": 1.0}, device="gpu")
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


# ---- the CPU space ----------------------------------------------------------------------------------------
# What search_space.CPU_SPACE is sized for: tables of up to 100 features (2,000 rows) and trials of 60 s.
CPU_FEATURES, CPU_ROWS, CPU_TRIAL_SECONDS = 100, 2000, 60.0
# A training step costs 3x its forward pass (the trainer's estimate_step_seconds counts the backward pass so);
# one CPU thread does at least this many floating-point operations per second in MAYA's steps: half the
# slowest rate measured on the 2 shared cores with other jobs running (docs/maya.md, "The search spaces").
CPU_FLOPS_PER_SECOND = 5e9


def _step_seconds(config: dict, batch: int) -> float:
    """One training step of ``config`` on the reference table at ``CPU_FLOPS_PER_SECOND``: the forward pass's
    floating-point operations counted by torch on shape-only (meta) tensors, so without running it."""
    from torch.utils.flop_counter import FlopCounterMode

    from autogluon_maya.maya.network import NETWORK_KEYS, MayaNetwork

    net_args = {k: {**resolve_defaults('binary'), 'num_embeddings': None, **config}[k] for k in NETWORK_KEYS}
    net_args["hidden_size"] = round_hidden_size(config["hidden_size"], config["num_heads"])
    with torch.device("meta"):
        net = MayaNetwork(n_num=CPU_FEATURES, cat_cardinalities=[], out_dim=2, label_kind="class", num_classes=2,
                          **net_args)
        x, y = torch.zeros(batch, CPU_FEATURES), torch.zeros(batch, dtype=torch.long)
        with FlopCounterMode(display=False) as flops:
            net.forward_train(x, torch.zeros(batch, 0, dtype=torch.long), y)
    return 3 * flops.get_total_flops() / CPU_FLOPS_PER_SECOND


def _trained_batch(config: dict) -> int:
    """The batch the trainer's shrink-or-skip rule trains ``config`` at in a CPU trial: 0 where it skips it."""
    from autogluon_maya.maya.schedule import MIN_STEPS_PER_EPOCH, effective_batch_size, fit_batch_to_budget

    batch = effective_batch_size(config["batch_size"], CPU_ROWS, max(AUTO_BATCH_ROWS.values()))
    return fit_batch_to_budget(batch, _step_seconds(config, batch), CPU_TRIAL_SECONDS, MIN_STEPS_PER_EPOCH)[0]


def _largest(spaces: dict) -> dict:
    """Every entry at its costliest: the top of each range, the largest choice of each number."""
    out = {}
    for name, sp in spaces.items():
        if isinstance(sp, (space.Int, space.Real)):
            out[name] = sp.upper
        else:
            numbers = [c for c in sp.data if isinstance(c, (int, float)) and not isinstance(c, bool)]
            out[name] = max(numbers) if numbers and name != "num_heads" else sp.data[0]
    return out


def _draws(spaces: dict, n: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(n):
        c = {}
        for name, sp in spaces.items():
            if isinstance(sp, space.Int):
                c[name] = int(rng.integers(sp.lower, sp.upper + 1))
            elif isinstance(sp, space.Real):
                c[name] = float(rng.uniform(sp.lower, sp.upper))
            else:
                c[name] = sp.data[int(rng.integers(len(sp.data)))]
        draws.append(c)
    return draws


def test_no_draw_of_the_cpu_space_is_skipped_by_the_trainers_rule_on_a_cpu():
    """The trainer skips a configuration when 8 steps at batch 64 do not fit in the time (trainer.
    fit_batch_to_budget): every draw of the CPU space, and its costliest corner, must train in a 60 s trial on a
    100-feature table, and fit a machine with 8 GiB free by MAYA's memory estimate.  Table 12's corner does
    not (the check can tell), and an unnarrowed depth would not."""
    import pandas as pd

    cpu = maya_search_space(problem_type="regression", device="cpu")
    for config in [_largest(cpu)] + _draws(cpu, 12):
        assert _trained_batch(config) > 0, config
    X = pd.DataFrame(np.zeros((CPU_ROWS, CPU_FEATURES), np.float32))
    memory = MayaModel._estimate_memory_usage_static(X=X, hyperparameters=_largest(cpu), problem_type="regression")
    assert memory <= 4 * 2**30, memory / 2**30
    assert _trained_batch(_largest(maya_search_space(problem_type="regression", device="gpu"))) == 0
    assert _trained_batch({**_largest(cpu), "num_layers": 4}) == 0


def test_the_cpu_space_narrows_only_the_sizes_of_table12():
    """The optimisation entries are the paper's; the size entries lie within Table 12 except batch_size, whose
    GPU sizes (1,024-4,096) give way to CPU ones."""
    cpu, gpu = maya_search_space(device="cpu"), maya_search_space(device="gpu")
    sizes = {"num_layers", "hidden_size", "num_branch", "num_decoder_layers", "batch_size"}
    for name in set(PAPER_TABLE12) - sizes:
        assert repr(cpu[name]) == repr(gpu[name]), name
    for name in sizes - {"batch_size"}:
        assert gpu[name].lower <= cpu[name].lower <= cpu[name].upper < gpu[name].upper, name
    assert cpu["num_layers"].upper == 2


@pytest.mark.parametrize("cuda", [True, False])
def test_auto_picks_the_space_of_the_device(cuda, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    want = maya_search_space(device="gpu" if cuda else "cpu")
    assert {k: repr(v) for k, v in maya_search_space().items()} == {k: repr(v) for k, v in want.items()}
    with pytest.raises(ValueError, match="device"):
        maya_search_space(device="tpu")
