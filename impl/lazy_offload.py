"""The lazy offload scanner: copies free GPU blocks to the CPU tier before eviction.

Checked in lock-step against `model/lazy_offload.py` (the specification, which
also states the scan-completeness property and explains the cursor rules). The
cursor is an `impl.free_queue.Cursor`: a block plus the link generation the queue
stamped on it, so a cursor block that left the queue, or left and came back, is
recognised as stale and the walk restarts from the front. vLLM checks only the
cursor block's ref_cnt, which skips blocks when the cursor block was taken and
freed again between steps, and stalls when it was unlinked with ref_cnt 0.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import cast

from evictable.impl._compat import mypyc_attr
from evictable.impl.block_pool import BlockPool
from evictable.impl.free_queue import Cursor, KVCacheBlock
from evictable.model.errors import (
    DuplicateBlocksError,
    InvalidArgumentError,
    InvariantViolationError,
    NotInFlightError,
)
from evictable.model.free_queue import repeated
from evictable.model.lazy_offload import (
    GHOST_FREE_INVARIANTS,
    LazyOffloadSnapshot,
    ScanView,
    Validation,
    check_scan,
    require_block_list,
    require_capacity,
    require_window,
)

__all__ = ["LazyOffloadScanner"]

CapacitySource = int | Callable[[], int] | None


@mypyc_attr(allow_interpreted_subclasses=True)
class LazyOffloadScanner:
    """Walks the pool's free queue from a saved cursor, `window` blocks per step.

    >>> pool = BlockPool(4)
    >>> [block] = pool.get_new_blocks(1)
    >>> pool.cache_block(block, "h")
    >>> pool.free_blocks([block])  # free, hashed, not offloaded yet
    >>> scanner = LazyOffloadScanner(pool, window=8)
    >>> [b.block_id for b in scanner.step()]  # selected and pinned
    [1]
    >>> scanner.complete([block])  # stored: unpinned, its hash recorded
    >>> scanner.is_offloaded("h"), scanner.step()
    (True, [])

    `cpu_capacity`: None (no limit), an int (the most blocks one step selects), or a
    callable asked once per step how many blocks the CPU tier can take now.
    Invariant: every hashed block before the cursor has its hash offloaded; every
    block in flight is pinned by this scanner and keeps the hash it was selected with.
    Complexity: O(blocks in flight + distinct offloaded hashes) memory.
    """

    __slots__ = ("_capacity", "_cursor", "_in_flight", "_offloaded", "pool", "window")

    def __init__(self, pool: object, window: object, cpu_capacity: object = None) -> None:
        """Pre: `pool` a `BlockPool`, `window` an int >= 1, `cpu_capacity` None, an int
        >= 0 or a callable (else `InvalidArgumentError`).
        Complexity: O(1).
        """
        if not isinstance(pool, BlockPool):
            raise InvalidArgumentError(f"pool must be a BlockPool, got {pool!r}")
        width = require_window(window)  # the parameters are `object`: a compiled build
        if cpu_capacity is not None and not callable(cpu_capacity):
            require_capacity(cpu_capacity)
        self.pool: BlockPool = pool  # validates them too
        self.window = width
        self._capacity = cast(CapacitySource, cpu_capacity)
        self._cursor: Cursor | None = None
        self._offloaded: set[Hashable] = set()
        self._in_flight: dict[int, tuple[KVCacheBlock, Hashable]] = {}

    # ------------------------------------------------------------ helpers

    def _capacity_now(self) -> int:
        # What the callable returns is checked here (typed `object`, so in both builds).
        source: int | Callable[[], object] | None = self._capacity
        if source is None:
            return self.pool.num_blocks
        if callable(source):
            return require_capacity(source())
        return source

    def _check_in_flight(self, blocks: object, what: str) -> list[KVCacheBlock]:
        checked: list[KVCacheBlock] = []
        for b in require_block_list(blocks, what):
            if not isinstance(b, KVCacheBlock):
                raise InvalidArgumentError(f"{what} takes KVCacheBlock objects, got {b!r}")
            checked.append(b)
        if len(set(checked)) != len(checked):
            raise DuplicateBlocksError(repeated(b.block_id for b in checked))
        in_flight = self._in_flight
        for b in checked:
            entry = in_flight.get(b.block_id)
            if entry is None or entry[0] is not b:
                raise NotInFlightError([b.block_id])
        return checked

    # ------------------------------------------------------------ operations

    def step(self) -> list[KVCacheBlock]:
        """Walk at most `window` blocks after the cursor; return the blocks to store.

        Pre: a capacity callable returns an int >= 0 (else `InvalidArgumentError`,
        nothing changed).
        Post: the returned blocks (hashed, hash not offloaded, at most the capacity,
        in queue order) are pinned with `pool.touch` after the walk and are in
        flight; the cursor is on the last visited block left in the queue (kept, or
        None, when every visited block was selected). A stale cursor restarts the
        walk from the front.
        Complexity: O(window).
        """
        capacity = self._capacity_now()
        queue = self.pool.free_block_queue
        cursor = self._cursor
        if cursor is not None and not queue.cursor_is_valid(cursor):
            cursor = None
        offloaded = self._offloaded
        selected: list[KVCacheBlock] = []
        last_kept: KVCacheBlock | None = None
        budget = self.window
        for block in queue.iter_blocks_after(cursor):
            h = block.block_hash
            if h is not None and h not in offloaded:
                if len(selected) == capacity:
                    break
                selected.append(block)
            else:
                last_kept = block
            budget -= 1
            if budget == 0:
                break
        if last_kept is not None:
            cursor = Cursor(last_kept, last_kept.link_generation)
        self._cursor = cursor
        if selected:
            self.pool.touch(selected)
            in_flight = self._in_flight
            for block in selected:
                in_flight[block.block_id] = (block, block.block_hash)
        return selected

    def complete(self, blocks: Sequence[KVCacheBlock]) -> None:
        """Stores finished: unpin `blocks` (in the given order) and record their hashes.

        Pre: a list or tuple of distinct blocks, each in flight (else
        `InvalidArgumentError` / `DuplicateBlocksError` / `NotInFlightError`,
        first offender in input order; nothing changed).
        Complexity: O(len(blocks)).
        """
        checked = self._check_in_flight(blocks, "complete")
        self.pool.free_blocks(checked)
        in_flight, offloaded = self._in_flight, self._offloaded
        for b in checked:
            offloaded.add(in_flight.pop(b.block_id)[1])

    def abort(self, blocks: Sequence[KVCacheBlock]) -> None:
        """Stores failed or were dropped: unpin `blocks`, record nothing.

        Pre: as `complete`.
        Complexity: O(len(blocks)).
        """
        checked = self._check_in_flight(blocks, "abort")
        self.pool.free_blocks(checked)
        in_flight = self._in_flight
        for b in checked:
            del in_flight[b.block_id]

    def reset(self) -> None:
        """Forget the cursor and the offloaded hashes; stores in flight stay in flight.

        Complexity: O(1) (amortised: the set is dropped).
        """
        self._cursor = None
        self._offloaded = set()

    @property
    def num_in_flight(self) -> int:
        """Blocks selected and not yet completed or aborted. Complexity: O(1)."""
        return len(self._in_flight)

    def in_flight_blocks(self) -> list[KVCacheBlock]:
        """The blocks in flight, in selection order. Complexity: O(blocks in flight)."""
        return [b for b, _ in self._in_flight.values()]

    def is_offloaded(self, block_hash: Hashable) -> bool:
        """Whether content with this hash was stored by this scanner. Complexity: O(1)."""
        return block_hash in self._offloaded

    # ------------------------------------------------------------ introspection

    def snapshot(self) -> LazyOffloadSnapshot:
        """The observable state, identical in shape to the model's.

        Complexity: O(blocks in flight + offloaded hashes).
        """
        c = self._cursor
        return LazyOffloadSnapshot(
            window=self.window,
            cursor=None if c is None else (c.block.block_id, c.generation),
            in_flight=tuple((bid, h) for bid, (_, h) in self._in_flight.items()),
            offloaded=frozenset(self._offloaded),
        )

    def check_invariants(self) -> None:
        """Raise `InvariantViolationError` naming every broken scanner invariant.

        Checks the ghost-free invariants of the model (`GHOST_FREE_INVARIANTS`): the
        hashed blocks before the cursor are offloaded (which implies scan
        completeness), and the blocks in flight are pinned with their hashes.
        Complexity: O(num_blocks).
        """
        view = ScanView(self.pool.snapshot(), self.snapshot(), Validation.GENERATION)
        problems = check_scan(view, GHOST_FREE_INVARIANTS)
        for bid, (block, _) in self._in_flight.items():
            if self.pool.blocks[bid] is not block:
                problems.append(f"in-flight block {bid} is not the pool's block")
        if problems:
            raise InvariantViolationError(problems, "lazy offload invariants broken")
