"""The `lmcache-0.5` profile of the model (model/lmcache05.py), without LMCache."""

from __future__ import annotations

import pytest

from evictable.model.errors import BlockNotFoundError, InvalidArgumentError, NotLoadingError
from evictable.model.invariants import check_snapshot
from evictable.model.lifecycle import CpuState
from evictable.model.lmcache05 import POLICIES_05, Lmcache05Manager
from evictable.model.types import LookupResult
from evictable.model.vllm033 import PROFILES


def _full(policy: str = "lru", n: int = 3) -> Lmcache05Manager:
    m = Lmcache05Manager(n, policy)
    for i in range(n):
        m.prepare_store([i])
        m.complete_store([i])
    return m


def _state(m: Lmcache05Manager, key: object) -> tuple[CpuState, int] | None:
    got = [(e.state, e.ref_cnt) for e in m.snapshot().blocks if e.key == key]
    return got[0] if got else None


def test_profile_is_listed_with_its_policies() -> None:
    assert "lmcache-0.5" in PROFILES
    assert sorted(POLICIES_05) == ["fifo", "lfu", "lru", "mru"]


def test_rejects_unknown_policy() -> None:
    with pytest.raises(InvalidArgumentError):
        Lmcache05Manager(2, "arc")


def test_pending_chunk_is_outside_the_index() -> None:
    m = Lmcache05Manager(2)
    m.prepare_store(["a"])
    assert m.lookup("a") is LookupResult.MISS
    with pytest.raises(BlockNotFoundError):
        m.prepare_load(["a"])
    assert m.complete_store(["a"]) == ["a"]
    assert m.lookup("a") is LookupResult.HIT


def test_store_is_best_effort_and_never_none() -> None:
    m = Lmcache05Manager(2)
    m.prepare_store(["a", "b"])
    out = m.prepare_store(["c"])  # a and b pending: no victim
    assert out.keys_to_store == [] and out.evicted_keys == []
    m.complete_store(["a", "b"])
    m.prepare_load(["a"])
    out = m.prepare_store(["c", "d"])  # b is the only victim: c stored, d not
    assert out.keys_to_store == ["c"] and out.evicted_keys == ["b"]


def test_store_protects_nothing() -> None:
    m = _full("lru", 2)
    out = m.prepare_store([0, 5])  # 0 is resident and the oldest: evicted to place 5
    assert out.keys_to_store == [5] and out.evicted_keys == [0]


def test_lowest_free_page_first() -> None:
    m = _full("lru", 3)
    m.remove([2])
    m.remove([0])
    assert m.prepare_store(["x"]).slot_ids == [0]


def test_pins_and_reads_are_two_counters_behind_one_ref() -> None:
    m = _full("lru", 2)
    assert m.lookup_pin([0, 1, 9, 5]) == 2  # the prefix stops at the miss
    m.prepare_load([0])
    assert _state(m, 0) == (CpuState.LOADING, 2)
    with pytest.raises(NotLoadingError):
        m.complete_load([1])  # pinned, but no read held
    m.complete_load([0])
    m.unpin([0])
    m.unpin([0])  # no pin left: ignored
    assert _state(m, 0) == (CpuState.READY, 0)
    assert m.num_evictable == 1


def test_touch_cache_hands_recorded_hits_over_last_first_and_skips_the_gone() -> None:
    m = _full("lru", 3)
    m.lookup_pin([0, 1])
    m.remove([1])
    m.touch_cache()  # 1 left the index: skipped (LMCache raises KeyError here)
    assert m.recorded == []
    m.unpin([0])
    assert m.snapshot().policy.state[0] == (2, 0)  # type: ignore[union-attr, index]


def test_forced_remove_releases_pins_and_detaches_a_read_chunk() -> None:
    m = _full("lru", 2)
    m.lookup_pin([0])
    m.prepare_load([0])
    assert m.remove([0, 7]) == 1
    assert m.lookup(0) is LookupResult.MISS and 0 not in m.pins
    assert _state(m, 0) == (CpuState.LOADING, 1)  # its page kept for the reader
    assert m.free_slot_count() == 0
    m.complete_load([0])
    assert _state(m, 0) is None and m.free_slot_count() == 1
    assert check_snapshot(m.snapshot()) == []


def test_reset_is_clear_keeping_busy_and_pending_chunks() -> None:
    m = _full("lru", 3)
    m.lookup_pin([0])
    m.prepare_load([1])
    m.prepare_store([9])  # no room: nothing stored
    m.reset_cache()
    assert [m.lookup(k) for k in (0, 1, 2)] == [
        LookupResult.HIT,
        LookupResult.HIT,
        LookupResult.MISS,
    ]


def test_expired_lease_releases_every_pin() -> None:
    m = _full("lru", 1)
    m.lookup_pin([0])
    m.lookup_pin([0])
    m.expire_pins([0])
    assert _state(m, 0) == (CpuState.READY, 0)


@pytest.mark.parametrize(("policy", "victim"), [("lru", 1), ("fifo", 0), ("mru", 0), ("lfu", 1)])
def test_each_policy_picks_its_victim(policy: str, victim: int) -> None:
    m = _full(policy, 2)
    m.lookup_pin([0])
    m.touch_cache()  # a hit on 0: LRU and LFU keep it, FIFO ignores it, MRU takes it
    m.unpin([0])
    assert m.prepare_store(["new"]).evicted_keys == [victim]


def test_lfu_evicts_lowest_frequency_oldest_first() -> None:
    m = _full("lfu", 3)
    for _ in range(2):
        m.lookup_pin([0])
        m.touch_cache()
        m.unpin([0])
    m.lookup_pin([1])
    m.touch_cache()
    m.unpin([1])
    out = m.prepare_store(["x", "y"])
    assert out.evicted_keys == [2, 1]


def test_no_events_and_touch_is_a_no_op() -> None:
    m = Lmcache05Manager(2, "lru", enable_events=True)
    m.prepare_store(["a"])
    m.complete_store(["a"])
    m.touch(["a", [1]])  # never raises, changes nothing
    assert m.take_events() == []
    assert check_snapshot(m.snapshot()) == []
