"""Training helpers shared by the package's torch models: threads, device, seeds, time, early stopping."""

from __future__ import annotations

import contextlib
import time
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import numpy as np
import torch


@contextlib.contextmanager
def torch_threads(num_threads: Optional[int]):
    """Run a block with ``num_threads`` torch threads and restore the previous count afterwards.

    AutoGluon asserts that global torch state is unchanged by predict, and on a 2-core machine
    oversubscribing threads makes small kernels dramatically slower, so predict sets the count
    explicitly and puts it back.
    """
    previous = torch.get_num_threads()
    if num_threads:
        torch.set_num_threads(max(1, int(num_threads)))
    try:
        yield
    finally:
        torch.set_num_threads(previous)


#: bf16 autocast by device type: on for CUDA (tensor cores), off for the CPU, where bf16 is slower here.
#: ``examples/gpu_check.py --cpu`` turns the CPU entry on for its "GPU" side, to run the CUDA bf16 path
#: (the same regions in reduced precision) on a machine without a GPU.
BF16_AUTOCAST = {"cuda": True, "cpu": False}


def autocast(device: torch.device):
    """bf16 autocast where ``BF16_AUTOCAST`` says so for the device's type, else plain fp32."""
    if BF16_AUTOCAST.get(torch.device(device).type, False):
        return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def batch_slices(n: int, batch_size: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Shuffled mini-batches covering every row once.

    A trailing batch of one row is merged into the previous batch: models that use the batch as
    their own context (MAYA's decoder) have nothing to attend to in a batch of one.
    """
    batch_size = max(2, min(batch_size, n))  # a 1-row batch has no context to attend to
    perm = rng.permutation(n)
    starts = list(range(0, n, batch_size))
    if len(starts) > 1 and n - starts[-1] == 1:
        starts.pop()
    for i, s in enumerate(starts):
        e = starts[i + 1] if i + 1 < len(starts) else n
        yield perm[s:e]


class TimeBudget:
    """Wall-clock budget of one fit; ``None`` means unlimited.  ``clock`` (seconds, ``time.time`` by
    default: AutoGluon's own deadlines are on that scale) is injectable for tests."""

    def __init__(self, time_limit: Optional[float], safety: float = 0.95,
                 clock: Callable[[], float] = time.time, start: Optional[float] = None):
        self.clock = clock
        self.start = clock() if start is None else start  # earlier than now: time already spent counts
        self.limit = None if time_limit is None else max(0.0, time_limit * safety)

    def elapsed(self) -> float:
        return self.clock() - self.start

    def remaining(self) -> float:
        return float("inf") if self.limit is None else self.limit - self.elapsed()

    def expired(self) -> bool:
        return self.remaining() <= 0

    def share(self, seconds: float) -> "TimeBudget":
        """A budget on the same clock that ends ``seconds`` from now, or with this one if that is sooner
        (one network's share of a fit that trains several)."""
        part = TimeBudget(None, clock=self.clock)
        part.start = self.start
        end = self.elapsed() + max(0.0, seconds)
        part.limit = end if self.limit is None else min(self.limit, end)
        return part


class BestCheckpoint:
    """Keeps the best-scoring state dict (on CPU, so a GPU run does not hold two copies in VRAM).

    Scores follow AutoGluon's convention: higher is better.
    """

    def __init__(self, patience: Optional[int]):
        self.patience = patience
        self.best_score = -float("inf")
        self.best_epoch = 0
        self.best_state: Optional[Dict[str, torch.Tensor]] = None
        self.epochs_without_improvement = 0

    def update(self, score: float, epoch: int, module: torch.nn.Module, epochs_since_last: int = 1) -> bool:
        """Record an epoch's validation score; returns True if it is the new best.

        ``epochs_since_last``: epochs trained since the previous validation, so that patience keeps
        counting epochs when validation runs only every few epochs."""
        if np.isfinite(score) and (self.best_state is None or score > self.best_score):
            self.best_score, self.best_epoch = float(score), epoch
            self.best_state = {k: v.detach().to("cpu", copy=True) for k, v in module.state_dict().items()}
            self.epochs_without_improvement = 0
            return True
        self.epochs_without_improvement += max(1, int(epochs_since_last))
        return False

    def should_stop(self) -> bool:
        return self.patience is not None and self.epochs_without_improvement >= self.patience

    def restore(self, module: torch.nn.Module) -> None:
        if self.best_state is not None:
            module.load_state_dict(self.best_state)


def to_tensors(arrays: List[np.ndarray], device: torch.device) -> List[torch.Tensor]:
    return [torch.from_numpy(np.ascontiguousarray(a)).to(device) for a in arrays]


def faster_thread_count(run: Callable[[], object], max_threads: Optional[int],
                        clock: Callable[[], float] = time.perf_counter,
                        slower: float = 1.5) -> Tuple[int, Dict[int, float]]:
    """Times ``run()`` with one thread and with ``max_threads`` and returns the faster count together
    with the timings ``{threads: seconds}`` (each the fastest of its timed calls).

    For a fit that cannot afford ``AdaptiveThreads``' probe of whole training steps (TabSwift's
    fits last seconds): ``run`` is one small representative forward pass.  One thread is timed
    twice (the first call of a process also pays one-off allocations), ``max_threads`` once, and a
    second time only when the first call was not clearly slower (``slower`` x one thread): on a
    loaded machine that call costs a spin-waiting pass, and one is enough to see it.  The thread
    count in force before the call is restored; ``clock`` is injectable for tests."""
    max_threads = int(max_threads or 1)
    if max_threads <= 1:
        return 1, {}

    def timed(n: int) -> float:
        with torch_threads(n):
            t0 = clock()
            run()
            return clock() - t0

    one = min(timed(1), timed(1))
    full = timed(max_threads)
    if full <= slower * one:
        full = min(full, timed(max_threads))
    return (max_threads if full < one else 1), {1: one, max_threads: full}


class AdaptiveThreads:
    """Chooses, by timing real training steps, between the CPU threads a fit was given and one thread.

    Why: torch's OpenMP threads spin-wait at every parallel region.  When another process takes one of
    the two cores, each of MAYA's many small kernels waits for the descheduled thread, and a 2-thread
    step became 6-10x slower than a 1-thread step (measured with other jobs running,
    ``examples/benchmarks/results/throughput/load.md``).  Alone on the machine, 2 threads are ~1.5x faster.
    So the trainer times ``probe_steps`` steps with one thread, then with the full count, every
    ``period_s`` seconds, and keeps the faster.  The timed steps are ordinary training steps; the
    full-count probe is abandoned at its first step slower than 1.5x the one-thread median, so that on
    a loaded machine it costs one slow step, not several.
    """

    def __init__(self, max_threads: Optional[int], probe_steps: int = 3, period_s: float = 30.0,
                 clock: Callable[[], float] = time.perf_counter):
        self.clock = clock  # step timings and the probe period (injectable for tests)
        self.max_threads = int(max_threads or 1)
        self.enabled = self.max_threads > 1
        self.probe_steps, self.period_s = probe_steps, period_s
        self.chosen = self.max_threads
        self._plan: List[int] = []
        self._times: Dict[int, List[float]] = {}
        self._next_probe = float("-inf")
        self._t0 = 0.0
        self._last_full: List[float] = []  # the full count's step times at the last probe
        self.history: List[Tuple[float, int]] = []  # (time, threads chosen)

    def before_step(self, allow_probe: bool = True) -> None:
        """``allow_probe=False`` (the trainer passes it near the end of the budget, where a slow probe
        step could overrun the limit) keeps the current choice and postpones any new probe."""
        if not self.enabled:
            return
        if not self._plan and self.clock() >= self._next_probe and allow_probe:
            # one untimed warm-up step after each change of thread count, then probe_steps timed ones
            self._plan = [1] * (self.probe_steps + 1) + [self.max_threads] * (self.probe_steps + 1)
            self._times = {1: [], self.max_threads: []}
        elif self._plan and not allow_probe:
            self._plan = []
            self._finish()
        current = self._plan[0] if self._plan else self.chosen
        if torch.get_num_threads() != current:
            torch.set_num_threads(current)
        self._t0 = self.clock()

    def after_step(self) -> None:
        if not self.enabled or not self._plan:
            return
        seconds = self.clock() - self._t0
        c = self._plan.pop(0)
        if sum(1 for x in self._plan if x == c) >= self.probe_steps:
            return  # the warm-up step after a change of thread count: neither timed nor judged
        self._times[c].append(seconds)
        other = self._times[self.max_threads if c == 1 else 1]
        # a probe that is clearly slower than the other count's median is abandoned at once, so that a
        # loaded machine (N threads) or a many-core one (1 thread) pays one slow step, not several
        reference = other if c != 1 else self._last_full
        if reference and seconds > 1.5 * float(np.median(reference)):
            self._times[c] = [seconds]
            self._plan = [x for x in self._plan if x != c]
        if not self._plan:
            self._finish()

    def _finish(self) -> None:
        medians = {k: float(np.median(v)) for k, v in self._times.items() if v}
        if medians:
            self.chosen = min(medians, key=medians.get)
            self.history.append((round(time.time(), 1), self.chosen))
        if self._times.get(self.max_threads):
            self._last_full = list(self._times[self.max_threads])
        self._next_probe = self.clock() + self.period_s
