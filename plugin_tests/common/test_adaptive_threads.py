"""AdaptiveThreads keeps whichever of 1 and N threads runs steps faster, judged on timed steps only;
``faster_thread_count`` does the same for one probe call.  Both run on an injected clock: each simulated
step advances it by a duration that depends on the thread count set at the time, so the outcome does not
depend on how busy this machine is."""

from __future__ import annotations

import pytest
import torch

from autogluon_maya.common.training import AdaptiveThreads, faster_thread_count


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _restore_threads():
    previous = torch.get_num_threads()
    yield
    torch.set_num_threads(previous)


def _run(threads: AdaptiveThreads, seconds_for, steps: int, allow_probe=True) -> list:
    """Simulated training steps whose duration depends on the thread count set at the time."""
    seen = []
    for i in range(steps):
        threads.before_step(allow_probe=allow_probe)
        n = torch.get_num_threads()
        seen.append(n)
        threads.clock.now += seconds_for(n, i)
        threads.after_step()
    return seen


def _threads(**kw) -> AdaptiveThreads:
    return AdaptiveThreads(2, period_s=60, clock=FakeClock(), **kw)


def test_keeps_the_faster_count_either_way():
    fast_full = _threads(probe_steps=2)
    _run(fast_full, lambda n, i: 0.01 if n == 2 else 0.05, steps=10)
    assert fast_full.chosen == 2
    fast_single = _threads(probe_steps=2)
    seen = _run(fast_single, lambda n, i: 0.05 if n == 2 else 0.01, steps=10)
    assert fast_single.chosen == 1 and seen[-1] == 1


def test_a_slow_warm_up_step_does_not_decide():
    """The first step after a change of thread count pays for waking the pool; it is not judged."""
    calls = {"n2": 0}

    def seconds(n, i):
        if n == 2:
            calls["n2"] += 1
            return 0.15 if calls["n2"] == 1 else 0.01  # slow warm-up, then fast
        return 0.05

    t = _threads(probe_steps=2)
    _run(t, seconds, steps=10)
    assert t.chosen == 2, t._times


def test_a_clearly_slower_count_is_abandoned_after_one_timed_step():
    t = _threads(probe_steps=3)
    seen = _run(t, lambda n, i: 0.08 if n == 2 else 0.01, steps=12)
    assert t.chosen == 1
    # 4 one-thread steps (warm-up + 3), then the 2-thread warm-up and one timed step, then 1 thread again
    assert seen[:6] == [1, 1, 1, 1, 2, 2] and set(seen[6:]) == {1}, seen


def test_the_choice_is_probed_again_after_period_s():
    """The load changes: 2 threads win the first probe, lose the one period_s later."""
    t = _threads(probe_steps=2)
    seen = _run(t, lambda n, i: (0.01 if n == 2 else 0.05) if i < 20 else (0.5 if n == 2 else 0.05), steps=2000)
    assert [c for _, c in t.history][:2] == [2, 1], t.history
    assert seen[19] == 2 and seen[-1] == 1


def test_no_probe_when_not_allowed_and_disabled_with_one_thread():
    torch.set_num_threads(2)
    t = _threads(probe_steps=2)
    seen = _run(t, lambda n, i: 0.001, steps=5, allow_probe=False)
    assert set(seen) == {2} and t.history == []
    single = AdaptiveThreads(1)
    assert not single.enabled


def _probe(clock, seconds_for, calls):
    def run():
        n = torch.get_num_threads()
        calls.append(n)
        clock.now += seconds_for(n, sum(1 for c in calls if c == n))
    return run


def test_faster_thread_count_keeps_the_faster_count_and_restores_the_previous_one():
    torch.set_num_threads(2)
    for fast, slow in ((2, 1), (1, 2)):
        clock, calls = FakeClock(), []
        threads, times = faster_thread_count(_probe(clock, lambda n, k: 0.01 if n == fast else 0.03, calls), 2,
                                             clock=clock)
        assert threads == fast and times == pytest.approx({fast: 0.01, slow: 0.03})
        assert torch.get_num_threads() == 2


def test_faster_thread_count_stops_after_one_clearly_slower_call():
    """Beside a busy process 2 threads spin-wait (here 10x slower): one such call is enough; a second
    call is made only when the first was close, to see past the pool's wake-up."""
    clock, calls = FakeClock(), []
    threads, times = faster_thread_count(_probe(clock, lambda n, k: 0.5 if n == 2 else 0.05, calls), 2, clock=clock)
    assert threads == 1 and calls == [1, 1, 2]
    clock, calls = FakeClock(), []
    # 2 threads: a slow first call (waking the pool), then faster than 1 thread
    threads, _ = faster_thread_count(_probe(clock, lambda n, k: (0.06 if k == 1 else 0.03) if n == 2 else 0.05,
                                            calls), 2, clock=clock)
    assert threads == 2 and calls == [1, 1, 2, 2]


def test_faster_thread_count_with_one_core_runs_nothing():
    calls = []
    assert faster_thread_count(lambda: calls.append(1), 1) == (1, {})
    assert calls == []
