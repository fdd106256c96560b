"""checkpoint_path="auto" fetches the authors' released weights at their first use, against a real HTTP hub on the
loopback: a ``ThreadingHTTPServer`` on 127.0.0.1 answers the file-resolution requests huggingface_hub makes
(HEAD and GET of ``/{repo_id}/resolve/{revision}/{filename}``) and counts them; ``HF_ENDPOINT`` points at it,
the hub's cache and ours are temporary folders.  It serves a ``swift.ckpt`` written by the authors' own module
(random weights, a small configuration).  Every connection a test makes in its own process is checked to go to
the loopback (``loopback_only``); the processes it starts are given the loopback hub as their endpoint.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import socket
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from autogluon_maya.tabswift.checkpoints_io import hub as hub_module
from autogluon_maya.tabswift.checkpoints_io.choice import (auto_may_download, choose_weights, forget_auto_choice,
                                                           resolve_checkpoint)
from autogluon_maya.tabswift.checkpoints_io.format import checkpoint_paths, read_checkpoint_info
from autogluon_maya.tabswift.checkpoints_io.hub import (FILENAME, HubUnavailableError, converted_path,
                                                        forget_failures)
from autogluon_maya.tabswift.defaults import SHIPPED_CHECKPOINT
from plugin_tests.tabswift.loopback_hub import LoopbackHub
from plugin_tests.tabswift.loopback_hub import sha256_of as _sha256
from plugin_tests.tabswift.test_released import SMALL_CONFIG, write_authors_ckpt

LOOPBACK = ("127.0.0.1", "::1", "localhost")
FALLBACK_WARNING = "uses the checkpoint shipped in the package"



@pytest.fixture
def loopback_only(monkeypatch):
    """Connections from this process may go to the loopback only (anything else raises); returns the list of
    every address this process connected to, or tried to."""
    attempts = []
    real_connect, real_getaddrinfo = socket.socket.connect, socket.getaddrinfo

    def connect(sock, address):
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            if address[0] not in LOOPBACK:
                raise OSError(f"the tests connect to 127.0.0.1 only, not {address}")
        return real_connect(sock, address)

    def getaddrinfo(host, *args, **kwargs):
        if host not in LOOPBACK and host is not None:
            raise socket.gaierror(f"the tests resolve no names but the loopback's, not {host!r}")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return attempts


@pytest.fixture(scope="module")
def released_file(tmp_path_factory) -> bytes:
    """The stand-in for the released swift.ckpt: the authors' module at a small configuration, saved as they
    saved theirs."""
    return write_authors_ckpt(tmp_path_factory.mktemp("released") / FILENAME, SMALL_CONFIG, seed=11).read_bytes()


@pytest.fixture
def online(tmp_path, monkeypatch, loopback_only, released_file):
    """A machine online whose hub is ``LoopbackHub``: downloads on, empty caches, nothing remembered.  ``env`` is
    the environment for a process the test starts (it reads huggingface_hub's settings at its import)."""
    from huggingface_hub import constants

    hub = LoopbackHub(released_file)
    hf_cache = tmp_path / "hf" / "hub"
    for name in ("AUTOGLUON_MAYA_TABSWIFT_CHECKPOINT", "HF_HUB_OFFLINE", "AUTOGLUON_MAYA_RELEASED_SHA256"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {"HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf"), "HF_HUB_CACHE": str(hf_cache),
                        "AUTOGLUON_MAYA_CACHE": str(tmp_path / "cache"), "AUTOGLUON_MAYA_HUB_DOWNLOAD": "1",
                        "AUTOGLUON_MAYA_HUB_TIMEOUT": "5", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}.items():
        monkeypatch.setenv(name, value)
    # huggingface_hub read these at its import: what it derived from them, as a fresh process would
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(hf_cache))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    forget_failures()
    forget_auto_choice()
    try:
        yield SimpleNamespace(hub=hub, body=released_file, sha256=_sha256(released_file), tmp=tmp_path,
                              converted=converted_path(), connections=loopback_only)
    finally:
        hub.stop()
        forget_failures()
        forget_auto_choice()


@pytest.fixture
def fallback_warnings():
    """The fall-back warnings logged (AutoGluon's logger does not propagate to the root logger)."""
    records = []

    class Collect(logging.Handler):
        def emit(self, record):
            if FALLBACK_WARNING in record.getMessage():
                records.append(record.getMessage())

    ag_logger, handler = logging.getLogger("autogluon"), Collect(level=logging.WARNING)
    level = ag_logger.level
    ag_logger.addHandler(handler)
    ag_logger.setLevel(logging.INFO)
    try:
        yield records
    finally:
        ag_logger.removeHandler(handler)
        ag_logger.setLevel(level)


def _env() -> dict:
    return {**os.environ, "PYTHONWARNINGS": "ignore"}


def _converted_from(choice) -> str:
    return choice.record()["converted_from"]["sha256"]


def _small_frame(n: int = 150, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n), "c": rng.integers(0, 3, size=n)})
    return X.assign(y=((X["a"] + 0.5 * X["b"] + rng.normal(scale=0.5, size=n)) > 0).astype(int))


AUTO_HP = {"checkpoint_path": "auto", "fine_tune": False, "n_estimators": 1}


# ---- (a) the first "auto" downloads and converts once ----------------------------------------------------------
def test_first_auto_downloads_and_converts_once_then_reads_the_copy(online, fallback_warnings):
    assert auto_may_download()
    first = choose_weights("auto")
    assert first.source == "released" and not first.fallback, first.reason
    assert f"downloaded from {online.hub.url}" in first.reason
    assert online.hub.counts["GET"] == 1
    assert first.path == online.converted and _converted_from(first) == online.sha256
    record = first.record()
    assert record["sha256"] == read_checkpoint_info(online.converted)["sha256"]
    # converted by renames into place: the two files and the lock, no temporary file left
    names = sorted(p.name for p in online.converted.parent.iterdir())
    assert names == [f".{FILENAME}.lock", "swift.json", "swift.safetensors"], names
    assert fallback_warnings == []
    asked = online.hub.requests()
    assert choose_weights("auto").path == first.path  # the same process: the same answer, no request
    forget_auto_choice()  # as a later process on this machine: the converted copy, no request
    later = choose_weights("auto")
    assert (later.path, later.source) == (online.converted, "released") and "converted copy in" in later.reason
    assert online.hub.requests() == asked and online.hub.counts["GET"] == 1
    assert all(host in LOOPBACK for host, *_ in online.connections)


def test_auto_asks_for_the_pinned_revision(online, monkeypatch):
    commit = hashlib.sha1(b"the released commit").hexdigest()
    monkeypatch.setattr(hub_module, "RELEASED_REVISION", commit)
    choice = choose_weights("auto")
    assert choice.source == "released", choice.reason
    assert online.hub.revisions and set(online.hub.revisions) == {commit}


# ---- (b) a bag, its all-rows model and refit_full load one set of weights, downloaded once --------------------
def test_a_bag_and_its_refits_load_the_weights_downloaded_once(online, monkeypatch):
    from autogluon.tabular import TabularPredictor

    from autogluon_maya.tabswift.checkpoints_io.choice import WeightsChoice

    # every fit's weights record, as the fit keeps it in its info (the same dict): three folds, then the bag's
    # all-rows model (refit_folds)
    loaded = []
    real_record = WeightsChoice.record

    def recording(self):
        record = real_record(self)
        loaded.append(record)
        return record

    monkeypatch.setattr(WeightsChoice, "record", recording)
    predictor = TabularPredictor(label="y", path=str(online.tmp / "ag"), verbosity=0).fit(
        _small_frame(), hyperparameters={"TABSWIFT": AUTO_HP}, num_bag_folds=3, num_cpus=1, num_gpus=0,
        fit_weighted_ensemble=False, raise_on_model_failure=True)
    predictor.refit_full()
    converted_sha = read_checkpoint_info(online.converted)["sha256"]
    assert len(loaded) >= 4 and [w["requested"] for w in loaded[:3]] == ["auto"] * 3, loaded
    assert {w["sha256"] for w in loaded} == {converted_sha}
    assert {w["converted_from"]["sha256"] for w in loaded} == {online.sha256}
    assert all(w["source"] == "released" for w in loaded)
    folds = loaded[:3]  # the first answer, repeated by the later folds
    assert {w["reason"] for w in folds} == {f"the authors' released weights: downloaded from {online.hub.url}"}
    assert all(w["requested"] == "hub" and w["repeats"] for w in loaded[3:])  # refits name the weights
    kept = [next(iter(predictor.model_info(m)["children_info"].values()))["tabswift_weights"]
            for m in ("TabSwift_BAG_L1", "TabSwift_BAG_L1_FULL")]
    assert {w["sha256"] for w in kept} == {converted_sha}
    assert online.hub.counts["GET"] == 1


# ---- (c) a later process reads the converted copy, the hub gone --------------------------------------------------
def test_a_second_process_uses_the_converted_copy_with_the_hub_stopped(online):
    first = choose_weights("auto")
    assert first.source == "released", first.reason
    online.hub.stop()
    script = ("import json; from autogluon_maya.tabswift.checkpoints_io.choice import choose_weights; "
              "c = choose_weights('auto'); print(json.dumps({**c.record(), 'fallback': c.fallback}))")
    out = subprocess.run([sys.executable, "-c", script], env=_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    record = json.loads(out.stdout.strip().splitlines()[-1])
    assert (record["source"], record["fallback"]) == ("released", False), record["reason"]
    assert record["sha256"] == first.record()["sha256"] and "converted copy in" in record["reason"]
    assert online.hub.counts["GET"] == 1


# ---- (d) a damaged or altered file is refused: the shipped weights, the reason recorded and warned once ---------
@pytest.mark.parametrize("damage", ["altered", "truncated"])
def test_a_refused_file_falls_back_to_the_shipped_weights_with_the_reason(online, monkeypatch, fallback_warnings,
                                                                          damage):
    from autogluon.tabular import TabularPredictor

    if damage == "altered":  # another file than the pinned one (other weights, a valid checkpoint)
        monkeypatch.setenv("AUTOGLUON_MAYA_RELEASED_SHA256", online.sha256)
        online.hub.body = write_authors_ckpt(online.tmp / "other.ckpt", SMALL_CONFIG, seed=12).read_bytes()
        why = f"has sha256 {_sha256(online.hub.body)}, not the pinned {online.sha256}"
    else:  # the first half of the released file: the converter refuses it
        online.hub.body = online.body[: len(online.body) // 2]
        why = "could not be converted"
    predictor = TabularPredictor(label="y", path=str(online.tmp / "ag"), verbosity=1).fit(  # (warnings shown)
        _small_frame(), hyperparameters={"TABSWIFT": AUTO_HP}, num_bag_folds=2, num_cpus=1, num_gpus=0,
        fit_weighted_ensemble=False, raise_on_model_failure=True)
    assert choose_weights("auto").source == "shipped"  # a later fit in the process: no second warning
    (child,) = predictor.model_info("TabSwift_BAG_L1")["children_info"].values()
    weights = child["tabswift_weights"]
    assert weights["source"] == "shipped"
    assert weights["sha256"] == _sha256(SHIPPED_CHECKPOINT.with_suffix(".safetensors").read_bytes())
    assert why in weights["repeats"], weights  # the refit names the decision its folds took, with the reason
    assert len(fallback_warnings) == 1, fallback_warnings  # one per process, not one per fold
    assert why in fallback_warnings[0] and "autogluon-maya-prefetch" in fallback_warnings[0]
    assert online.hub.counts["GET"] == 1
    assert not checkpoint_paths(online.converted)[1].exists()


# ---- (e) offline: not a socket opened ----------------------------------------------------------------------------
@pytest.mark.parametrize("switch, value, why", [
    ("HF_HUB_OFFLINE", "1", "HF_HUB_OFFLINE is set"),
    ("AUTOGLUON_MAYA_HUB_DOWNLOAD", "0", "downloads are switched off ($AUTOGLUON_MAYA_HUB_DOWNLOAD=0)")])
def test_offline_auto_opens_no_socket(online, monkeypatch, fallback_warnings, switch, value, why):
    monkeypatch.setenv(switch, value)
    assert not auto_may_download()
    choice = choose_weights("auto")
    assert (choice.path, choice.source, choice.fallback) == (SHIPPED_CHECKPOINT, "shipped", True)
    assert why in choice.reason
    assert online.connections == [] and online.hub.requests() == 0
    assert len(fallback_warnings) == 1, fallback_warnings
    assert why in fallback_warnings[0] and "autogluon-maya-prefetch" in fallback_warnings[0]


# ---- (f) two processes at once: one download, no half-written copy read -------------------------------------------
RACER = """
import json, sys, time
from pathlib import Path
from autogluon_maya.tabswift.checkpoints_io.choice import choose_weights
ready = Path(sys.argv[1])
(ready / sys.argv[2]).touch()
deadline = time.time() + 240
while len(list(ready.iterdir())) < 2 and time.time() < deadline:  # both imported: start together
    time.sleep(0.02)
c = choose_weights("auto")
print(json.dumps({**c.record(), "fallback": c.fallback}))
"""


def test_two_processes_at_once_download_once(online):
    online.hub.get_delay = 2.0  # the second process asks while the first one downloads
    ready = online.tmp / "ready"
    ready.mkdir()
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(ready), str(i)], env=_env(), text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(2)]
    outs = [r.communicate(timeout=400) for r in racers]
    assert all(r.returncode == 0 for r in racers), [err[-3000:] for _, err in outs]
    records = [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]
    assert all(r["source"] == "released" and not r["fallback"] for r in records), [r["reason"] for r in records]
    assert len({r["sha256"] for r in records}) == 1
    assert online.hub.counts["GET"] == 1, online.hub.paths
    assert online.hub.counts["HEAD"] == 2  # the probe and the metadata request, of one process only
    how = sorted("downloaded from" in r["reason"] for r in records)
    assert how == [False, True], [r["reason"] for r in records]  # the other one read the converted copy


# ---- what the process remembers, and what it must not trust ------------------------------------------------------
def test_a_converted_copy_is_reused_only_if_converted_from_the_pinned_file(online, monkeypatch):
    from autogluon_maya.tabswift.checkpoints_io.released import convert

    (online.tmp / "other").mkdir()
    other = write_authors_ckpt(online.tmp / "other" / FILENAME, SMALL_CONFIG, seed=13)
    convert(other, online.converted)  # a copy of another file in the place of the converted one
    monkeypatch.setenv("AUTOGLUON_MAYA_RELEASED_SHA256", online.sha256)
    choice = choose_weights("auto")
    assert choice.source == "released" and _converted_from(choice) == online.sha256, choice.reason
    assert online.hub.counts["GET"] == 1  # the pinned file, downloaded in its place


def test_a_failed_download_is_remembered_per_endpoint(online, monkeypatch):
    online.hub.fail_gets = True
    with pytest.raises(HubUnavailableError, match="could not download"):
        resolve_checkpoint("hub")
    asked = online.hub.requests()
    assert online.hub.counts["GET"] >= 1
    t0 = time.time()
    with pytest.raises(HubUnavailableError, match="an earlier attempt in this process"):
        resolve_checkpoint("hub")  # e.g. the next fold of a bag: no second wait
    assert online.hub.requests() == asked and time.time() - t0 < 1.0
    working = LoopbackHub(online.body)  # another endpoint is asked
    try:
        monkeypatch.setenv("HF_ENDPOINT", working.url)
        assert resolve_checkpoint("hub") == online.converted
    finally:
        working.stop()
    assert working.counts["GET"] == 1 and online.hub.requests() == asked


def test_auto_looks_again_when_its_converted_copy_was_deleted(online):
    first = choose_weights("auto")
    assert first.source == "released", first.reason
    for path in checkpoint_paths(first.path):
        path.unlink()
    again = choose_weights("auto")
    assert again.source == "released" and checkpoint_paths(again.path)[1].is_file(), again.reason
    assert again.record()["sha256"] == first.record()["sha256"]
    assert online.hub.counts["GET"] == 1  # converted again from the hub's local cache


def test_the_suite_never_downloads_by_default():
    """The suite's default: "auto" reads this machine only (a test turns downloads on against its own hub)."""
    assert hub_module.downloads_switched_off() is not None
