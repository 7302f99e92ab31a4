"""Seeded broken free queues, block pools and lazy scanners (the GPU side's controls).

Each is a small, realistic deviation from `impl/` (several are what vLLM does): the
lock-step machines of `proofs/lockstep/gpu_machines.py` must refute every one of them.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence

from evictable.impl.block_pool import BlockPool
from evictable.impl.free_queue import Cursor, FreeKVCacheBlockQueue, KVCacheBlock, _Epoch
from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.model.errors import (
    BlockAlreadyLinkedError,
    DuplicateBlocksError,
    InsufficientFreeBlocksError,
    RefCountUnderflowError,
)
from evictable.model.free_queue import repeated

__all__ = ["SEEDED_POOLS", "SEEDED_QUEUES", "RefCountScanner"]


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


class _IteratorEndsSilently(FreeKVCacheBlockQueue):
    """vLLM: an iterator whose queue changed just ends instead of raising."""

    def _walk(self, start: KVCacheBlock, epoch: _Epoch) -> Iterator[KVCacheBlock]:
        tail = self.fake_free_list_tail
        node = start
        while epoch.live:
            nxt = node.next_free_block
            if nxt is tail or nxt is None:
                return
            yield nxt
            node = nxt


class _AppendNWithoutDuplicateCheck(FreeKVCacheBlockQueue):
    """Links duplicates inside one `append_n` (the list gets corrupted)."""

    def append_n(self, blocks: Sequence[KVCacheBlock]) -> None:
        for b in blocks:
            if b.owner is not None and b.owner is not self:
                raise BlockAlreadyLinkedError([b.block_id])
        tail = self.fake_free_list_tail
        last = tail.prev_free_block
        if last is not None:
            self._link_between(last, tail, blocks)


class _PrependNReversed(FreeKVCacheBlockQueue):
    """Prepends one block at a time, which reverses the given order."""

    def prepend_n(self, blocks: Sequence[KVCacheBlock]) -> None:
        self._check_can_link(blocks)
        for b in blocks:
            head = self.fake_free_list_head
            first = head.next_free_block
            if first is not None:
                self._link_between(head, first, [b])


class _AppendNNotAtomic(FreeKVCacheBlockQueue):
    """Links block by block and stops at the first linked one (partial change)."""

    def append_n(self, blocks: Sequence[KVCacheBlock]) -> None:
        for b in blocks:
            self.append(b)


class _FailedCallCountsAsChange(FreeKVCacheBlockQueue):
    """Ends the iteration epoch before validating (a failed call kills iterators)."""

    def remove(self, block: KVCacheBlock) -> None:
        self._end_epoch()
        super().remove(block)

    def append(self, block: KVCacheBlock) -> None:
        self._end_epoch()
        super().append(block)


class _PrependTrustsOwnBlocks(FreeKVCacheBlockQueue):
    """`prepend_n` refuses a block linked in another queue but not one already linked
    in this queue: prepending it again links it twice, and a walk of the list would
    circle forever (a broken list must be reported, not walked)."""

    def prepend_n(self, blocks: Sequence[KVCacheBlock]) -> None:
        if len(set(blocks)) != len(blocks):
            raise DuplicateBlocksError(repeated(b.block_id for b in blocks))
        for b in blocks:
            if b.owner is not None and b.owner is not self:  # BUG: self not refused
                raise BlockAlreadyLinkedError([b.block_id])
        head = self.fake_free_list_head
        first = head.next_free_block
        if first is not None:
            self._link_between(head, first, blocks)


class _PrependKeepsIteratorsAlive(FreeKVCacheBlockQueue):
    """`prepend_n` changes the queue but keeps live iterators alive (it forgets to end
    the iteration epoch): an iterator walks on over a list that changed under it."""

    def prepend_n(self, blocks: Sequence[KVCacheBlock]) -> None:
        epoch = self._epoch
        super().prepend_n(blocks)
        if epoch is not None and blocks:  # BUG: the epoch revived
            epoch.live = True
            self._epoch = epoch


class _CountErrorSwapsArguments(FreeKVCacheBlockQueue):
    """`popleft_n` past the count raises the right error with its two numbers swapped
    (requested and available): an error whose attributes lie."""

    def popleft_n(self, n: int) -> list[KVCacheBlock]:
        if type(n) is int and n > self.num_free_blocks:
            raise InsufficientFreeBlocksError(self.num_free_blocks, n)  # BUG: swapped
        return super().popleft_n(n)


class _NegativeCountIsInsufficient(FreeKVCacheBlockQueue):
    """`popleft_n(-1)` says there are not enough free blocks instead of refusing the
    count as a bad argument (what this project's queue once did)."""

    def popleft_n(self, n: int) -> list[KVCacheBlock]:
        if type(n) is int and n < 0:
            raise InsufficientFreeBlocksError(n, self.num_free_blocks)  # BUG: wrong error
        return super().popleft_n(n)


class _ConstructorLinksUnchecked(FreeKVCacheBlockQueue):
    """The constructor links its blocks without checking them: duplicates, and blocks
    linked in another queue, are linked again (both lists get corrupted)."""

    def __init__(self, blocks: Sequence[KVCacheBlock]) -> None:
        super().__init__(())
        head, tail = self.fake_free_list_head, self.fake_free_list_tail
        self._link_between(head, tail, list(blocks))  # BUG: no _check_can_link


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


class _DoubleFreeUnchecked(BlockPool):
    """vLLM: a block listed twice in one free is decremented twice."""

    def free_blocks(self, blocks: Sequence[KVCacheBlock]) -> None:
        self._check_ours(blocks)
        for b in blocks:
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

    def get_new_blocks(self, n: int) -> list[KVCacheBlock]:
        hashes = [b.block_hash for b in self.free_block_queue.get_all_free_blocks()[:n]]
        out = super().get_new_blocks(n)
        for b, h in zip(out, hashes, strict=True):
            if h is not None:
                b.block_hash = h
                self.cached_block_hash_to_block.setdefault(h, {})[b.block_id] = b
        return out


class _TouchSkipsQueue(BlockPool):
    """A prefix hit that increments the ref count but leaves the block in the queue."""

    def touch(self, blocks: Sequence[KVCacheBlock]) -> None:
        self._check_ours(blocks)
        for b in blocks:
            if not b.is_null:
                b.ref_cnt += 1


class _CachesFreeBlock(BlockPool):
    """vLLM's pool never checks: a free block is hashed in place (where a lazy offload
    scan may already have passed it)."""

    def cache_block(self, block: KVCacheBlock, block_hash: Hashable) -> None:
        if (
            block.ref_cnt != 0
            or block.is_null
            or block_hash is None
            or block.block_hash is not None
            or not self.enable_caching
        ):
            super().cache_block(block, block_hash)
            return
        self._check_ours([block])
        block.block_hash = block_hash
        self.cached_block_hash_to_block.setdefault(block_hash, {})[block.block_id] = block


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


class RefCountScanner(LazyOffloadScanner):
    """Deliberately broken (a negative control): trusts a cursor whose block has
    ref_cnt 0 and is linked, wherever it is now -- vLLM's rule."""

    def step(self) -> list[KVCacheBlock]:
        c = self._cursor
        if c is not None and c.block.ref_cnt == 0 and c.block.owner is self.pool.free_block_queue:
            self._cursor = Cursor(c.block, c.block.link_generation)
        return super().step()
