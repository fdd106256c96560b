"""MAYA's hyperparameter search spaces as AutoGluon spaces: the MAYA paper's Table 12 (Appendix D.1), which the
paper tuned on GPUs, and a space for CPUs that narrows Table 12's sizes.  ``TABLE12`` is the table as printed.
On a CPU, Table 12's larger draws (16 MBA blocks, batch 4,096) are shrunk or skipped by the trainer's time check
(a step must fit the trial's time) and AutoGluon's memory check, so most trials of a random search train nothing;
``CPU_SPACE`` keeps every draw within what that check accepts on a CPU."""

from __future__ import annotations

from typing import Any, Dict

from autogluon.common import space

# kind: ("real", low, high, log) | ("int", low, high) | ("cat", choices...)
TABLE12: Dict[str, tuple] = {
    # encoder
    "num_layers": ("int", 1, 16),
    "hidden_size": ("int", 64, 256),
    "num_heads": ("cat", 1, 4, 8, 32),
    "num_branch": ("int", 2, 8),
    "intermediate_factor": ("cat", 0.8, 1, 1.3, 2),
    "dropout": ("real", 0.0, 0.3, False),
    "add_act": ("cat", True, False),
    "if_bias": ("cat", True, False),
    "act_type": ("cat", "relu", "prelu"),
    # decoder
    "num_decoder_layers": ("int", 1, 16),
    "decoder_intermediate_factor": ("cat", 0.8, 1, 1.3, 2),
    "decoder_dropout": ("real", 0.0, 0.3, False),
    "decoder_if_bias": ("cat", True, False),
    "decoder_act_type": ("cat", "relu", "prelu"),
    "qk_shared_weights": ("cat", True, False),
    # others
    "batch_size": ("cat", 1024, 2048, 4096),
    "learning_rate": ("real", 1e-5, 5e-3, True),
    "weight_decay": ("real", 0.0, 0.3, False),
}


# Table 12 with the entries that set a step's cost narrowed, for a CPU: the first MBA block of a deeper encoder
# computes attention and FFN over every token (a one-block encoder only the [CLS] row), so depth costs most and
# stops at 2; width, branches and decoder depth are kept to their lower ends, and batches to CPU sizes (the
# default "auto" first, as in every space).  The optimisation entries (rates, decay, dropout) are the paper's.
# Sized for tables of up to 100 features and trials of a minute or more: plugin_tests/maya/test_search_space.py
# holds every draw to the trainer's shrink-or-skip rule at that size.
CPU_SPACE: Dict[str, tuple] = {
    **TABLE12,
    "num_layers": ("int", 1, 2),
    "hidden_size": ("int", 64, 96),
    "num_branch": ("int", 2, 4),
    "num_decoder_layers": ("int", 1, 2),
    "batch_size": ("cat", 128, 256),
}


def _to_space(entry: tuple, default: Any):
    kind = entry[0]
    if kind == "real":
        _, lo, hi, log = entry
        return space.Real(lo, hi, default=min(max(default, lo), hi), log=log)
    if kind == "int":
        _, lo, hi = entry
        return space.Int(lo, hi, default=min(max(int(default), lo), hi))
    # AutoGluon tries a Categorical's first choice first: the default, added where the table lacks it (the
    # default batch_size "auto": the paper's 1,024-4,096 rows are GPU sizes)
    return space.Categorical(default, *[c for c in entry[1:] if c != default])


def resolve_device(device: str) -> str:
    """The device a space is for: "gpu", "cpu", or for "auto" the one torch trains on here (CUDA if it sees one)."""
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"device must be 'auto', 'cpu' or 'gpu', got {device!r}")
    if device == "auto":
        import torch

        return "gpu" if torch.cuda.is_available() else "cpu"
    return device


def maya_search_space(defaults: Dict[str, Any] | None = None, problem_type: str | None = None,
                      device: str = "auto") -> Dict[str, Any]:
    """MAYA's search space as AutoGluon spaces starting at MAYA's default, so that trial 1 is the default;
    ``defaults`` moves a space's start.  ``device``: "gpu" is Table 12, the paper's space; "cpu" is ``CPU_SPACE``,
    Table 12 narrowed to what trains on a CPU in a trial; "auto" picks by ``torch.cuda.is_available()``.  Without
    ``problem_type`` the spaces not moved are marked, and ``MayaModel`` restarts them at the default of the fit's
    problem type and recipe.  ``hyperparameters={"MAYA": maya_search_space()}``."""
    from .defaults import resolve_defaults

    table = resolve_defaults(problem_type or "binary")
    start = {**table, **(defaults or {})}
    spaces = {}
    gpu = resolve_device(device) == "gpu"
    for name, entry in (TABLE12 if gpu else CPU_SPACE).items():
        if not gpu and entry[0] in ("int", "real") and name in (defaults or {}):
            # a value the user set stays reachable (Table 12 clips it: the paper's bounds)
            lo, hi = min(entry[1], start[name]), max(entry[2], start[name])
            entry = (entry[0], type(entry[1])(lo), type(entry[2])(hi), *entry[3:])
        spaces[name] = _to_space(entry, start[name])
        spaces[name].maya_entry = entry  # the range that MayaModel._init_params restarts a marked space in
        if problem_type is None and name not in (defaults or {}):
            spaces[name].maya_table_default = True  # MayaModel._init_params restarts it at the fit's default
    return spaces


def round_hidden_size(hidden_size: int, num_heads: int) -> int:
    """A searched ``hidden_size`` need not divide by ``num_heads``; round to the nearest multiple (>= num_heads)."""
    # floor(x + 0.5) rounds halves up; Python's round() would round them to even
    return max(num_heads, int(hidden_size / num_heads + 0.5) * num_heads)
