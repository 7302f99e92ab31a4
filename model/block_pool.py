"""The GPU block pool as a specification: block ids, phases, hashes, the free list.

Block 0 is the null block: shared, never counted, never in the free queue. Every
other block has a lifecycle phase from `model.lifecycle.GPU_MACHINE` (FREE with
ref 0, IN_USE with ref n >= 1). Every ref-count change is one `step` of that
table, and every free-queue membership change is the hook `derive_hook` derives
for that step: the flag "in free queue" turning on links the block (at the back
when it has a hash, at the front when not), turning off unlinks it.

Prefix caching maps a block hash to the blocks that hold it, in the order they
were cached; `get_cached_block` answers with the first. Only a block in use can be
cached (as in vLLM, where a request's full blocks are hashed while it holds them):
a free block is refused. Allocating a block that has a hash evicts it from that map.

Every event validates all of its input before it changes anything.

Written for clarity, not speed: `impl/block_pool.py` is the fast path, checked
against this model in lock-step.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

from evictable.model.errors import (
    DuplicateBlocksError,
    ForeignBlockError,
    InvalidArgumentError,
)
from evictable.model.free_queue import (
    FreeQueueSnapshot,
    ModelFreeQueue,
    check_queue_snapshot,
    repeated,
    require_count,
)
from evictable.model.lifecycle import (
    GPU_MACHINE,
    GpuEvent,
    GpuState,
    Hook,
    Phase,
    derive_hook,
    step,
)
from evictable.model.types import BlockId

__all__ = [
    "NULL_BLOCK_ID",
    "POOL_INVARIANTS",
    "BlockPoolSnapshot",
    "ModelBlockPool",
    "check_pool_snapshot",
    "fire",
    "require_pool_size",
]

NULL_BLOCK_ID = BlockId(0)


@dataclass(frozen=True)
class BlockPoolSnapshot:
    """Everything observable about a block pool, identical in shape for model and impl.

    `ref_cnts` and `block_hashes` are indexed by block id (the null block is id 0);
    `cached` pairs each cached hash with its block ids in caching order.
    """

    num_blocks: int
    enable_caching: bool
    ref_cnts: tuple[int, ...]
    block_hashes: tuple[Hashable | None, ...]
    free_queue: FreeQueueSnapshot
    cached: frozenset[tuple[Hashable, tuple[int, ...]]]


def require_pool_size(num_blocks: object) -> int:
    """Guard for a pool size: an int (not a bool), at least 1 (the null block)."""
    if not isinstance(num_blocks, int) or isinstance(num_blocks, bool) or num_blocks < 1:
        raise InvalidArgumentError(
            f"num_blocks must be an int >= 1 (block 0 is the null block), got {num_blocks!r}"
        )
    return num_blocks


def fire(phase: Phase, event: GpuEvent, block_id: BlockId) -> tuple[Phase, Hook]:
    """One GPU table step and the hook it owes (both derived from the table)."""
    after = step(GPU_MACHINE, phase, event, block_id)
    for t in GPU_MACHINE.transitions_from(phase.state, event):
        if t.guard.holds(phase.ref):
            return after, derive_hook(GPU_MACHINE, t)
    return after, Hook.NONE


class ModelBlockPool:
    """The pool: one phase per block id, hashes, the cache map, the free queue."""

    def __init__(self, num_blocks: int, enable_caching: bool = True) -> None:
        # Block 0 is the null block, so a pool has at least one block.
        require_pool_size(num_blocks)
        self.num_blocks = num_blocks
        self.enable_caching = bool(enable_caching)
        self.phase: dict[BlockId, Phase] = {NULL_BLOCK_ID: Phase(GpuState.NULL, 0)}
        for i in range(1, num_blocks):
            self.phase[BlockId(i)] = Phase(GpuState.FREE, 0)
        self.block_hash: dict[BlockId, Hashable] = {}
        self.cached: dict[Hashable, list[BlockId]] = {}
        self.free_queue = ModelFreeQueue([BlockId(i) for i in range(1, num_blocks)])

    # ------------------------------------------------------------ guards

    def _check_ours(self, block_ids: Sequence[BlockId]) -> None:
        # Every id names a block of this pool.
        for b in block_ids:
            if not (isinstance(b, int) and 0 <= b < self.num_blocks):
                raise ForeignBlockError([b])

    def _apply_hook(self, block_id: BlockId, hook: Hook) -> None:
        # Only the unlinking hook is applied one block at a time (see `free_blocks`).
        if hook is Hook.FLAG_OFF:
            self.free_queue.remove(block_id)

    def _evict_hash(self, block_id: BlockId) -> None:
        h = self.block_hash.pop(block_id, None)
        if h is not None:
            self.cached[h].remove(block_id)
            if not self.cached[h]:
                del self.cached[h]

    # ------------------------------------------------------------ events

    def get_num_free_blocks(self) -> int:
        return self.free_queue.num_free_blocks

    def ref_cnt(self, block_id: BlockId) -> int:
        """A block's ref count (every GPU state has one)."""
        ref = self.phase[block_id].ref
        return 0 if ref is None else ref

    def get_new_blocks(self, n: int) -> list[BlockId]:
        """Allocate the `n` front blocks of the free queue, front first.

        Each one loses its cached hash (that is eviction) and gets ref 1.
        """
        # `n` must be a count the free queue can satisfy.
        require_count(n, self.free_queue.num_free_blocks)
        taken = self.free_queue.get_all_free_blocks()[:n]
        for b in taken:
            self._evict_hash(b)
            self.phase[b], hook = fire(self.phase[b], GpuEvent.ALLOCATE, b)
            self._apply_hook(b, hook)
        return taken

    def touch(self, block_ids: Sequence[BlockId]) -> None:
        """A prefix hit: each block gains a reference; a free one leaves the queue."""
        # Every id names a block of this pool.
        self._check_ours(block_ids)
        for b in block_ids:
            self.phase[b], hook = fire(self.phase[b], GpuEvent.TOUCH, b)
            self._apply_hook(b, hook)

    def free_blocks(self, block_ids: Sequence[BlockId]) -> None:
        """Release one reference of each block, given in eviction-priority order.

        A block reaching ref 0 rejoins the free queue: hashed blocks at the back
        (in the given order), unhashed ones at the front (in the given order, the
        first becoming the front). The null block is ignored.
        """
        # Every id names a block of this pool.
        self._check_ours(block_ids)
        # A block cannot be freed twice in one call (the null block is shared).
        twice = repeated(b for b in block_ids if b != NULL_BLOCK_ID)
        if twice:
            raise DuplicateBlocksError(twice)
        # No block may drop below ref 0 (the table rejects FREE on a free block).
        for b in block_ids:
            step(GPU_MACHINE, self.phase[b], GpuEvent.FREE, b)
        to_front: list[BlockId] = []
        to_back: list[BlockId] = []
        for b in block_ids:
            self.phase[b], hook = fire(self.phase[b], GpuEvent.FREE, b)
            if hook is Hook.FLAG_ON:
                (to_back if b in self.block_hash else to_front).append(b)
        self.free_queue.prepend_n(to_front)
        self.free_queue.append_n(to_back)

    def cache_block(self, block_id: BlockId, block_hash: Hashable) -> None:
        """Record that `block_id` holds the content named `block_hash`."""
        # The id names a block of this pool.
        self._check_ours([block_id])
        # Caching must be on.
        if not self.enable_caching:
            raise InvalidArgumentError(f"prefix caching is disabled (block {block_id})")
        # The null block holds no content.
        if block_id == NULL_BLOCK_ID:
            raise InvalidArgumentError("the null block (block 0) cannot be cached")
        # None is not a hash.
        if block_hash is None:
            raise InvalidArgumentError(f"block hash for block {block_id} must not be None")
        # Only a block a request holds gets content: a free block hashed in place could
        # sit behind a lazy offload scanner's cursor, where no cursor-based scan sees it.
        if self.phase[block_id].state is GpuState.FREE:
            raise InvalidArgumentError(
                f"cannot cache a free block: block {block_id} has ref_cnt 0 "
                "(blocks are cached only while in use)"
            )
        # A block is cached under one hash at a time.
        if block_id in self.block_hash:
            raise InvalidArgumentError(f"block {block_id} is already cached")
        self.block_hash[block_id] = block_hash
        self.cached.setdefault(block_hash, []).append(block_id)

    def get_cached_block(self, block_hash: Hashable) -> BlockId | None:
        """The first block cached under `block_hash`, or None."""
        holders = self.cached.get(block_hash)
        return holders[0] if holders else None

    def reset_prefix_cache(self) -> bool:
        """Forget every hash, if no block is in use; report whether it did."""
        # Blocks in use may be shared by hash: refuse (and change nothing).
        if any(p.state is GpuState.IN_USE for p in self.phase.values()):
            return False
        self.block_hash.clear()
        self.cached.clear()
        return True

    def snapshot(self) -> BlockPoolSnapshot:
        ids = [BlockId(i) for i in range(self.num_blocks)]
        return BlockPoolSnapshot(
            num_blocks=self.num_blocks,
            enable_caching=self.enable_caching,
            ref_cnts=tuple(self.ref_cnt(b) for b in ids),
            block_hashes=tuple(self.block_hash.get(b) for b in ids),
            free_queue=self.free_queue.snapshot(),
            cached=frozenset((h, tuple(bs)) for h, bs in self.cached.items()),
        )


# ---------------------------------------------------------------- invariants


def inv_free_iff_ref_zero(snap: BlockPoolSnapshot) -> bool:
    """Every non-null block is in the free queue exactly when its ref_cnt is 0."""
    linked = set(snap.free_queue.order)
    return all((b in linked) == (snap.ref_cnts[b] == 0) for b in range(1, snap.num_blocks))


def inv_refs_non_negative(snap: BlockPoolSnapshot) -> bool:
    """No ref count is negative."""
    return all(r >= 0 for r in snap.ref_cnts)


def inv_null_block_outside(snap: BlockPoolSnapshot) -> bool:
    """The null block is never linked, has ref 0 and no hash."""
    return (
        NULL_BLOCK_ID not in snap.free_queue.order
        and snap.ref_cnts[NULL_BLOCK_ID] == 0
        and snap.block_hashes[NULL_BLOCK_ID] is None
    )


def inv_only_pool_blocks_linked(snap: BlockPoolSnapshot) -> bool:
    """The free queue holds only ids of this pool."""
    return all(0 <= b < snap.num_blocks for b in snap.free_queue.order)


def inv_cache_matches_hashes(snap: BlockPoolSnapshot) -> bool:
    """The cache map lists exactly the hashed blocks, each under its own hash."""
    listed = [(h, b) for h, bs in snap.cached for b in bs]
    hashed = [(h, b) for b, h in enumerate(snap.block_hashes) if h is not None]
    return (
        len(set(listed)) == len(listed)
        and set(listed) == set(hashed)
        and all(bs for _, bs in snap.cached)
    )


def inv_queue_well_formed(snap: BlockPoolSnapshot) -> bool:
    """The free queue's own invariants hold."""
    return not check_queue_snapshot(snap.free_queue)


POOL_INVARIANTS: dict[str, Callable[[BlockPoolSnapshot], bool]] = {
    "free_iff_ref_zero": inv_free_iff_ref_zero,
    "refs_non_negative": inv_refs_non_negative,
    "null_block_outside": inv_null_block_outside,
    "only_pool_blocks_linked": inv_only_pool_blocks_linked,
    "cache_matches_hashes": inv_cache_matches_hashes,
    "queue_well_formed": inv_queue_well_formed,
}


def check_pool_snapshot(snap: BlockPoolSnapshot) -> list[str]:
    """Names of the pool invariants `snap` violates; empty when all hold."""
    return [name for name, inv in POOL_INVARIANTS.items() if not inv(snap)]
