"""Unit tests of the block-pool specification (model/block_pool.py)."""

from __future__ import annotations

import dataclasses

import pytest

from evictable.model.block_pool import ModelBlockPool, check_pool_snapshot, fire
from evictable.model.errors import (
    DuplicateBlocksError,
    ForeignBlockError,
    InsufficientFreeBlocksError,
    InvalidArgumentError,
    RefCountUnderflowError,
)
from evictable.model.free_queue import FreeQueueSnapshot
from evictable.model.lifecycle import GpuEvent, GpuState, Hook, Phase
from evictable.model.types import BlockId

B = BlockId


def test_initial_pool_has_the_null_block_outside() -> None:
    pool = ModelBlockPool(4)
    snap = pool.snapshot()
    assert snap.free_queue.order == (1, 2, 3)
    assert snap.ref_cnts == (0, 0, 0, 0)
    assert pool.phase[B(0)].state is GpuState.NULL
    assert check_pool_snapshot(snap) == []


def test_fire_derives_the_hook_from_the_table() -> None:
    assert fire(Phase(GpuState.FREE, 0), GpuEvent.ALLOCATE, B(1)) == (
        Phase(GpuState.IN_USE, 1),
        Hook.FLAG_OFF,
    )
    assert fire(Phase(GpuState.IN_USE, 1), GpuEvent.FREE, B(1)) == (
        Phase(GpuState.FREE, 0),
        Hook.FLAG_ON,
    )
    assert fire(Phase(GpuState.IN_USE, 2), GpuEvent.FREE, B(1)) == (
        Phase(GpuState.IN_USE, 1),
        Hook.NONE,
    )
    assert fire(Phase(GpuState.NULL, 0), GpuEvent.TOUCH, B(0)) == (
        Phase(GpuState.NULL, 0),
        Hook.NONE,
    )


def test_allocate_touch_free_cycle() -> None:
    pool = ModelBlockPool(6)
    got = pool.get_new_blocks(4)
    assert got == [1, 2, 3, 4]
    pool.cache_block(B(1), "a")
    pool.cache_block(B(3), "c")
    pool.touch([B(2), B(5), B(0)])
    pool.free_blocks(got)
    snap = pool.snapshot()
    assert snap.free_queue.order == (4, 1, 3)
    assert snap.ref_cnts == (0, 0, 1, 0, 0, 1)
    assert check_pool_snapshot(snap) == []


def test_allocation_evicts_hashes() -> None:
    pool = ModelBlockPool(3)
    (b,) = pool.get_new_blocks(1)
    pool.cache_block(b, "h")
    pool.free_blocks([b])
    assert pool.get_cached_block("h") == b
    pool.get_new_blocks(2)
    assert pool.get_cached_block("h") is None
    assert pool.snapshot().block_hashes == (None, None, None)


def test_reset_prefix_cache() -> None:
    pool = ModelBlockPool(3)
    (b,) = pool.get_new_blocks(1)
    pool.cache_block(b, "h")
    assert pool.reset_prefix_cache() is False
    pool.free_blocks([b])
    assert pool.reset_prefix_cache() is True
    assert pool.get_cached_block("h") is None


def test_rejects_bad_requests_without_change() -> None:
    pool = ModelBlockPool(4)
    a, b = pool.get_new_blocks(2)
    before = pool.snapshot()
    with pytest.raises(InsufficientFreeBlocksError):
        pool.get_new_blocks(3)
    with pytest.raises(DuplicateBlocksError) as d:
        pool.free_blocks([a, b, a])
    assert d.value.block_ids == (1,)
    with pytest.raises(RefCountUnderflowError) as u:
        pool.free_blocks([a, B(3)])
    assert u.value.block_ids == (3,)
    with pytest.raises(ForeignBlockError) as f:
        pool.touch([B(7)])
    assert f.value.block_ids == (7,)
    with pytest.raises(InvalidArgumentError):
        pool.cache_block(B(0), "h")
    assert pool.snapshot() == before


def test_rejects_caching_when_disabled() -> None:
    pool = ModelBlockPool(3, enable_caching=False)
    with pytest.raises(InvalidArgumentError, match="disabled"):
        pool.cache_block(B(1), "h")


def test_rejects_caching_a_free_block() -> None:
    pool = ModelBlockPool(4)
    (a,) = pool.get_new_blocks(1)
    pool.cache_block(a, "h")
    pool.free_blocks([a])  # hashed and free: at the back of the queue
    before = pool.snapshot()
    for b in (B(2), a):  # never used, and freed with a hash
        with pytest.raises(InvalidArgumentError) as e:
            pool.cache_block(b, "g")
        assert f"cannot cache a free block: block {b} " in str(e.value)
    assert pool.snapshot() == before
    assert pool.get_cached_block("g") is None
    assert check_pool_snapshot(pool.snapshot()) == []


def test_rejects_caching_a_free_block_after_the_earlier_checks() -> None:
    pool = ModelBlockPool(3)
    with pytest.raises(ForeignBlockError):
        pool.cache_block(B(5), "h")
    with pytest.raises(InvalidArgumentError, match="null block"):
        pool.cache_block(B(0), "h")
    with pytest.raises(InvalidArgumentError, match="must not be None"):
        pool.cache_block(B(1), None)


def test_pool_invariants_catch_a_bad_snapshot() -> None:
    snap = ModelBlockPool(3).snapshot()
    bad = dataclasses.replace(snap, ref_cnts=(0, 1, 0))
    assert check_pool_snapshot(bad) == ["free_iff_ref_zero"]
    nulled = dataclasses.replace(snap, free_queue=FreeQueueSnapshot((0, 1, 2), (0, 1, 2), 3))
    assert "null_block_outside" in check_pool_snapshot(nulled)
