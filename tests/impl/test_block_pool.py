"""Unit tests of the GPU block pool (impl/block_pool.py)."""

from __future__ import annotations

import pytest

from evictable.impl.block_pool import BlockPool
from evictable.impl.free_queue import KVCacheBlock
from evictable.model.errors import (
    DuplicateBlocksError,
    ForeignBlockError,
    InsufficientFreeBlocksError,
    InvalidArgumentError,
    InvariantViolationError,
    RefCountUnderflowError,
)


def free_ids(pool: BlockPool) -> list[int]:
    return [b.block_id for b in pool.free_block_queue.get_all_free_blocks()]


def test_block_zero_is_the_null_block_outside_the_queue() -> None:
    pool = BlockPool(4)
    assert pool.null_block is pool.blocks[0] and pool.null_block.is_null
    assert free_ids(pool) == [1, 2, 3]
    assert pool.get_num_free_blocks() == 3
    pool.check_invariants()


def test_get_new_blocks_pops_the_front_with_ref_one() -> None:
    pool = BlockPool(5)
    got = pool.get_new_blocks(2)
    assert [b.block_id for b in got] == [1, 2]
    assert [b.ref_cnt for b in got] == [1, 1]
    assert free_ids(pool) == [3, 4]
    pool.check_invariants()


def test_get_new_blocks_evicts_the_cached_hash() -> None:
    pool = BlockPool(3)
    (b,) = pool.get_new_blocks(1)
    pool.cache_block(b, "h")
    pool.free_blocks([b])
    assert pool.get_cached_block("h") is b
    pool.get_new_blocks(2)  # block 2, then the hashed block 1 from the back
    assert b.block_hash is None
    assert pool.get_cached_block("h") is None
    pool.check_invariants()


def test_free_blocks_hashed_to_back_unhashed_to_front() -> None:
    pool = BlockPool(6)
    got = pool.get_new_blocks(4)
    pool.cache_block(got[0], "a")
    pool.cache_block(got[2], "c")
    pool.free_blocks(got)
    assert free_ids(pool) == [2, 4, 5, 1, 3]
    pool.check_invariants()


def test_free_blocks_decrements_shared_blocks_without_linking() -> None:
    pool = BlockPool(3)
    (b,) = pool.get_new_blocks(1)
    pool.touch([b])
    pool.free_blocks([b])
    assert b.ref_cnt == 1 and b.owner is None
    pool.free_blocks([b])
    assert b.ref_cnt == 0 and free_ids(pool) == [1, 2]


def test_touch_takes_a_free_block_out_of_the_queue() -> None:
    pool = BlockPool(4)
    pool.touch([pool.blocks[2], pool.blocks[2], pool.null_block])
    assert pool.blocks[2].ref_cnt == 2
    assert free_ids(pool) == [1, 3]
    assert pool.null_block.ref_cnt == 0
    pool.check_invariants()


def test_null_block_is_ignored_by_free() -> None:
    pool = BlockPool(3)
    pool.free_blocks([pool.null_block, pool.null_block])
    assert pool.null_block.ref_cnt == 0 and pool.null_block.owner is None


def test_get_cached_block_returns_the_first_cached() -> None:
    pool = BlockPool(4)
    a, b = pool.get_new_blocks(2)
    pool.cache_block(a, "h")
    pool.cache_block(b, "h")
    assert pool.get_cached_block("h") is a
    pool.free_blocks([a])
    pool.get_new_blocks(2)  # takes block 3, then a (hashed, at the back)
    assert pool.get_cached_block("h") is b
    pool.check_invariants()


def test_reset_prefix_cache_only_when_nothing_is_in_use() -> None:
    pool = BlockPool(3)
    (b,) = pool.get_new_blocks(1)
    pool.cache_block(b, "h")
    before = pool.snapshot()
    assert pool.reset_prefix_cache() is False
    assert pool.snapshot() == before
    pool.free_blocks([b])
    assert pool.reset_prefix_cache() is True
    assert b.block_hash is None and pool.get_cached_block("h") is None


@pytest.mark.parametrize("n", [-1, 0.5, False])
def test_rejects_bad_pool_size(n: object) -> None:
    with pytest.raises(InvalidArgumentError):
        BlockPool(n)


def test_rejects_allocating_more_than_free() -> None:
    pool = BlockPool(3)
    before = pool.snapshot()
    with pytest.raises(InsufficientFreeBlocksError):
        pool.get_new_blocks(3)
    with pytest.raises(InvalidArgumentError):
        pool.get_new_blocks(-1)
    with pytest.raises(InvalidArgumentError):
        pool.get_new_blocks(True)
    assert pool.snapshot() == before


def test_rejects_duplicate_blocks_in_one_free() -> None:
    pool = BlockPool(4)
    a, b = pool.get_new_blocks(2)
    pool.touch([a, b])
    before = pool.snapshot()
    with pytest.raises(DuplicateBlocksError) as e:
        pool.free_blocks([a, b, a])
    assert e.value.block_ids == (1,) and "1" in str(e.value)
    assert pool.snapshot() == before


def test_rejects_free_at_ref_zero() -> None:
    pool = BlockPool(4)
    (a,) = pool.get_new_blocks(1)
    before = pool.snapshot()
    with pytest.raises(RefCountUnderflowError) as e:
        pool.free_blocks([a, pool.blocks[3]])
    assert e.value.block_ids == (3,)
    assert a.ref_cnt == 1
    assert pool.snapshot() == before


def test_rejects_foreign_blocks() -> None:
    pool = BlockPool(3)
    other = BlockPool(3)
    before = pool.snapshot()
    with pytest.raises(ForeignBlockError) as e:
        pool.touch([other.blocks[1]])
    assert e.value.block_ids == (1,)
    with pytest.raises(ForeignBlockError):
        pool.free_blocks([KVCacheBlock(9)])
    with pytest.raises(ForeignBlockError):
        pool.cache_block(other.blocks[2], "h")
    assert pool.snapshot() == before


def test_rejects_bad_cache_calls() -> None:
    pool = BlockPool(3)
    (a,) = pool.get_new_blocks(1)
    pool.cache_block(a, "h")
    before = pool.snapshot()
    with pytest.raises(InvalidArgumentError, match="already cached"):
        pool.cache_block(a, "g")
    with pytest.raises(InvalidArgumentError, match="null block"):
        pool.cache_block(pool.null_block, "g")
    with pytest.raises(InvalidArgumentError, match="must not be None"):
        pool.cache_block(a, None)
    assert pool.snapshot() == before
    off = BlockPool(3, enable_caching=False)
    with pytest.raises(InvalidArgumentError, match="disabled"):
        off.cache_block(off.blocks[1], "h")
    assert off.get_cached_block("h") is None


def test_rejects_caching_a_free_block() -> None:
    pool = BlockPool(4)
    (a,) = pool.get_new_blocks(1)
    pool.cache_block(a, "h")
    pool.free_blocks([a])  # hashed and free: at the back of the queue
    before = pool.snapshot()
    for block in (pool.blocks[2], a):  # never used, and freed with a hash
        with pytest.raises(InvalidArgumentError) as e:
            pool.cache_block(block, "g")
        assert f"cannot cache a free block: block {block.block_id} " in str(e.value)
    assert pool.snapshot() == before
    assert pool.get_cached_block("g") is None
    pool.check_invariants()


def test_rejects_caching_a_free_block_after_the_earlier_checks() -> None:
    pool = BlockPool(3)
    other = BlockPool(3)
    free = pool.blocks[1]
    with pytest.raises(ForeignBlockError):
        pool.cache_block(other.blocks[1], "h")
    with pytest.raises(InvalidArgumentError, match="null block"):
        pool.cache_block(pool.null_block, "h")
    with pytest.raises(InvalidArgumentError, match="must not be None"):
        pool.cache_block(free, None)
    off = BlockPool(3, enable_caching=False)
    with pytest.raises(InvalidArgumentError, match="disabled"):
        off.cache_block(off.blocks[1], "h")


def test_check_invariants_detects_a_free_block_in_use() -> None:
    pool = BlockPool(3)
    pool.blocks[1].ref_cnt = 1  # linked but counted as in use
    with pytest.raises(InvariantViolationError, match="free_iff_ref_zero"):
        pool.check_invariants()
