"""Ray fold workers: knowing that a fit runs in one, what its start-up cost, and (opt-in) their priority.

AutoGluon fits the folds of a bag in parallel Ray workers (``ParallelLocalFoldFittingStrategy``).  It computes
each fold's ``time_limit`` in the driver, then starts the worker tasks (``max_calls=1``: a fresh process per
fold), and the fold's clock starts only when the task body runs.  The worker's boot -- importing AutoGluon,
torch and this package, unpickling the model -- is not counted: 7.8 s with one busy process beside a bagged
fit on 2 cores, 10-20 s under heavier load, enough to carry a 40 s bagged MAYA fit to 41 s
(``examples/benchmarks/bagged_under_load.py``, docs/experiments.md "Bagged fits beside busy processes").  The first fit
in a worker therefore counts its budget from the worker's own start (:func:`fit_clock_start`).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from typing import Optional

logger = logging.getLogger(f"autogluon.ext.{__name__}")

#: A fit deducts at most this share of its ``time_limit`` for the worker's start-up (a bound in case the
#: process start time is wrong, e.g. a clock that moved).
MAX_STARTUP_SHARE = 0.5
#: A worker process that started more than this many seconds before this package was imported in it was
#: waiting idle (Ray keeps started workers in a pool), not starting up for this fit: nothing is deducted.
MAX_IDLE_BEFORE_IMPORT_S = 120.0
#: when this package was first imported in this process (a fold worker imports it to unpickle the model)
IMPORTED_AT = time.time()

#: Set by the first fit of either model in this process: a process that fitted one already was running
#: before the next fit was handed to it, so its start-up belongs to the first.
_fitted_in_this_process = False

RAY_NICENESS_ENV = "RAY_worker_niceness"


def ray_workers_at_normal_priority() -> None:
    """Start AutoGluon's Ray workers at normal priority (``RAY_worker_niceness=0``) unless already set.

    Opt-in; call it before the first bagged fit of the process (Ray reads the variable when AutoGluon starts
    it).  Ray starts its workers at niceness 15, so beside other busy processes a parallel fold's worker gets
    a few per cent of a core: with two busy processes on 2 cores a bagged 40 s MAYA fit took 188-206 s at
    niceness 15 and 35.5 s at niceness 0 (``examples/benchmarks/results/bagged_under_load``).  It applies
    to every Ray worker the process starts afterwards, of any model."""
    os.environ.setdefault(RAY_NICENESS_ENV, "0")


def in_ray_worker() -> bool:
    """True inside a Ray worker process (where AutoGluon fits parallel folds)."""
    ray = sys.modules.get("ray")
    if ray is None:
        return False
    try:  # the runtime context (public API) holds the process's worker, whose mode tells driver from worker
        return ray.is_initialized() and ray.get_runtime_context().worker.mode == ray.WORKER_MODE
    except Exception:  # a Ray version without these attributes: no deduction
        return False


def process_start_time() -> float:
    import psutil

    return psutil.Process().create_time()


def fit_clock_start(time_limit: Optional[float], now: Optional[float] = None) -> float:
    """The wall time a fit's ``time_limit`` counts from: ``now``, or earlier by its fold worker's start-up
    where this is the first fit in a Ray worker process (by at most ``MAX_STARTUP_SHARE`` of the limit)."""
    global _fitted_in_this_process
    now = time.time() if now is None else now
    first, _fitted_in_this_process = not _fitted_in_this_process, True
    if time_limit is None or not first or not in_ray_worker():
        return now
    started = process_start_time()
    if IMPORTED_AT - started > MAX_IDLE_BEFORE_IMPORT_S:
        return now
    start = max(now - MAX_STARTUP_SHARE * time_limit, min(now, started))
    logger.log(15, f"fold worker start-up: {now - start:.1f} s counted against the {time_limit:.1f} s limit")
    return start
