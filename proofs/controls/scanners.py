"""Deliberately broken lazy offload scanners, each with one realistic mistake.

`RefCountScanner` (vLLM's cursor rule) lives in `proofs.controls.gpu`; these are the
mistakes only some of the engines' inputs reach: an abort edge, a window of two, a
capacity of zero, a walk that never ends. Each is a `LazyOffloadScanner` subclass,
built like it: `cls(pool, window, cpu_capacity)`.
"""

from __future__ import annotations

from collections.abc import Sequence

from evictable.impl.free_queue import Cursor, KVCacheBlock
from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.proofs.controls.gpu import RefCountScanner

__all__ = ["CAPACITY_IGNORED", "SEEDED_SCANNERS"]


class AbortRecordsOffloaded(LazyOffloadScanner):
    """`abort` records the aborted blocks' hashes as offloaded (copied from `complete`):
    content that never reached the CPU tier is never offered again. The state it leads
    to is also reached without an abort (a step at capacity 0 visits the same block),
    so only a check of the abort edge itself sees it."""

    def abort(self, blocks: Sequence[KVCacheBlock]) -> None:
        hashes = [e[1] for b in blocks if (e := self._in_flight.get(b.block_id)) is not None]
        super().abort(blocks)
        self._offloaded.update(hashes)  # BUG: an abort is not a store


class CursorOnFirstKept(LazyOffloadScanner):
    """`step` leaves the cursor on the *first* block it walked past and kept, not the
    last: the next step walks the same blocks again (identical with a window of 1)."""

    def step(self) -> list[KVCacheBlock]:
        capacity = self._capacity_now()
        queue = self.pool.free_block_queue
        cursor = self._cursor
        if cursor is not None and not queue.cursor_is_valid(cursor):
            cursor = None
        selected: list[KVCacheBlock] = []
        first_kept: KVCacheBlock | None = None
        budget = self.window
        for block in queue.iter_blocks_after(cursor):
            h = block.block_hash
            if h is not None and h not in self._offloaded:
                if len(selected) == capacity:
                    break
                selected.append(block)
            elif first_kept is None:  # BUG: should be every kept block (the last wins)
                first_kept = block
            budget -= 1
            if budget == 0:
                break
        if first_kept is not None:
            cursor = Cursor(first_kept, first_kept.link_generation)
        self._cursor = cursor
        if selected:
            self.pool.touch(selected)
            for block in selected:
                self._in_flight[block.block_id] = (block, block.block_hash)
        return selected


class ZeroCapacityUnlimited(LazyOffloadScanner):
    """A CPU capacity of 0 is read as "no limit" (`capacity or num_blocks`): a full CPU
    tier still gets blocks to store."""

    def _capacity_now(self) -> int:
        return super()._capacity_now() or self.pool.num_blocks  # BUG: 0 is a limit


class WrapAroundScan(LazyOffloadScanner):
    """`step` walks on from the front of the queue while the CPU tier could take more,
    until it has selected that many blocks: with fewer candidates than the capacity,
    it never returns (a call that hangs must be reported, not waited for)."""

    def step(self) -> list[KVCacheBlock]:
        want = self._capacity_now()
        got = super().step()
        while len(got) < want:  # BUG: no bound on the walk
            self._cursor = None
            got += super().step()
        return got


SEEDED_SCANNERS: dict[str, type[LazyOffloadScanner]] = {
    "refcount_cursor": RefCountScanner,
    "abort_records_offloaded": AbortRecordsOffloaded,
    "cursor_on_first_kept": CursorOnFirstKept,
    "zero_capacity_unlimited": ZeroCapacityUnlimited,
    "wrap_around_scan": WrapAroundScan,
}
"""Every seeded broken scanner: the lazy engines must refute each one."""


class _CapacityIgnored0(LazyOffloadScanner):
    """Built with an int capacity, selects as if it had none: only a callable capacity
    is honoured (a missed branch of the capacity lookup)."""

    __slots__ = ()

    def __init__(self, pool: object, window: int, cpu_capacity: object = None) -> None:
        super().__init__(pool, window, 0)  # type: ignore[arg-type]

    def _capacity_now(self) -> int:
        source = self._capacity
        if callable(source):
            return super()._capacity_now()
        return 1 << 30  # BUG: the int is ignored


class _CapacityIgnored1(_CapacityIgnored0):
    __slots__ = ()


CAPACITY_IGNORED: dict[int, type[LazyOffloadScanner]] = {
    0: _CapacityIgnored0,
    1: _CapacityIgnored1,
}
"""For `explore.lazy_fixed`: scanners built with capacity 0 / 1 that ignore it."""
