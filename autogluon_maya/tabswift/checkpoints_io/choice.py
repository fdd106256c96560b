"""Which weights a TabSwift fit loads (``checkpoint_path``), and why.

=================  ===========================================================================
value              weights
=================  ===========================================================================
``"auto"``         the authors' released weights (``LAMDA-Tabular/TabSwift`` ``swift.ckpt``):
(default)          converted in our cache, in the local Hugging Face hub cache, or downloaded
                   and converted once at the first use on this machine; else (offline, no
                   ``huggingface_hub``, any download or conversion error) the shipped checkpoint,
                   with one warning per process.  The same answer for the rest of the process
``"shipped"``      the checkpoint inside the package (``defaults.SHIPPED_CHECKPOINT``)
``None``           the shipped checkpoint: what ``None`` meant before ``"auto"`` existed, so a
                   hyperparameter dict saved from an older model still names the same weights
``"hub"``          the released weights, downloaded if needed, or an error (``hub.fetch_released``)
a path             one of our checkpoints, a folder holding one, or a released-format file
=================  ===========================================================================

``$AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT`` (any of the values above) replaces ``"auto"`` and ``None``;
an explicit ``"shipped"``, ``"hub"`` or path wins over it.

"auto" downloads unless ``HF_HUB_OFFLINE=1`` or ``$AUTOGLUON_MAYA_HUB_DOWNLOAD=0`` (then it reads this machine
only): the probe of the hub is bounded by ``$AUTOGLUON_MAYA_HUB_TIMEOUT`` (5 s), the file is pinned to
``hub.RELEASED_REVISION`` and checked against the pinned sha256 where one is set, and the converted copy serves
every later fit on the machine without the network.  ``autogluon-maya-prefetch`` (or
``autogluon_maya.prefetch_weights()``) does the same ahead of time, e.g. while building an image.  Whatever was
chosen is recorded with its reason and sha256 (``WeightsChoice.record``, the model's info).  The first answer
"auto" gives in a process is kept for the rest of it: a bag's folds and refits load the same weights even if the
network comes back in between (``prefetch_weights`` starts over).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional

from ..defaults import SHIPPED_CHECKPOINT

logger = logging.getLogger(f"autogluon.ext.{__name__}")
ENV = "AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT"
AUTO, SHIPPED, HUB = "auto", "shipped", "hub"
#: what ``WeightsChoice.source`` can be
RELEASED_SOURCE, SHIPPED_SOURCE, PATH_SOURCE = "released", "shipped", "path"


@dataclass
class WeightsChoice:
    path: Path
    source: str       # RELEASED_SOURCE, SHIPPED_SOURCE or PATH_SOURCE
    requested: str    # what was asked for, e.g. "auto" or "$AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT=hub"
    reason: str       # why these weights
    #: the value that names the same weights again without a new decision (a refit must not land on
    #: other weights than its folds because the network came back in between)
    replay: Optional[str] = None
    fallback: bool = False  # "auto" wanted the released weights and could not have them

    def record(self) -> Dict[str, Any]:
        """What the model's info keeps: source, file, sha256 (verified when the weights were loaded), why."""
        from .format import checkpoint_paths, read_checkpoint_info

        meta = read_checkpoint_info(self.path)
        out = {"source": self.source, "requested": self.requested, "reason": self.reason,
               "file": str(checkpoint_paths(self.path)[0]), "sha256": meta["sha256"]}
        released = meta.get("metadata", {}).get("source", {})
        if released.get("sha256"):  # converted from a released-format file: that file's digest too
            out["converted_from"] = {"file": released.get("file"), "sha256": released["sha256"]}
        return out


#: the weights "auto" chose in this process, per (our cache, the hub's cache): later fits repeat the choice
_AUTO_CHOICE: Dict[tuple, "WeightsChoice"] = {}
#: the fall-back reasons already warned about in this process (a bag's folds warn once)
_WARNED: set = set()


def forget_auto_choice() -> None:
    """The next "auto" looks at the caches (and the hub) again, and warns again (``prefetch_weights`` calls it)."""
    _AUTO_CHOICE.clear()
    _WARNED.clear()


def auto_choice_made() -> Optional[Path]:
    """The checkpoint "auto" chose earlier in this process for the caches in force now, or None."""
    kept = _AUTO_CHOICE.get(_caches())
    return None if kept is None else kept.path


def released_on_this_machine() -> bool:
    """Whether "auto" loads the authors' released weights without a download: chosen already in this process, or
    a converted copy in our cache, or ``swift.ckpt`` in the local Hugging Face hub cache (converted here once).
    Opens no socket."""
    from .hub import HubUnavailableError, locate_released

    kept = _AUTO_CHOICE.get(_caches())
    if kept is not None:
        return kept.source == RELEASED_SOURCE
    try:
        locate_released(download=False)
    except (ImportError, HubUnavailableError):
        return False
    return True


def auto_may_download() -> bool:
    """Whether an "auto" not yet decided in this process would try to download the released weights (downloads
    on, ``HF_HUB_OFFLINE`` unset, huggingface_hub installed, the hub not failed earlier): a fit that sizes its
    network ahead of loading it can then expect the released size.  Reads no file and opens no socket."""
    from .hub import _FAILED, downloads_switched_off, hub_endpoint, hub_offline

    if downloads_switched_off() or hub_offline():
        return False
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        return False
    return hub_endpoint() not in _FAILED


def _caches() -> tuple:
    from .released import cache_dir

    try:
        from huggingface_hub import constants
        hub_cache = str(getattr(constants, "HF_HUB_CACHE", ""))
    except ImportError:
        hub_cache = ""
    return str(cache_dir()), hub_cache


def _released_or_shipped(requested: str) -> WeightsChoice:
    from .format import checkpoint_paths

    key = _caches()
    kept = _AUTO_CHOICE.get(key)
    if kept is not None and checkpoint_paths(kept.path)[1].is_file():  # (a deleted copy: look again)
        return WeightsChoice(kept.path, kept.source, requested, kept.reason, kept.replay, kept.fallback)
    choice = _released_if_possible(requested)
    _AUTO_CHOICE[key] = choice
    return choice


def _released_if_possible(requested: str) -> WeightsChoice:
    """The released weights (on this machine, else downloaded unless switched off), or the shipped checkpoint
    with the reason, warned about once per process."""
    from .hub import INSTALL_HINT, PREFETCH_HINT, HubUnavailableError, downloads_switched_off, locate_released

    off = downloads_switched_off()
    fix = PREFETCH_HINT
    try:
        path, how = locate_released(download=off is None)
    except ImportError:
        reason, fix = f"huggingface_hub is not installed ({INSTALL_HINT})", f"run `{INSTALL_HINT}`"
    except HubUnavailableError as err:
        reason = f"{err.reason}; {off}" if off and "not on this machine" in err.reason else err.reason
    except Exception as err:  # "auto" never fails a fit for want of the released weights
        reason = f"{type(err).__name__}: {err}"
    else:
        return WeightsChoice(path, RELEASED_SOURCE, requested, f"the authors' released weights: {how}", replay=HUB)
    choice = WeightsChoice(SHIPPED_CHECKPOINT, SHIPPED_SOURCE, requested,
                           f"the authors' released weights are not available ({reason})", replay=SHIPPED,
                           fallback=True)
    if reason not in _WARNED:
        _WARNED.add(reason)
        logger.warning(f"TabSwift: checkpoint_path={requested!r} uses the checkpoint shipped in the package: the "
                       f"authors' released weights are not available ({reason}). To use them, {fix}.")
    return choice


def resolve_checkpoint(path: Any) -> Path:
    """The checkpoint a ``"hub"`` or a path names (``checkpoint_path``, ``$AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT``):

    - ``"hub"``: download ``swift.ckpt`` from the model hub (optional; ``hub.py``) and convert it;
    - one of our checkpoints (``x``, ``x.safetensors`` or ``x.json``);
    - a directory holding exactly one of our checkpoints (e.g. the output of ``autogluon-maya-convert``);
    - any other file: a released-format checkpoint, converted once into the cache (``released.py``).

    Here, above both: ``hub.py`` downloads and converts with ``released.py``, which knows nothing of the hub.
    """
    if str(path) == HUB:
        from .hub import fetch_released

        return fetch_released()
    from .released import convert_cached, is_our_checkpoint

    p = Path(path).expanduser()
    if is_our_checkpoint(p):
        return p
    if p.is_dir():
        found = sorted(j.with_suffix("") for j in p.glob("*.json") if j.with_suffix(".safetensors").is_file())
        if len(found) != 1:
            raise FileNotFoundError(f"checkpoint directory {p} must hold exactly one <name>.safetensors + <name>.json "
                                    f"pair, found {[f.name for f in found]}")
        return found[0]
    if p.is_file() and p.suffix not in (".safetensors", ".json"):
        return convert_cached(p)
    return p  # load_checkpoint reports what is missing


def choose_weights(requested: Any) -> WeightsChoice:
    """Resolve a ``checkpoint_path`` value (see the module docstring) to the weights to load."""
    from .hub import fetch_released

    if isinstance(requested, str) and not requested.strip():
        requested = None  # an empty value, as an unset environment variable reads
    label = "None" if requested is None else str(requested)
    env = os.environ.get(ENV, "").strip()
    if (requested is None or label == AUTO) and env:
        requested, label = env, f"${ENV}={env}"
    value = SHIPPED if requested is None else str(requested)
    if value == AUTO:
        return _released_or_shipped(label)
    if value == SHIPPED:
        return WeightsChoice(SHIPPED_CHECKPOINT, SHIPPED_SOURCE, label, "the checkpoint shipped in the package",
                             replay=SHIPPED)
    if value == HUB:
        return WeightsChoice(fetch_released(), RELEASED_SOURCE, label, "the authors' released weights", replay=HUB)
    return WeightsChoice(resolve_checkpoint(requested), PATH_SOURCE, label, "a checkpoint named by path")


def prefetch_weights(timeout: Optional[float] = None) -> Path:
    """Download (if needed) and convert the authors' released weights, so that ``checkpoint_path="auto"`` (the
    default) uses them in later fits without any network access; returns the converted checkpoint.  Forgets
    earlier failures and the weights ``"auto"`` chose before in this process."""
    from .hub import forget_failures, locate_released

    forget_failures()
    forget_auto_choice()
    return locate_released(timeout, download=True)[0]


def prefetch_main(argv=None) -> int:
    """``autogluon-maya-prefetch``: fetch and convert the released TabSwift weights; prints the checkpoint."""
    import argparse

    from .format import run_command
    from .hub import FILENAME, REPO_ID, HubUnavailableError

    parser = argparse.ArgumentParser(prog="autogluon-maya-prefetch", description=(
        f"Download {REPO_ID}/{FILENAME} (unless it is already on this machine) and convert it once, so that "
        f"TABSWIFT's checkpoint_path='auto' uses it offline."))
    parser.add_argument("--timeout", type=float, default=None, help="seconds the hub must answer within")
    args = parser.parse_args(argv)
    return run_command(lambda: prefetch_weights(args.timeout), (HubUnavailableError, ImportError))


__all__ = ["AUTO", "ENV", "HUB", "SHIPPED", "WeightsChoice", "auto_may_download", "choose_weights",
           "forget_auto_choice", "prefetch_main", "prefetch_weights", "resolve_checkpoint"]
