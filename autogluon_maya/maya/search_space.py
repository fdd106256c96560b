"""MAYA's hyperparameter search space, the MAYA paper's Table 12 (Appendix D.1), as AutoGluon spaces.
``TABLE12`` is the table as printed.  The paper tuned on GPUs: on a CPU a sampled 16 layers x batch 4,096 is
shrunk or skipped by the trainer's time check, and AutoGluon's memory check skips what cannot fit in RAM."""

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


def maya_search_space(defaults: Dict[str, Any] | None = None, problem_type: str | None = None) -> Dict[str, Any]:
    """Table 12 as AutoGluon spaces starting at MAYA's default, so that trial 1 is the default; ``defaults``
    moves a space's start.  Without ``problem_type`` the spaces not moved are marked, and ``MayaModel`` restarts
    them at the default of the fit's problem type and recipe.  ``hyperparameters={"MAYA": maya_search_space()}``."""
    from .defaults import resolve_defaults

    table = resolve_defaults(problem_type or "binary")
    start = {**table, **(defaults or {})}
    spaces = {}
    for name, entry in TABLE12.items():
        spaces[name] = _to_space(entry, start[name])
        if problem_type is None and name not in (defaults or {}):
            spaces[name].maya_table_default = True  # MayaModel._init_params restarts it at the fit's default
    return spaces


def round_hidden_size(hidden_size: int, num_heads: int) -> int:
    """A searched ``hidden_size`` need not divide by ``num_heads``; round to the nearest multiple (>= num_heads)."""
    # floor(x + 0.5) rounds halves up; Python's round() would round them to even
    return max(num_heads, int(hidden_size / num_heads + 0.5) * num_heads)
