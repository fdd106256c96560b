"""Optional download of the released ``swift.ckpt`` (``checkpoint_path="hub"``).

Never a default, and built to fail fast: a fit must not hang on a network that is not there.
- a converted copy already in the cache is used without any network access;
- ``huggingface_hub`` missing -> ImportError saying what to install;
- ``HF_HUB_OFFLINE=1`` -> only the local hub cache is consulted;
- otherwise the hub endpoint (``HF_ENDPOINT``, default huggingface.co) must answer a TCP connect within
  ``timeout`` seconds -- name resolution included, which a plain socket timeout does not bound, so the
  check runs in a daemon thread that is abandoned on timeout -- before anything is downloaded.
The file is then converted once (``released.convert``) into ``<cache>/tabswift/hub/``.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
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


def endpoint_reachable(endpoint: str, timeout: float) -> Optional[str]:
    """None if a TCP connection to the endpoint's host opens within ``timeout`` s, else the reason."""
    url = urlparse(endpoint)
    host, port = url.hostname, url.port or (443 if url.scheme == "https" else 80)
    if not host:
        return f"invalid endpoint {endpoint!r}"
    result = {}

    def connect():
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            result["ok"] = True
        except OSError as err:
            result["error"] = f"{type(err).__name__}: {err}"

    t = threading.Thread(target=connect, daemon=True)
    t.start()
    t.join(timeout)
    if result.get("ok"):
        return None
    return result.get("error", f"no answer from {host}:{port} within {timeout:g} s")


def fetch_released(timeout: float = 5.0) -> Path:
    """Path of the converted released checkpoint, downloading and converting it on first use."""
    from .released import cache_dir, convert, is_our_checkpoint

    target = cache_dir() / "tabswift" / "hub" / Path(FILENAME).stem
    if is_our_checkpoint(target):
        return target
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        raise ImportError(f"checkpoint_path='hub' needs the optional package huggingface_hub "
                          f"(pip install huggingface_hub); or {MANUAL}") from None
    offline = _truthy("HF_HUB_OFFLINE")
    if not offline:
        endpoint = os.environ.get("HF_ENDPOINT", DEFAULT_ENDPOINT)
        reason = endpoint_reachable(endpoint, timeout)
        if reason:
            raise HubUnavailableError(f"checkpoint_path='hub': the model hub {endpoint} is unreachable ({reason}); "
                                      f"{MANUAL}")
    try:
        src = hf_hub_download(REPO_ID, FILENAME, local_files_only=offline, etag_timeout=timeout)
    except Exception as err:  # offline cache miss, HTTP error, timeout: all mean "no file", say why
        raise HubUnavailableError(f"checkpoint_path='hub': could not get {REPO_ID}/{FILENAME} "
                                  f"({'HF_HUB_OFFLINE is set and it is not in the local hub cache' if offline else ''}"
                                  f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}); {MANUAL}") from None
    logger.info(f"TabSwift: downloaded {REPO_ID}/{FILENAME}; converting it once into {target}")
    return convert(src, target)


__all__ = ["FILENAME", "HubUnavailableError", "REPO_ID", "endpoint_reachable", "fetch_released"]
