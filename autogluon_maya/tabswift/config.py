"""Size knobs of the TabSwift network (the released configuration: 24 blocks, d=192, 4 heads).

The config is a plain frozen dataclass so it can be stored as JSON beside a checkpoint and a
checkpoint can never be loaded into a network of a different shape by accident.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any, Dict

#: how support rows' class ids are embedded: our lookup table, or the release's scalar Linear(1, d)
LABEL_ENCODINGS = ("embedding", "scalar")


@dataclass(frozen=True)
class TabSwiftConfig:
    """Shape of a TabSwift network.

    ``max_features`` (F_max) and ``max_classes`` (C_max) define the input/output interface: rows are
    zero-padded to F_max features, the classification head emits C_max logits.

    ``head_hidden_factor`` sizes the final decoders (released: 192 -> 384 -> C_max / 1).
    The per-layer prediction heads and exit heads are not in the released checkpoint and their widths
    are not published; hidden = round(factor * d_model).  The exit heads run on every still-active
    query at every layer, so they are kept narrow (0.25 d: ~5% of a block's per-query FLOPs); the
    per-layer prediction heads only run on the rows that exit, so they can afford width d.
    ``early_exit=False`` builds the backbone and final heads only (the released parameter set).

    ``label_encoding`` is the one place where the released ``swift.ckpt`` computes differently from our
    default (``checkpoints_io/released.py`` lists what else was compared and found equal):
    ``"embedding"`` (ours) looks class ids up in a C_max x d table; ``"scalar"`` (released) feeds the
    class id as one float through Linear(1, d), so a converted release runs its own computation.
    """

    n_layers: int = 24
    d_model: int = 192
    n_heads: int = 4
    ff_factor: int = 2
    n_registers: int = 64
    max_features: int = 100
    max_classes: int = 10
    head_hidden_factor: int = 2
    layer_head_hidden_factor: float = 1.0
    exit_hidden_factor: float = 0.25
    early_exit: bool = True
    layer_norm_eps: float = 1e-5
    label_encoding: str = "embedding"

    def __post_init__(self):
        positive = ("n_layers", "d_model", "n_heads", "ff_factor", "max_features", "head_hidden_factor")
        for name in positive:
            if int(getattr(self, name)) < 1:
                raise ValueError(f"TabSwiftConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.n_registers < 0:
            raise ValueError(f"TabSwiftConfig.n_registers must be >= 0, got {self.n_registers}")
        if self.max_classes < 2:
            raise ValueError(f"TabSwiftConfig.max_classes must be >= 2, got {self.max_classes}")
        for name in ("layer_head_hidden_factor", "exit_hidden_factor"):
            if not getattr(self, name) > 0:
                raise ValueError(f"TabSwiftConfig.{name} must be > 0, got {getattr(self, name)}")
        if self.label_encoding not in LABEL_ENCODINGS:
            raise ValueError(f"TabSwiftConfig.label_encoding must be one of {LABEL_ENCODINGS}, "
                             f"got {self.label_encoding!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} must be a multiple of n_heads={self.n_heads}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def hidden(self, factor: float) -> int:
        return max(1, int(round(factor * self.d_model)))

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "TabSwiftConfig":
        """Strict: an unknown key means the file was written by an incompatible version."""
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"Unknown TabSwiftConfig keys {sorted(unknown)}; known: {sorted(known)}")
        return cls(**d)


#: The released ``swift.ckpt`` shape: 24 blocks, d=192, 4 heads, FFN x2, 64 registers, F_max=100, C_max=10.
RELEASED = TabSwiftConfig()

#: What 2 CPU cores can pretrain in about two hours.
SMALL = TabSwiftConfig(n_layers=6, d_model=128, n_heads=4, n_registers=16)

#: For unit tests: milliseconds per forward.  F_max/C_max are small so padding and slicing are visible.
TINY = TabSwiftConfig(n_layers=3, d_model=16, n_heads=2, ff_factor=2, n_registers=4, max_features=12,
                      max_classes=5)
