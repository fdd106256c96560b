"""The authors' released ``swift.ckpt`` from the model hub, fetched ahead of a fit (``prefetch_weights``, the
console command ``autogluon-maya-prefetch``) or by ``checkpoint_path="hub"``; ``checkpoint_path="auto"`` reads
only what is on this machine already (``sources.py``).

Where the weights come from, in this order, for every caller:
- the converted copy in our cache (``$AUTOGLUON_MAYA_CACHE``, default ``~/.cache/autogluon_maya``), no network;
- ``swift.ckpt`` in the Hugging Face hub's local cache (``HF_HOME`` / ``HF_HUB_CACHE``), converted once, no network;
- a download (``prefetch_weights`` and ``"hub"`` only; ``download=True``), after the hub has answered an HTTP HEAD
  of the file within ``timeout`` seconds (``$AUTOGLUON_MAYA_HUB_TIMEOUT``, default 5; the probe runs in a daemon
  thread abandoned on timeout, because name resolution is not bounded by socket timeouts and huggingface_hub
  retries a silent server with back-off for half a minute).  The download itself runs in the calling thread and
  ends with the call: nothing fetches in the background.
A file is converted only if its sha256 is the one pinned here (``RELEASED_SHA256``, when set; the download asks
for ``RELEASED_REVISION``).  A failed probe is remembered for the process, per endpoint, so the folds of a bag
do not each wait for the same dead network.  The converted copy lives in ``<cache>/tabswift/hub/``.
"""

from __future__ import annotations

import logging
import os
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Dict, Optional, Tuple
from urllib.parse import urlparse

logger = logging.getLogger(f"autogluon.ext.{__name__}")
REPO_ID = "LAMDA-Tabular/TabSwift"
FILENAME = "swift.ckpt"
DEFAULT_ENDPOINT = "https://huggingface.co"
MANUAL = (f"download {FILENAME} from https://huggingface.co/{REPO_ID} on a machine with internet access, then run "
          f"`autogluon-maya-convert {FILENAME} out/` and pass checkpoint_path='out/'")
TIMEOUT_ENV = "AUTOGLUON_MAYA_HUB_TIMEOUT"
#: the hub revision downloads ask for, and the sha256 a released file must have to be converted.  None: the
#: newest revision, any content (set both from a machine that reaches the hub; ``pinned_sha256`` reads
#: ``$AUTOGLUON_MAYA_RELEASED_SHA256`` first, so a user can pin the file they audited)
RELEASED_REVISION: Optional[str] = None
RELEASED_SHA256: Optional[str] = None
SHA256_ENV = "AUTOGLUON_MAYA_RELEASED_SHA256"
PREFETCH_HINT = "run `autogluon-maya-prefetch` (or autogluon_maya.prefetch_weights()) once on a machine online"

#: endpoint -> why the released file could not be had from it; kept for the life of the process
_FAILED: Dict[str, str] = {}


class HubUnavailableError(RuntimeError):
    """The released file can not be had (offline, blocked, too slow, refused by the converter).
    ``reason`` is the short cause; the message adds what to do instead."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"{reason}; {MANUAL}")


def forget_failures() -> None:
    """Forget remembered failures, so that the next call tries the network again."""
    _FAILED.clear()


def _truthy(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def endpoint_reachable(url: str, timeout: float) -> Optional[str]:
    """None if an HTTP HEAD of ``url`` gets any HTTP answer (even 4xx) within ``timeout`` s, else the reason.

    Run in a daemon thread that is abandoned on timeout: name resolution is not bounded by socket
    timeouts, and huggingface_hub retries a silent server with back-off for half a minute."""
    result = {}

    def probe():
        try:
            urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=timeout).close()
            result["ok"] = True
        except urllib.error.HTTPError:  # the server answered: reachable
            result["ok"] = True
        except Exception as err:  # URLError, timeouts, resets
            result["error"] = f"{type(err).__name__}: {getattr(err, 'reason', err)}"

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(timeout)
    if result.get("ok"):
        return None
    return result.get("error", f"no answer from {urlparse(url).netloc} within {timeout:g} s")


def converted_path() -> Path:
    """Where the converted released checkpoint lives (``$AUTOGLUON_MAYA_CACHE`` moves it)."""
    from .released import cache_dir

    return cache_dir() / "tabswift" / "hub" / Path(FILENAME).stem


def cached_released() -> Optional[Path]:
    """The released ``swift.ckpt`` in the local Hugging Face hub cache, found without the network; None when it
    is not there or huggingface_hub is not installed."""
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return None
    cached = try_to_load_from_cache(REPO_ID, FILENAME, revision=RELEASED_REVISION)
    return Path(cached) if isinstance(cached, str) and Path(cached).is_file() else None


def pinned_sha256() -> Optional[str]:
    """The sha256 a released file must have to be converted (``$AUTOGLUON_MAYA_RELEASED_SHA256``, else
    ``RELEASED_SHA256``), or None where nothing is pinned."""
    return (os.environ.get(SHA256_ENV, "").strip().lower() or RELEASED_SHA256 or None)


def check_pinned(path: Path, how: str) -> None:
    """Refuses (``HubUnavailableError``) a released file whose sha256 is not the pinned one."""
    from .weights import sha256_file

    want = pinned_sha256()
    if want is None:
        return
    got = sha256_file(Path(path))
    if got != want:
        raise HubUnavailableError(f"{REPO_ID}/{FILENAME} ({how}) has sha256 {got}, not the pinned {want}: "
                                  f"refused (another revision, or a changed file)")


def locate_released(timeout: Optional[float] = None, download: bool = False) -> Tuple[Path, str]:
    """``(converted checkpoint, how it was had)``, converting on first use: from our cache, the hub's local
    cache, or (``download=True``) the hub itself, in the calling thread.

    Raises ``ImportError`` (no huggingface_hub, where it is needed) or ``HubUnavailableError`` (not on this
    machine and ``download`` is False; offline, unreachable, the download or the conversion failed, the file is
    not the pinned one, or the hub failed earlier in this process).  ``timeout`` (default
    ``$AUTOGLUON_MAYA_HUB_TIMEOUT`` or 5 s) bounds the connectivity check and the hub's metadata request."""
    from .released import ReleasedCheckpointError, convert, is_our_checkpoint
    from .weights import read_checkpoint_info

    if timeout is None:
        timeout = float(os.environ.get(TIMEOUT_ENV, 5.0))
    target = converted_path()
    if is_our_checkpoint(target):
        source = read_checkpoint_info(target).get("metadata", {}).get("source", {}).get("sha256")
        want = pinned_sha256()
        if want is None or source == want:
            return target, f"converted copy in {target.parent}"
    try:
        from huggingface_hub import constants, hf_hub_download
    except ImportError:
        raise ImportError(f"the authors' weights from the model hub need the optional package huggingface_hub "
                          f"(pip install 'autogluon_maya[hub]'); or {MANUAL}") from None

    def converted(src: str, how: str, checked: bool = False) -> Tuple[Path, str]:
        if not checked:  # (the digest of 33 MB: computed once)
            check_pinned(Path(src), how)
        try:
            return convert(src, target), how
        except ReleasedCheckpointError as err:  # the converter refuses what the hub serves: say which tensor
            raise HubUnavailableError(f"{REPO_ID}/{FILENAME} ({how}) could not be converted: {err}") from None

    cached = cached_released()
    if cached is not None:
        try:
            check_pinned(cached, "found in the local Hugging Face hub cache")
        except HubUnavailableError:
            if not download:
                raise
            cached = None  # another content than the pinned one: download the pinned revision instead
    if cached is not None:
        logger.info(f"TabSwift: {REPO_ID}/{FILENAME} found in the local hub cache; converting it once into {target}")
        return converted(str(cached), "found in the local Hugging Face hub cache", checked=True)
    if not download:
        raise HubUnavailableError(f"{REPO_ID}/{FILENAME} is not on this machine; {PREFETCH_HINT}")
    # huggingface_hub reads HF_ENDPOINT / HF_HUB_OFFLINE when it is first imported
    endpoint = str(getattr(constants, "ENDPOINT", None) or DEFAULT_ENDPOINT).rstrip("/")
    if endpoint in _FAILED:
        raise HubUnavailableError(f"{_FAILED[endpoint]} (an earlier attempt in this process; not retried)")

    def failed(reason: str) -> HubUnavailableError:
        _FAILED[endpoint] = reason
        return HubUnavailableError(reason)

    if _truthy("HF_HUB_OFFLINE") or bool(getattr(constants, "HF_HUB_OFFLINE", False)):
        raise HubUnavailableError(f"HF_HUB_OFFLINE is set and {REPO_ID}/{FILENAME} is not in the local "
                                  f"Hugging Face hub cache")
    revision = RELEASED_REVISION or "main"
    reason = endpoint_reachable(f"{endpoint}/{REPO_ID}/resolve/{revision}/{FILENAME}", timeout)
    if reason:
        raise failed(f"the model hub {endpoint} is unreachable ({reason})")
    try:
        src = hf_hub_download(REPO_ID, FILENAME, revision=RELEASED_REVISION, etag_timeout=timeout, endpoint=endpoint)
    except Exception as err:  # HTTP error, timeout, disk: all mean "no file"
        first = str(err).splitlines()[0] if str(err) else ""
        raise failed(f"could not download {REPO_ID}/{FILENAME} from {endpoint} ({type(err).__name__}: {first})")
    logger.info(f"TabSwift: downloaded {REPO_ID}/{FILENAME}; converting it once into {target}")
    return converted(str(src), f"downloaded from {endpoint}")


def fetch_released(timeout: Optional[float] = None) -> Path:
    """``checkpoint_path="hub"``: the converted released checkpoint (downloaded if needed), or an error saying
    what to do."""
    try:
        return locate_released(timeout, download=True)[0]
    except HubUnavailableError as err:
        raise HubUnavailableError(f"checkpoint_path='hub': {err.reason}") from None


__all__ = ["FILENAME", "HubUnavailableError", "REPO_ID", "cached_released", "converted_path", "endpoint_reachable",
           "fetch_released", "forget_failures", "locate_released"]
