"""What a checkpoint is, read from its JSON record without loading its weights: the size a fit would load
(``network_dims``, for the memory estimates) and the line a fit logs about it (``describe_checkpoint``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

#: the authors' released network (24 blocks, d = 192, 4 heads, 64 registers)
RELEASED_DIMS = (24, 192, 4, 64)


def describe_checkpoint(path) -> str:
    from .format import read_checkpoint_info

    info = read_checkpoint_info(path)
    c, t = info["config"], info.get("metadata", {}).get("training", {})
    lineage = info.get("metadata", {}).get("lineage")
    text = f"{Path(path).name}: {c['n_layers']} layers, d={c['d_model']}, {c['n_registers']} registers"
    if lineage:  # every stage it went through, not only the last one
        tasks, hours = sum(s["tasks"] for s in lineage), sum(s["train_hours"] for s in lineage)
        text += (f"; pretrained by autogluon_maya.pretraining on {tasks:,} synthetic tasks in {hours:.2f} h "
                 f"on {t.get('hardware', 'CPU')}: " + "; ".join(
                     f"{s['step']}: {s['tasks']:,} tasks, {s['train_hours']:.2f} h ({s['rows']})" for s in lineage))
    elif t:
        text += (f"; pretrained by autogluon_maya.pretraining, stage {t.get('stage')}, {t.get('steps_done')} steps, "
                 f"{t.get('tasks_seen')} synthetic tasks, {t.get('train_hours')} h on {t.get('hardware')}")
    source = info.get("metadata", {}).get("source", {})
    if source.get("format"):
        digest = str(source.get("sha256"))[:12]
        text += f"; converted from {source['format']} ({source.get('file')}, sha256 {digest}...)"
    return text


def _candidates(checkpoint_path) -> list:
    """The checkpoints a fit with ``checkpoint_path`` would load, most likely first."""
    from ..defaults import SHIPPED_CHECKPOINT

    requested = checkpoint_path
    if requested in (None, "", "auto"):
        requested = os.environ.get("AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT") or requested
    if requested in (None, "", "shipped"):
        return [SHIPPED_CHECKPOINT]
    if requested not in ("auto", "hub"):
        return [Path(str(requested))]
    from .choice import auto_choice_made, auto_may_download
    from .hub import cached_released, converted_path

    chosen = auto_choice_made() if requested == "auto" else None  # the weights "auto" took in this process
    candidates = [chosen] if chosen is not None else [converted_path()]
    # "auto" not decided yet, with no released file on this machine: it will download the released network
    # where it may, else fall back to the shipped one (after the converted copy, which wins when it is there)
    if requested == "auto" and chosen is None and cached_released() is None and not auto_may_download():
        candidates.append(SHIPPED_CHECKPOINT)
    return candidates


def network_dims(checkpoint_path) -> tuple:
    """(layers, d_model, heads, registers) of the checkpoint a fit would load: the shipped one for
    None/"shipped", the file named by a path, the converted released copy for "hub"/"auto" when it is in the
    cache; "hub" otherwise means the released size.  "auto" means the weights it chose earlier in this process;
    before any choice, the released size when the released file waits in the local Hugging Face hub cache (the
    fit converts it) or when the fit may download it (``choice.auto_may_download``), else the shipped one
    (what it falls back to without the network)."""
    from .format import checkpoint_paths

    for path in _candidates(checkpoint_path):
        try:
            config = json.loads(checkpoint_paths(path)[1].read_text())["config"]
            return (int(config["n_layers"]), int(config["d_model"]), int(config["n_heads"]),
                    int(config["n_registers"]))
        except (OSError, KeyError, ValueError, TypeError):
            continue
    return RELEASED_DIMS  # a released swift.ckpt not converted yet, or a file this reading cannot parse
