"""The members' context caches sized from the members, context rows and width ("auto", the defaults), within a
share of the available memory, and what a loaded model then saves."""

from __future__ import annotations

import pandas as pd
import pytest

from autogluon_maya.tabswift.cache_budget import (CACHE_MEMORY_SHARE, HEADROOM, HEADROOM_BYTES, MIB, cache_bytes,
                                                  resolve_cache_mb)
from autogluon_maya.tabswift.defaults import DEFAULT_PARAMS

RELEASED16 = dict(members=16, layers=24, keys=2048 + 64, d=192)  # the released size, 16 members, 2,048 rows


def test_auto_keeps_every_members_cache_where_the_budget_allows():
    need = 16 * 24 * 2112 * 192 * 10
    cache_mb, disk_mb = resolve_cache_mb("auto", "auto", **RELEASED16, available=16 * 2 ** 30)
    assert cache_mb * MIB == pytest.approx(HEADROOM * need + HEADROOM_BYTES)
    assert disk_mb * MIB == pytest.approx(HEADROOM * 16 * 24 * 2112 * 192 * 2 + HEADROOM_BYTES)  # all 16 members


def test_auto_is_capped_by_the_share_of_available_memory_and_saves_only_the_members_it_keeps():
    available = 2 * 2 ** 30
    cache_mb, disk_mb = resolve_cache_mb("auto", "auto", **RELEASED16, available=available)
    assert cache_mb * MIB == pytest.approx(CACHE_MEMORY_SHARE * available)
    per_member = HEADROOM * cache_bytes(1, 24, 2112, 192)
    kept = int(cache_mb * MIB // per_member)
    assert 0 < kept < 16
    assert disk_mb * MIB == pytest.approx(HEADROOM * kept * 24 * 2112 * 192 * 2 + HEADROOM_BYTES)


def test_numbers_given_are_kept_and_no_saved_inputs_cost_eight_bytes():
    assert resolve_cache_mb(1024, 256, **RELEASED16, available=2 ** 40) == (1024.0, 256.0)
    cache_mb, disk_mb = resolve_cache_mb("auto", 0, **RELEASED16, available=2 ** 40)
    assert cache_mb * MIB == pytest.approx(HEADROOM * 16 * 24 * 2112 * 192 * 8 + HEADROOM_BYTES) and disk_mb == 0.0


@pytest.mark.parametrize("name,value", [("cache_max_mb", -1), ("cache_max_mb", "big"), ("disk_cache_mb", None),
                                        ("disk_cache_mb", True)])
def test_a_bad_cache_setting_names_itself(name, value):
    settings = {"cache_max_mb": "auto", "disk_cache_mb": "auto", name: value}
    with pytest.raises(ValueError, match=name):
        resolve_cache_mb(settings["cache_max_mb"], settings["disk_cache_mb"], **RELEASED16, available=2 ** 30)


def test_the_defaults_are_auto_and_the_memory_estimate_counts_every_member(monkeypatch):
    from autogluon_maya import TabSwiftModel
    from autogluon_maya.tabswift import cache_budget

    assert DEFAULT_PARAMS["cache_max_mb"] == DEFAULT_PARAMS["disk_cache_mb"] == "auto"
    monkeypatch.setattr(cache_budget, "available_bytes", lambda: 64 * 2 ** 30)
    X = pd.DataFrame({"a": range(4000), "b": range(4000)})

    def estimate(**hp):
        return TabSwiftModel._estimate_memory_usage_static(
            X=X, num_classes=2, hyperparameters={"checkpoint_path": "shipped", "fine_tune": False, **hp})

    # "auto" keeps all 64 members: the estimate is the one of a cap large enough for every member
    assert estimate(n_estimators=64) == estimate(n_estimators=64, cache_max_mb=2 ** 20, disk_cache_mb=1)
    # with little memory available, "auto" caps the caches at its share of it
    monkeypatch.setattr(cache_budget, "available_bytes", lambda: 64 * 2 ** 20)
    assert estimate(n_estimators=64) == estimate(n_estimators=64, cache_max_mb=16, disk_cache_mb=1)
