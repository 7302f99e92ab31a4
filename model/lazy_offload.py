"""The lazy offload scanner as a specification, and its scan-completeness property.

A lazy offloader walks the GPU free queue (`model.block_pool.ModelBlockPool`) from
a saved *cursor*, at most `window` blocks per scheduler step, and selects hashed
blocks whose content is not yet on the CPU tier, so that they are copied out
before allocation evicts them. Selected blocks are pinned (`pool.touch`) once the
walk is over, never during it; `complete` unpins them and records their hashes as
offloaded, `abort` unpins them without recording anything.

State (the scanner's own): the cursor (a block and the link generation it had in
the queue, or None for "before the front"); the hashes already offloaded; the
blocks in flight (selected, pinned, not yet completed or aborted) with the hash
each one had when selected. Ghost state (read only by the invariants): for each
block, the link generation it had when the scanner last visited it, so "visited
since it last entered the queue" is `visited[b] == stamp[b]`.

Cursor validation, the one thing the `validation` flag switches:

* `Validation.GENERATION` (the correct rule): the cursor is used only while its
  block is still linked *at the generation the cursor remembers*; otherwise the
  walk restarts from the front.
* `Validation.REFCOUNT` (vLLM's rule): the walk restarts from the front only when
  the cursor block's ref_cnt is above 0. A cursor block taken and freed again
  between two steps has ref_cnt 0 and sits at the back: the walk resumes there and
  every block it jumped over is never visited (the *skip*). A cursor block that
  left the queue with its ref_cnt still 0 names no position at all: vLLM's walk
  yields nothing, now and at every later step (the *stall*).

Where the cursor lands after a step: on the last visited block that is still
linked once the selected blocks are pinned (pinning unlinks a block, so a cursor
on a selected block would go stale at once). When every visited block was
selected, the cursor stays where it was (or None). A walk that reaches the back
leaves the cursor on the last block: there is no wrap-around. Every block before
the cursor has been dealt with (that is the invariant below), blocks freed later
with a hash join at the back, after the cursor, and blocks freed without one join
at the front but have nothing to offload; so the next steps only need what is
appended after the cursor. If the cursor block itself is later allocated, every
block before it went first (allocation pops the front), and the restart from the
front resumes exactly behind it.

Capacity: `step(capacity)` selects at most `capacity` blocks (the free CPU slots).
The walk stops *before* the first block it would select beyond that, so such a
block stays after the cursor and is visited again on a later step.

A rule of the pool this relies on: a block gets its hash only while it is in use
(as in vLLM, where only a request's full blocks are cached), and
`ModelBlockPool.cache_block` refuses a free block. A free block hashed in place,
behind the cursor, could not be seen by any cursor-based scan: hashed content
enters the free queue only through a free, at the back, after the cursor.

Written for clarity, not speed: `impl/lazy_offload.py` is the fast path, checked
against this model in lock-step.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

from evictable.model.block_pool import BlockPoolSnapshot, ModelBlockPool
from evictable.model.errors import DuplicateBlocksError, InvalidArgumentError, NotInFlightError
from evictable.model.free_queue import ModelCursor, repeated
from evictable.model.types import BlockId

__all__ = [
    "GHOST_FREE_INVARIANTS",
    "LAZY_INVARIANTS",
    "LazyOffloadSnapshot",
    "ModelLazyOffload",
    "ScanView",
    "Start",
    "StartKind",
    "Validation",
    "check_scan",
    "covered",
    "inv_cursor_visited",
    "inv_in_flight_pinned",
    "inv_prefix_offloaded",
    "inv_scan_complete",
    "needs_offload",
    "no_stall_bound",
    "pending_blocks",
    "require_block_list",
    "require_capacity",
    "require_validation",
    "require_window",
    "start_of",
]


class Validation(enum.Enum):
    """How a saved cursor is checked before the walk resumes from it."""

    GENERATION = "generation"  # linked at the same link generation (correct)
    REFCOUNT = "refcount"  # vLLM: restart only when the cursor block's ref_cnt > 0


class StartKind(enum.Enum):
    """Where a walk begins."""

    FRONT = "front"  # from the front of the queue
    AFTER = "after"  # just after the cursor block
    NOWHERE = "nowhere"  # the cursor names no position: the walk yields nothing


@dataclass(frozen=True)
class Start:
    kind: StartKind
    block_id: BlockId | None = None


@dataclass(frozen=True)
class LazyOffloadSnapshot:
    """Everything observable about a scanner, identical in shape for model and impl.

    `cursor` is (block id, link generation) or None; `in_flight` lists
    (block id, hash) in selection order; `offloaded` is the set of stored hashes.
    """

    window: int
    cursor: tuple[int, int] | None
    in_flight: tuple[tuple[int, Hashable], ...]
    offloaded: frozenset[Hashable]


# ---------------------------------------------------------------- guards


def require_window(window: object) -> int:
    """Guard: a window is an int (not a bool) >= 1."""
    if not isinstance(window, int) or isinstance(window, bool) or window < 1:
        raise InvalidArgumentError(f"window must be an int >= 1, got {window!r}")
    return window


def require_capacity(capacity: object) -> int:
    """Guard: a CPU capacity is an int (not a bool) >= 0."""
    if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 0:
        raise InvalidArgumentError(f"capacity must be an int >= 0, got {capacity!r}")
    return capacity


def require_validation(validation: object) -> Validation:
    """Guard: a `Validation` or its name ("generation" / "refcount")."""
    if isinstance(validation, Validation):
        return validation
    for v in Validation:
        if validation == v.value:
            return v
    known = ", ".join(v.value for v in Validation)
    raise InvalidArgumentError(f"unknown validation {validation!r} (known: {known})")


def require_block_list(items: object, what: str) -> list[object]:
    """Guard: a list or tuple (a lone block, a string or a set is a mistake)."""
    if not isinstance(items, list | tuple):
        raise InvalidArgumentError(f"{what} takes a list of blocks, got {items!r}")
    return list(items)


# ---------------------------------------------------------------- views and invariants


@dataclass(frozen=True)
class ScanView:
    """What the invariants read: the pool, the scanner, and (model only) the ghost marks."""

    pool: BlockPoolSnapshot
    scan: LazyOffloadSnapshot
    validation: Validation
    visited: Mapping[int, int] | None = None  # block id -> stamp at its last visit

    def stamp(self, block_id: int) -> int | None:
        q = self.pool.free_queue
        return q.stamps[q.order.index(block_id)] if block_id in q.order else None


def needs_offload(
    block_hash: Hashable | None, offloaded: frozenset[Hashable] | set[Hashable]
) -> bool:
    """A free block needs offloading when it has a hash not yet on the CPU tier."""
    return block_hash is not None and block_hash not in offloaded


def start_of(view: ScanView) -> Start:
    """Where the next walk begins, under the view's validation rule."""
    cursor = view.scan.cursor
    if cursor is None:
        return Start(StartKind.FRONT)
    block_id, generation = cursor
    stamp = view.stamp(block_id)
    if view.validation is Validation.REFCOUNT:
        if view.pool.ref_cnts[block_id] > 0:
            return Start(StartKind.FRONT)
        if stamp is None:
            return Start(StartKind.NOWHERE)
        return Start(StartKind.AFTER, BlockId(block_id))
    if stamp == generation:
        return Start(StartKind.AFTER, BlockId(block_id))
    return Start(StartKind.FRONT)


def _before_cursor(view: ScanView) -> tuple[int, ...]:
    """The linked blocks a walk will not reach: up to and including the cursor block."""
    order = view.pool.free_queue.order
    start = start_of(view)
    if start.kind is StartKind.FRONT:
        return ()
    if start.kind is StartKind.NOWHERE:
        return order
    return order[: order.index(start.block_id) + 1]


def inv_scan_complete(view: ScanView) -> bool:
    """Scan completeness: every hashed, not-offloaded block before the cursor has been
    visited since it last entered the queue."""
    if view.visited is None:
        raise InvalidArgumentError("scan completeness needs the model's visit marks")
    for b in _before_cursor(view):
        if needs_offload(view.pool.block_hashes[b], view.scan.offloaded) and view.visited.get(
            b
        ) != view.stamp(b):
            return False
    return True


def inv_prefix_offloaded(view: ScanView) -> bool:
    """The state-only strengthening: every hashed block before the cursor is offloaded
    (it implies scan completeness and needs no visit marks, so `impl` checks it)."""
    return not any(
        needs_offload(view.pool.block_hashes[b], view.scan.offloaded) for b in _before_cursor(view)
    )


def inv_in_flight_pinned(view: ScanView) -> bool:
    """Every block in flight is pinned (ref_cnt >= 1, so not in the free queue) and
    still holds the hash it had when it was selected."""
    linked = set(view.pool.free_queue.order)
    return all(
        view.pool.ref_cnts[b] >= 1 and b not in linked and view.pool.block_hashes[b] == h
        for b, h in view.scan.in_flight
    )


def inv_cursor_visited(view: ScanView) -> bool:
    """A cursor the walk will resume from names a block visited at its current link."""
    if view.visited is None:
        raise InvalidArgumentError("this invariant needs the model's visit marks")
    start = start_of(view)
    if start.kind is not StartKind.AFTER or start.block_id is None:
        return True
    return view.visited.get(start.block_id) == view.stamp(start.block_id)


LAZY_INVARIANTS: dict[str, Callable[[ScanView], bool]] = {
    "scan_complete": inv_scan_complete,
    "prefix_offloaded": inv_prefix_offloaded,
    "in_flight_pinned": inv_in_flight_pinned,
    "cursor_visited": inv_cursor_visited,
}

GHOST_FREE_INVARIANTS: tuple[str, ...] = ("prefix_offloaded", "in_flight_pinned")
"""The invariants that need no visit marks (what `impl.check_invariants` evaluates)."""


def check_scan(view: ScanView, names: Sequence[str] | None = None) -> list[str]:
    """Names of the scanner invariants `view` violates (all, or those in `names`)."""
    chosen = LAZY_INVARIANTS if names is None else {n: LAZY_INVARIANTS[n] for n in names}
    return [name for name, inv in chosen.items() if not inv(view)]


# ---------------------------------------------------------------- no stall


def pending_blocks(view: ScanView) -> frozenset[int]:
    """Free blocks that need offloading and have not been visited since they entered."""
    visited = view.visited or {}
    q = view.pool.free_queue
    return frozenset(
        b
        for b, s in zip(q.order, q.stamps, strict=True)
        if needs_offload(view.pool.block_hashes[b], view.scan.offloaded) and visited.get(b) != s
    )


def no_stall_bound(num_free_blocks: int, window: int) -> int:
    """Steps within which, with no pool mutation, every pending block is visited."""
    return math.ceil(num_free_blocks / window) + 1


def covered(view: ScanView, block_id: int, stamp: int) -> bool:
    """A block that was linked at `stamp` has been dealt with: it was visited at that
    link, or it left the queue (selected and pinned, or taken) since."""
    return view.stamp(block_id) != stamp or (view.visited or {}).get(block_id) == stamp


# ---------------------------------------------------------------- the scanner


class ModelLazyOffload:
    """The scanner over a `ModelBlockPool`: cursor, in-flight stores, offloaded hashes."""

    def __init__(
        self,
        pool: ModelBlockPool,
        window: int,
        validation: Validation | str = Validation.GENERATION,
    ) -> None:
        # The pool is a model pool.
        if not isinstance(pool, ModelBlockPool):
            raise InvalidArgumentError(f"pool must be a ModelBlockPool, got {pool!r}")
        # The window is a positive block count.
        require_window(window)
        self.pool = pool
        self.window = window
        self.validation = require_validation(validation)
        self.cursor: ModelCursor | None = None
        self.offloaded: set[Hashable] = set()
        self.in_flight: dict[BlockId, Hashable] = {}
        self.visited: dict[BlockId, int] = {}  # ghost: block -> stamp at its last visit

    # ------------------------------------------------------------ helpers

    def view(self) -> ScanView:
        visited = {int(b): s for b, s in self.visited.items()}
        return ScanView(self.pool.snapshot(), self.snapshot(), self.validation, visited)

    def start(self) -> Start:
        """Where the next walk begins (validates the cursor; see the module docstring)."""
        return start_of(self.view())

    def _check_in_flight(self, block_ids: object, what: str) -> list[BlockId]:
        # The argument is a list of block ids.
        items = require_block_list(block_ids, what)
        ids: list[BlockId] = []
        for b in items:
            if not isinstance(b, int) or isinstance(b, bool):
                raise InvalidArgumentError(f"{what} takes block ids (ints), got {b!r}")
            ids.append(BlockId(b))
        # The same block cannot finish twice in one call.
        twice = repeated(ids)
        if twice:
            raise DuplicateBlocksError(twice)
        # Only a block this scanner selected and has not finished can finish.
        for b in ids:
            if b not in self.in_flight:
                raise NotInFlightError([b])
        return ids

    # ------------------------------------------------------------ events

    def step(self, capacity: int) -> list[BlockId]:
        """One scheduler step: walk at most `window` blocks after the cursor, select the
        ones to store (at most `capacity`), move the cursor, then pin the selection.

        A cursor that names no position (ref-count rule only) walks nothing."""
        # The capacity is a slot count.
        require_capacity(capacity)
        queue = self.pool.free_queue
        start = self.start()
        if start.kind is StartKind.NOWHERE:
            return []
        cursor = self.cursor if start.kind is StartKind.AFTER else None
        # The walk goes through the queue's own iterator; under the ref-count rule the
        # cursor block is passed bare (its generation is not checked).
        after: BlockId | ModelCursor | None = cursor
        if cursor is not None and self.validation is Validation.REFCOUNT:
            after = cursor.block_id
        walk = list(itertools.islice(queue.iter_blocks_after(after), self.window))
        selected: list[BlockId] = []
        for b in walk:
            h = self.pool.block_hash.get(b)
            if needs_offload(h, self.offloaded):
                if len(selected) == capacity:
                    break
                selected.append(b)
            else:
                cursor = queue.cursor_for(b)
            self.visited[b] = queue.stamp[b]
        self.cursor = cursor
        self.pool.touch(selected)
        for b in selected:
            self.in_flight[b] = self.pool.block_hash[b]
        return selected

    def complete(self, block_ids: Sequence[BlockId]) -> None:
        """Stores finished: unpin the blocks (in the given order) and record their hashes."""
        ids = self._check_in_flight(block_ids, "complete")
        self.pool.free_blocks(ids)
        for b in ids:
            self.offloaded.add(self.in_flight.pop(b))

    def abort(self, block_ids: Sequence[BlockId]) -> None:
        """Stores failed or were dropped: unpin the blocks, record nothing."""
        ids = self._check_in_flight(block_ids, "abort")
        self.pool.free_blocks(ids)
        for b in ids:
            del self.in_flight[b]

    def reset(self) -> None:
        """Forget the cursor and what was offloaded (the CPU tier was cleared).

        Stores in flight stay in flight: their copies are still running and must
        still be completed or aborted.
        """
        self.cursor = None
        self.offloaded.clear()
        self.visited.clear()

    # ------------------------------------------------------------ introspection

    def snapshot(self) -> LazyOffloadSnapshot:
        cursor = self.cursor
        return LazyOffloadSnapshot(
            window=self.window,
            cursor=None if cursor is None else (cursor.block_id, cursor.generation),
            in_flight=tuple(self.in_flight.items()),
            offloaded=frozenset(self.offloaded),
        )
