"""Shared test code: fitting a model class directly on a given number of cores (and checking that it got
them), keeping torch's global state from leaking between tests, and measuring a fit's peak memory.

AutoGluon honours ``num_cpus`` passed to ``AbstractModel.fit`` only together with ``num_gpus``; alone it
is replaced in ``_calculate_total_resources`` by the model's default, every physical core (both models
set ``default_resources_physical_cores_only``). A test that says "one core" must pass both and look at
what the model's ``_fit`` received and the torch thread count it ran with.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def torch_globals_kept():
    """Torch's thread count and global random state as they were before the test, put back after it: a test
    that sets either (or fits a model, which seeds torch) then leaves nothing to the tests that follow."""
    threads, rng = torch.get_num_threads(), torch.get_rng_state()
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        torch.set_rng_state(rng)


@pytest.fixture(autouse=True)
def torch_threads_unchanged():
    """Fails a test that ends with another torch thread count than it started with (and puts the count back,
    so that one test's leak does not decide the next one's result).  Autouse wherever it is imported."""
    before = torch.get_num_threads()
    yield
    after = torch.get_num_threads()
    if after != before:
        torch.set_num_threads(before)
        pytest.fail(f"the test left torch with {after} thread(s); it started with {before}", pytrace=False)


def fit_on_cores(model, cores: int = 1, **fit_kw):
    """``model.fit(num_cpus=cores, num_gpus=0, **fit_kw)``; asserts that ``_fit`` was called with
    ``num_cpus=cores`` and ended with ``cores`` torch threads (AutoGluon restores the caller's count
    after the fit, so it is read inside).  The fit starts from ``cores + 1`` threads, so the count seen
    inside is one the model set, not one it inherited; the caller's count is put back after."""
    seen = {}
    fit = model._fit

    def spy(*args, **kwargs):
        seen["num_cpus"] = kwargs.get("num_cpus")
        try:
            return fit(*args, **kwargs)
        finally:
            seen["threads"] = torch.get_num_threads()

    model._fit = spy  # an instance attribute, shadowing the method for this call only
    caller = torch.get_num_threads()
    torch.set_num_threads(cores + 1)
    try:
        model.fit(num_cpus=cores, num_gpus=0, **fit_kw)
        after = torch.get_num_threads()
    finally:
        del model._fit
        torch.set_num_threads(caller)
    assert seen == {"num_cpus": cores, "threads": cores}, f"{type(model).__name__} was given {seen}, not {cores} core(s)"
    assert after == cores + 1, f"{type(model).__name__}'s fit left {after} torch threads, not the {cores + 1} it had"
    assert model.fit_num_cpus == cores
    return model


def pickle_as_if_on_cuda(obj) -> tuple:
    """``pickle.dumps(obj)`` with every torch storage recorded as living on ``cuda:0`` -- the bytes a GPU
    process writes for a CUDA tensor -- and the number of storages written.  No GPU is needed: torch
    pickles a storage as ``torch.save`` bytes whose location comes from ``torch.serialization.location_tag``.
    Used by the reload test and by ``examples/benchmarks/gpu_check.py``'s CPU mode."""
    import pickle

    import torch.serialization

    real, count = torch.serialization.location_tag, [0]

    def on_cuda(storage):
        count[0] += 1
        return "cuda:0"

    torch.serialization.location_tag = on_cuda
    try:
        return pickle.dumps(obj), count[0]
    finally:
        torch.serialization.location_tag = real


def _vm_hwm():
    """This process's peak resident memory in bytes (VmHWM of /proc/self/status), or None."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


class PeakRss:
    """Peak resident memory of this process while the block runs: the kernel's own high-water mark (VmHWM,
    reset at the start through /proc/self/clear_refs) where Linux offers it, else sampled every 20 ms (which
    can miss a short peak)."""

    def __enter__(self):
        import psutil

        self._proc, self._stop = psutil.Process(), threading.Event()
        self.start = self.peak = self._proc.memory_info().rss
        try:
            Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
            hwm = _vm_hwm()
            self._hwm = hwm is not None and hwm - self.start < 2**20  # trusted only if the reset took
        except OSError:
            self._hwm = False
        self._thread = None if self._hwm else threading.Thread(target=self._sample, daemon=True)
        if self._thread is not None:  # the kernel's mark covers every sample the thread could take
            self._thread.start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._proc.memory_info().rss)
            time.sleep(0.02)

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._hwm:
            self.peak = max(self.peak, _vm_hwm())

    @property
    def increase(self) -> int:
        return self.peak - self.start


_FIT_MEMORY_CHILD = """
import json, sys
import numpy as np, pandas as pd, torch
sys.path.insert(0, sys.argv[1])
import autogluon_maya
from plugin_tests.resources import PeakRss, fit_on_cores
job = json.loads(sys.argv[2])
cls = getattr(autogluon_maya, job["cls"])
X, y, X_test = (pd.read_pickle(job[k]) for k in ("X", "y", "X_test"))
estimate = cls._estimate_memory_usage_static(X=X, hyperparameters=job["hp"], problem_type=job["problem_type"],
                                             num_classes=job["num_classes"])
with PeakRss() as rss:
    model = cls(path=job["path"], name="m", problem_type=job["problem_type"],
                hyperparameters={**job["hp"], **job["fit_hp"]})
    fit_on_cores(model, 1, X=X, y=y)
    proba = model.predict_proba(X_test)
np.save(job["proba"], np.asarray(proba))
print(json.dumps({"increase": rss.increase, "estimate": estimate}))
"""


def fit_memory_in_fresh_process(cls_name: str, X, y, X_test, hp: dict, problem_type: str = "binary",
                                fit_hp: dict | None = None) -> dict:
    """Fits ``autogluon_maya.<cls_name>`` on one core in a fresh process and predicts ``X_test``; returns the
    peak resident memory the fit and prediction added (``increase``, bytes), the model's own estimate for
    ``X`` and ``hp`` (``estimate``; what AutoGluon weighs against the free memory before the fit) and the
    predictions (``proba``).  A fresh process, whose memory grows only by what the fit allocates: in a test
    process earlier tests leave freed memory the allocator reuses, hiding the fit's peak.  torch is imported
    before the measurement, as it is by the time AutoGluon fits a model.  ``fit_hp`` is added for the fit only
    (e.g. an ``ag.`` constraint that would decline the fit)."""
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        job = {"cls": cls_name, "hp": hp, "fit_hp": fit_hp or {}, "problem_type": problem_type,
               "num_classes": int(np.unique(np.asarray(y)).size) if problem_type != "regression" else 1,
               "path": str(work / "model"), "proba": str(work / "proba.npy")}
        for key, frame in (("X", X), ("y", y), ("X_test", X_test)):
            job[key] = str(work / f"{key}.pkl")
            frame.to_pickle(job[key])
        out = subprocess.run([sys.executable, "-c", _FIT_MEMORY_CHILD, str(REPO), json.dumps(job)],
                             capture_output=True, text=True)
        if out.returncode != 0:
            pytest.fail(f"the {cls_name} fit in a fresh process failed:\n{out.stderr[-3000:]}")
        result = json.loads(out.stdout.strip().splitlines()[-1])
        result["proba"] = np.load(job["proba"])
    return result


def memory_report(r: dict) -> str:
    return (f"peak RSS grew {r['increase'] / 2**20:.0f} MiB, estimate {r['estimate'] / 2**20:.0f} MiB "
            f"({r['estimate'] / max(r['increase'], 1):.1f}x)")
