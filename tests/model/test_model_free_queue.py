"""Unit tests of the free-queue specification (model/free_queue.py)."""

from __future__ import annotations

import pytest

from evictable.model.errors import (
    BlockAlreadyLinkedError,
    BlockNotLinkedError,
    ConcurrentModificationError,
    DuplicateBlocksError,
    ForeignBlockError,
    InsufficientFreeBlocksError,
    InvalidArgumentError,
    QueueEmptyError,
    StaleCursorError,
)
from evictable.model.free_queue import (
    FreeQueueSnapshot,
    ModelCursor,
    ModelFreeQueue,
    check_queue_snapshot,
    repeated,
)
from evictable.model.types import BlockId


def make(n: int, owners: dict[BlockId, ModelFreeQueue] | None = None) -> ModelFreeQueue:
    return ModelFreeQueue([BlockId(i) for i in range(n)], owners)


def test_initial_order_and_stamps() -> None:
    q = make(3)
    assert q.snapshot() == FreeQueueSnapshot((0, 1, 2), (0, 1, 2), 3)
    assert check_queue_snapshot(q.snapshot()) == []


def test_popleft_and_popleft_n_take_from_the_front() -> None:
    q = make(5)
    assert q.popleft() == 0
    assert q.popleft_n(2) == [1, 2]
    assert q.get_all_free_blocks() == [3, 4]


def test_append_prepend_and_remove() -> None:
    q = make(5)
    a, b, c = q.popleft_n(3)
    q.append(a)
    q.prepend_n([b, c])
    q.remove(BlockId(4))
    assert q.get_all_free_blocks() == [1, 2, 3, 0]
    assert q.snapshot().stamps == (6, 7, 3, 5)


def test_iter_blocks_after_yields_the_suffix() -> None:
    q = make(4)
    assert list(q.iter_blocks_after(None)) == [0, 1, 2, 3]
    assert list(q.iter_blocks_after(BlockId(1))) == [2, 3]
    assert list(q.iter_blocks_after(q.cursor_for(BlockId(2)))) == [3]


def test_rejects_iterator_step_after_modification() -> None:
    q = make(3)
    it = q.iter_blocks_after(None)
    assert next(it) == 0
    q.popleft()
    with pytest.raises(ConcurrentModificationError):
        next(it)


def test_no_op_does_not_invalidate_iterators() -> None:
    q = make(3)
    it = q.iter_blocks_after(None)
    q.append_n([])
    q.popleft_n(0)
    assert list(it) == [0, 1, 2]


def test_rejects_stale_and_foreign_cursors() -> None:
    owners: dict[BlockId, ModelFreeQueue] = {}
    q = make(3, owners)
    other = ModelFreeQueue([BlockId(10)], owners)
    c = q.cursor_for(BlockId(0))
    q.remove(BlockId(0))
    with pytest.raises(StaleCursorError):
        q.iter_blocks_after(BlockId(0))
    q.append(BlockId(0))
    assert not q.cursor_is_valid(c)
    with pytest.raises(StaleCursorError):
        q.iter_blocks_after(c)
    with pytest.raises(ForeignBlockError):
        q.iter_blocks_after(ModelCursor(BlockId(10), 0))
    assert other.get_all_free_blocks() == [10]


def test_rejects_bad_counts() -> None:
    q = make(2)
    before = q.snapshot()
    with pytest.raises(InsufficientFreeBlocksError):
        q.popleft_n(3)
    with pytest.raises(InvalidArgumentError):
        q.popleft_n(-1)
    with pytest.raises(InvalidArgumentError):
        q.popleft_n(True)
    assert q.snapshot() == before


def test_rejects_popleft_on_empty_queue() -> None:
    q = make(0)
    with pytest.raises(QueueEmptyError):
        q.popleft()


def test_rejects_linking_a_linked_block() -> None:
    owners: dict[BlockId, ModelFreeQueue] = {}
    q = make(3, owners)
    ModelFreeQueue([BlockId(9)], owners)
    q.popleft()
    before = q.snapshot()
    with pytest.raises(BlockAlreadyLinkedError) as e:
        q.append_n([BlockId(0), BlockId(9)])
    assert e.value.block_ids == (9,)
    with pytest.raises(BlockAlreadyLinkedError):
        q.append(BlockId(1))
    with pytest.raises(DuplicateBlocksError) as d:
        q.prepend_n([BlockId(0), BlockId(0)])
    assert d.value.block_ids == (0,)
    assert q.snapshot() == before
    assert BlockId(0) not in owners


def test_rejects_removing_unlinked_or_foreign_blocks() -> None:
    owners: dict[BlockId, ModelFreeQueue] = {}
    q = make(2, owners)
    ModelFreeQueue([BlockId(5)], owners)
    before = q.snapshot()
    with pytest.raises(BlockNotLinkedError):
        q.remove(BlockId(4))
    with pytest.raises(ForeignBlockError):
        q.remove(BlockId(5))
    assert q.snapshot() == before


def test_repeated_lists_each_duplicate_once_in_first_seen_order() -> None:
    assert repeated([3, 1, 3, 2, 1, 3]) == [3, 1]
    assert repeated([]) == []


def test_queue_invariants_catch_a_bad_snapshot() -> None:
    assert check_queue_snapshot(FreeQueueSnapshot((1, 1), (0, 1), 2)) == ["blocks_distinct"]
    assert check_queue_snapshot(FreeQueueSnapshot((1,), (0,), 2)) == ["count_is_length"]
