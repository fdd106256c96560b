"""The torch thread count a TabSwift fit runs on, and the duration of one fine-tuning-sized episode.

On CPU with more than one core: one thread or all of them, whichever runs a fine-tuning-sized episode faster now
(``adaptive_threads``): torch's threads spin-wait at every parallel region, and with another process on one of
2 cores, 2 threads ran a fine-tuning step in 5-9 s where 1 thread took 0.3-0.5 s, and a 500-row prediction in
1.7 s instead of 0.26 s.  The model keeps the count for the fit and for predict in the fitting process
(``TabSwiftModel._get_child_num_cpus``).
"""

from __future__ import annotations

import time
from typing import Tuple

from .fit_context import FitContext, logger


def _timed_on_gpu(probe, device) -> float:
    """The second call is timed (the first pays kernel set-up)."""
    import torch

    probe()
    torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    probe()
    torch.cuda.synchronize(device)
    return time.perf_counter() - t0


def choose_threads(ctx: FitContext, num_cpus: int, device) -> Tuple[int, float]:
    """(the fit's torch thread count, one probe episode's forward seconds at that count); both in ``ctx.summary``
    (``threads``, ``thread_probe_seconds``).  The probe also budgets the first training step where the fit
    trains something (``FitPlan.trains``); without training, and on a GPU, only what is needed is timed."""
    import torch

    from ..common.training import faster_thread_count
    from .finetune import episode_probe

    ens, p, summary, trains = ctx.ensemble, ctx.params, ctx.summary, ctx.plan.trains
    threads, probe_seconds = max(1, int(num_cpus or 1)), 0.0
    summary["threads"] = threads
    choose = p["adaptive_threads"] and threads > 1
    if len(ens.y_context_) < 2 or not (choose or trains) or (device.type != "cpu" and not trains):
        return threads, probe_seconds  # (an episode needs a support and a query row)
    probe = episode_probe(ens, rows=int(p["fine_tune_rows"]), seed=ctx.seed)
    if device.type != "cpu":  # no thread choice
        return threads, _timed_on_gpu(probe, device)
    if choose:
        threads, times = faster_thread_count(probe, threads)
        probe_seconds = times[threads]
        summary["thread_probe_seconds"] = times
        logger.log(15, f"\tTabSwift: {threads} torch thread(s) (probe episode: " +
                   ", ".join(f"{n} thread(s) {t * 1000:.0f} ms" for n, t in times.items()) + ")")
    elif trains:
        t0 = time.perf_counter()
        probe()
        probe_seconds = time.perf_counter() - t0
    torch.set_num_threads(threads)
    summary["threads"] = threads
    return threads, probe_seconds
