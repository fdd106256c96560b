"""Optional download of the released ``swift.ckpt`` (``checkpoint_path="hub"``).

Never a default, and built to fail fast: a fit must not hang on a network that is not there.
- a converted copy already in the cache is used without any network access;
- ``huggingface_hub`` missing -> ImportError saying what to install;
- ``HF_HUB_OFFLINE=1`` -> only the local hub cache is consulted;
- otherwise the hub (``HF_ENDPOINT``, default huggingface.co) must answer an HTTP HEAD of the file within
  ``timeout`` seconds (``$AUTOGLUON_MAYA_HUB_TIMEOUT``, default 5) -- name resolution included, which a
  socket timeout does not bound, so the probe runs in a daemon thread abandoned on timeout -- before
  huggingface_hub (which retries a silent server with back-off for ~30 s) is asked for anything.
The file is then converted once (``released.convert``) into ``<cache>/tabswift/hub/``.
"""

from __future__ import annotations

import logging
import os
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Optional
from urllib.parse import urlparse

logger = logging.getLogger(f"autogluon.ext.{__name__}")
REPO_ID = "LAMDA-Tabular/TabSwift"
FILENAME = "swift.ckpt"
DEFAULT_ENDPOINT = "https://huggingface.co"
MANUAL = (f"download {FILENAME} from https://huggingface.co/{REPO_ID} on a machine with internet access, then run "
          f"`autogluon-maya-convert {FILENAME} out/` and pass checkpoint_path='out/'")


class HubUnavailableError(RuntimeError):
    """The model hub can not be reached (offline, blocked, too slow); the message says what to do instead."""


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


TIMEOUT_ENV = "AUTOGLUON_MAYA_HUB_TIMEOUT"


def fetch_released(timeout: Optional[float] = None) -> Path:
    """Path of the converted released checkpoint, downloading and converting it on first use.
    ``timeout`` (default ``$AUTOGLUON_MAYA_HUB_TIMEOUT`` or 5 s) bounds the connectivity check and the
    hub's metadata request."""
    from .released import cache_dir, convert, is_our_checkpoint

    if timeout is None:
        timeout = float(os.environ.get(TIMEOUT_ENV, 5.0))

    target = cache_dir() / "tabswift" / "hub" / Path(FILENAME).stem
    if is_our_checkpoint(target):
        return target
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise ImportError(f"checkpoint_path='hub' needs the optional package huggingface_hub "
                          f"(pip install huggingface_hub); or {MANUAL}") from None
    from huggingface_hub import constants  # HF_ENDPOINT as read when huggingface_hub was imported

    endpoint = str(getattr(constants, "ENDPOINT", None) or DEFAULT_ENDPOINT).rstrip("/")
    offline = _truthy("HF_HUB_OFFLINE")
    if not offline:
        reason = endpoint_reachable(f"{endpoint}/{REPO_ID}/resolve/main/{FILENAME}", timeout)
        if reason:
            raise HubUnavailableError(f"checkpoint_path='hub': the model hub {endpoint} is unreachable ({reason}); "
                                      f"{MANUAL}")
    try:
        src = hf_hub_download(REPO_ID, FILENAME, local_files_only=offline, etag_timeout=timeout,
                              endpoint=endpoint)  # the endpoint that answered the probe
    except Exception as err:  # offline cache miss, HTTP error, timeout: all mean "no file", say why
        raise HubUnavailableError(f"checkpoint_path='hub': could not get {REPO_ID}/{FILENAME} "
                                  f"({'HF_HUB_OFFLINE is set and it is not in the local hub cache' if offline else ''}"
                                  f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); {MANUAL}") from None
    logger.info(f"TabSwift: downloaded {REPO_ID}/{FILENAME}; converting it once into {target}")
    return convert(src, target)


__all__ = ["FILENAME", "HubUnavailableError", "REPO_ID", "endpoint_reachable", "fetch_released"]
