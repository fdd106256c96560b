"""``TimeBudget.share``: one network's part of a fit's budget, on the same clock."""

from __future__ import annotations

import time

import pytest

from autogluon_maya.common.training import TimeBudget


def test_a_share_ends_after_its_seconds_or_with_the_whole_budget_if_sooner():
    whole = TimeBudget(10.0, safety=1.0)
    time.sleep(0.1)
    part = whole.share(3.0)
    assert part.remaining() == pytest.approx(3.0, abs=0.05)
    assert part.start == whole.start  # same clock: history times line up
    assert whole.share(30.0).remaining() == pytest.approx(whole.remaining(), abs=0.05)
    assert whole.share(-1.0).remaining() <= 0.0


def test_a_share_of_an_unlimited_budget_is_just_its_seconds():
    assert TimeBudget(None).share(5.0).remaining() == pytest.approx(5.0, abs=0.05)
