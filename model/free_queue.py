"""The GPU free-block queue as a specification: a plain Python list of block ids.

The queue holds the ids of GPU blocks with ref_cnt 0 in eviction order: the
front (index 0) is the next block to evict, new entries join at the back
(`append`) or, for blocks that should go first, at the front (`prepend_n`).

Each queue stamps every block it links with a *link generation*: an int from a
per-queue counter that grows by one per link. A `ModelCursor` remembers a block
and its stamp, so a cursor taken before the block left the queue and came back is
recognisably stale. A per-queue *modification count* grows by one per call that
actually changes the contents or order; a live iterator that sees it move raises
`ConcurrentModificationError` on its next step.

Blocks can be shared between several queues through one `owners` map (block id
-> the queue it is linked in), so that a block linked in another queue is told
apart from one linked nowhere.

Every event below validates all of its input before it changes anything; a call
that raises leaves the queue (and the `owners` map) exactly as it was.

Written for clarity, not speed: `impl/free_queue.py` is the fast path (an
intrusive doubly linked list), checked against this model in lock-step.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

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
from evictable.model.types import BlockId

__all__ = [
    "QUEUE_INVARIANTS",
    "FreeQueueSnapshot",
    "ModelCursor",
    "ModelFreeQueue",
    "check_queue_snapshot",
    "repeated",
    "require_count",
]

T = TypeVar("T", bound=Hashable)


@dataclass(frozen=True)
class FreeQueueSnapshot:
    """Everything observable about a free queue, identical in shape for model and impl.

    `order` lists the linked block ids front (next to evict) to back; `stamps`
    gives each one's link generation, position by position; `num_free_blocks` is
    the queue's own count.
    """

    order: tuple[int, ...]
    stamps: tuple[int, ...]
    num_free_blocks: int


@dataclass(frozen=True)
class ModelCursor:
    """A scan position: a block and the link generation it had when taken."""

    block_id: BlockId
    generation: int


def repeated(items: Iterable[T]) -> list[T]:
    """The items that occur more than once, each listed once, in first-seen order."""
    seen: set[T] = set()
    twice: list[T] = []
    for item in items:
        if item in seen and item not in twice:
            twice.append(item)
        seen.add(item)
    return twice


def require_count(n: object, available: int) -> int:
    """Guard for a block count: an int (not a bool) in [0, available].

    A non-int or a negative count is a bad argument (`InvalidArgumentError`); a count
    above `available` asks for more than there is (`InsufficientFreeBlocksError`).
    """
    if not isinstance(n, int) or isinstance(n, bool):
        raise InvalidArgumentError(f"block count must be an int, got {n!r}")
    if n < 0:
        raise InvalidArgumentError(f"block count must be >= 0, got {n}")
    if n > available:
        raise InsufficientFreeBlocksError(n, available)
    return n


class ModelFreeQueue:
    """The free queue as a list of block ids, front first."""

    def __init__(
        self,
        block_ids: Sequence[BlockId],
        owners: dict[BlockId, ModelFreeQueue] | None = None,
    ) -> None:
        self.owners: dict[BlockId, ModelFreeQueue] = {} if owners is None else owners
        self.order: list[BlockId] = []
        self.stamp: dict[BlockId, int] = {}
        self.next_generation = 0
        self.modifications = 0
        self._check_can_link(block_ids)
        self._link_at(0, block_ids)
        self.modifications = 0

    # ------------------------------------------------------------ helpers

    @property
    def num_free_blocks(self) -> int:
        return len(self.order)

    def _check_can_link(self, block_ids: Sequence[BlockId]) -> None:
        # Duplicates inside one call: the same block cannot take two places.
        twice = repeated(block_ids)
        if twice:
            raise DuplicateBlocksError(twice)
        # A block is linked in at most one queue at a time.
        for b in block_ids:
            if b in self.owners:
                raise BlockAlreadyLinkedError([b])

    def _check_linked_here(self, block_id: BlockId) -> None:
        # Only a block linked in *this* queue can leave it.
        owner = self.owners.get(block_id)
        if owner is None:
            raise BlockNotLinkedError([block_id])
        if owner is not self:
            raise ForeignBlockError([block_id])

    def _link_at(self, index: int, block_ids: Sequence[BlockId]) -> None:
        """Insert `block_ids` at `index`, in order, stamping each one."""
        for offset, b in enumerate(block_ids):
            self.order.insert(index + offset, b)
            self.owners[b] = self
            self.stamp[b] = self.next_generation
            self.next_generation += 1
        if block_ids:
            self.modifications += 1

    def _unlink(self, block_id: BlockId) -> None:
        self.order.remove(block_id)
        del self.owners[block_id]
        del self.stamp[block_id]
        self.modifications += 1

    # ------------------------------------------------------------ events

    def popleft(self) -> BlockId:
        """Take the block at the front (the next one to evict)."""
        # Nothing to take from an empty queue.
        if not self.order:
            raise QueueEmptyError()
        front = self.order[0]
        self._unlink(front)
        return front

    def popleft_n(self, n: int) -> list[BlockId]:
        """Take the `n` front blocks, front first."""
        # `n` must be a count the queue can satisfy.
        require_count(n, len(self.order))
        taken = self.order[:n]
        for b in taken:
            self._unlink(b)
        return taken

    def remove(self, block_id: BlockId) -> None:
        """Take one block out of the queue, wherever it is."""
        # The block must be linked here (not unlinked, not in another queue).
        self._check_linked_here(block_id)
        self._unlink(block_id)

    def append(self, block_id: BlockId) -> None:
        """Link one block at the back (evicted last)."""
        # The block must not already be linked (here or elsewhere).
        self._check_can_link([block_id])
        self._link_at(len(self.order), [block_id])

    def append_n(self, block_ids: Sequence[BlockId]) -> None:
        """Link blocks at the back, in order (the first of them is evicted first)."""
        # No duplicates, and none already linked.
        self._check_can_link(block_ids)
        self._link_at(len(self.order), block_ids)

    def prepend_n(self, block_ids: Sequence[BlockId]) -> None:
        """Link blocks at the front, in order (the first of them becomes the front)."""
        # No duplicates, and none already linked.
        self._check_can_link(block_ids)
        self._link_at(0, block_ids)

    def get_all_free_blocks(self) -> list[BlockId]:
        """Every linked block, front first."""
        return list(self.order)

    def cursor_for(self, block_id: BlockId) -> ModelCursor:
        """A cursor on a block linked in this queue."""
        # Only a block linked here has a position in this queue.
        self._check_linked_here(block_id)
        return ModelCursor(block_id, self.stamp[block_id])

    def cursor_is_valid(self, cursor: ModelCursor) -> bool:
        """Whether `cursor` still names the link it was taken from in this queue."""
        return (
            self.owners.get(cursor.block_id) is self
            and self.stamp[cursor.block_id] == cursor.generation
        )

    def iter_blocks_after(self, cursor: BlockId | ModelCursor | None = None) -> Iterator[BlockId]:
        """The blocks after `cursor` (all blocks for None), front to back, lazily.

        The cursor is validated now; the queue changing while the iterator is
        live makes the iterator's next step raise `ConcurrentModificationError`.
        """
        if cursor is None:
            start = 0
        else:
            block_id = cursor.block_id if isinstance(cursor, ModelCursor) else cursor
            owner = self.owners.get(block_id)
            # A cursor block that left every queue names no position.
            if owner is None:
                raise StaleCursorError([block_id])
            # A cursor block linked in another queue is not a position here.
            if owner is not self:
                raise ForeignBlockError([block_id])
            # A cursor whose block left and came back names an old position.
            if isinstance(cursor, ModelCursor) and self.stamp[block_id] != cursor.generation:
                raise StaleCursorError([block_id])
            start = self.order.index(block_id) + 1
        return self._walk(tuple(self.order[start:]), self.modifications)

    def _walk(self, suffix: tuple[BlockId, ...], seen: int) -> Iterator[BlockId]:
        for b in suffix:
            if self.modifications != seen:
                raise ConcurrentModificationError()
            yield b
        if self.modifications != seen:
            raise ConcurrentModificationError()

    def snapshot(self) -> FreeQueueSnapshot:
        return FreeQueueSnapshot(
            order=tuple(self.order),
            stamps=tuple(self.stamp[b] for b in self.order),
            num_free_blocks=len(self.order),
        )


# ---------------------------------------------------------------- invariants


def inv_count_is_length(snap: FreeQueueSnapshot) -> bool:
    """The queue's count equals the number of linked blocks."""
    return snap.num_free_blocks == len(snap.order) == len(snap.stamps)


def inv_blocks_distinct(snap: FreeQueueSnapshot) -> bool:
    """No block is linked twice."""
    return len(set(snap.order)) == len(snap.order)


def inv_stamps_distinct(snap: FreeQueueSnapshot) -> bool:
    """No two links share a generation stamp."""
    return len(set(snap.stamps)) == len(snap.stamps) and all(s >= 0 for s in snap.stamps)


QUEUE_INVARIANTS: dict[str, Callable[[FreeQueueSnapshot], bool]] = {
    "count_is_length": inv_count_is_length,
    "blocks_distinct": inv_blocks_distinct,
    "stamps_distinct": inv_stamps_distinct,
}


def check_queue_snapshot(snap: FreeQueueSnapshot) -> list[str]:
    """Names of the queue invariants `snap` violates; empty when all hold."""
    return [name for name, inv in QUEUE_INVARIANTS.items() if not inv(snap)]
