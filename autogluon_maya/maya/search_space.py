"""MAYA's hyperparameter search space (the MAYA paper's Table 12) as AutoGluon space objects.

``TABLE12`` is the single, plain-data statement of the table; ``maya_search_space()`` turns it into
``autogluon.common.space`` objects and a test checks the two agree entry by entry.

Caveat recorded in CHANGELOG/README: the paper text was not available in ``shared/papers`` when
this was written, so the ranges were reconstructed from the SPEC's list of hyperparameters and the
published FT-Transformer-style spaces the paper builds on.  Correct this table (and nothing else)
once the paper's Table 12 can be read.
"""

from __future__ import annotations

from typing import Any, Dict

from autogluon.common import space

# kind: ("real", low, high, log) | ("int", low, high) | ("cat", choices...)
TABLE12: Dict[str, tuple] = {
    "num_layers": ("int", 1, 4),
    "num_branch": ("int", 1, 8),
    "num_heads": ("cat", 4, 8),
    "hidden_size": ("int", 64, 512),
    "intermediate_factor": ("real", 0.5, 2.0, False),
    "dropout": ("real", 0.0, 0.5, False),
    "add_act": ("cat", True, False),
    "act_type": ("cat", "relu", "prelu"),
    "if_bias": ("cat", True, False),
    "num_decoder_layers": ("int", 1, 3),
    "decoder_intermediate_factor": ("real", 0.5, 2.0, False),
    "decoder_act_type": ("cat", "relu", "reglu", "gelu"),
    "decoder_dropout": ("real", 0.0, 0.5, False),
    "decoder_if_bias": ("cat", True, False),
    "qk_shared_weights": ("cat", True, False),
    "learning_rate": ("real", 3e-5, 1e-3, True),
    "weight_decay": ("real", 1e-6, 1e-3, True),
    "batch_size": ("cat", 256, 512, 1024),
}


def _to_space(entry: tuple, default: Any):
    kind = entry[0]
    if kind == "real":
        _, lo, hi, log = entry
        return space.Real(lo, hi, default=min(max(default, lo), hi), log=log)
    if kind == "int":
        _, lo, hi = entry
        return space.Int(lo, hi, default=min(max(int(default), lo), hi))
    choices = list(entry[1:])
    if default in choices:  # AutoGluon tries a Categorical's first choice first
        choices.remove(default)
        choices.insert(0, default)
    return space.Categorical(*choices)


def maya_search_space(defaults: Dict[str, Any] | None = None) -> Dict[str, Any]:
    """Table 12 as AutoGluon spaces, each starting from MAYA's CPU defaults so trial 1 is the default.

    Usage: ``hyperparameters={"MAYA": autogluon_maya.maya_search_space()}``.
    """
    from .defaults import DEFAULT_PARAMS

    defaults = {**DEFAULT_PARAMS, **(defaults or {})}
    return {name: _to_space(entry, defaults[name]) for name, entry in TABLE12.items()}


def round_hidden_size(hidden_size: int, num_heads: int) -> int:
    """A searched ``hidden_size`` need not divide by ``num_heads``; round to the nearest multiple (>= num_heads)."""
    # floor(x + 0.5) rounds halves up; Python's round() would round them to even
    return max(num_heads, int(hidden_size / num_heads + 0.5) * num_heads)
