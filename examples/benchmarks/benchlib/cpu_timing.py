"""Timing and memory of calls on a CPU shared with other jobs, for the TabSwift speed scripts
(``tabswift_speed.py``, ``tabswift_vs_ta.py``).

Every call is timed on the wall clock and in process CPU time: with one torch thread, CPU time is what the call
would take on an idle core, while the wall clock also counts waiting for a core.  Peak memory is the resident set
sampled by a thread during a window.
"""

from __future__ import annotations

import ctypes
import gc
import os
import platform
import statistics
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, List, Tuple

import numpy as np


def wall_and_cpu(fn: Callable[[], Any]) -> Tuple[Any, float, float]:
    """``fn()``'s output, wall-clock seconds and process CPU seconds."""
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    cpu = time.process_time() - c0
    return out, time.perf_counter() - w0, cpu


@dataclass
class Timing:
    """Wall-clock and process CPU seconds of each timed call.

    On a shared machine the wall clock inflates every number by a factor that changes from one call to the next;
    both are recorded, and the caller picks the one its ratios use.
    """

    wall: List[float] = field(default_factory=list)
    cpu: List[float] = field(default_factory=list)

    def median(self, kind: str) -> float:
        return statistics.median(self.wall if kind == "wall" else self.cpu)


def timed(fn: Callable[[], Any], repeats: int, warmup: bool):
    """(Timing over ``repeats`` calls, last output) of ``fn``."""
    if warmup:
        fn()
    gc.collect()
    tm, out = Timing(), None
    for _ in range(max(1, repeats)):
        out, wall, cpu = wall_and_cpu(fn)
        tm.cpu.append(cpu)
        tm.wall.append(wall)
    return tm, out


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def n_params(module) -> int:
    """Parameters of a torch module."""
    return sum(p.numel() for p in module.parameters())


def number(v, spec: str = ".3g") -> str:
    """``v`` formatted with ``spec``; a missing or undefined value (None, NaN, inf) as an empty cell."""
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return ""
    return format(v, spec) if isinstance(v, float) else str(v)


# ---- memory ------------------------------------------------------------------------------------------------
_LIBC = ctypes.CDLL("libc.so.6") if sys.platform.startswith("linux") else None
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * _PAGE


class PeakRSS:
    """Peak resident set size during a window, sampled by a thread (torch releases the GIL in its kernels).

    Memory freed by earlier calls is returned to the system when a window starts (``malloc_trim``), so one
    model's leftover heap does not hide the next one's peak."""

    def __init__(self, interval: float = 0.005):
        self.interval, self.peak, self._on = interval, 0, False
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            if self._on:
                self.peak = max(self.peak, _rss())
            time.sleep(self.interval)

    def start(self) -> int:
        gc.collect()
        if _LIBC is not None:
            _LIBC.malloc_trim(0)
        self.base = self.peak = _rss()
        self._on = True
        return self.base

    def stop(self) -> float:
        """Peak minus the start, MiB."""
        self._on = False
        self.peak = max(self.peak, _rss())
        return (self.peak - self.base) / 2 ** 20

    @contextmanager
    def window(self, record: dict, key: str):
        self.start()
        try:
            yield
        finally:
            record[key] = round(self.stop(), 1)
