"""The GPU block pool: allocation, prefix-hit touch, free, and prefix caching.

Checked in lock-step against `model/block_pool.py` (the specification). Strict:
a duplicate block in one `free_blocks` call (a double free), a free at ref 0, or
caching a free block is a named error raised before anything changes.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from evictable.impl._compat import mypyc_attr
from evictable.impl.free_queue import FreeKVCacheBlockQueue, KVCacheBlock
from evictable.model.block_pool import (
    BlockPoolSnapshot,
    check_pool_snapshot,
    require_pool_size,
)
from evictable.model.errors import (
    DuplicateBlocksError,
    ForeignBlockError,
    InvalidArgumentError,
    InvariantViolationError,
)
from evictable.model.free_queue import repeated
from evictable.model.lifecycle import GPU_MACHINE, GpuEvent, GpuState, Phase, rejection_error

__all__ = ["BlockPool"]

_FREE = Phase(GpuState.FREE, 0)
"""A block in the free queue: freeing it is the table's `RefCountUnderflowError`."""


@mypyc_attr(allow_interpreted_subclasses=True)
class BlockPool:
    """GPU KV-cache blocks: the null block, the free queue, the prefix-cache map.

    >>> pool = BlockPool(4)  # block 0 is the null block
    >>> pool.get_num_free_blocks()
    3
    >>> [block] = pool.get_new_blocks(1)
    >>> block.block_id, block.ref_cnt
    (1, 1)
    >>> pool.cache_block(block, "h")
    >>> pool.free_blocks([block])  # hashed: back of the queue
    >>> [b.block_id for b in pool.free_block_queue.get_all_free_blocks()]
    [2, 3, 1]
    >>> pool.get_cached_block("h") is block
    True

    Invariant: for every non-null block, linked in `free_block_queue` ⇔
    ref_cnt == 0, and ref_cnt >= 0; the null block (block 0) is never linked.
    Complexity: O(num_blocks) memory.
    """

    __slots__ = (
        "blocks",
        "cached_block_hash_to_block",
        "enable_caching",
        "free_block_queue",
        "null_block",
        "num_blocks",
    )

    def __init__(self, num_blocks: object, enable_caching: object = True) -> None:
        """Create `num_blocks` blocks; block 0 is the null block, the rest are free.

        Pre: `num_blocks` is an int >= 1 (else `InvalidArgumentError`).
        Complexity: O(num_blocks).
        """
        size = require_pool_size(num_blocks)  # `object`: validated alike in both builds
        self.num_blocks = size
        self.enable_caching = bool(enable_caching)
        self.blocks = [KVCacheBlock(i) for i in range(size)]
        self.null_block = self.blocks[0]
        self.null_block.is_null = True
        self.free_block_queue = FreeKVCacheBlockQueue(self.blocks[1:])
        self.cached_block_hash_to_block: dict[Hashable, dict[int, KVCacheBlock]] = {}

    # ------------------------------------------------------------ internals

    def _check_ours(self, blocks: Sequence[KVCacheBlock]) -> None:
        pool = self.blocks
        n = self.num_blocks
        for b in blocks:
            i = b.block_id
            if not 0 <= i < n or pool[i] is not b:
                raise ForeignBlockError([i])

    def _evict_hash(self, block: KVCacheBlock) -> None:
        h = block.block_hash
        if h is None:
            return
        holders = self.cached_block_hash_to_block[h]
        del holders[block.block_id]
        if not holders:
            del self.cached_block_hash_to_block[h]
        block.block_hash = None

    # ------------------------------------------------------------ operations

    def get_num_free_blocks(self) -> int:
        """The number of blocks in the free queue. Complexity: O(1)."""
        return self.free_block_queue.num_free_blocks

    def get_new_blocks(self, n: object) -> list[KVCacheBlock]:
        """Allocate the `n` front blocks of the free queue, front first.

        Pre: `n` an int >= 0 (else `InvalidArgumentError`), at most the free blocks
        (else `InsufficientFreeBlocksError`).
        Post: each returned block has ref_cnt 1 and no hash (its cache entry evicted).
        Complexity: O(n).
        """
        out = self.free_block_queue.popleft_n(n)  # validates `n` (`require_count`) first
        for b in out:
            if b.block_hash is not None:
                self._evict_hash(b)
            b.ref_cnt = 1
        return out

    def touch(self, blocks: Sequence[KVCacheBlock]) -> None:
        """A prefix hit: each block gains a reference; a free one leaves the queue.

        Pre: every block belongs to this pool (else `ForeignBlockError`).
        Post: the null block is unchanged.
        Complexity: O(len(blocks)).
        """
        self._check_ours(blocks)
        queue = self.free_block_queue
        for b in blocks:
            if b.is_null:
                continue
            if b.ref_cnt == 0:
                queue.remove(b)
            b.ref_cnt += 1

    def free_blocks(self, blocks: Sequence[KVCacheBlock]) -> None:
        """Release one reference of each block, given in eviction-priority order.

        Pre: every block belongs to this pool (`ForeignBlockError`), no non-null
        block twice (`DuplicateBlocksError`), none at ref 0
        (`RefCountUnderflowError`, first offender in input order).
        Post: a block reaching 0 is linked at the back if hashed, at the front if
        not, keeping the given order in both groups; the null block is ignored.
        Complexity: O(len(blocks)).
        """
        self._check_ours(blocks)
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

    def cache_block(self, block: KVCacheBlock, block_hash: Hashable) -> None:
        """Record that `block` holds the content named `block_hash`.

        Pre, checked in this order (else `ForeignBlockError`, then
        `InvalidArgumentError`; nothing changed): `block` of this pool, caching
        enabled, not the null block, `block_hash` not None, `block` in use
        (ref_cnt >= 1: a free block is refused, since hashed in place it could sit
        behind a lazy offload scanner's cursor), not already hashed.
        Complexity: O(1).
        """
        self._check_ours([block])
        bid = block.block_id
        if not self.enable_caching:
            raise InvalidArgumentError(f"prefix caching is disabled (block {bid})")
        if block.is_null:
            raise InvalidArgumentError("the null block (block 0) cannot be cached")
        if block_hash is None:
            raise InvalidArgumentError(f"block hash for block {bid} must not be None")
        if block.ref_cnt == 0:
            raise InvalidArgumentError(
                f"cannot cache a free block: block {bid} has ref_cnt 0 "
                "(blocks are cached only while in use)"
            )
        if block.block_hash is not None:
            raise InvalidArgumentError(f"block {bid} is already cached")
        block.block_hash = block_hash
        holders = self.cached_block_hash_to_block.get(block_hash)
        if holders is None:
            self.cached_block_hash_to_block[block_hash] = {bid: block}
        else:
            holders[bid] = block

    def get_cached_block(self, block_hash: Hashable) -> KVCacheBlock | None:
        """The first block cached under `block_hash`, or None. Complexity: O(1)."""
        holders = self.cached_block_hash_to_block.get(block_hash)
        if not holders:
            return None
        return next(iter(holders.values()))

    def reset_prefix_cache(self) -> bool:
        """Forget every hash if no block is in use; return whether it did.

        Complexity: O(num_blocks).
        """
        if self.free_block_queue.num_free_blocks != self.num_blocks - 1:
            return False
        for b in self.blocks:
            b.block_hash = None
        self.cached_block_hash_to_block.clear()
        return True

    # ------------------------------------------------------------ introspection

    def snapshot(self) -> BlockPoolSnapshot:
        """The observable state, identical in shape to the model's.

        Complexity: O(num_blocks).
        """
        return BlockPoolSnapshot(
            num_blocks=self.num_blocks,
            enable_caching=self.enable_caching,
            ref_cnts=tuple(b.ref_cnt for b in self.blocks),
            block_hashes=tuple(b.block_hash for b in self.blocks),
            free_queue=self.free_block_queue.snapshot(),
            cached=frozenset(
                (h, tuple(holders)) for h, holders in self.cached_block_hash_to_block.items()
            ),
        )

    def check_invariants(self) -> None:
        """Raise `InvariantViolationError` naming every broken pool or queue invariant.

        Complexity: O(num_blocks).
        """
        self.free_block_queue.check_invariants()
        problems = list(check_pool_snapshot(self.snapshot()))
        for b in self.blocks:
            linked = b.owner is self.free_block_queue
            if linked != (b.ref_cnt == 0 and not b.is_null):
                problems.append(f"block {b.block_id}: linked={linked}, ref_cnt={b.ref_cnt}")
        if self.blocks[0] is not self.null_block or not self.null_block.is_null:
            problems.append("block 0 is not the null block")
        if any(b.is_null for b in self.blocks[1:]):
            problems.append("a non-zero block is marked null")
        if problems:
            raise InvariantViolationError(problems, "block pool invariants broken")
