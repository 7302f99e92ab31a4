"""The GPU free-block queue: a strict intrusive doubly linked list.

Checked in lock-step against `model/free_queue.py` (the specification). Same names
and order semantics as vLLM's queue, but every misuse is a named error from
`model/errors.py` raised before anything changes, and a scan cursor that went stale
is detected instead of silently yielding nothing.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from evictable.impl._compat import mypyc_attr
from evictable.model.errors import (
    BlockAlreadyLinkedError,
    BlockNotLinkedError,
    ConcurrentModificationError,
    DuplicateBlocksError,
    ForeignBlockError,
    InvariantViolationError,
    QueueEmptyError,
    StaleCursorError,
)
from evictable.model.free_queue import FreeQueueSnapshot, repeated, require_count

__all__ = ["Cursor", "FreeKVCacheBlockQueue", "KVCacheBlock"]


@mypyc_attr(native_class=False)
class _SentinelMark:
    """The owner mark of a sentinel: linked, but in no queue a caller may use."""

    def __repr__(self) -> str:
        return "<sentinel>"


_SENTINEL: Final = _SentinelMark()


@mypyc_attr(allow_interpreted_subclasses=True)
class KVCacheBlock:
    """One GPU KV-cache block, with its intrusive free-list links.

    >>> block = KVCacheBlock(7)
    >>> block.ref_cnt, block.block_hash, block.owner is None
    (0, None, True)

    `owner` is the queue the block is linked in (None when unlinked);
    `link_generation` is the stamp that queue gave it when it was last linked
    (meaningful only while linked).
    Complexity: O(1) memory (slots, no `__dict__`).
    """

    __slots__ = (
        "block_hash",
        "block_id",
        "is_null",
        "link_generation",
        "next_free_block",
        "owner",
        "prev_free_block",
        "ref_cnt",
    )

    def __init__(self, block_id: int) -> None:
        self.block_id = block_id
        self.ref_cnt = 0
        self.block_hash: Hashable | None = None
        self.prev_free_block: KVCacheBlock | None = None
        self.next_free_block: KVCacheBlock | None = None
        self.is_null = False
        self.owner: object | None = None
        self.link_generation = -1

    def __repr__(self) -> str:
        return (
            f"KVCacheBlock(block_id={self.block_id}, ref_cnt={self.ref_cnt}, "
            f"block_hash={self.block_hash!r}, linked={self.owner is not None})"
        )


def _broken_list(before: KVCacheBlock, node: KVCacheBlock | None, count: int) -> Exception:
    """The error a bounded walk raises at the first sign of a broken list."""
    if node is None:
        detail = f"the list ends in a dangling link after block {before.block_id}"
    elif node.prev_free_block is not before:
        detail = f"block {node.block_id} does not link back to block {before.block_id}"
    else:
        detail = f"more than num_free_blocks={count} blocks before the tail (a cycle?)"
    return InvariantViolationError(["links_well_formed"], detail)


@mypyc_attr(native_class=False)
class _Epoch:
    """The iterators created since the queue last changed share one epoch.

    A change of the queue marks the epoch dead (one store, however many iterators
    share it) and starts a new one lazily, at the next `iter_blocks_after`; each
    iterator step tests its epoch, a local read instead of a counter comparison.
    """

    __slots__ = ("live",)

    def __init__(self) -> None:
        self.live = True


@mypyc_attr(native_class=False)  # a frozen dataclass, pickled as one
@dataclass(frozen=True, slots=True)
class Cursor:
    """A scan position: a block and the link generation it had when the cursor was taken.

    >>> blocks = [KVCacheBlock(i) for i in range(3)]
    >>> queue = FreeKVCacheBlockQueue(blocks)
    >>> cursor = queue.cursor_for(blocks[0])
    >>> [b.block_id for b in queue.iter_blocks_after(cursor)]
    [1, 2]
    >>> queue.remove(blocks[0])
    >>> queue.append(blocks[0])  # left and came back: a new link generation
    >>> queue.cursor_is_valid(cursor)
    False
    """

    block: KVCacheBlock
    generation: int


@mypyc_attr(allow_interpreted_subclasses=True)
class FreeKVCacheBlockQueue:
    """The free blocks in eviction order, as an intrusive doubly linked list.

    >>> blocks = [KVCacheBlock(i) for i in range(3)]
    >>> queue = FreeKVCacheBlockQueue(blocks)
    >>> queue.popleft().block_id, queue.num_free_blocks
    (0, 2)
    >>> queue.append(blocks[0])  # at the back: evicted last
    >>> [b.block_id for b in queue.get_all_free_blocks()]
    [1, 2, 0]
    >>> queue.append(blocks[0])
    Traceback (most recent call last):
    ...
    evictable.model.errors.BlockAlreadyLinkedError: block already in a free queue: [0]

    The list runs `fake_free_list_head <-> b1 <-> ... <-> bk <-> fake_free_list_tail`.
    The two sentinels are blocks that are never handed out: with them every real
    block always has a non-None neighbour on both sides, so linking and unlinking
    need no special case for the ends, and an empty queue is `head.next is tail`.
    The front (`head.next_free_block`) is the next block to evict.

    Each link stamps the block with the next value of a per-queue counter
    (`link_generation`), and each call that changes the contents or order ends the
    iteration epoch that live iterators check on every step (no-op and failed
    calls change nothing, so they end nothing).

    Pre (every method): the list is well formed (see `check_invariants`).
    Post (every method): it still is; a call that raises changed nothing.
    Complexity: O(1) memory per block (two links, owner, stamp).
    """

    __slots__ = (
        "_epoch",
        "_next_generation",
        "fake_free_list_head",
        "fake_free_list_tail",
        "num_free_blocks",
    )

    def __init__(self, blocks: Sequence[KVCacheBlock]) -> None:
        """Link `blocks` in the given order (the first is the front).

        Pre: no duplicates, none linked elsewhere (else the named error).
        Complexity: O(len(blocks)).
        """
        self.num_free_blocks = 0
        self._next_generation = 0
        self._epoch: _Epoch | None = None
        head = KVCacheBlock(-1)
        tail = KVCacheBlock(-1)
        head.owner = tail.owner = _SENTINEL
        head.next_free_block = tail
        tail.prev_free_block = head
        self.fake_free_list_head = head
        self.fake_free_list_tail = tail
        self._check_can_link(blocks)
        self._link_between(head, tail, blocks)

    # ------------------------------------------------------------ internals

    def _check_can_link(self, blocks: Sequence[KVCacheBlock]) -> None:
        if len(set(blocks)) != len(blocks):
            raise DuplicateBlocksError(repeated(b.block_id for b in blocks))
        for b in blocks:
            if b.owner is not None:
                raise BlockAlreadyLinkedError([b.block_id])

    def _check_linked_here(self, block: KVCacheBlock) -> None:
        owner = block.owner
        if owner is not self:
            if owner is None:
                raise BlockNotLinkedError([block.block_id])
            raise ForeignBlockError([block.block_id])

    def _link_between(
        self, prev: KVCacheBlock, nxt: KVCacheBlock, blocks: Sequence[KVCacheBlock]
    ) -> None:
        """Splice `blocks`, in order, between the adjacent `prev` and `nxt`."""
        if not blocks:
            return
        gen = self._next_generation
        for b in blocks:
            prev.next_free_block = b
            b.prev_free_block = prev
            b.owner = self
            b.link_generation = gen
            gen += 1
            prev = b
        prev.next_free_block = nxt
        nxt.prev_free_block = prev
        self._next_generation = gen
        self.num_free_blocks += len(blocks)
        if self._epoch is not None:
            self._end_epoch()

    # ------------------------------------------------------------ operations

    def popleft(self) -> KVCacheBlock:
        """Unlink and return the front block.

        Pre: the queue is not empty (else `QueueEmptyError`).
        Complexity: O(1).
        """
        head = self.fake_free_list_head
        first = head.next_free_block
        if first is None or first is self.fake_free_list_tail:
            raise QueueEmptyError()
        nxt = first.next_free_block
        if nxt is None:
            raise QueueEmptyError()  # unreachable while well formed
        head.next_free_block = nxt
        nxt.prev_free_block = head
        first.prev_free_block = first.next_free_block = None
        first.owner = None
        self.num_free_blocks -= 1
        if self._epoch is not None:
            self._end_epoch()
        return first

    def popleft_n(self, n: object) -> list[KVCacheBlock]:
        """Unlink and return the `n` front blocks, front first.

        Pre: `n` is an int >= 0 (else `InvalidArgumentError`), at most
        num_free_blocks (else `InsufficientFreeBlocksError`).
        Complexity: O(n).
        """
        n = require_count(n, self.num_free_blocks)  # `object`: validated in both builds
        if n == 0:
            return []
        head = self.fake_free_list_head
        out: list[KVCacheBlock] = []
        node = head.next_free_block
        for _ in range(n):
            if node is None:
                raise QueueEmptyError()  # unreachable while well formed
            out.append(node)
            nxt = node.next_free_block
            node.prev_free_block = node.next_free_block = None
            node.owner = None
            node = nxt
        if node is None:
            raise QueueEmptyError()  # unreachable while well formed
        head.next_free_block = node
        node.prev_free_block = head
        self.num_free_blocks -= n
        if self._epoch is not None:
            self._end_epoch()
        return out

    def remove(self, block: KVCacheBlock) -> None:
        """Unlink `block` from wherever it sits in this queue.

        Pre: `block` is linked in this queue (else `BlockNotLinkedError`, or
        `ForeignBlockError` when it is linked in another one).
        Complexity: O(1).
        """
        if block.owner is not self:
            self._check_linked_here(block)
        prev = block.prev_free_block
        nxt = block.next_free_block
        if prev is None or nxt is None:
            raise BlockNotLinkedError([block.block_id])  # unreachable while well formed
        prev.next_free_block = nxt
        nxt.prev_free_block = prev
        block.prev_free_block = block.next_free_block = None
        block.owner = None
        self.num_free_blocks -= 1
        if self._epoch is not None:
            self._end_epoch()

    def append(self, block: KVCacheBlock) -> None:
        """Link `block` at the back.

        Pre: `block` is not linked in any queue (else `BlockAlreadyLinkedError`).
        Complexity: O(1).
        """
        if block.owner is not None:
            raise BlockAlreadyLinkedError([block.block_id])
        tail = self.fake_free_list_tail
        last = tail.prev_free_block
        if last is None:
            raise BlockNotLinkedError([tail.block_id])  # unreachable while well formed
        last.next_free_block = block
        block.prev_free_block = last
        block.next_free_block = tail
        tail.prev_free_block = block
        block.owner = self
        block.link_generation = self._next_generation
        self._next_generation += 1
        self.num_free_blocks += 1
        if self._epoch is not None:
            self._end_epoch()

    def append_n(self, blocks: Sequence[KVCacheBlock]) -> None:
        """Link `blocks` at the back, in order (the first is evicted first).

        Pre: no duplicates (`DuplicateBlocksError`), none linked anywhere
        (`BlockAlreadyLinkedError`, first offender in input order).
        Complexity: O(len(blocks)).
        """
        self._check_can_link(blocks)
        tail = self.fake_free_list_tail
        last = tail.prev_free_block
        if last is None:
            raise BlockNotLinkedError([tail.block_id])  # unreachable while well formed
        self._link_between(last, tail, blocks)

    def prepend_n(self, blocks: Sequence[KVCacheBlock]) -> None:
        """Link `blocks` at the front, in order (the first becomes the front).

        Pre: as `append_n`.
        Complexity: O(len(blocks)).
        """
        self._check_can_link(blocks)
        head = self.fake_free_list_head
        first = head.next_free_block
        if first is None:
            raise BlockNotLinkedError([head.block_id])  # unreachable while well formed
        self._link_between(head, first, blocks)

    def get_all_free_blocks(self) -> list[KVCacheBlock]:
        """Every linked block, front first.

        Bounded observation: the walk takes at most `num_free_blocks` steps and checks
        every back link, so a broken list (a cycle, a link that does not point back,
        a dangling link, more blocks than the count) raises `InvariantViolationError`
        ("links_well_formed") instead of walking forever. `snapshot` reads the list
        through here.
        Complexity: O(num_free_blocks).
        """
        out: list[KVCacheBlock] = []
        keep = out.append
        tail = self.fake_free_list_tail
        before = self.fake_free_list_head
        node = before.next_free_block
        budget = self.num_free_blocks
        while node is not tail:
            if node is None or node.prev_free_block is not before or not budget:
                raise _broken_list(before, node, self.num_free_blocks)
            budget -= 1
            keep(node)
            before = node
            node = node.next_free_block
        return out

    # ------------------------------------------------------------ cursors

    def cursor_for(self, block: KVCacheBlock) -> Cursor:
        """A cursor on `block`, which must be linked in this queue.

        Pre: `block` linked here (else `BlockNotLinkedError` / `ForeignBlockError`).
        Complexity: O(1).
        """
        self._check_linked_here(block)
        return Cursor(block, block.link_generation)

    def cursor_is_valid(self, cursor: Cursor) -> bool:
        """Whether `cursor` still names the link it was taken from, in this queue.

        Complexity: O(1).
        """
        block = cursor.block
        return block.owner is self and block.link_generation == cursor.generation

    def iter_blocks_after(
        self, cursor: KVCacheBlock | Cursor | None = None
    ) -> Iterator[KVCacheBlock]:
        """The blocks after `cursor` (from the front for None), front to back, lazily.

        Pre: a block cursor is linked in this queue (unlinked: `StaleCursorError`;
        linked in another queue: `ForeignBlockError`); a `Cursor` also still has
        its generation (else `StaleCursorError`). Checked now, at the call.
        Post: the iterator's next step raises `ConcurrentModificationError` once
        the queue has changed since this call.
        Complexity: O(1) for the call, O(1) per step.
        """
        if cursor is None:
            return self._walk(self.fake_free_list_head, self._current_epoch())
        if isinstance(cursor, Cursor):
            start = cursor.block
            if start.owner is self and start.link_generation == cursor.generation:
                return self._walk(start, self._current_epoch())
        else:
            start = cursor
            if start.owner is self:
                return self._walk(start, self._current_epoch())
        # The cursor names no position in this queue: say why.
        owner = start.owner
        if owner is None:
            raise StaleCursorError([start.block_id])
        if owner is not self:
            raise ForeignBlockError([start.block_id])
        raise StaleCursorError([start.block_id])  # linked here, but relinked since

    def _current_epoch(self) -> _Epoch:
        epoch = self._epoch
        if epoch is None:
            epoch = self._epoch = _Epoch()
        return epoch

    def _end_epoch(self) -> None:
        """The queue changed: every iterator created since the last change is dead."""
        epoch = self._epoch
        if epoch is not None:
            epoch.live = False
            self._epoch = None

    def _walk(self, start: KVCacheBlock, epoch: _Epoch) -> Iterator[KVCacheBlock]:
        # Each step first checks that the queue did not change since the call
        # (the epoch is still live), then follows one link. Bounded observation:
        # while the epoch is live the queue holds exactly `num_free_blocks` blocks,
        # so a walk that has not met the tail after that many steps is on a broken
        # list (a cycle), and a link to nothing is one too: it raises instead of
        # looping or yielding None.
        tail = self.fake_free_list_tail
        if not epoch.live:
            raise ConcurrentModificationError()
        before: Any = start
        node: Any = start.next_free_block
        for _ in range(self.num_free_blocks):
            if node is tail:
                return
            if node is None:
                raise _broken_list(before, None, self.num_free_blocks)
            yield node
            if not epoch.live:
                raise ConcurrentModificationError()
            before, node = node, node.next_free_block
        if node is not tail:
            raise _broken_list(node.prev_free_block, node, self.num_free_blocks)

    # ------------------------------------------------------------ introspection

    def snapshot(self) -> FreeQueueSnapshot:
        """The observable state, identical in shape to the model's.

        Complexity: O(num_free_blocks).
        """
        blocks = self.get_all_free_blocks()
        return FreeQueueSnapshot(
            order=tuple(b.block_id for b in blocks),
            stamps=tuple(b.link_generation for b in blocks),
            num_free_blocks=self.num_free_blocks,
        )

    def check_invariants(self) -> None:
        """Raise `InvariantViolationError` naming every broken link property.

        Checks: sentinels at the ends, link symmetry, every linked block owned by
        this queue, no cycle, the count equals the length, stamps distinct and
        below the counter.
        Complexity: O(num_free_blocks).
        """
        problems: list[str] = []
        head, tail = self.fake_free_list_head, self.fake_free_list_tail
        if head.prev_free_block is not None or tail.next_free_block is not None:
            problems.append("sentinel has an outer link")
        seen: set[int] = set()
        node = head
        steps = 0
        while node is not tail:
            nxt = node.next_free_block
            if nxt is None:
                problems.append(f"chain broken after block {node.block_id}")
                break
            if nxt.prev_free_block is not node:
                problems.append(f"prev of block {nxt.block_id} does not point back")
            if nxt is not tail:
                if nxt.owner is not self:
                    problems.append(f"block {nxt.block_id} linked but not owned")
                if id(nxt) in seen:
                    problems.append(f"cycle through block {nxt.block_id}")
                    break
                if not 0 <= nxt.link_generation < self._next_generation:
                    problems.append(f"block {nxt.block_id} has stamp out of range")
                seen.add(id(nxt))
                steps += 1
            node = nxt
        if steps != self.num_free_blocks:
            problems.append(f"count {self.num_free_blocks} != length {steps}")
        stamps = [b.link_generation for b in self.get_all_free_blocks()] if not problems else []
        if len(set(stamps)) != len(stamps):
            problems.append("two links share a stamp")
        if problems:
            raise InvariantViolationError(problems, "free queue invariants broken")
