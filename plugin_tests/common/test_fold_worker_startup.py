"""A parallel fold's budget counts from when the driver handed the model over, not from when the freshly
started Ray worker got round to calling ``_fit`` (``TorchPluginMixin._fit_clock_start``).

The clock, the worker check and the process start are injected; the hand-over stamp goes through a real
pickle round trip."""

from __future__ import annotations

import os
import pickle

import pytest

from autogluon_maya import MayaModel, TabSwiftModel
from autogluon_maya.common import ag_model

NOW = 1_000_000.0
LIMIT = 20.0


@pytest.fixture
def worker(monkeypatch):
    """This process as a fresh Ray worker started at ``NOW - 30`` that has fitted nothing yet."""
    monkeypatch.setattr(ag_model, "_FITTED_IN_THIS_PROCESS", False)
    monkeypatch.setattr(ag_model, "in_ray_worker", lambda: True)
    monkeypatch.setattr(ag_model, "process_start_time", lambda: NOW - 30.0)


def _received(cls, handed_over_at: float, sender_pid: int):
    """An unfitted model as a fold worker unpickles it: its stamp says when and from which process it came."""
    model = cls(path="unused", name=cls.__name__, problem_type="binary", eval_metric="accuracy")
    state = model.__getstate__()
    assert "_handed_over" in state, "an unfitted model must record when it was pickled"
    state["_handed_over"] = (handed_over_at, sender_pid)
    clone = cls.__new__(cls)
    clone.__setstate__(state)
    return clone


@pytest.mark.parametrize("cls", [MayaModel, TabSwiftModel])
def test_first_fit_in_a_worker_counts_from_the_hand_over(worker, cls):
    model = _received(cls, NOW - 7.0, os.getpid() + 1)
    assert model._fit_clock_start(LIMIT, now=NOW) == pytest.approx(NOW - 7.0)


def test_a_worker_started_after_the_hand_over_counts_from_its_own_start(worker, monkeypatch):
    monkeypatch.setattr(ag_model, "process_start_time", lambda: NOW - 3.0)  # spawned for a later batch
    model = _received(MayaModel, NOW - 9.0, os.getpid() + 1)
    assert model._fit_clock_start(LIMIT, now=NOW) == pytest.approx(NOW - 3.0)


def test_start_up_deduction_is_capped_at_half_the_limit(worker):
    model = _received(MayaModel, NOW - 25.0, os.getpid() + 1)
    assert model._fit_clock_start(LIMIT, now=NOW) == pytest.approx(NOW - ag_model.MAX_STARTUP_SHARE * LIMIT)


def test_only_the_first_fit_in_a_worker_deducts(worker):
    """A reused worker (the next batch of folds) was already running: its wait was other folds' time."""
    first = _received(MayaModel, NOW - 7.0, os.getpid() + 1)
    second = _received(MayaModel, NOW - 7.0, os.getpid() + 1)
    assert first._fit_clock_start(LIMIT, now=NOW) < NOW
    assert second._fit_clock_start(LIMIT, now=NOW) == NOW


def test_a_copy_made_in_this_process_deducts_nothing(worker):
    """Sequential folds deep-copy the model in the driver: no hand-over, no start-up."""
    model = _received(MayaModel, NOW - 7.0, os.getpid())
    assert model._fit_clock_start(LIMIT, now=NOW) == NOW


def test_outside_a_ray_worker_nothing_is_deducted(worker, monkeypatch):
    """A model loaded from disk in a new process was also pickled elsewhere, long ago."""
    monkeypatch.setattr(ag_model, "in_ray_worker", lambda: False)
    model = _received(MayaModel, NOW - 7.0, os.getpid() + 1)
    assert model._fit_clock_start(LIMIT, now=NOW) == NOW


def test_without_a_limit_nothing_is_deducted(worker):
    model = _received(MayaModel, NOW - 7.0, os.getpid() + 1)
    assert model._fit_clock_start(None, now=NOW) == NOW


def test_a_fitted_model_is_not_stamped_and_the_stamp_survives_a_copy_in_the_worker(worker):
    model = MayaModel(path="unused", name="Maya", problem_type="binary", eval_metric="accuracy")
    model.model = object()
    assert "_handed_over" not in model.__getstate__()
    received = _received(MayaModel, NOW - 7.0, os.getpid() + 1)
    copy_in_worker = pickle.loads(pickle.dumps(received))  # AutoGluon deep-copies the fold model there
    assert copy_in_worker._fit_clock_start(LIMIT, now=NOW) == pytest.approx(NOW - 7.0)


def _in_a_fresh_ray(env_niceness):
    """(in_ray_worker() in the driver, in a task; the task's niceness) with Ray started after
    ``import autogluon_maya``, in a child process so that this process's Ray (AutoGluon's) is untouched."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != ag_model.RAY_NICENESS_ENV}
    if env_niceness is not None:
        env[ag_model.RAY_NICENESS_ENV] = env_niceness
    code = (
        "import os, ray, autogluon_maya\n"
        "from autogluon_maya.common.ag_model import in_ray_worker\n"
        "ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)\n"
        "task = ray.remote(lambda: (in_ray_worker(), os.nice(0)))\n"
        "print(in_ray_worker(), *ray.get(task.remote()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env)
    return out.stdout.split()[-3:], out.stderr[-2000:]


def test_ray_workers_run_at_normal_priority_and_know_they_are_workers():
    """Ray's own default is niceness 15: beside busy processes a fold worker starved (113 s to start)."""
    assert not ag_model.in_ray_worker()
    got, err = _in_a_fresh_ray(None)
    assert got == ["False", "True", "0"], err


@pytest.mark.slow
def test_a_users_ray_niceness_is_kept():
    got, err = _in_a_fresh_ray("7")
    assert got == ["False", "True", "7"], err
