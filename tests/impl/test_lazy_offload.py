"""Unit tests of `impl.lazy_offload.LazyOffloadScanner`, including bad input."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import pytest

from evictable.impl.block_pool import BlockPool
from evictable.impl.free_queue import KVCacheBlock
from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.model.errors import (
    DuplicateBlocksError,
    InvalidArgumentError,
    InvariantViolationError,
    NotInFlightError,
)


def _pool_with_hashes(hashes: list[Hashable | None]) -> BlockPool:
    """A pool with blocks 1..n free, block i hashed hashes[i-1] (None: no hash).

    Freed blocks rejoin at the front without a hash and at the back with one, so the
    queue holds the unhashed blocks first, then the hashed ones, each in id order.
    """
    pool = BlockPool(len(hashes) + 1)
    blocks = pool.get_new_blocks(len(hashes))
    for b, h in zip(blocks, hashes, strict=True):
        if h is not None:
            pool.cache_block(b, h)
    unhashed = [b for b in blocks if b.block_hash is None]
    hashed = [b for b in blocks if b.block_hash is not None]
    pool.free_blocks(unhashed)
    pool.free_blocks(hashed)
    order = [b.block_id for b in pool.free_block_queue.get_all_free_blocks()]
    assert order == [b.block_id for b in unhashed + hashed]
    return pool


def _ids(blocks: list[KVCacheBlock]) -> list[int]:
    return [b.block_id for b in blocks]


def test_step_selects_hashed_blocks_and_pins_them_after_the_walk() -> None:
    pool = _pool_with_hashes(["a", "b", "c"])
    scanner = LazyOffloadScanner(pool, window=2)
    got = scanner.step()
    assert _ids(got) == [1, 2]
    assert all(b.ref_cnt == 1 and b.owner is None for b in got)
    assert _ids(pool.free_block_queue.get_all_free_blocks()) == [3]
    assert scanner.num_in_flight == 2
    scanner.check_invariants()
    pool.check_invariants()


def test_step_skips_unhashed_and_offloaded_blocks_and_moves_the_cursor() -> None:
    pool = _pool_with_hashes([None, None, "a"])
    scanner = LazyOffloadScanner(pool, window=2)
    assert scanner.step() == []
    assert scanner.snapshot().cursor is not None
    assert scanner.snapshot().cursor[0] == 2  # type: ignore[index]
    assert _ids(scanner.step()) == [3]


def test_complete_unpins_and_records_the_hash() -> None:
    pool = _pool_with_hashes(["a"])
    scanner = LazyOffloadScanner(pool, window=4)
    (block,) = scanner.step()
    scanner.complete([block])
    assert block.ref_cnt == 0 and block.owner is pool.free_block_queue
    assert scanner.is_offloaded("a") and scanner.num_in_flight == 0
    assert scanner.step() == []  # offloaded content is not stored again
    scanner.check_invariants()


def test_abort_unpins_without_recording_and_the_block_is_selected_again() -> None:
    pool = _pool_with_hashes(["a", None])
    scanner = LazyOffloadScanner(pool, window=4)
    (block,) = scanner.step()
    scanner.abort([block])
    assert not scanner.is_offloaded("a") and block.ref_cnt == 0
    # It rejoined at the back, after the cursor: the next step takes it again.
    assert scanner.step() == [block]


def test_capacity_stops_the_walk_before_the_first_block_it_cannot_take() -> None:
    pool = _pool_with_hashes([None, "a", "b", None])  # queue [1 4 2:a 3:b]
    scanner = LazyOffloadScanner(pool, window=4, cpu_capacity=1)
    assert _ids(scanner.step()) == [2]
    # Block 3 was not visited: the cursor stays on block 4 and the walk resumes there.
    assert scanner.snapshot().cursor == (4, pool.blocks[4].link_generation)
    assert _ids(scanner.step()) == [3]


def test_zero_capacity_walks_past_blocks_that_need_nothing() -> None:
    pool = _pool_with_hashes([None, None, "a"])
    scanner = LazyOffloadScanner(pool, window=3, cpu_capacity=lambda: 0)
    assert scanner.step() == []
    assert scanner.snapshot().cursor == (2, pool.blocks[2].link_generation)


def test_capacity_callable_is_asked_every_step() -> None:
    pool = _pool_with_hashes(["a", "b", "c"])
    box = [0]
    scanner = LazyOffloadScanner(pool, window=3, cpu_capacity=lambda: box[0])
    assert scanner.step() == []
    box[0] = 2
    assert _ids(scanner.step()) == [1, 2]


def test_cursor_stays_at_the_back_after_a_full_pass() -> None:
    pool = _pool_with_hashes([None, None])
    scanner = LazyOffloadScanner(pool, window=8)
    scanner.step()
    cursor = scanner.snapshot().cursor
    assert cursor is not None and cursor[0] == 2
    assert scanner.step() == [] and scanner.snapshot().cursor == cursor
    # A block freed with a hash joins after the cursor and is taken next.
    (b,) = pool.get_new_blocks(1)
    pool.cache_block(b, "x")
    pool.free_blocks([b])
    assert scanner.step() == [b]


def test_cursor_is_kept_when_every_visited_block_was_selected() -> None:
    pool = _pool_with_hashes([None, "a", "b"])
    scanner = LazyOffloadScanner(pool, window=1)
    scanner.step()
    before = scanner.snapshot().cursor
    assert _ids(scanner.step()) == [2]
    assert scanner.snapshot().cursor == before


def test_stale_cursor_restarts_from_the_front() -> None:
    pool = _pool_with_hashes([None, None, "a"])
    scanner = LazyOffloadScanner(pool, window=1)
    scanner.step()  # cursor on block 1
    pool.touch([pool.blocks[1]])
    pool.cache_block(pool.blocks[1], "z")
    pool.free_blocks([pool.blocks[1]])  # back of the queue, ref 0, new link
    got: list[int] = []
    for _ in range(4):
        got += _ids(scanner.step())
    assert got == [3, 1]
    scanner.check_invariants()


def test_same_hash_in_two_blocks_selects_both() -> None:
    pool = _pool_with_hashes(["a", "a"])
    scanner = LazyOffloadScanner(pool, window=2)
    assert _ids(scanner.step()) == [1, 2]


def test_reset_forgets_cursor_and_offloaded_but_keeps_in_flight() -> None:
    pool = _pool_with_hashes(["a", "b"])
    scanner = LazyOffloadScanner(pool, window=1)
    (first,) = scanner.step()
    scanner.complete([first])
    (second,) = scanner.step()
    scanner.reset()
    snap = scanner.snapshot()
    assert snap.cursor is None and snap.offloaded == frozenset()
    assert snap.in_flight == ((second.block_id, "b"),)
    assert scanner.step() == [first]  # 'a' is no longer known to be on the CPU tier
    scanner.complete([second])
    assert scanner.is_offloaded("b")


def test_empty_queue_step_selects_nothing() -> None:
    pool = BlockPool(3)
    pool.get_new_blocks(2)
    scanner = LazyOffloadScanner(pool, window=2)
    assert scanner.step() == [] and scanner.snapshot().cursor is None


def test_in_flight_blocks_lists_the_selection_in_order() -> None:
    pool = _pool_with_hashes(["a", "b"])
    scanner = LazyOffloadScanner(pool, window=2)
    got = scanner.step()
    assert scanner.in_flight_blocks() == got


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("window", [0, -1, True, 1.5, "2", None])
def test_rejects_bad_window(window: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        LazyOffloadScanner(BlockPool(2), window)


@pytest.mark.parametrize("capacity", [-1, True, 2.0, "3"])
def test_rejects_bad_capacity(capacity: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        LazyOffloadScanner(BlockPool(2), 1, capacity)


def test_rejects_a_pool_that_is_not_a_block_pool() -> None:
    with pytest.raises(InvalidArgumentError):
        LazyOffloadScanner(object(), 1)


@pytest.mark.parametrize("bad", [-1, None, "1"])
def test_rejects_bad_capacity_from_the_callable_and_changes_nothing(bad: Any) -> None:
    pool = _pool_with_hashes(["a"])
    scanner = LazyOffloadScanner(pool, window=1, cpu_capacity=lambda: bad)
    before = (scanner.snapshot(), pool.snapshot())
    with pytest.raises(InvalidArgumentError):
        scanner.step()
    assert (scanner.snapshot(), pool.snapshot()) == before


@pytest.mark.parametrize("finish", ["complete", "abort"])
def test_rejects_a_block_not_in_flight_and_changes_nothing(finish: str) -> None:
    pool = _pool_with_hashes(["a", "b"])
    scanner = LazyOffloadScanner(pool, window=1)
    (block,) = scanner.step()
    before = (scanner.snapshot(), pool.snapshot())
    with pytest.raises(NotInFlightError) as err:
        getattr(scanner, finish)([block, pool.blocks[2]])
    assert err.value.block_ids == (2,)
    assert (scanner.snapshot(), pool.snapshot()) == before


@pytest.mark.parametrize("finish", ["complete", "abort"])
def test_rejects_duplicate_blocks_and_changes_nothing(finish: str) -> None:
    pool = _pool_with_hashes(["a"])
    scanner = LazyOffloadScanner(pool, window=1)
    (block,) = scanner.step()
    before = (scanner.snapshot(), pool.snapshot())
    with pytest.raises(DuplicateBlocksError) as err:
        getattr(scanner, finish)([block, block])
    assert err.value.block_ids == (block.block_id,)
    assert (scanner.snapshot(), pool.snapshot()) == before


@pytest.mark.parametrize("arg", ["x", None, {1}, [1], [None]])
def test_rejects_a_non_list_or_non_block_argument(arg: Any) -> None:
    pool = _pool_with_hashes(["a"])
    scanner = LazyOffloadScanner(pool, window=1)
    scanner.step()
    before = scanner.snapshot()
    with pytest.raises(InvalidArgumentError):
        scanner.complete(arg)
    assert scanner.snapshot() == before


def test_rejects_completing_a_block_twice() -> None:
    pool = _pool_with_hashes(["a"])
    scanner = LazyOffloadScanner(pool, window=1)
    (block,) = scanner.step()
    scanner.complete([block])
    with pytest.raises(NotInFlightError):
        scanner.complete([block])


def test_rejects_a_block_of_another_pool_with_the_same_id() -> None:
    pool = _pool_with_hashes(["a"])
    other = BlockPool(2)
    scanner = LazyOffloadScanner(pool, window=1)
    scanner.step()
    with pytest.raises(NotInFlightError):
        scanner.complete([other.blocks[1]])


def test_pool_refuses_to_hash_a_free_block_behind_the_cursor() -> None:
    pool = _pool_with_hashes([None, None])
    scanner = LazyOffloadScanner(pool, window=2)
    scanner.step()  # cursor on block 2, the back: block 1 is before it
    before = (scanner.snapshot(), pool.snapshot())
    with pytest.raises(InvalidArgumentError) as err:
        pool.cache_block(pool.blocks[1], "x")
    assert "cannot cache a free block: block 1 " in str(err.value)
    assert (scanner.snapshot(), pool.snapshot()) == before
    scanner.check_invariants()
    # The same content arriving the legal way (in use, then freed) joins at the back,
    # after the cursor, and the next step takes it.
    pool.touch([pool.blocks[1]])
    pool.cache_block(pool.blocks[1], "x")
    pool.free_blocks([pool.blocks[1]])
    assert _ids(scanner.step()) == [1]


def test_check_invariants_catches_a_hashed_block_left_before_the_cursor() -> None:
    pool = _pool_with_hashes([None, None])
    scanner = LazyOffloadScanner(pool, window=2)
    scanner.step()  # cursor on block 2, the back
    scanner.check_invariants()
    # A hash written straight into a free block (bypassing the pool, which refuses to
    # cache a free block) would break the property.
    pool.blocks[1].block_hash = "x"
    pool.cached_block_hash_to_block["x"] = {1: pool.blocks[1]}
    with pytest.raises(InvariantViolationError, match="prefix_offloaded"):
        scanner.check_invariants()
