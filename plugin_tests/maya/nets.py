"""Networks for unit tests, built as the model builds them: every setting handed to ``MayaNetwork`` explicitly,
the table's (``defaults.resolve_defaults``) unless a test overrides it.  The numeric token is the paper's linear
one unless a test asks for an embedding: a network built without training rows has no piecewise bins."""

from __future__ import annotations

from autogluon_maya.maya.defaults import resolve_defaults
from autogluon_maya.maya.network import NETWORK_KEYS, MayaNetwork


def network_settings(problem_type: str = "binary", recipe: str = "default", **overrides) -> dict:
    """Every one of ``NETWORK_KEYS``: the table's for ``problem_type`` and ``recipe``, then ``overrides``."""
    unknown = sorted(set(overrides) - set(NETWORK_KEYS))
    if unknown:
        raise TypeError(f"not network settings: {unknown}")
    table = {**resolve_defaults(problem_type, recipe), "num_embeddings": None, **overrides}
    return {k: table[k] for k in NETWORK_KEYS}


def maya_network(n_num: int, cat_cardinalities, out_dim: int, label_kind: str, num_classes: int = 0,
                 num_bins=None, problem_type: str = "binary", **overrides) -> MayaNetwork:
    """A ``MayaNetwork`` at the table's settings for ``problem_type`` with ``overrides``."""
    return MayaNetwork(n_num, cat_cardinalities, out_dim, label_kind, num_classes, num_bins=num_bins,
                       **network_settings(problem_type, **overrides))
