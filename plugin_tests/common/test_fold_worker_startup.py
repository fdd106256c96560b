"""A parallel fold's budget counts from its Ray worker's start, not from when the freshly started worker got
round to calling ``_fit`` (``fold_worker.fit_clock_start``, which ``TorchPluginMixin._fit_budget`` uses).

The clock, the worker check, the process start and the package's import time are injected."""

from __future__ import annotations

import os
import time

import pytest

from autogluon_maya import MayaModel, TabSwiftModel
from autogluon_maya.common import fold_worker

NOW = 1_000_000.0
LIMIT = 20.0


@pytest.fixture
def worker(monkeypatch):
    """This process as a fresh Ray worker started at ``NOW - 7`` that imported the package at ``NOW - 5`` and has
    fitted nothing yet."""
    monkeypatch.setattr(fold_worker, "_fitted_in_this_process", False)
    monkeypatch.setattr(fold_worker, "in_ray_worker", lambda: True)
    monkeypatch.setattr(fold_worker, "process_start_time", lambda: NOW - 7.0)
    monkeypatch.setattr(fold_worker, "IMPORTED_AT", NOW - 5.0)


def test_first_fit_in_a_worker_counts_from_the_workers_start(worker):
    assert fold_worker.fit_clock_start(LIMIT, now=NOW) == pytest.approx(NOW - 7.0)


@pytest.mark.parametrize("cls", [MayaModel, TabSwiftModel])
def test_both_models_budget_from_the_workers_start(worker, monkeypatch, cls):
    now = time.time()  # the models' budget reads the wall clock
    monkeypatch.setattr(fold_worker, "process_start_time", lambda: now - 7.0)
    monkeypatch.setattr(fold_worker, "IMPORTED_AT", now - 5.0)
    model = cls(path="unused", name=cls.__name__, problem_type="binary", eval_metric="accuracy")
    assert model._fit_budget(LIMIT).start == pytest.approx(now - 7.0, abs=0.5)


def test_start_up_deduction_is_capped_at_half_the_limit(worker, monkeypatch):
    monkeypatch.setattr(fold_worker, "process_start_time", lambda: NOW - 25.0)
    monkeypatch.setattr(fold_worker, "IMPORTED_AT", NOW - 24.0)
    assert fold_worker.fit_clock_start(LIMIT, now=NOW) == pytest.approx(NOW - fold_worker.MAX_STARTUP_SHARE * LIMIT)


def test_only_the_first_fit_in_a_worker_deducts(worker):
    """A process that fitted a model already was running when the next fit was handed to it."""
    assert fold_worker.fit_clock_start(LIMIT, now=NOW) < NOW
    assert fold_worker.fit_clock_start(LIMIT, now=NOW) == NOW


def test_a_worker_that_waited_idle_before_the_fit_deducts_nothing(worker, monkeypatch):
    """Ray keeps started workers in a pool: one started long before the package was imported in it (to
    unpickle the model) was idle, not starting up for this fit."""
    monkeypatch.setattr(fold_worker, "process_start_time", lambda: NOW - 600.0)
    assert fold_worker.fit_clock_start(LIMIT, now=NOW) == NOW


def test_outside_a_ray_worker_nothing_is_deducted(worker, monkeypatch):
    monkeypatch.setattr(fold_worker, "in_ray_worker", lambda: False)
    assert fold_worker.fit_clock_start(LIMIT, now=NOW) == NOW


def test_without_a_limit_nothing_is_deducted(worker):
    assert fold_worker.fit_clock_start(None, now=NOW) == NOW


def _in_a_fresh_ray(env_niceness, opt_in: bool):
    """(in_ray_worker() in the driver, in a task; the task's niceness) with Ray started after
    ``import autogluon_maya`` (and ``ray_workers_at_normal_priority()`` where ``opt_in``), in a child process so
    that this process's Ray (AutoGluon's) is untouched."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != fold_worker.RAY_NICENESS_ENV}
    if env_niceness is not None:
        env[fold_worker.RAY_NICENESS_ENV] = env_niceness
    code = (
        "import os, ray, autogluon_maya\n"
        "from autogluon_maya.common.fold_worker import in_ray_worker\n"
        f"{'autogluon_maya.ray_workers_at_normal_priority()' if opt_in else ''}\n"
        "ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)\n"
        "task = ray.remote(lambda: (in_ray_worker(), os.nice(0)))\n"
        "print(in_ray_worker(), *ray.get(task.remote()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180, env=env)
    return out.stdout.split()[-3:], out.stderr[-2000:]


def test_opted_in_ray_workers_run_at_normal_priority_and_know_they_are_workers():
    """Ray's own default is niceness 15: beside busy processes a fold worker starved (113 s to start)."""
    assert not fold_worker.in_ray_worker()
    got, err = _in_a_fresh_ray(None, opt_in=True)
    assert got == ["False", "True", "0"], err


@pytest.mark.slow
def test_a_users_ray_niceness_is_kept():
    got, err = _in_a_fresh_ray("7", opt_in=True)
    assert got == ["False", "True", "7"], err
