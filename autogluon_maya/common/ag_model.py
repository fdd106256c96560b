"""What both AutoGluon wrappers (MAYA, TabSwift) do the same way around torch."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import threading
import time
from typing import Any, Dict, Optional, Tuple

logger = logging.getLogger(__name__)
_STORAGE_PATCH = threading.RLock()

#: Set by the first fit of either model in this process: a worker that has fitted one already was started
#: before that fit, so its start-up does not belong to the next.
_FITTED_IN_THIS_PROCESS = False
#: A fit deducts at most this share of its ``time_limit`` for the worker's start-up (a bound in case the
#: hand-over time is wrong, e.g. clocks of two machines that disagree).
MAX_STARTUP_SHARE = 0.5


#: Ray starts its workers at niceness 15 (``RAY_worker_niceness``), and AutoGluon fits parallel folds in Ray
#: workers: beside any normal-priority process a fold's worker then gets a few percent of a core.  With two busy
#: processes on 2 cores, fold workers took 113 s to start and a bagged 40 s MAYA fit took 188 s.  The package
#: sets the variable to 0 at import unless the user has set it; it must be set before AutoGluon starts Ray.
RAY_NICENESS_ENV = "RAY_worker_niceness"


def ray_workers_at_normal_priority() -> None:
    os.environ.setdefault(RAY_NICENESS_ENV, "0")


def in_ray_worker() -> bool:
    """True inside a Ray worker process (where AutoGluon fits parallel folds)."""
    ray = sys.modules.get("ray")
    if ray is None:
        return False
    try:  # the runtime context (public API) holds the process's worker, whose mode tells driver from worker
        return ray.is_initialized() and ray.get_runtime_context().worker.mode == ray.WORKER_MODE
    except Exception:  # a Ray version without these attributes: no deduction, as before
        return False


def process_start_time() -> float:
    import psutil

    return psutil.Process().create_time()


@contextlib.contextmanager
def storages_restored_on_cpu():
    """While active, unpickled torch storages land on the CPU whatever device they were saved from."""
    import torch
    import torch.storage

    def load_on_cpu(blob: bytes):
        return torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)

    with _STORAGE_PATCH:
        real = torch.storage._load_from_bytes
        torch.storage._load_from_bytes = load_on_cpu
        try:
            yield
        finally:
            torch.storage._load_from_bytes = real


class TorchPluginMixin:
    """Mixed into ``AbstractTorchModel`` subclasses that declare ``seed_name``."""

    # ---- the time a parallel fold worker spends starting up --------------------------------------------
    # AutoGluon's parallel bagging computes each fold's ``time_limit`` in the driver, then starts the Ray
    # fold workers; a fresh worker boots, imports AutoGluon, torch and this package and unpickles the model
    # before ``_fit`` runs, and none of that is deducted (7.8 s with one busy process beside the fit on
    # 2 cores, 10-20 s under heavier load).  An unfitted model records when it was pickled; the first fit in a
    # Ray worker that received it from another process counts its budget from the later of that moment and
    # the worker's own start (a worker started for a later batch of folds did not exist before).
    def __getstate__(self):
        state = dict(self.__dict__)
        if getattr(self, "model", None) is None:
            state["_handed_over"] = (time.time(), os.getpid())
        return state

    def __setstate__(self, state):
        sent = state.pop("_handed_over", None)
        self.__dict__.update(state)
        if sent is not None and sent[1] != os.getpid():
            self._received = (sent[0], os.getpid())

    def _fit_clock_start(self, time_limit: Optional[float], now: Optional[float] = None) -> float:
        """The wall time this fit's ``time_limit`` counts from: now, or earlier by the start-up of the fold
        worker it runs in (see above), by at most ``MAX_STARTUP_SHARE`` of the limit."""
        global _FITTED_IN_THIS_PROCESS
        now = time.time() if now is None else now
        first, _FITTED_IN_THIS_PROCESS = not _FITTED_IN_THIS_PROCESS, True
        received = getattr(self, "_received", None)
        if (time_limit is None or not first or received is None or received[1] != os.getpid()
                or not in_ray_worker()):
            return now
        handed_over = max(received[0], process_start_time())
        start = max(now - MAX_STARTUP_SHARE * time_limit, min(now, handed_over))
        logger.log(15, f"\tfold worker start-up: {now - start:.1f} s counted against the {time_limit:.1f} s limit")
        return start

    _budget_clock = None  # the fit's clock in seconds; None: wall time (tests set a clock of their own)

    def _fit_budget(self, time_limit: Optional[float]):
        """The fit's ``TimeBudget``: on wall time from ``_fit_clock_start``, or on ``_budget_clock`` where a test
        set one (from that clock's now)."""
        from .training import TimeBudget

        if self._budget_clock is not None:
            return TimeBudget(time_limit, clock=self._budget_clock)
        return TimeBudget(time_limit, start=self._fit_clock_start(time_limit))

    def _start_torch_fit(self, params: Dict[str, Any], num_cpus: int, num_gpus: float) -> Tuple[int, Any]:
        """Seed torch from AutoGluon's seed in ``params``, set the thread count (restored afterwards by
        the ``reset_torch_threads`` tag) and resolve the fit device; returns (seed, torch.device)."""
        import torch

        seed = int(params.get(self.seed_name, 0) or 0)
        torch.manual_seed(seed)
        torch.set_num_threads(max(1, int(num_cpus)))
        return seed, torch.device(self._resolve_fit_device(num_gpus=num_gpus))

    @classmethod
    def load(cls, path: str, reset_paths: bool = True, verbose: bool = True):
        """AutoGluon's load, with every torch storage in the pickle restored on the CPU when this machine
        has no CUDA device.

        A model fitted on a GPU is moved to the CPU before saving, but a tensor the move does not reach
        (a cached state, a buffer kept outside the modules) would be pickled with its ``cuda:0`` location,
        and plain unpickling then fails on a CPU-only machine ("Attempting to deserialize object on a CUDA
        device").  Torch pickles a storage as ``torch.storage._load_from_bytes(bytes)``; during this load
        that function is replaced by one that maps it to the CPU, weights only."""
        import torch

        if torch.cuda.is_available():
            return super().load(path=path, reset_paths=reset_paths, verbose=verbose)
        with storages_restored_on_cpu():
            return super().load(path=path, reset_paths=reset_paths, verbose=verbose)

    # ---- the prior: what a fit must beat ----------------------------------------------------------------
    # A network that stopped early (too little time for the table) or a pretrained one that does not suit the
    # table can predict worse than the class frequencies or the mean; such a model only costs an ensemble.
    # Where a fit has scored itself on validation rows and loses to the prior, it predicts the prior instead.
    _prior = None  # the prior's prediction for one row, where the fit fell back to it

    def _prior_prediction(self, y, sample_weight=None):
        """The prior's prediction for one row, from the training labels: the class frequencies (binary: the
        positive class's), the mean (regression), the quantiles at ``quantile_levels`` (quantile)."""
        import numpy as np
        from autogluon.core.constants import BINARY, MULTICLASS, QUANTILE

        y = np.asarray(y)
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        if self.problem_type in (BINARY, MULTICLASS):
            counts = np.bincount(y.astype(np.int64), weights=w, minlength=max(2, int(self.num_classes or 2)))
            freq = counts / counts.sum()
            return np.float32(freq[1]) if self.problem_type == BINARY else freq.astype(np.float32)
        y = y.astype(np.float64)
        if self.problem_type == QUANTILE:
            return np.quantile(y, self.quantile_levels).astype(np.float32)
        return np.float32(np.average(y, weights=w))

    def _prior_proba(self, n: int, prior=None):
        """``n`` rows of the prior's prediction (the fitted one unless ``prior`` is given), as predict_proba."""
        import numpy as np
        from autogluon.core.constants import MULTICLASS, QUANTILE

        prior = self._prior if prior is None else prior
        if self.problem_type in (MULTICLASS, QUANTILE):
            return np.tile(prior, (n, 1)).astype(np.float32)
        return np.full(n, prior, dtype=np.float32)

    def _prior_verdict(self, score: float, y_val, prior) -> Tuple[float, str]:
        """(the prior's score on the validation labels ``y_val``, the reason a fit scoring ``score`` there loses to
        it, or "" where it does not), both on the stopping metric (AutoGluon's sign: higher is better)."""
        metric = self.stopping_metric
        prior_score = float(self.score_with_y_pred_proba(y=y_val, y_pred_proba=self._prior_proba(len(y_val), prior),
                                                         metric=metric))
        if score >= prior_score:
            return prior_score, ""
        return prior_score, (f"validation {metric.name} {metric.convert_score_to_original(score):.4f} is worse than "
                             f"the prior's {metric.convert_score_to_original(prior_score):.4f}")

    def _get_child_num_cpus(self) -> Optional[int]:
        """Threads for predict: those the fit was given (AutoGluon asserts global torch state is unchanged)."""
        n = getattr(self, "fit_num_cpus_child", None) or getattr(self, "fit_num_cpus", None)
        return int(n) if n else None


#: what torch's first import adds to a process beside AutoGluon (measured: ~180 MiB); the models' memory
#: estimates add it only where torch has not been imported yet
TORCH_IMPORT_BYTES = 200 * 2 ** 20


def param_value(params: Dict[str, Any], key: str):
    """A hyperparameter's value, or the default of a search space given in its place (memory estimates
    are asked for before HPO has picked a value)."""
    v = params[key]
    return v.default if hasattr(v, "default") else v
