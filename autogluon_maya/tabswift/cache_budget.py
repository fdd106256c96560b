"""How much of the members' context caches a TabSwift model keeps in memory (``cache_max_mb``) and saves with
itself (``disk_cache_mb``) when those are ``"auto"`` (the defaults).

Each member encodes its context once (TabSwift paper, Sec. 3.2) and every later prediction attends to the
cached keys and values: per member, layers x (context rows + registers) x d x 8 bytes of float32 keys and
values, and 2 more for the float16 block inputs a saved model stores so that, loaded from disk, it does not
encode its contexts again.  A member whose cache is not kept is encoded afresh in every predict call, which at
the released size (24 blocks, d = 192) is most of a call's time.  "auto" keeps every member's cache where that
fits in ``CACHE_MEMORY_SHARE`` of the memory available when the model is fitted (AutoGluon's memory check
counts the same bytes through the model's estimate), and saves the block inputs of every member it keeps.
"""

from __future__ import annotations

from typing import Optional, Tuple

AUTO = "auto"
#: the share of the memory available at fit time the members' caches may take ("auto")
CACHE_MEMORY_SHARE = 0.25
#: bytes per cached value: float32 key and value (8), float16 block input (2)
KV_BYTES, INPUT_BYTES = 8, 2
MIB = 2 ** 20
#: headroom over the sizes above: a member's cache also holds small per-layer tensors (e.g. the context means)
#: that the formula leaves out, and a cap a hair too small drops the last member
HEADROOM, HEADROOM_BYTES = 1.1, MIB


def cache_bytes(members: int, layers: int, keys: int, d: int, saved_inputs: bool = True) -> int:
    """Bytes of every member's cache: keys and values, and the block inputs where a saved model keeps them."""
    return int(members * layers * keys * d * (KV_BYTES + (INPUT_BYTES if saved_inputs else 0)))


def available_bytes() -> int:
    """The memory available now, as AutoGluon's memory checks read it."""
    from autogluon.common.utils.resource_utils import ResourceManager

    return int(ResourceManager.get_available_virtual_mem())


def resolve_cache_mb(cache_max_mb, disk_cache_mb, *, members: int, layers: int, keys: int, d: int,
                     available: Optional[int] = None, cache_sets: int = 1) -> Tuple[float, float]:
    """(``cache_max_mb``, ``disk_cache_mb``) as numbers: a number given stays; ``"auto"`` sizes the in-memory
    caches for every member (at most ``CACHE_MEMORY_SHARE`` of ``available`` bytes, default: what is available
    now) and the saved ones for every member kept in memory.  ``cache_sets``: caches per member over the whole
    context (2 where more classes than C_max split it into a root and its class groups, which together cover
    the context again)."""
    members = members * cache_sets
    check_cache_setting("cache_max_mb", cache_max_mb)
    check_cache_setting("disk_cache_mb", disk_cache_mb)
    if cache_max_mb == AUTO:
        want = HEADROOM * cache_bytes(members, layers, keys, d, saved_inputs=disk_cache_mb != 0) + HEADROOM_BYTES
        budget = CACHE_MEMORY_SHARE * (available_bytes() if available is None else available)
        cache_max_mb = min(want, budget) / MIB
    cache_max_mb = float(cache_max_mb)
    if disk_cache_mb == AUTO:
        per_member = HEADROOM * cache_bytes(1, layers, keys, d)
        kept = min(members, int(cache_max_mb * MIB // per_member)) if per_member else members
        disk_cache_mb = (HEADROOM * kept * layers * keys * d * INPUT_BYTES + HEADROOM_BYTES) / MIB
    return cache_max_mb, float(disk_cache_mb)


def check_cache_setting(name: str, value) -> None:
    """``"auto"`` or a number of MiB >= 0, else a ValueError naming the setting."""
    if value == AUTO:
        return
    try:
        ok = float(value) >= 0 and not isinstance(value, bool)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise ValueError(f"TABSWIFT setting {name} must be 'auto' or a number of MiB >= 0, got {value!r}")
