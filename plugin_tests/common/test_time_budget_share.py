"""``TimeBudget.share``: one network's part of a fit's budget, on the same clock (an injected one)."""

from __future__ import annotations

from autogluon_maya.common.training import TimeBudget


class FakeClock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_share_ends_after_its_seconds_or_with_the_whole_budget_if_sooner():
    clock = FakeClock()
    whole = TimeBudget(10.0, safety=1.0, clock=clock)
    clock.now += 4.0
    part = whole.share(3.0)
    assert part.remaining() == 3.0 and whole.remaining() == 6.0
    assert part.start == whole.start  # same clock: history times line up
    clock.now += 2.0  # the share's clock moves with the whole's
    assert part.remaining() == 1.0 and part.elapsed() == whole.elapsed() == 6.0
    assert whole.share(30.0).remaining() == whole.remaining() == 4.0  # capped by the whole budget
    assert whole.share(-1.0).remaining() == 0.0 and whole.share(-1.0).expired()
    clock.now += 5.0
    assert whole.expired() and part.expired()


def test_a_share_of_an_unlimited_budget_is_just_its_seconds():
    clock = FakeClock()
    whole = TimeBudget(None, clock=clock)
    clock.now += 100.0
    part = whole.share(5.0)
    assert part.remaining() == 5.0 and whole.remaining() == float("inf")
    clock.now += 5.0
    assert part.expired() and not whole.expired()
