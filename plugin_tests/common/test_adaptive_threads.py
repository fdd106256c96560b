"""AdaptiveThreads keeps whichever of 1 and N threads runs steps faster, judged on timed steps only."""

from __future__ import annotations

import time

import torch

from autogluon_maya.common.training import AdaptiveThreads


def _run(threads: AdaptiveThreads, seconds_for, steps: int, allow_probe=True) -> list:
    """Simulated training steps whose duration depends on the thread count set at the time."""
    seen = []
    for i in range(steps):
        threads.before_step(allow_probe=allow_probe)
        n = torch.get_num_threads()
        seen.append(n)
        time.sleep(seconds_for(n, i))
        threads.after_step()
    return seen


def test_keeps_the_faster_count_either_way():
    previous = torch.get_num_threads()
    try:
        fast_full = AdaptiveThreads(2, probe_steps=2, period_s=60)
        _run(fast_full, lambda n, i: 0.01 if n == 2 else 0.05, steps=10)
        assert fast_full.chosen == 2
        fast_single = AdaptiveThreads(2, probe_steps=2, period_s=60)
        seen = _run(fast_single, lambda n, i: 0.05 if n == 2 else 0.01, steps=10)
        assert fast_single.chosen == 1 and seen[-1] == 1
    finally:
        torch.set_num_threads(previous)


def test_a_slow_warm_up_step_does_not_decide():
    """The first step after a change of thread count pays for waking the pool; it is not judged."""
    previous = torch.get_num_threads()
    calls = {"n2": 0}

    def seconds(n, i):
        if n == 2:
            calls["n2"] += 1
            return 0.15 if calls["n2"] == 1 else 0.01  # slow warm-up, then fast
        return 0.05

    try:
        t = AdaptiveThreads(2, probe_steps=2, period_s=60)
        _run(t, seconds, steps=10)
        assert t.chosen == 2, t._times
    finally:
        torch.set_num_threads(previous)


def test_a_clearly_slower_count_is_abandoned_after_one_timed_step():
    previous = torch.get_num_threads()
    try:
        t = AdaptiveThreads(2, probe_steps=3, period_s=60)
        seen = _run(t, lambda n, i: 0.08 if n == 2 else 0.01, steps=12)
        assert t.chosen == 1
        # 4 one-thread steps (warm-up + 3), then the 2-thread warm-up and one timed step, then 1 thread again
        assert seen[:6] == [1, 1, 1, 1, 2, 2] and set(seen[6:]) == {1}, seen
    finally:
        torch.set_num_threads(previous)


def test_no_probe_when_not_allowed_and_disabled_with_one_thread():
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        t = AdaptiveThreads(2, probe_steps=2, period_s=60)
        seen = _run(t, lambda n, i: 0.001, steps=5, allow_probe=False)
        assert set(seen) == {2} and t.history == []
        single = AdaptiveThreads(1)
        assert not single.enabled
    finally:
        torch.set_num_threads(previous)
