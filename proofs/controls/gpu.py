"""Seeded broken free queues, block pools and lazy scanners (the GPU side's controls).

Each is a small, realistic deviation from `impl/` (several are what vLLM does): the
lock-step machines of `proofs/lockstep/gpu_machines.py` must refute every one of them.
A deviation through the public interface is a subclass; one inside the class is the
class itself compiled again from `impl/` with the mistake written in (`# BUG`,
`controls.mutant`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import cast

from evictable.impl.block_pool import BlockPool
from evictable.impl.free_queue import Cursor, FreeKVCacheBlockQueue, KVCacheBlock
from evictable.model.errors import InsufficientFreeBlocksError, RefCountUnderflowError
from evictable.proofs.controls.mutant import Edit, lines, mutant

__all__ = ["SEEDED_POOLS", "SEEDED_QUEUES", "RefCountScanner"]

QUEUE, QCLASS = "evictable.impl.free_queue", "FreeKVCacheBlockQueue"
POOL, PCLASS = "evictable.impl.block_pool", "BlockPool"
"""The modules and classes the mutants below are compiled from (`controls.mutant`)."""


class _LinkOnlyCursor(FreeKVCacheBlockQueue):
    """Validates a cursor by membership only: a relinked block still counts (skips)."""

    def iter_blocks_after(
        self, cursor: KVCacheBlock | Cursor | None = None
    ) -> Iterator[KVCacheBlock]:
        if isinstance(cursor, Cursor):
            cursor = cursor.block
        return super().iter_blocks_after(cursor)


class _UnlinkedCursorYieldsNothing(FreeKVCacheBlockQueue):
    """vLLM: a cursor block that left the queue yields nothing (the scan stalls)."""

    def iter_blocks_after(
        self, cursor: KVCacheBlock | Cursor | None = None
    ) -> Iterator[KVCacheBlock]:
        block = cursor.block if isinstance(cursor, Cursor) else cursor
        if block is not None and block.owner is None:
            return iter(())
        return super().iter_blocks_after(cursor)


_IteratorEndsSilently = mutant(
    QUEUE,
    QCLASS,
    Edit(
        f"{QCLASS}._walk",
        lines("""
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
        """),
        lines("""
            tail = self.fake_free_list_tail
            node = start
            while epoch.live:  # BUG: a changed queue ends the walk (vLLM's walk: unbounded)
                nxt = node.next_free_block
                if nxt is tail or nxt is None:
                    return
                yield nxt
                node = nxt
        """),
    ),
    name="_IteratorEndsSilently",
    doc="vLLM: an iterator whose queue changed just ends instead of raising.",
)


_AppendNWithoutDuplicateCheck = mutant(
    QUEUE,
    QCLASS,
    Edit(
        f"{QCLASS}.append_n",
        lines("""
            self._check_can_link(blocks)
            tail = self.fake_free_list_tail
            last = tail.prev_free_block
            if last is None:
                raise BlockNotLinkedError([tail.block_id])  # unreachable while well formed
            self._link_between(last, tail, blocks)
        """),
        lines("""
            for b in blocks:  # BUG: no duplicate check (nor of this queue's own blocks)
                if b.owner is not None and b.owner is not self:
                    raise BlockAlreadyLinkedError([b.block_id])
            tail = self.fake_free_list_tail
            last = tail.prev_free_block
            if last is not None:
                self._link_between(last, tail, blocks)
        """),
    ),
    name="_AppendNWithoutDuplicateCheck",
    doc="Links duplicates inside one `append_n` (the list gets corrupted).",
)

_PrependNReversed = mutant(
    QUEUE,
    QCLASS,
    Edit(
        f"{QCLASS}.prepend_n",
        lines("""
            head = self.fake_free_list_head
            first = head.next_free_block
            if first is None:
                raise BlockNotLinkedError([head.block_id])  # unreachable while well formed
            self._link_between(head, first, blocks)
        """),
        lines("""
            for b in blocks:  # BUG: one at a time, which reverses the order
                head = self.fake_free_list_head
                first = head.next_free_block
                if first is not None:
                    self._link_between(head, first, [b])
        """),
    ),
    name="_PrependNReversed",
    doc="Prepends one block at a time, which reverses the given order.",
)


class _AppendNNotAtomic(FreeKVCacheBlockQueue):
    """Links block by block and stops at the first linked one (partial change)."""

    def append_n(self, blocks: Sequence[KVCacheBlock]) -> None:
        for b in blocks:
            self.append(b)


_FailedCallCountsAsChange = mutant(
    QUEUE,
    QCLASS,
    Edit(
        f"{QCLASS}.remove",
        lines("""
            if block.owner is not self:
                self._check_linked_here(block)
        """),
        lines("""
            self._end_epoch()  # BUG: before validating
            if block.owner is not self:
                self._check_linked_here(block)
        """),
    ),
    Edit(
        f"{QCLASS}.append",
        lines("""
            if block.owner is not None:
                raise BlockAlreadyLinkedError([block.block_id])
        """),
        lines("""
            self._end_epoch()  # BUG: before validating
            if block.owner is not None:
                raise BlockAlreadyLinkedError([block.block_id])
        """),
    ),
    name="_FailedCallCountsAsChange",
    doc="Ends the iteration epoch before validating (a failed call kills iterators).",
)

_PrependTrustsOwnBlocks = mutant(
    QUEUE,
    QCLASS,
    Edit(
        f"{QCLASS}.prepend_n",
        lines("""
            self._check_can_link(blocks)
            head = self.fake_free_list_head
            first = head.next_free_block
            if first is None:
                raise BlockNotLinkedError([head.block_id])  # unreachable while well formed
            self._link_between(head, first, blocks)
        """),
        lines("""
            if len(set(blocks)) != len(blocks):
                raise DuplicateBlocksError(repeated(b.block_id for b in blocks))
            for b in blocks:
                if b.owner is not None and b.owner is not self:  # BUG: self not refused
                    raise BlockAlreadyLinkedError([b.block_id])
            head = self.fake_free_list_head
            first = head.next_free_block
            if first is not None:
                self._link_between(head, first, blocks)
        """),
    ),
    name="_PrependTrustsOwnBlocks",
    doc="""`prepend_n` refuses a block linked in another queue but not one already linked
    in this queue: prepending it again links it twice, and a walk of the list would
    circle forever (a broken list must be reported, not walked).""",
)

_PrependKeepsIteratorsAlive = mutant(
    QUEUE,
    QCLASS,
    Edit(
        f"{QCLASS}.prepend_n",
        lines("self._link_between(head, first, blocks)"),
        lines("""
            epoch = self._epoch
            self._link_between(head, first, blocks)
            if epoch is not None and blocks:  # BUG: the epoch revived
                epoch.live = True
                self._epoch = epoch
        """),
    ),
    name="_PrependKeepsIteratorsAlive",
    doc="""`prepend_n` changes the queue but keeps live iterators alive (it forgets to end
    the iteration epoch): an iterator walks on over a list that changed under it.""",
)


class _CountErrorSwapsArguments(FreeKVCacheBlockQueue):
    """`popleft_n` past the count raises the right error with its two numbers swapped
    (requested and available): an error whose attributes lie."""

    def popleft_n(self, n: object) -> list[KVCacheBlock]:
        if type(n) is int and n > self.num_free_blocks:
            raise InsufficientFreeBlocksError(self.num_free_blocks, n)  # BUG: swapped
        return super().popleft_n(n)


class _NegativeCountIsInsufficient(FreeKVCacheBlockQueue):
    """`popleft_n(-1)` says there are not enough free blocks instead of refusing the
    count as a bad argument (what this project's queue once did)."""

    def popleft_n(self, n: object) -> list[KVCacheBlock]:
        if type(n) is int and n < 0:
            raise InsufficientFreeBlocksError(n, self.num_free_blocks)  # BUG: wrong error
        return super().popleft_n(n)


_ConstructorLinksUnchecked = mutant(
    QUEUE,
    QCLASS,
    Edit(
        f"{QCLASS}.__init__",
        lines("self._check_can_link(blocks)"),
        lines("blocks = list(blocks)  # BUG: no _check_can_link"),
    ),
    name="_ConstructorLinksUnchecked",
    doc="""The constructor links its blocks without checking them: duplicates, and blocks
    linked in another queue, are linked again (both lists get corrupted).""",
)


SEEDED_QUEUES: dict[str, Callable[[Sequence[KVCacheBlock]], FreeKVCacheBlockQueue]] = {
    "cursor_checked_by_link_only": _LinkOnlyCursor,
    "unlinked_cursor_yields_nothing": _UnlinkedCursorYieldsNothing,
    "iterator_ends_silently": _IteratorEndsSilently,
    "append_n_without_duplicate_check": _AppendNWithoutDuplicateCheck,
    "prepend_n_reversed": _PrependNReversed,
    "append_n_not_atomic": _AppendNNotAtomic,
    "failed_call_counts_as_change": _FailedCallCountsAsChange,
    "prepend_trusts_own_blocks": _PrependTrustsOwnBlocks,
    "prepend_keeps_iterators_alive": _PrependKeepsIteratorsAlive,
    "count_error_swaps_arguments": _CountErrorSwapsArguments,
    "negative_count_is_insufficient": _NegativeCountIsInsufficient,
    "constructor_links_unchecked": _ConstructorLinksUnchecked,
}


_DoubleFreeUnchecked = mutant(
    POOL,
    PCLASS,
    Edit(
        f"{PCLASS}.free_blocks",
        lines("""
            real = [b for b in blocks if not b.is_null]
            if len(set(real)) != len(real):
                raise DuplicateBlocksError(repeated(b.block_id for b in real))
            for b in real:
                if b.ref_cnt <= 0:
                    raise rejection_error(GPU_MACHINE, _FREE, GpuEvent.FREE, b.block_id)
            to_front: list[KVCacheBlock] = []
            to_back: list[KVCacheBlock] = []
            for b in real:
                b.ref_cnt -= 1
                if b.ref_cnt == 0:
                    if b.block_hash is None:
                        to_front.append(b)
                    else:
                        to_back.append(b)
            queue = self.free_block_queue
            if to_front:
                queue.prepend_n(to_front)
            if to_back:
                queue.append_n(to_back)
        """),
        lines("""
            for b in blocks:  # BUG: one block at a time, so a block listed twice is freed twice
                if b.is_null:
                    continue
                if b.ref_cnt <= 0:
                    raise RefCountUnderflowError(block_ids=[b.block_id])
                b.ref_cnt -= 1
                if b.ref_cnt == 0:
                    if b.block_hash is None:
                        self.free_block_queue.prepend_n([b])
                    else:
                        self.free_block_queue.append(b)
        """),
    ),
    name="_DoubleFreeUnchecked",
    doc="vLLM: a block listed twice in one free is decremented twice.",
    namespace={"RefCountUnderflowError": RefCountUnderflowError},
)


class _FreeAllToBack(BlockPool):
    """Appends every freed block at the back, hashed or not."""

    def free_blocks(self, blocks: Sequence[KVCacheBlock]) -> None:
        real = [b for b in blocks if not b.is_null]
        if len(set(real)) != len(real) or any(b.ref_cnt <= 0 for b in real):
            super().free_blocks(blocks)
            return
        for b in real:
            b.ref_cnt -= 1
        self.free_block_queue.append_n([b for b in real if b.ref_cnt == 0])


class _AllocateKeepsHash(BlockPool):
    """Reuses a block without evicting its prefix-cache entry."""

    def get_new_blocks(self, n: object) -> list[KVCacheBlock]:
        free = self.free_block_queue.get_all_free_blocks()
        hashes = [b.block_hash for b in free[: cast(int, n)]]  # a bad `n`: as before
        out = super().get_new_blocks(n)
        for b, h in zip(out, hashes, strict=True):
            if h is not None:
                b.block_hash = h
                self.cached_block_hash_to_block.setdefault(h, {})[b.block_id] = b
        return out


_TouchSkipsQueue = mutant(
    POOL,
    PCLASS,
    Edit(
        f"{PCLASS}.touch",
        lines(
            """
            if b.ref_cnt == 0:
                queue.remove(b)
            b.ref_cnt += 1
        """,
            12,
        ),
        lines("b.ref_cnt += 1  # BUG: a free block stays in the queue", 12),
    ),
    name="_TouchSkipsQueue",
    doc="A prefix hit that increments the ref count but leaves the block in the queue.",
)

_CachesFreeBlock = mutant(
    POOL,
    PCLASS,
    Edit(
        f"{PCLASS}.cache_block",
        lines("if block.ref_cnt == 0:"),
        lines(
            "if block.ref_cnt == 0 and block.block_hash is not None:  # BUG: a free block is hashed"
        ),
    ),
    name="_CachesFreeBlock",
    doc="""vLLM's pool never checks: a free block is hashed in place (where a lazy offload
    scan may already have passed it).""",
)


class _NumFreeCountsNull(BlockPool):
    """`get_num_free_blocks` counts the blocks at ref 0 -- the null block among them --
    instead of asking the free queue: one too many."""

    def get_num_free_blocks(self) -> int:
        return sum(1 for b in self.blocks if b.ref_cnt == 0)  # BUG: the null block counts


class _SizeCoercedWithInt(BlockPool):
    """The constructor coerces its size with `int()`: `BlockPool(True)`, `BlockPool(2.0)`
    and `BlockPool("3")` are accepted instead of refused."""

    def __init__(self, num_blocks: int, enable_caching: bool = True) -> None:
        super().__init__(int(num_blocks), enable_caching)  # BUG: coerced, not checked


SEEDED_POOLS: dict[str, Callable[[int], BlockPool]] = {
    "double_free_unchecked": _DoubleFreeUnchecked,
    "free_all_to_back": _FreeAllToBack,
    "allocate_keeps_hash": _AllocateKeepsHash,
    "touch_skips_queue": _TouchSkipsQueue,
    "caches_free_block": _CachesFreeBlock,
    "num_free_counts_null": _NumFreeCountsNull,
    "size_coerced_with_int": _SizeCoercedWithInt,
}


RefCountScanner = mutant(
    "evictable.impl.lazy_offload",
    "LazyOffloadScanner",
    Edit(
        "LazyOffloadScanner.step",
        lines("capacity = self._capacity_now()"),
        lines("""
            c = self._cursor
            queue = self.pool.free_block_queue
            if c is not None and c.block.ref_cnt == 0 and c.block.owner is queue:
                self._cursor = Cursor(c.block, c.block.link_generation)  # BUG: vLLM's rule
            capacity = self._capacity_now()
        """),
    ),
    name="RefCountScanner",
    doc="""Deliberately broken (a negative control): trusts a cursor whose block has
    ref_cnt 0 and is linked, wherever it is now -- vLLM's rule.""",
)
