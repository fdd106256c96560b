"""The authors' released TabSwift weights (``swift.ckpt``, model hub ``LAMDA-Tabular/TabSwift``).

The release is a ``torch.save`` pickle holding ``{"config": {...}, "state_dict": {...}}`` (353 tensors,
8,203,211 parameters).  This module reads it *safely*
(``torch.load(weights_only=True)``: tensors and plain containers only, so a file that would need to
run code while unpickling is refused, never executed), maps every released tensor onto
``TabSwiftNetwork`` and writes our safetensors + JSON checkpoint (with sha256) once, so later fits
load the converted file and never touch a pickle again.

What the release computes, compared with ``TabSwiftNetwork`` (learnt from the authors' model code,
read through a public vendored copy; nothing here is copied from it):

========================  ==========================================  ==============================
part                      release                                     ours
========================  ==========================================  ==============================
class label encoder       Linear(1, d) on the class id as a float     embedding table (default);
                                                                      ``label_encoding="scalar"``
                                                                      reproduces the release
feature-count rescale     x * F_max / F, then zero-pad to F_max        the same (scaling before or
                                                                      after padding with zeros is
                                                                      identical)
registers                 K learned tokens prepended, cut = K + n_tr   the same; their initial values
                                                                      do not matter once loaded
block                     pre-LN, packed QKV, G1 gate from LN1(x),     the same
                          GELU FFN (ff_factor x d), LN eps 1e-5
final norm + heads        one LayerNorm, then 192-384-10 (cls) or      one ``head.norm``, then the
                          192-384-1 (reg) GELU MLPs                    same MLPs
early exit                not released                                 per-layer + exit heads, trained
                                                                      by stage 3 on the converted
                                                                      backbone, or by a fit with tau
                                                                      set, on its own rows
========================  ==========================================  ==============================

Regression targets: the released sklearn wrapper feeds raw y (its standardization is commented out,
a known defect); our engine standardizes with the context statistics, as the model was pretrained.
How the whole pipeline differs from the authors' (preprocessing, ensemble, wide tables) is measured
and explained in ``docs/tabswift_vs_authors.md``.

Tensor names are those of the authors' module (``TabSwift`` in their inference code): the gate
projection of block i is ``icl_predictor.tf_icl.blocks.{i}.attn.attn_gate.{weight,bias}`` (an
``nn.Linear(d, d)`` beside the packed ``in_proj``).  The tests build the fixture file with the
authors' own module, so a name that drifts from theirs fails there, not on a user's download.
"""

from __future__ import annotations

import argparse
import logging
import os
import pickle
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import torch

from ..config import TabSwiftConfig
from ..network import TabSwiftNetwork
from .format import checkpoint_paths, load_checkpoint, read_checkpoint_info, run_command, save_checkpoint, sha256_file

logger = logging.getLogger(f"autogluon.ext.{__name__}")
PathLike = Union[str, os.PathLike]
RELEASED_FORMAT = "LAMDA-Tabular/TabSwift swift.ckpt"
CACHE_ENV = "AUTOGLUON_MAYA_CACHE"

#: (released name, our name) for every tensor, with placeholders; both directions of the mapping are
#: derived from this one table, so the two can never disagree
_B = "icl_predictor.tf_icl.blocks.{i}."
NAME_PAIRS: List[Tuple[str, str]] = [
    ("x_linear.{p}", "row_embedding.proj.{p}"),
    ("icl_predictor.tf_icl.register_token_values", "registers"),
    (_B + "attn.in_proj_{p}", "blocks.{i}.qkv.{p}"),
    (_B + "attn.out_proj.{p}", "blocks.{i}.out.{p}"),
    (_B + "attn.attn_gate.{p}", "blocks.{i}.gate.{p}"),
    (_B + "linear1.{p}", "blocks.{i}.ffn.0.{p}"),
    (_B + "linear2.{p}", "blocks.{i}.ffn.2.{p}"),
    (_B + "{n}.{p}", "blocks.{i}.{n}.{p}"),
    ("icl_predictor.ln.{p}", "head.norm.{p}"),
    ("icl_predictor.y_encoder.{p}", "label_encoders.classes.{p}"),
    ("icl_predictor.y_encoder_reg.{p}", "label_encoders.target.{p}"),
    ("icl_predictor.decoder.{k}.{p}", "head.cls.{k}.{p}"),
    ("icl_predictor.reg_decoder.{k}.{p}", "head.reg.{k}.{p}"),
]
# what each placeholder matches
_SLOTS = {"i": r"\d+", "p": "weight|bias", "n": "norm1|norm2", "k": "0|2"}


def _pattern(template: str) -> re.Pattern:
    parts = re.split(r"\{(\w+)\}", template)  # literal, slot, literal, slot, ...
    return re.compile("".join(re.escape(x) if j % 2 == 0 else f"(?P<{x}>{_SLOTS[x]})"
                              for j, x in enumerate(parts)) + r"\Z")


#: (released key pattern, our key template): every released tensor must match exactly one rule
KEY_RULES: List[Tuple[re.Pattern, str]] = [(_pattern(rel), ours) for rel, ours in NAME_PAIRS]
_RELEASED_NAMES: List[Tuple[re.Pattern, str]] = [(_pattern(ours), rel) for rel, ours in NAME_PAIRS]

#: the authors' ``TabSwift.__init__`` keyword defaults: a config dict that omits a key gets this value
#: there, so it gets the same value here (``row_num_cls`` defaults to 4, i.e. d = 4 x embed_dim)
AUTHORS_DEFAULTS: Dict[str, Any] = {
    "max_classes": 10, "max_dim": 100, "embed_dim": 128, "proj_dim": 100, "col_num_blocks": 3, "col_nhead": 4,
    "col_num_inds": 128, "row_num_blocks": 3, "row_nhead": 8, "row_num_cls": 4, "row_rope_base": 100000,
    "icl_num_blocks": 12, "icl_nhead": 4, "ff_factor": 2, "dropout": 0.0, "activation": "gelu", "norm_first": True,
    "register_tokens": 64, "use_headwise_gate": False, "use_elementwise_gate": False}
#: keys that shape the network: d_model = embed_dim x row_num_cls; proj_dim must equal max_dim (the width
#: of the input projection, asserted by the authors' constructor too)
USED_CONFIG = ("max_classes", "max_dim", "embed_dim", "proj_dim", "row_num_cls", "icl_num_blocks", "icl_nhead",
               "ff_factor", "register_tokens")
#: keys that must hold the one value whose computation ``TabSwiftNetwork`` reproduces
CHECKED_CONFIG = {"activation": "gelu", "norm_first": True, "use_elementwise_gate": True,
                  "use_headwise_gate": False}
#: keys inherited from TabICL that build nothing in TabSwift (and dropout, which inference does not apply)
INERT_CONFIG = ("col_num_blocks", "col_nhead", "col_num_inds", "row_num_blocks", "row_nhead", "row_rope_base",
                "dropout")
assert set(AUTHORS_DEFAULTS) == set(USED_CONFIG) | set(CHECKED_CONFIG) | set(INERT_CONFIG)


class ReleasedCheckpointError(ValueError):
    """A released-format file that can not be converted; the message names the file and the cause."""


# ---- reading ------------------------------------------------------------------------------------
def read_released(path: PathLike) -> Tuple[Dict[str, Any], Dict[str, torch.Tensor]]:
    """``(config, state_dict)`` of a released checkpoint, read with ``torch.load(weights_only=True)``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"released TabSwift checkpoint not found: {path}")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as err:
        found = re.search(r"GLOBAL (\S+)", str(err))
        detail = f"it references the Python object {found.group(1)!r}" if found else str(err).strip().splitlines()[0]
        raise ReleasedCheckpointError(
            f"refused to load {path}: it needs arbitrary unpickling ({detail}). Only tensors and plain "
            "containers are accepted (torch.load(weights_only=True)); unpickling anything else can run code "
            "from the file. The official swift.ckpt contains only a config dict and a state dict.") from None
    except Exception as err:  # not a torch file at all: truncated download, wrong file ...
        raise ReleasedCheckpointError(f"{path} is not a readable torch checkpoint ({type(err).__name__}: "
                                      f"{str(err).strip().splitlines()[0] if str(err).strip() else ''})") from None
    if not isinstance(obj, dict) or "state_dict" not in obj or "config" not in obj:
        found = sorted(obj)[:10] if isinstance(obj, dict) else type(obj).__name__
        raise ReleasedCheckpointError(f"{path} is not in the released TabSwift layout: expected a dict with "
                                      f"'config' and 'state_dict', found {found}")
    config, state = obj["config"], obj["state_dict"]
    if not isinstance(config, dict) or not isinstance(state, dict):
        raise ReleasedCheckpointError(f"{path}: 'config' and 'state_dict' must be dicts")
    bad = [k for k, v in state.items() if not isinstance(v, torch.Tensor) or not v.is_floating_point()]
    if bad:
        raise ReleasedCheckpointError(f"{path}: state_dict entries that are not float tensors: {bad[:5]}")
    return config, state


def network_config(config: Dict[str, Any], state: Dict[str, torch.Tensor], source: str = "") -> TabSwiftConfig:
    """Our ``TabSwiftConfig`` for a released config dict; refuse what the network can not compute."""
    where = f"{source}: " if source else ""
    unknown = sorted(set(config) - set(AUTHORS_DEFAULTS))
    if unknown:
        raise ReleasedCheckpointError(f"{where}released config has keys this converter does not know {unknown} "
                                      f"(the authors' TabSwift takes {sorted(AUTHORS_DEFAULTS)})")
    config = {**AUTHORS_DEFAULTS, **config}
    wrong = {k: config[k] for k, v in CHECKED_CONFIG.items() if config[k] != v}
    if config["proj_dim"] != config["max_dim"]:
        wrong["proj_dim"] = config["proj_dim"]
    if wrong:
        raise ReleasedCheckpointError(f"{where}released config {wrong} differs from the computation this converter "
                                      f"reproduces ({CHECKED_CONFIG}, proj_dim == max_dim)")
    d = int(config["embed_dim"]) * int(config["row_num_cls"])
    hidden_key = "icl_predictor.decoder.0.weight"
    if hidden_key not in state:
        raise ReleasedCheckpointError(f"{where}missing tensor {hidden_key!r} (needed to size the heads)")
    hidden = state[hidden_key].shape[0]
    if hidden % d:
        raise ReleasedCheckpointError(f"{where}{hidden_key} has shape {tuple(state[hidden_key].shape)}: its "
                                      f"width {hidden} is not a multiple of d_model={d}")
    try:
        return TabSwiftConfig(n_layers=int(config["icl_num_blocks"]), d_model=d, n_heads=int(config["icl_nhead"]),
                              ff_factor=int(config["ff_factor"]), n_registers=int(config["register_tokens"]),
                              max_features=int(config["max_dim"]), max_classes=int(config["max_classes"]),
                              head_hidden_factor=hidden // d, early_exit=False, label_encoding="scalar")
    except ValueError as err:
        raise ReleasedCheckpointError(f"{where}released config can not be built: {err}") from None


# ---- mapping ------------------------------------------------------------------------------------
def our_key(released_key: str) -> Optional[str]:
    for pattern, template in KEY_RULES:
        m = pattern.match(released_key)
        if m:
            return template.format(**m.groupdict())
    return None


def released_name(key: str) -> str:
    """The released tensor that ``key`` of our network is read from."""
    for pattern, template in _RELEASED_NAMES:
        m = pattern.match(key)
        if m:
            return template.format(**m.groupdict())
    return key


def map_state_dict(state: Dict[str, torch.Tensor], network: TabSwiftNetwork, source: str = "") -> Dict[str, torch.Tensor]:
    """Rename every released tensor to our key; refuse leftovers, missing tensors and wrong shapes by name."""
    where = f"{source}: " if source else ""
    expected = network.state_dict()
    mapped: Dict[str, torch.Tensor] = {}
    origin: Dict[str, str] = {}
    leftovers, duplicates = [], []
    for key, value in state.items():
        target = our_key(key)
        if target is None or target not in expected:
            leftovers.append(key)
        elif target in mapped:
            duplicates.append(f"{origin[target]} and {key} -> {target}")
        else:
            mapped[target], origin[target] = value, key
    if network.config.n_registers == 0 and "registers" not in mapped:
        mapped["registers"] = expected["registers"].new_zeros(expected["registers"].shape)
        origin["registers"] = "(no registers)"
    missing = sorted(released_name(k) for k in set(expected) - set(mapped))
    if leftovers or duplicates or missing:
        parts = [f"{len(leftovers)} released tensors with no place in the network: {sorted(leftovers)[:8]}" if leftovers else "",
                 f"tensors mapped twice: {duplicates[:4]}" if duplicates else "",
                 f"{len(missing)} tensors the network needs are missing from the file: {missing[:8]}" if missing else ""]
        raise ReleasedCheckpointError(where + "; ".join(p for p in parts if p))
    for target, value in mapped.items():
        if tuple(value.shape) != tuple(expected[target].shape):
            raise ReleasedCheckpointError(f"{where}tensor {origin[target]!r} has shape {tuple(value.shape)}, but the "
                                          f"config {network.config.n_layers}x{network.config.d_model} needs "
                                          f"{tuple(expected[target].shape)} (for {target})")
    return {k: v.detach().to(torch.float32).contiguous() for k, v in mapped.items()}


def released_to_network(path: PathLike) -> Tuple[TabSwiftNetwork, Dict[str, Any]]:
    """Read, check and map a released checkpoint; returns the network (eval mode) and its released config."""
    config, state = read_released(path)
    cfg = network_config(config, state, str(path))
    network = TabSwiftNetwork(cfg)
    network.load_state_dict(map_state_dict(state, network, str(path)), strict=True)
    return network.eval(), config


# ---- conversion ---------------------------------------------------------------------------------
def convert(src: PathLike, out: PathLike) -> Path:
    """Convert ``src`` (released ``.ckpt``) into our checkpoint; ``out`` is a directory -- an existing one, or
    a path ending in ``/`` -- (the checkpoint is ``out/<stem of src>``), or a checkpoint path ``x`` / ``x.safetensors`` / ``x.json``.  Returns the path
    to pass as ``checkpoint_path``.  The result is re-read and checked (sha256, shapes) before returning."""
    as_dir = Path(out).is_dir() or str(out).endswith(("/", os.sep))
    src, out = Path(src), Path(out)
    network, released_config = released_to_network(src)
    if as_dir:
        target = out / src.stem
    else:
        target = checkpoint_paths(out)[0].with_suffix("")
    n_params = sum(p.numel() for p in network.parameters())
    save_checkpoint(network, target, metadata={"source": {
        "format": RELEASED_FORMAT, "file": src.name, "sha256": sha256_file(src), "released_config": released_config,
        "parameters": n_params, "converted_by": "autogluon_maya.tabswift.checkpoints_io.released"}})
    load_checkpoint(target)  # verifies the checksum and every shape once more
    logger.info(f"converted {src} ({n_params:,} parameters) to {target}.safetensors/.json")
    return target


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env) if env else Path.home() / ".cache" / "autogluon_maya"


def convert_cached(src: PathLike) -> Path:
    """Convert once: the converted copy lives in the cache under the source's sha256 and is reused."""
    src = Path(src)
    digest = sha256_file(src)
    target = cache_dir() / "tabswift" / f"released-{digest[:16]}" / src.stem
    try:
        if read_checkpoint_info(target).get("metadata", {}).get("source", {}).get("sha256") == digest:
            return target
    except (FileNotFoundError, ValueError):
        pass
    return convert(src, target)


def is_our_checkpoint(path: Path) -> bool:
    return checkpoint_paths(path)[1].is_file()


# ---- console command ----------------------------------------------------------------------------
def main(argv: Optional[List[str]] = None) -> int:
    """``autogluon-maya-convert swift.ckpt out/``"""
    parser = argparse.ArgumentParser(prog="autogluon-maya-convert", description=(
        "Convert the released TabSwift checkpoint (swift.ckpt) into autogluon_maya's safetensors + JSON format. "
        "The file is read with torch.load(weights_only=True); pass the printed path as checkpoint_path."))
    parser.add_argument("source", help="released checkpoint, e.g. swift.ckpt")
    parser.add_argument("out", help="output directory (or checkpoint path without suffix)")
    args = parser.parse_args(argv)
    return run_command(lambda: convert(args.source, args.out), (ValueError, FileNotFoundError))


__all__ = ["AUTHORS_DEFAULTS", "KEY_RULES", "ReleasedCheckpointError", "convert", "convert_cached", "map_state_dict", "network_config",
           "read_released", "released_to_network", "main"]
