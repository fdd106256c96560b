"""Batch and time planning for MAYA's training: the batch a fit uses on a table and under a time limit, how long
a step takes, how often validation runs, and how far patience stretches on a small table.  The paper trains at
batches of 1,024-4,096 rows with every epoch validated (Appendix B.2, Table 12); these rules adapt that to small
tables and to AutoGluon's time limits without changing what one step computes."""

from __future__ import annotations

import time
from typing import List

import numpy as np
import torch

from ..common.training import TimeBudget, torch_threads
from .network import MayaNetwork

MIN_STEPS_PER_EPOCH = 8
VALIDATION_SHARE = 0.15
MAX_VALIDATION_EVERY = 4


def validation_cadence(setting, validation_seconds: float, epoch_train_seconds: float) -> int:
    """Epochs between validation passes (each encodes every training row as IAIL's context, about half an
    epoch on a CPU).  ``"auto"``: the smallest k <= ``MAX_VALIDATION_EVERY`` keeping validation under
    ``VALIDATION_SHARE`` of the training time; an int as given.  Patience still counts epochs."""
    if setting not in (None, "auto"):
        return max(1, int(setting))
    if not validation_seconds or not epoch_train_seconds or epoch_train_seconds <= 0:
        return 1
    k = int(np.ceil(validation_seconds / (VALIDATION_SHARE * epoch_train_seconds) - 1e-9))
    return int(min(MAX_VALIDATION_EVERY, max(1, k)))


def effective_batch_size(batch_size, n: int, auto_rows: int) -> int:
    """The batch a fit uses on ``n`` rows.  An int as given, capped by ``n`` (the batch is also IAIL's training
    context; the paper's are 1,024-4,096 rows).  ``"auto"``: ``auto_rows`` (``defaults.AUTO_BATCH_ROWS``), lowered
    on small tables to keep ``MIN_STEPS_PER_EPOCH`` steps an epoch (never below 32): patience counts epochs."""
    if batch_size == "auto":
        return max(2, min(int(auto_rows), max(32, n // MIN_STEPS_PER_EPOCH), n))
    return max(2, min(int(batch_size), n))


def patience_stretch(n: int, batch_size: int) -> int:
    """Patience counts epochs; with the paper's batch sizes a small table has one step per epoch, and 16 epochs
    of patience would be 16 steps: the patience is stretched to span at least ``MIN_STEPS_PER_EPOCH`` epochs'
    worth of steps."""
    return max(1, int(np.ceil(MIN_STEPS_PER_EPOCH / max(1, int(np.ceil(n / batch_size))))))


class StepClock:
    """Running estimates of a step's and a validation pass's duration, so that no step starts that cannot end in
    the budget.  A step is 1.5x the median of the last 8 (a maximum would keep a slow thread-count probe's step)."""

    def __init__(self):
        self.recent: List[float] = []
        self.validation = None  # seconds of the last context encoding + validation pass

    @property
    def step(self) -> float:
        return 1.5 * float(np.median(self.recent)) if self.recent else 0.0

    def record_step(self, seconds: float):
        self.recent = (self.recent + [seconds])[-8:]

    def encode_estimate(self, n: int, batch_size: int) -> float:
        """Seconds to encode ``n`` rows: measured by the last validation pass, or half a step per batch before."""
        if self.validation is not None:
            return self.validation
        return 0.5 * self.step * max(1.0, n / max(1, batch_size))


@torch.no_grad()
def estimate_step_seconds(net: MayaNetwork, x_num, x_cat, y_label, batch_size: int, remaining: float = float("inf"),
                          min_steps: int = MIN_STEPS_PER_EPOCH) -> float:
    """A training step's duration at ``batch_size``: a line through timed forward passes on 2 and 16 rows,
    x3 for the backward pass, after an untimed warm-up (a fresh process's first pass pays one-off costs).  The
    16-row pass is skipped when the 2-row one already decides whether ``min_steps`` steps fit in ``remaining``.  It
    keeps a configuration whose single step outlasts the budget (16 layers x batch 4,096 on a CPU) from starting.
    One thread: an upper bound once ``AdaptiveThreads`` picks, and immune to spin-waiting on a loaded machine."""
    was_training = net.training
    net.train()

    def timed(rows: int) -> float:
        t = time.perf_counter()
        net.forward_train(x_num[:rows], x_cat[:rows], y_label[:rows])
        return time.perf_counter() - t

    # fork_rng: the probe's dropout draws must not shift the training run's random stream, or the same
    # seed would train differently with and without a time limit
    with torch_threads(1), torch.random.fork_rng(devices=[]):
        try:
            n = len(x_num)
            timed(min(2, n))
            t2 = timed(min(2, n))
            if n <= 2 or 3.0 * t2 * batch_size / 2 * min_steps <= remaining or 3.0 * t2 * 8 > remaining / min_steps:
                # clearly feasible or clearly not from the small probe (per-row cost falls with rows)
                return 3.0 * t2 * batch_size / min(2, n)
            r = min(16, n)
            t16 = timed(r)
            per_row = max((t16 - t2) / (r - 2), 0.0) if r > 2 else t16 / r
            return 3.0 * max(t16 * batch_size / r if per_row == 0.0 else t2 + per_row * (batch_size - 2), 0.0)
        finally:
            net.train(was_training)


def one_epoch_fits(batch_size: int, step_seconds: float, n: int, remaining: float) -> str:
    """Without validation data (refit_full) nothing can judge a network that stopped within its first epoch
    against the prior, so such a fit must have time for about one epoch: every step of one pass over the ``n``
    rows at ``step_seconds`` each, and the context encoding that follows training (about half a step per batch,
    as ``StepClock.encode_estimate``).  Returns "" when that fits in ``remaining`` seconds, else the reason."""
    steps = int(np.ceil(n / max(1, batch_size)))
    need = 1.5 * steps * step_seconds
    if not np.isfinite(remaining) or need <= remaining:
        return ""
    return (f"infeasible: without validation data a fit must train about one epoch ({steps} steps at batch "
            f"{batch_size}, ~{step_seconds:.2f} s each, and the context encoding: ~{need:.0f} s), "
            f"{max(remaining, 0.0):.0f} s left")


def fit_batch_to_budget(batch_size: int, step_seconds: float, remaining: float, min_steps: int,
                        floor: int = 64) -> tuple:
    """(batch size, reason): the requested batch if ``min_steps`` steps of ``step_seconds`` fit in
    ``remaining`` seconds; else the largest halving (>= ``floor``) that fits, or 0 when none does."""
    if not np.isfinite(remaining) or step_seconds * min_steps <= remaining:
        return batch_size, ""
    b, est = batch_size, step_seconds
    while b // 2 >= floor and est * min_steps > remaining:
        b //= 2
        est = step_seconds * b / batch_size
    if est * min_steps <= remaining:
        return b, (f"batch_size {batch_size} -> {b}: a step was estimated at {step_seconds:.1f} s "
                   f"and {min_steps} steps must fit in the {remaining:.0f} s left")
    return 0, (f"infeasible: a training step at batch {b} was estimated at {est:.1f} s; "
               f"{min_steps} steps do not fit in the {remaining:.0f} s left")


def plan_batch(net: MayaNetwork, data, batch_size: int, budget: TimeBudget, validated: bool) -> tuple:
    """(the batch the time limit allows, the reason it differs from ``batch_size``): ``MIN_STEPS_PER_EPOCH`` steps
    at the estimated step time must fit in what is left (``fit_batch_to_budget``), and without validation data one
    whole epoch (``one_epoch_fits``).  A batch of 0: no step fits, the reason says why.  ``data``: the training
    rows (``trainer.TrainData``: x_num, x_cat, y_label)."""
    if not np.isfinite(budget.remaining()):
        return batch_size, ""
    asked, n = batch_size, len(data)
    est = estimate_step_seconds(net, data.x_num, data.x_cat, data.y_label, batch_size, budget.remaining(),
                                MIN_STEPS_PER_EPOCH)
    batch_size, why = fit_batch_to_budget(batch_size, est, budget.remaining(), MIN_STEPS_PER_EPOCH)
    if batch_size and not validated:
        epoch_why = one_epoch_fits(batch_size, est * batch_size / asked, n, budget.remaining())
        if epoch_why:
            batch_size, why = 0, epoch_why
    if why.startswith("infeasible"):
        why += f" ({data.x_num.shape[1] + data.x_cat.shape[1] + 1} tokens per row)"
    return batch_size, why
