"""The authors' released ``swift.ckpt`` from the model hub: ``checkpoint_path="hub"`` (explicit: any
failure is an error) and the released half of ``checkpoint_path="auto"`` (the default: any failure
falls back to the shipped checkpoint, ``sources.py``).

Built to fail fast: a fit must not hang on a network that is not there.
- a converted copy already in the cache is used without any network access;
- ``huggingface_hub`` missing -> ImportError saying what to install;
- the hub's local cache (``HF_HOME`` / ``HF_HUB_CACHE``) holding the file -> converted, no network;
- ``HF_HUB_OFFLINE=1`` -> nothing else is tried;
- otherwise the hub (``HF_ENDPOINT``, default huggingface.co) must answer an HTTP HEAD of the file within
  ``timeout`` seconds (``$AUTOGLUON_MAYA_HUB_TIMEOUT``, default 5) -- name resolution included, which a
  socket timeout does not bound, so the probe runs in a daemon thread abandoned on timeout -- before
  huggingface_hub (which retries a silent server with back-off for ~30 s) is asked for anything.
A failed attempt (probe, download or conversion) is remembered for the process, per endpoint: a bagged
fit builds one model per fold, and each would otherwise wait for the same dead network again.
``"auto"`` inside a fit with a time limit also bounds the download itself (``download_within``, a tenth of
what is left of the fit's limit; the probe gets no longer either): a download that does not finish by then is
remembered like a failure, so every fold of a bagged fit and its refit load the same weights, and goes on
in a daemon thread, so that the file may be in the hub's local cache for a later process.
The file is converted once (``released.convert``) into ``<cache>/tabswift/hub/``.
"""

from __future__ import annotations

import logging
import math
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
#: a bounded download with less time than this is not tried
MIN_DOWNLOAD_S = 1.0
DOWNLOAD_THREAD = "tabswift-hub-download"

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
    cached = try_to_load_from_cache(REPO_ID, FILENAME)
    return Path(cached) if isinstance(cached, str) and Path(cached).is_file() else None


def locate_released(timeout: Optional[float] = None, download_within: Optional[float] = None) -> Tuple[Path, str]:
    """``(converted checkpoint, how it was had)``, converting on first use.

    Raises ``ImportError`` (no huggingface_hub) or ``HubUnavailableError`` (offline, unreachable, the
    download or the conversion failed, or took longer than ``download_within`` seconds, or one of those
    happened earlier in this process).  ``timeout`` (default ``$AUTOGLUON_MAYA_HUB_TIMEOUT`` or 5 s) bounds
    the connectivity check and the hub's metadata request; ``download_within`` (None or infinite: unbounded)
    the download, and the check too where it is shorter."""
    from .released import ReleasedCheckpointError, convert, is_our_checkpoint

    if timeout is None:
        timeout = float(os.environ.get(TIMEOUT_ENV, 5.0))
    if download_within is not None and not math.isfinite(download_within):
        download_within = None
    target = converted_path()
    if is_our_checkpoint(target):
        return target, f"converted copy in {target.parent}"
    try:
        from huggingface_hub import constants, hf_hub_download
    except ImportError:
        raise ImportError(f"the authors' weights from the model hub need the optional package huggingface_hub "
                          f"(pip install 'autogluon_maya[hub]'); or {MANUAL}") from None

    # huggingface_hub reads HF_ENDPOINT / HF_HUB_OFFLINE when it is first imported
    endpoint = str(getattr(constants, "ENDPOINT", None) or DEFAULT_ENDPOINT).rstrip("/")
    if endpoint in _FAILED:
        raise HubUnavailableError(f"{_FAILED[endpoint]} (an earlier attempt in this process; not retried)")

    def failed(reason: str) -> HubUnavailableError:
        _FAILED[endpoint] = reason
        return HubUnavailableError(reason)

    def converted(src: str, how: str) -> Tuple[Path, str]:
        try:
            return convert(src, target), how
        except ReleasedCheckpointError as err:  # the converter refuses what the hub serves: say which tensor
            raise failed(f"{REPO_ID}/{FILENAME} ({how}) could not be converted: {err}") from None

    cached = cached_released()
    if cached is not None:
        logger.info(f"TabSwift: {REPO_ID}/{FILENAME} found in the local hub cache; converting it once into {target}")
        return converted(str(cached), "found in the local Hugging Face hub cache")
    if _truthy("HF_HUB_OFFLINE") or bool(getattr(constants, "HF_HUB_OFFLINE", False)):
        raise HubUnavailableError(f"HF_HUB_OFFLINE is set and {REPO_ID}/{FILENAME} is not in the local "
                                  f"Hugging Face hub cache")
    if download_within is not None and download_within < MIN_DOWNLOAD_S:  # remembered too: a bag's folds agree
        raise failed(f"{max(download_within, 0.0):.1f} s of the fit's time for the download, less than "
                     f"{MIN_DOWNLOAD_S:g} s")
    reason = endpoint_reachable(f"{endpoint}/{REPO_ID}/resolve/main/{FILENAME}",
                                timeout if download_within is None else min(timeout, download_within))
    if reason:
        raise failed(f"the model hub {endpoint} is unreachable ({reason})")
    result: Dict[str, object] = {}

    def download() -> None:
        try:
            # from the endpoint probed above
            result["path"] = hf_hub_download(REPO_ID, FILENAME, etag_timeout=timeout, endpoint=endpoint)
        except Exception as err:  # HTTP error, timeout, disk: all mean "no file"
            result["error"] = err

    # a thread even without a bound, so that both paths run the same code; the caller waits for it
    worker = threading.Thread(target=download, daemon=True, name=DOWNLOAD_THREAD)
    worker.start()
    worker.join(download_within)
    if worker.is_alive():
        raise failed(f"the download of {REPO_ID}/{FILENAME} from {endpoint} did not finish within "
                     f"{download_within:.1f} s (it goes on in the background, for a later process)")
    if "error" in result:
        err = result["error"]
        first = str(err).splitlines()[0] if str(err) else ""
        raise failed(f"could not download {REPO_ID}/{FILENAME} from {endpoint} ({type(err).__name__}: {first})")
    src = str(result["path"])
    logger.info(f"TabSwift: downloaded {REPO_ID}/{FILENAME}; converting it once into {target}")
    return converted(src, f"downloaded from {endpoint}")


def fetch_released(timeout: Optional[float] = None) -> Path:
    """``checkpoint_path="hub"``: the converted released checkpoint, or an error saying what to do."""
    try:
        return locate_released(timeout)[0]
    except HubUnavailableError as err:
        raise HubUnavailableError(f"checkpoint_path='hub': {err.reason}") from None


__all__ = ["FILENAME", "HubUnavailableError", "REPO_ID", "cached_released", "converted_path", "endpoint_reachable",
           "fetch_released", "forget_failures", "locate_released"]
