"""The authors' released ``swift.ckpt`` from the model hub: fetched by ``checkpoint_path="auto"`` (the default) at
its first use on a machine, by ``checkpoint_path="hub"``, and ahead of a fit by ``prefetch_weights`` (the console
command ``autogluon-maya-prefetch``, for images built ahead of time).

Where the weights come from, in this order, for every caller:
- the converted copy in our cache (``$AUTOGLUON_MAYA_CACHE``, default ``~/.cache/autogluon_maya``), no network;
  used only if it was converted from the pinned file (``RELEASED_SHA256`` or ``$AUTOGLUON_MAYA_RELEASED_SHA256``,
  where one is set);
- ``swift.ckpt`` in the Hugging Face hub's local cache (``HF_HOME`` / ``HF_HUB_CACHE``), converted once, no network;
- a download (``download=True``), after the hub (``$HF_ENDPOINT``) has answered an HTTP HEAD of the file within
  ``timeout`` seconds (``$AUTOGLUON_MAYA_HUB_TIMEOUT``, default 5; the probe runs in a daemon thread abandoned on
  timeout, because name resolution is not bounded by socket timeouts and huggingface_hub retries a silent server
  with back-off for half a minute).  The download runs in the calling thread and ends with the call: nothing
  fetches in the background.  ``HF_HUB_OFFLINE=1`` forbids it before any socket is opened.
A file is converted only if its sha256 is the pinned one (the download asks for ``RELEASED_REVISION``).  The
conversion writes each file to a temporary name in the cache folder and renames it into place
(``format.save_checkpoint``); download and conversion run under a file lock in that folder, so processes that
start at once (parallel fold workers, several fits) download once and never read a half-written copy: the
others wait, then find the converted copy.  A failed probe or download is remembered for the process, per
endpoint, so the folds of a bag do not each wait for the same dead network.  The converted copy lives in
``<cache>/tabswift/hub/``.
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
INSTALL_HINT = "pip install 'autogluon_maya[hub]'"
#: "0" (or false/no/off): ``checkpoint_path="auto"`` never downloads; it uses what is on this machine
DOWNLOAD_ENV = "AUTOGLUON_MAYA_HUB_DOWNLOAD"
#: seconds a process waits for another one that is downloading and converting the released file
LOCK_TIMEOUT = 600.0

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


def downloads_switched_off() -> Optional[str]:
    """Why ``checkpoint_path="auto"`` must not download (``$AUTOGLUON_MAYA_HUB_DOWNLOAD=0``), or None.
    ``HF_HUB_OFFLINE`` is honoured by ``locate_released`` itself, for every caller."""
    value = os.environ.get(DOWNLOAD_ENV, "").strip()
    if value.lower() in ("0", "false", "no", "off"):
        return f"downloads are switched off (${DOWNLOAD_ENV}={value})"
    return None


def hub_endpoint() -> str:
    """The hub's address: ``$HF_ENDPOINT`` as it is now, else what huggingface_hub read at its import."""
    try:
        from huggingface_hub import constants
        imported = getattr(constants, "ENDPOINT", None)
    except ImportError:
        imported = None
    return str(os.environ.get("HF_ENDPOINT") or imported or DEFAULT_ENDPOINT).rstrip("/")


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` as it is now, or as huggingface_hub read it at its import."""
    try:
        from huggingface_hub import constants
        imported = bool(getattr(constants, "HF_HUB_OFFLINE", False))
    except ImportError:
        imported = False
    return _truthy("HF_HUB_OFFLINE") or imported


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
    from .format import sha256_file

    want = pinned_sha256()
    if want is None:
        return
    got = sha256_file(Path(path))
    if got != want:
        raise HubUnavailableError(f"{REPO_ID}/{FILENAME} ({how}) has sha256 {got}, not the pinned {want}: "
                                  f"refused (another revision, or a changed file)")


def _converted_copy(target: Path) -> Optional[Tuple[Path, str]]:
    """Our converted copy, when it is there and was converted from the pinned file (any file where none is)."""
    from .released import is_our_checkpoint
    from .format import read_checkpoint_info

    if not is_our_checkpoint(target):
        return None
    try:
        source = read_checkpoint_info(target).get("metadata", {}).get("source", {}).get("sha256")
    except (OSError, ValueError):  # an unreadable record: converted again
        return None
    want = pinned_sha256()
    if want is not None and source != want:
        return None
    return target, f"converted copy in {target.parent}"


def locate_released(timeout: Optional[float] = None, download: bool = False) -> Tuple[Path, str]:
    """``(converted checkpoint, how it was had)``, converting on first use: from our cache, the hub's local
    cache, or (``download=True``) the hub itself, in the calling thread.

    Raises ``ImportError`` (no huggingface_hub, where it is needed) or ``HubUnavailableError`` (not on this
    machine and ``download`` is False; offline, unreachable, the download or the conversion failed, the file is
    not the pinned one, the hub failed earlier in this process, or another process held the lock too long).
    ``timeout`` (default ``$AUTOGLUON_MAYA_HUB_TIMEOUT`` or 5 s) bounds the connectivity check and the hub's
    metadata request."""
    if timeout is None:
        timeout = float(os.environ.get(TIMEOUT_ENV, 5.0))
    target = converted_path()
    found = _converted_copy(target)
    if found is not None:
        return found
    try:
        import huggingface_hub  # noqa: F401
        from filelock import FileLock, Timeout  # the hub extra installs it (huggingface_hub needs it too)
    except ImportError:
        raise ImportError(f"the authors' weights from the model hub need the optional package huggingface_hub "
                          f"({INSTALL_HINT}); or {MANUAL}") from None
    if cached_released() is None:  # nothing to convert: say why not to download before taking any lock
        _check_download_allowed(download)
    lock_path = target.parent / f".{FILENAME}.lock"
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(lock_path), timeout=LOCK_TIMEOUT):
            found = _converted_copy(target)  # converted by another process while this one waited
            if found is not None:
                return found
            return _fetch_and_convert(target, timeout, download)
    except Timeout:
        raise HubUnavailableError(f"another process held {lock_path} for over {LOCK_TIMEOUT:g} s (downloading "
                                  f"{REPO_ID}/{FILENAME})") from None
    except OSError as err:  # the cache folder can not be created or locked
        raise HubUnavailableError(f"the cache folder {target.parent} can not be written ({type(err).__name__}: "
                                  f"{err})") from None


def _check_download_allowed(download: bool, refused: str = "") -> None:
    """Raises ``HubUnavailableError`` where no download may be tried: not asked for, ``HF_HUB_OFFLINE`` (checked
    before any socket is opened), or the hub failed earlier in this process.  ``refused``: why the file in the
    hub's local cache was not taken, put in front of the reason."""
    if not download:
        raise HubUnavailableError(f"{refused}{REPO_ID}/{FILENAME} is not on this machine; {PREFETCH_HINT}")
    if hub_offline():
        raise HubUnavailableError(f"{refused}HF_HUB_OFFLINE is set and {REPO_ID}/{FILENAME} is not in the local "
                                  f"Hugging Face hub cache")
    endpoint = hub_endpoint()
    if endpoint in _FAILED:
        raise HubUnavailableError(f"{refused}{_FAILED[endpoint]} (an earlier attempt in this process; not retried)")


def _fetch_and_convert(target: Path, timeout: float, download: bool) -> Tuple[Path, str]:
    """The hub's local cache, else (``download``) the hub: the pinned file, converted into ``target``.  Runs
    under the cache folder's lock."""
    refused = ""  # why the file in the hub's local cache was not taken: then it is downloaded again
    cached = cached_released()
    if cached is not None:
        how = "found in the local Hugging Face hub cache"
        try:
            check_pinned(cached, how)
            logger.info(f"TabSwift: {REPO_ID}/{FILENAME} found in the local hub cache; converting it once into "
                        f"{target}")
            return _convert(cached, target, how)
        except HubUnavailableError as err:  # another content than the pinned one, or a damaged file
            if not download:
                raise
            refused = f"{err.reason}; "
    _check_download_allowed(download, refused)
    src, how = _download(timeout, refused)
    check_pinned(src, how)
    logger.info(f"TabSwift: downloaded {REPO_ID}/{FILENAME}; converting it once into {target}")
    return _convert(src, target, how)


def _download(timeout: float, refused: str) -> Tuple[Path, str]:
    """The released file from the hub (probed first, within ``timeout``), into the hub's local cache; a failure
    is remembered for the endpoint.  ``refused``: a copy in that cache was not the pinned file, so the download
    replaces it."""
    from huggingface_hub import hf_hub_download

    endpoint = hub_endpoint()

    def failed(reason: str) -> HubUnavailableError:
        _FAILED[endpoint] = reason
        return HubUnavailableError(refused + reason)

    revision = RELEASED_REVISION or "main"
    reason = endpoint_reachable(f"{endpoint}/{REPO_ID}/resolve/{revision}/{FILENAME}", timeout)
    if reason:
        raise failed(f"the model hub {endpoint} is unreachable ({reason})")
    logger.info(f"TabSwift: downloading {REPO_ID}/{FILENAME} from {endpoint}"
                + (f" (revision {RELEASED_REVISION})" if RELEASED_REVISION else ""))
    try:
        src = hf_hub_download(REPO_ID, FILENAME, revision=RELEASED_REVISION, etag_timeout=timeout, endpoint=endpoint,
                              force_download=bool(refused))
    except Exception as err:  # HTTP error, timeout, disk: all mean "no file"
        first = str(err).splitlines()[0] if str(err) else ""
        raise failed(f"could not download {REPO_ID}/{FILENAME} from {endpoint} ({type(err).__name__}: {first})")
    return Path(src), f"downloaded from {endpoint}"


def _convert(src: Path, target: Path, how: str) -> Tuple[Path, str]:
    """``src`` (its sha256 already checked against the pin) converted into ``target``; a file the converter
    refuses is a ``HubUnavailableError``."""
    from .released import ReleasedCheckpointError, convert

    try:
        return convert(str(src), target), how
    except (ReleasedCheckpointError, ValueError, OSError) as err:  # the converter refuses what the hub serves
        raise HubUnavailableError(f"{REPO_ID}/{FILENAME} ({how}) could not be converted: {err}") from None


def fetch_released(timeout: Optional[float] = None) -> Path:
    """``checkpoint_path="hub"``: the converted released checkpoint (downloaded if needed), or an error saying
    what to do."""
    try:
        return locate_released(timeout, download=True)[0]
    except HubUnavailableError as err:
        raise HubUnavailableError(f"checkpoint_path='hub': {err.reason}") from None


__all__ = ["DOWNLOAD_ENV", "FILENAME", "HubUnavailableError", "REPO_ID", "cached_released", "converted_path",
           "downloads_switched_off", "endpoint_reachable", "fetch_released", "forget_failures", "hub_endpoint",
           "locate_released"]
