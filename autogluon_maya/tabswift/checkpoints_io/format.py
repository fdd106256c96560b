"""TabSwift checkpoints on disk: ``<name>.safetensors`` + ``<name>.json``.

Why this format:
- ``safetensors`` holds only raw tensors, so loading a file can never execute code (a pickle can);
  nothing here ever calls ``torch.load``/``pickle``.
- The JSON beside it holds the ``TabSwiftConfig`` (the network is rebuilt from it, so weights can not
  be poured into a network of another shape), a format version, and the sha256 of the weights file,
  which is verified before the file is parsed: a truncated download or a flipped byte is reported as
  such instead of surfacing as a confusing shape error or, worse, silently wrong predictions.
Every failure is a ``FileNotFoundError`` or ``ValueError`` that names the offending file, so AutoGluon
can report it and skip the model.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

import torch
from safetensors.torch import load_file, save_file

from ..config import TabSwiftConfig
from ..network import TabSwiftNetwork

FORMAT = "tabswift-checkpoint"
FORMAT_VERSION = 1
PathLike = Union[str, os.PathLike]


def checkpoint_paths(path: PathLike) -> Tuple[Path, Path]:
    """``x``, ``x.safetensors`` or ``x.json`` -> (``x.safetensors``, ``x.json``)."""
    p = Path(path)
    if p.suffix in (".safetensors", ".json"):
        p = p.with_suffix("")
    return p.with_name(p.name + ".safetensors"), p.with_name(p.name + ".json")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def save_checkpoint(network: TabSwiftNetwork, path: PathLike,
                    metadata: Optional[Dict[str, Any]] = None) -> Tuple[Path, Path]:
    """Write weights then JSON, each to a temporary file of its own in the target's folder and then renamed onto
    the target: a crash leaves no half file, and two processes writing the same checkpoint at once (two fits
    converting the released weights into a shared cache) never write into one file; the last rename wins, and
    both write the same content.  The JSON's sha256 is that of the weights this call wrote."""
    weights, meta = checkpoint_paths(path)
    weights.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().to("cpu").contiguous() for k, v in network.state_dict().items()}
    tmp = _temporary(weights)
    try:
        save_file(tensors, str(tmp), metadata={"format": "pt"})
        digest = sha256_file(tmp)
        _publish(tmp, weights)
        info = {"format": FORMAT, "format_version": FORMAT_VERSION, "config": network.config.to_dict(),
                "sha256": digest, "weights_file": weights.name, "metadata": metadata or {}}
        tmp = _temporary(meta)
        tmp.write_text(json.dumps(info, indent=2, sort_keys=True))
        _publish(tmp, meta)
    finally:
        tmp.unlink(missing_ok=True)  # only where a step failed before its rename
    return weights, meta


def _temporary(target: Path) -> Path:
    """A new, empty file beside ``target`` whose name no other writer uses."""
    fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    return Path(name)


def _publish(tmp: Path, target: Path) -> None:
    """Rename a written temporary file onto ``target``, readable by every account first (``mkstemp`` and safetensors
    create private files; a shared cache or a saved model must stay readable by the other users of the machine)."""
    os.chmod(tmp, 0o644)
    os.replace(tmp, target)


def read_checkpoint_info(path: PathLike) -> Dict[str, Any]:
    """The JSON side of a checkpoint, validated (no weights are read)."""
    _, meta = checkpoint_paths(path)
    if not meta.is_file():
        raise FileNotFoundError(f"TabSwift checkpoint config not found: {meta}")
    try:
        info = json.loads(meta.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ValueError(f"TabSwift checkpoint config {meta} is not valid JSON: {err}") from None
    if not isinstance(info, dict) or info.get("format") != FORMAT:
        raise ValueError(f"{meta} is not a TabSwift checkpoint config (missing 'format': {FORMAT!r})")
    if info.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{meta} has format_version {info.get('format_version')!r}; "
                         f"this version of the package reads {FORMAT_VERSION}")
    for key in ("config", "sha256"):
        if key not in info:
            raise ValueError(f"{meta} lacks the required entry {key!r}")
    return info


def load_checkpoint(path: PathLike, verify_checksum: bool = True) -> TabSwiftNetwork:
    """Rebuild the network from the JSON config and load the verified weights; CPU, eval mode."""
    weights, meta = checkpoint_paths(path)
    info = read_checkpoint_info(path)
    if not weights.is_file():
        raise FileNotFoundError(f"TabSwift checkpoint weights not found: {weights}")
    if verify_checksum:
        actual = sha256_file(weights)
        if actual != info["sha256"]:
            raise ValueError(f"TabSwift checkpoint {weights} failed its checksum (sha256 {actual}, {meta} "
                             f"expects {info['sha256']}): the file is corrupt or was modified")
    try:
        config = TabSwiftConfig.from_dict(info["config"])
    except (TypeError, ValueError) as err:
        raise ValueError(f"invalid TabSwift config in {meta}: {err}") from None
    try:
        state = load_file(str(weights), device="cpu")
    except Exception as err:  # safetensors raises its own error type for a bad header
        raise ValueError(f"{weights} is not a valid safetensors file ({type(err).__name__}: {err}); "
                         "only safetensors checkpoints are accepted") from None

    network = TabSwiftNetwork(config)
    expected = network.state_dict()
    missing, unexpected = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    wrong = [f"{k}: file {tuple(state[k].shape)} vs config {tuple(v.shape)}"
             for k, v in expected.items() if k in state and state[k].shape != v.shape]
    if missing or unexpected or wrong:
        problems = [f"{len(missing)} missing keys {missing[:5]}" if missing else "",
                    f"{len(unexpected)} unexpected keys {unexpected[:5]}" if unexpected else "",
                    f"{len(wrong)} wrong shapes {wrong[:5]}" if wrong else ""]
        raise ValueError(f"TabSwift weights {weights} do not match the config in {meta}: "
                         + "; ".join(p for p in problems if p))
    bad = [k for k, v in state.items() if not v.is_floating_point()]
    if bad:
        raise ValueError(f"TabSwift weights {weights} hold non-float tensors {bad[:5]}")
    bad = [k for k, v in state.items() if not bool(torch.isfinite(v).all())]
    if bad:  # a diverged training run: every prediction would be NaN
        raise ValueError(f"TabSwift weights {weights} contain NaN/inf in {bad[:5]}")
    network.load_state_dict(state)
    return network.eval()


__all__ = ["FORMAT_VERSION", "checkpoint_paths", "load_checkpoint", "read_checkpoint_info", "save_checkpoint",
           "sha256_file"]


def run_command(make_checkpoint, errors: tuple) -> int:
    """The common end of the package's console commands: progress logged to the terminal, then the checkpoint's
    path printed (exit 0), or ``error: <why>`` for one of ``errors`` (exit 1)."""
    import logging

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        path = make_checkpoint()
    except errors as err:
        print(f"error: {err}")
        return 1
    print(path)
    return 0

