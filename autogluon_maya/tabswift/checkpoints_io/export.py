"""Our TabSwift checkpoint -> the authors' released format (``swift.ckpt``), the inverse of ``released.py``.

The authors' inference code (``TabSwiftClassifier`` / ``TabSwiftRegressor``, and TabArena's
``TA-TABSWIFT`` wrapper around them) loads ``{"config": {...}, "state_dict": {...}}`` with
``TabSwift(**config)`` and ``load_state_dict``.  Writing our weights in that layout lets both
wrappers run the very same pretrained weights, so the two can be compared on equal terms.

The tensor names come from the one table in ``released.py`` (``NAME_PAIRS``) that the converter reads
the release with; both directions are derived from it, so they cannot drift apart.  What the authors'
module can and cannot express:

========================  ===================================================================
ours                      in the authors' file
========================  ===================================================================
backbone, registers,      copied tensor for tensor (the same computation, checked by the
final norm and heads      converter and, in the tests, by the authors' module loading the
                          file with strict ``load_state_dict``)
class labels,             ``icl_predictor.y_encoder``: copied
``label_encoding=
"scalar"``
class labels,             their ``Linear(1, d)`` on the class id as a float can only produce
``label_encoding=         points on a line, ``b + id * w``.  Exact when the table's rows lie on
"embedding"`` (a table    one: then b = E[0], w = E[1] - E[0] reproduces every row.  A learned
E of C_max rows)          table does not (the shipped one: a least-squares line through its 10
                          rows leaves 89 % of their spread unexplained, so a fitted line would
                          in effect erase the labels of a multiclass table).  Such a checkpoint is
                          refused, naming the cause, unless ``binary_only=True``: then
                          b = E[0], w = E[1] - E[0] is exact for class ids 0 and 1, i.e. for
                          binary and regression tables, and the report says that the file is
                          not valid for three or more classes
per-layer and exit heads  no place (the authors' model has no early exit): left out, listed in
                          the report; the backbone they read is unchanged
``head_hidden_factor``,   fixed in the authors' module (decoder width 2 d, LayerNorm eps
``layer_norm_eps``        1e-5): any other value is refused
========================  ===================================================================

Why not shrink ``max_classes`` to 2 for a binary-only file (so no class id above 1 could ever reach the
line): the authors' class hierarchy splits n classes into ceil(n / max_classes) groups without capping
the group count at ``max_classes``, so with 2 it breaks on tables of more than 4 classes; keeping the
checkpoint's ``max_classes`` keeps every head as trained and states the limit instead.

Nothing here imports the authors' code; the file is written with ``torch.save`` of tensors and plain
containers only, so it loads with ``torch.load(weights_only=True)``, and it is read back through
``released.py``'s safe reader and complete mapping before the function returns.
"""

from __future__ import annotations

import argparse
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import torch

from ..config import TabSwiftConfig
from ..network import TabSwiftNetwork
from .released import (AUTHORS_DEFAULTS, CHECKED_CONFIG, ReleasedCheckpointError, map_state_dict,
                       network_config, read_released, released_name)
from .format import load_checkpoint, read_checkpoint_info

logger = logging.getLogger(f"autogluon.ext.{__name__}")
PathLike = Union[str, os.PathLike]

#: values the authors' module hard-codes (its decoders are d -> 2 d -> out, its LayerNorms use torch's eps)
AUTHORS_FIXED = {"head_hidden_factor": 2, "layer_norm_eps": 1e-5}
#: our keys the authors' format has no place for: the early-exit heads
EXIT_PREFIXES = ("layer_heads.", "exit_heads.")
CLASS_TABLE = "label_encoders.classes.weight"
#: a class table counts as a line when every row is within this (relative to the table's largest entry)
LINE_TOLERANCE = 1e-6


class ExportError(ValueError):
    """A checkpoint the authors' format can not hold exactly; the message names the cause."""


@dataclass
class ExportReport:
    """What an export wrote and what it could not carry."""

    path: Optional[Path]
    config: Dict[str, Any]
    #: "copied" (scalar encoder), "exact" (the table lies on a line), "binary only" (exact for ids 0 and 1)
    class_encoding: str
    #: largest |E[k] - (E[0] + k (E[1] - E[0]))| over the table's rows (0 for a scalar encoder)
    class_line_max_error: float = 0.0
    #: share of the table's spread a least-squares line leaves unexplained (1 - R^2; 0 for a scalar encoder)
    class_line_unexplained: float = 0.0
    dropped: List[str] = field(default_factory=list)

    @property
    def exact_for_multiclass(self) -> bool:
        return self.class_encoding in ("copied", "exact")


# ---- config --------------------------------------------------------------------------------------------
def authors_config(config: TabSwiftConfig, hint: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """The authors' ``TabSwift(**config)`` keywords that build our network's shape.

    ``hint``: the released config a converted checkpoint came from (its JSON records it); reused when it
    builds the same shape, so release -> ours -> release gives back the original dict.  Otherwise
    d_model = embed_dim x row_num_cls is written as embed_dim = d_model, row_num_cls = 1.
    """
    wrong = {k: getattr(config, k) for k, v in AUTHORS_FIXED.items() if getattr(config, k) != v}
    if wrong:
        raise ExportError(f"the authors' module fixes {AUTHORS_FIXED}; this network has {wrong}, which their "
                          "TabSwift can not build")
    out = {**AUTHORS_DEFAULTS, **CHECKED_CONFIG, "dropout": 0.0, "max_classes": config.max_classes,
           "max_dim": config.max_features, "proj_dim": config.max_features, "embed_dim": config.d_model,
           "row_num_cls": 1, "icl_num_blocks": config.n_layers, "icl_nhead": config.n_heads,
           "ff_factor": config.ff_factor, "register_tokens": config.n_registers}
    if hint:
        try:
            merged = {**AUTHORS_DEFAULTS, **hint}
            same = (int(merged["embed_dim"]) * int(merged["row_num_cls"]) == config.d_model
                    and all(int(merged[k]) == int(out[k]) for k in
                            ("max_classes", "max_dim", "proj_dim", "icl_num_blocks", "icl_nhead", "ff_factor",
                             "register_tokens"))
                    and all(merged[k] == v for k, v in CHECKED_CONFIG.items()))
        except (KeyError, TypeError, ValueError):
            same = False
        if same:
            return dict(hint)
    return out


# ---- the class encoder ---------------------------------------------------------------------------------
def class_line(table: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, float, float]:
    """The line through the table's first two rows, ``(weight (d, 1), bias (d,))`` of a Linear(1, d), its
    largest error over all rows, and the share of the rows' spread the best (least-squares) line leaves
    unexplained."""
    table = table.detach().to(torch.float64)
    bias, slope = table[0], table[1] - table[0]
    ids = torch.arange(table.shape[0], dtype=torch.float64)
    max_error = float((table - (bias + ids[:, None] * slope)).abs().max())
    design = torch.stack([torch.ones_like(ids), ids], dim=1)
    residual = table - design @ torch.linalg.lstsq(design, table).solution
    spread = float(((table - table.mean(0)) ** 2).sum())
    unexplained = float((residual ** 2).sum()) / spread if spread > 0 else 0.0
    return slope.unsqueeze(1).float(), bias.float(), max_error, unexplained


# ---- the state dict ------------------------------------------------------------------------------------
def to_authors(network: TabSwiftNetwork, binary_only: bool = False,
               config_hint: Optional[Dict[str, Any]] = None) -> Tuple[Dict[str, Any], Dict[str, torch.Tensor],
                                                                        ExportReport]:
    """``(config, state_dict, report)`` in the authors' layout for ``network``; see the module docstring for
    what is refused and what ``binary_only`` allows."""
    c = network.config
    config = authors_config(c, config_hint)
    ours = network.state_dict()
    state: Dict[str, torch.Tensor] = {}
    report = ExportReport(path=None, config=config, class_encoding="copied")
    for key, value in ours.items():
        if key.startswith(EXIT_PREFIXES):
            report.dropped.append(key)
            continue
        if key == "registers" and c.n_registers == 0:
            continue  # the authors' encoder has no register parameter without registers
        if key == CLASS_TABLE and c.label_encoding == "embedding":
            continue  # below
        name = released_name(key)
        if name == key:
            raise ExportError(f"tensor {key!r} has no place in the authors' format")
        state[name] = value.detach().to("cpu", torch.float32).clone().contiguous()
    if c.label_encoding == "embedding":
        weight, bias, max_error, unexplained = class_line(ours[CLASS_TABLE])
        report.class_line_max_error, report.class_line_unexplained = max_error, unexplained
        scale = max(1.0, float(ours[CLASS_TABLE].abs().max()))
        if max_error <= LINE_TOLERANCE * scale:
            report.class_encoding = "exact"
        elif binary_only:
            report.class_encoding = "binary only"
        else:
            raise ExportError(
                f"the class embedding table ({c.max_classes} rows) does not lie on a line: the authors' model "
                f"feeds the class id as a float through Linear(1, d), which reproduces the table exactly for "
                f"two classes only (row k is off by up to {max_error:.3g} from E[0] + k (E[1] - E[0]); a "
                f"least-squares line leaves {100 * unexplained:.0f} % of the rows' spread unexplained). "
                f"Pass binary_only=True to export a file that is exact for binary and regression tables and "
                f"not valid for three or more classes")
        state[released_name(CLASS_TABLE)] = weight.contiguous()
        state[released_name(CLASS_TABLE.replace(".weight", ".bias"))] = bias.contiguous()
    if report.dropped:
        report.dropped.sort()
    return config, state, report


def _resolve_source(src) -> Tuple[TabSwiftNetwork, Optional[Dict[str, Any]], str]:
    """(network, released config it came from if any, a name) for a network, a checkpoint path or None."""
    if isinstance(src, TabSwiftNetwork):
        return src, None, "tabswift"
    if src is None:
        from ..defaults import SHIPPED_CHECKPOINT

        src = SHIPPED_CHECKPOINT
    from .choice import resolve_checkpoint

    path = resolve_checkpoint(src)
    try:
        source = read_checkpoint_info(path).get("metadata", {}).get("source", {})
    except (FileNotFoundError, ValueError):
        source = {}
    hint = source.get("released_config") if isinstance(source, dict) else None
    return load_checkpoint(path), hint, Path(path).name


def export_to_authors(src, dst: PathLike, binary_only: bool = False) -> ExportReport:
    """Write ``src`` (a ``TabSwiftNetwork``, one of our checkpoints -- ``x``, ``x.safetensors``, ``x.json`` or a
    folder holding one -- or None for the shipped checkpoint) as an authors'-format file at ``dst`` (a
    file path, or an existing folder / a path ending in ``/``: then ``<folder>/<checkpoint name>.ckpt``).

    The file is written via a temporary file and a rename, then read back with ``torch.load(weights_only=True)``
    and mapped onto a network by ``released.py`` (every tensor placed, every shape checked) before the
    report is returned.  Raises ``ExportError`` for what the format can not hold (module docstring)."""
    network, hint, name = _resolve_source(src)
    config, state, report = to_authors(network, binary_only=binary_only, config_hint=hint)
    as_dir = Path(dst).is_dir() or str(dst).endswith(("/", os.sep))
    target = Path(dst) / f"{name}.ckpt" if as_dir else Path(dst)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    torch.save({"config": config, "state_dict": state}, tmp)
    os.replace(tmp, target)
    check_readable(target, state)
    report.path = target
    if report.dropped:
        logger.info(f"{target}: {len(report.dropped)} early-exit tensors left out (the authors' model has no "
                    "early exit; the backbone is unchanged)")
    if report.class_encoding == "binary only":
        logger.warning(f"{target}: the class encoder is exact for class ids 0 and 1 only: use this file for binary "
                       f"and regression tables, not for three or more classes")
    return report


def check_readable(path: Path, state: Dict[str, torch.Tensor]) -> None:
    """Read ``path`` back the way the converter reads a release and check that it holds ``state`` exactly."""
    try:
        config, read = read_released(path)
        network = TabSwiftNetwork(network_config(config, read, str(path)))
        map_state_dict(read, network, str(path))
    except ReleasedCheckpointError as err:
        raise ExportError(f"the exported file does not read back as a release: {err}") from None
    differ = sorted(k for k in state if k not in read or not torch.equal(read[k], state[k]))
    if differ or set(read) != set(state):
        raise ExportError(f"{path} did not read back the tensors written: {differ[:5]}")


# ---- command line ----------------------------------------------------------------------------------------
def main(argv: Optional[List[str]] = None) -> int:
    """``python -m autogluon_maya.tabswift.export [CHECKPOINT] OUT [--binary-only]``"""
    parser = argparse.ArgumentParser(prog="python -m autogluon_maya.tabswift.export", description=(
        "Write one of our TabSwift checkpoints in the authors' released format (swift.ckpt layout), for their "
        "TabSwiftClassifier/TabSwiftRegressor or TabArena's TA-TABSWIFT (model_path=)."))
    parser.add_argument("checkpoint", nargs="?", default=None,
                        help="our checkpoint (x, x.safetensors, x.json or its folder); default: the shipped one")
    parser.add_argument("out", help="output file (e.g. swift.ckpt), or a folder")
    parser.add_argument("--binary-only", action="store_true",
                        help="export a class-embedding table through the line of its first two rows: exact for "
                             "binary and regression tables, not valid for three or more classes")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        report = export_to_authors(args.checkpoint, args.out, binary_only=args.binary_only)
    except (ValueError, FileNotFoundError) as err:
        print(f"error: {err}")
        return 1
    print(report.path)
    return 0


__all__ = ["ExportError", "ExportReport", "authors_config", "class_line", "export_to_authors", "main", "to_authors"]


if __name__ == "__main__":
    raise SystemExit(main())

