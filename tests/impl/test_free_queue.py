"""Unit tests of the intrusive free queue (impl/free_queue.py)."""

from __future__ import annotations

import pytest

from evictable.impl.free_queue import Cursor, FreeKVCacheBlockQueue, KVCacheBlock
from evictable.model.errors import (
    BlockAlreadyLinkedError,
    BlockNotLinkedError,
    ConcurrentModificationError,
    DuplicateBlocksError,
    ForeignBlockError,
    InsufficientFreeBlocksError,
    InvalidArgumentError,
    InvariantViolationError,
    QueueEmptyError,
    StaleCursorError,
)


def make(n: int) -> tuple[FreeKVCacheBlockQueue, list[KVCacheBlock]]:
    blocks = [KVCacheBlock(i) for i in range(n)]
    return FreeKVCacheBlockQueue(blocks), blocks


def ids(blocks: list[KVCacheBlock]) -> list[int]:
    return [b.block_id for b in blocks]


def test_initial_order_is_the_given_order() -> None:
    q, _ = make(4)
    assert ids(q.get_all_free_blocks()) == [0, 1, 2, 3]
    assert q.num_free_blocks == 4
    q.check_invariants()


def test_sentinels_link_an_empty_queue() -> None:
    q, _ = make(0)
    assert q.fake_free_list_head.next_free_block is q.fake_free_list_tail
    assert q.fake_free_list_tail.prev_free_block is q.fake_free_list_head
    assert q.get_all_free_blocks() == []


def test_popleft_takes_the_front_and_unlinks_it() -> None:
    q, bs = make(3)
    b = q.popleft()
    assert b is bs[0]
    assert b.prev_free_block is None and b.next_free_block is None and b.owner is None
    assert ids(q.get_all_free_blocks()) == [1, 2]
    q.check_invariants()


def test_popleft_n_takes_the_front_blocks_in_order() -> None:
    q, _ = make(5)
    assert ids(q.popleft_n(3)) == [0, 1, 2]
    assert ids(q.get_all_free_blocks()) == [3, 4]
    assert q.popleft_n(0) == []
    q.check_invariants()


def test_remove_unlinks_from_the_middle() -> None:
    q, bs = make(4)
    q.remove(bs[2])
    assert ids(q.get_all_free_blocks()) == [0, 1, 3]
    assert q.num_free_blocks == 3
    q.check_invariants()


def test_append_links_at_the_back() -> None:
    q, _ = make(3)
    b = q.popleft()
    q.append(b)
    assert ids(q.get_all_free_blocks()) == [1, 2, 0]
    q.check_invariants()


def test_append_n_and_prepend_n_keep_the_given_order() -> None:
    q, _ = make(6)
    taken = q.popleft_n(4)
    q.append_n(taken[:2])
    q.prepend_n(taken[2:])
    assert ids(q.get_all_free_blocks()) == [2, 3, 4, 5, 0, 1]
    q.check_invariants()


def test_each_link_gets_a_fresh_generation() -> None:
    q, bs = make(2)
    first = bs[0].link_generation
    q.remove(bs[0])
    q.append(bs[0])
    assert bs[0].link_generation > first
    assert q.snapshot().stamps == (1, 2)


def test_iter_blocks_after_none_yields_everything() -> None:
    q, _ = make(3)
    assert ids(list(q.iter_blocks_after(None))) == [0, 1, 2]


def test_iter_blocks_after_block_yields_the_suffix() -> None:
    q, bs = make(4)
    assert ids(list(q.iter_blocks_after(bs[1]))) == [2, 3]
    assert list(q.iter_blocks_after(bs[3])) == []


def test_iter_blocks_after_cursor_yields_the_suffix() -> None:
    q, bs = make(4)
    c = q.cursor_for(bs[0])
    assert isinstance(c, Cursor) and q.cursor_is_valid(c)
    assert ids(list(q.iter_blocks_after(c))) == [1, 2, 3]


def test_iterator_survives_when_nothing_changes() -> None:
    q, bs = make(3)
    it = q.iter_blocks_after(None)
    assert next(it) is bs[0]
    q.popleft_n(0)  # a no-op does not count as a modification
    assert [b.block_id for b in it] == [1, 2]


def test_rejects_iterator_step_after_modification() -> None:
    q, bs = make(3)
    it = q.iter_blocks_after(None)
    assert next(it) is bs[0]
    q.remove(bs[2])
    with pytest.raises(ConcurrentModificationError):
        next(it)


def test_rejects_iterator_step_after_modification_before_first_step() -> None:
    q, _ = make(3)
    it = q.iter_blocks_after(None)
    q.append(q.popleft())
    with pytest.raises(ConcurrentModificationError):
        next(it)


def test_failed_call_does_not_invalidate_iterators() -> None:
    q, bs = make(3)
    it = q.iter_blocks_after(None)
    with pytest.raises(BlockAlreadyLinkedError):
        q.append(bs[0])
    assert ids(list(it)) == [0, 1, 2]


def test_rejects_popleft_on_empty_queue() -> None:
    q, _ = make(0)
    before = q.snapshot()
    with pytest.raises(QueueEmptyError, match="No free blocks available"):
        q.popleft()
    assert q.snapshot() == before


def test_rejects_popleft_n_above_the_count() -> None:
    q, _ = make(3)
    before = q.snapshot()
    with pytest.raises(InsufficientFreeBlocksError) as e:
        q.popleft_n(4)
    assert e.value.requested == 4 and e.value.available == 3
    assert q.snapshot() == before


@pytest.mark.parametrize("n", [-1, -7])
def test_rejects_a_negative_popleft_n_count_as_a_bad_argument(n: int) -> None:
    q, _ = make(3)
    before = q.snapshot()
    with pytest.raises(InvalidArgumentError, match=f"got {n}"):
        q.popleft_n(n)
    assert q.snapshot() == before


@pytest.mark.parametrize("n", [True, 1.0, "1"])
def test_rejects_popleft_n_non_int(n: object) -> None:
    q, _ = make(3)
    before = q.snapshot()
    with pytest.raises(InvalidArgumentError):
        q.popleft_n(n)
    assert q.snapshot() == before


def test_rejects_remove_of_unlinked_block() -> None:
    q, _ = make(3)
    b = q.popleft()
    before = q.snapshot()
    with pytest.raises(BlockNotLinkedError) as e:
        q.remove(b)
    assert e.value.block_ids == (0,) and "0" in str(e.value)
    assert q.snapshot() == before


def test_rejects_remove_of_block_from_another_queue() -> None:
    q, _ = make(2)
    other, obs = make(2)
    before = q.snapshot()
    with pytest.raises(ForeignBlockError) as e:
        q.remove(obs[1])
    assert e.value.block_ids == (1,)
    assert q.snapshot() == before
    other.check_invariants()


def test_rejects_remove_of_a_sentinel() -> None:
    q, _ = make(2)
    before = q.snapshot()
    with pytest.raises(ForeignBlockError):
        q.remove(q.fake_free_list_head)
    with pytest.raises(BlockAlreadyLinkedError):
        q.append(q.fake_free_list_tail)
    assert q.snapshot() == before
    q.check_invariants()


def test_rejects_append_of_linked_block() -> None:
    q, bs = make(3)
    before = q.snapshot()
    with pytest.raises(BlockAlreadyLinkedError) as e:
        q.append(bs[1])
    assert e.value.block_ids == (1,)
    assert q.snapshot() == before


def test_rejects_append_of_block_linked_in_another_queue() -> None:
    q, _ = make(2)
    _, obs = make(2)
    before = q.snapshot()
    with pytest.raises(BlockAlreadyLinkedError):
        q.append(obs[0])
    assert q.snapshot() == before


@pytest.mark.parametrize("op", ["append_n", "prepend_n"])
def test_rejects_duplicates_in_bulk_link(op: str) -> None:
    q, _ = make(4)
    taken = q.popleft_n(3)
    before = q.snapshot()
    with pytest.raises(DuplicateBlocksError) as e:
        getattr(q, op)([taken[0], taken[1], taken[0], taken[1], taken[2]])
    assert e.value.block_ids == (0, 1)
    assert q.snapshot() == before
    assert all(b.owner is None for b in taken)


@pytest.mark.parametrize("op", ["append_n", "prepend_n"])
def test_rejects_bulk_link_with_a_linked_block(op: str) -> None:
    q, bs = make(4)
    taken = q.popleft_n(2)
    before = q.snapshot()
    with pytest.raises(BlockAlreadyLinkedError) as e:
        getattr(q, op)([taken[0], bs[3], taken[1]])
    assert e.value.block_ids == (3,)
    assert q.snapshot() == before
    assert taken[0].owner is None


def test_rejects_construction_with_duplicates() -> None:
    b = KVCacheBlock(7)
    with pytest.raises(DuplicateBlocksError) as e:
        FreeKVCacheBlockQueue([b, b])
    assert e.value.block_ids == (7,)
    assert b.owner is None


def test_rejects_cursor_block_that_left_the_queue() -> None:
    q, bs = make(3)
    q.remove(bs[1])
    with pytest.raises(StaleCursorError) as e:
        q.iter_blocks_after(bs[1])
    assert e.value.block_ids == (1,)


def test_rejects_cursor_whose_block_was_relinked() -> None:
    q, bs = make(3)
    c = q.cursor_for(bs[0])
    q.remove(bs[0])
    q.append(bs[0])
    assert not q.cursor_is_valid(c)
    with pytest.raises(StaleCursorError):
        q.iter_blocks_after(c)
    assert ids(list(q.iter_blocks_after(bs[0]))) == []  # the block itself is linked


def test_rejects_cursor_block_linked_in_another_queue() -> None:
    q, _ = make(2)
    other, obs = make(2)
    with pytest.raises(ForeignBlockError):
        q.iter_blocks_after(obs[0])
    with pytest.raises(ForeignBlockError):
        q.iter_blocks_after(other.cursor_for(obs[0]))


def test_rejects_cursor_for_unlinked_block() -> None:
    q, _ = make(2)
    b = q.popleft()
    with pytest.raises(BlockNotLinkedError):
        q.cursor_for(b)


def test_check_invariants_detects_a_broken_link() -> None:
    q, bs = make(3)
    bs[2].prev_free_block = bs[0]  # corrupt the back link of block 2
    with pytest.raises(InvariantViolationError, match="prev of block 2"):
        q.check_invariants()


def test_check_invariants_detects_a_wrong_count() -> None:
    q, _ = make(3)
    q.num_free_blocks = 2
    with pytest.raises(InvariantViolationError, match="count 2 != length 3"):
        q.check_invariants()


def test_only_iterators_older_than_a_change_are_invalidated() -> None:
    q, bs = make(4)
    old_a = q.iter_blocks_after(None)
    old_b = q.iter_blocks_after(bs[0])
    q.remove(bs[3])
    fresh = q.iter_blocks_after(bs[0])
    for it in (old_a, old_b):
        with pytest.raises(ConcurrentModificationError):
            next(it)
    assert ids(list(fresh)) == [1, 2]


def test_exhausted_iterator_stays_exhausted_after_a_change() -> None:
    q, bs = make(2)
    it = q.iter_blocks_after(bs[0])
    assert ids(list(it)) == [1]
    q.popleft()
    assert list(it) == []
