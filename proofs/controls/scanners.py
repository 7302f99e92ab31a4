"""Deliberately broken lazy offload scanners, each with one realistic mistake.

`RefCountScanner` (vLLM's cursor rule) lives in `proofs.controls.gpu`; these are the
mistakes only some of the engines' inputs reach: an abort edge, a window of two, a
capacity of zero, a walk that never ends. Each is `LazyOffloadScanner` itself
compiled again from `impl/lazy_offload.py` with the mistake written in (`# BUG`,
`controls.mutant`), built like it: `cls(pool, window, cpu_capacity)`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.proofs.controls.gpu import RefCountScanner
from evictable.proofs.controls.mutant import Edit, lines, mutant

__all__ = ["CAPACITY_IGNORED", "MACHINE_SCANNERS", "SEEDED_SCANNERS"]

SCANNER = "evictable.impl.lazy_offload"
CLASS = "LazyOffloadScanner"

AbortRecordsOffloaded = mutant(
    SCANNER,
    CLASS,
    Edit(
        f"{CLASS}.abort",
        lines("del in_flight[b.block_id]", 12),
        lines("self._offloaded.add(in_flight.pop(b.block_id)[1])  # BUG: an abort is no store", 12),
    ),
    name="AbortRecordsOffloaded",
    doc="""`abort` records the aborted blocks' hashes as offloaded (copied from `complete`):
    content that never reached the CPU tier is never offered again. The state it leads
    to is also reached without an abort (a step at capacity 0 visits the same block),
    so only a check of the abort edge itself sees it.""",
)

CursorOnFirstKept = mutant(
    SCANNER,
    CLASS,
    Edit(
        f"{CLASS}.step",
        lines(
            """
            else:
                last_kept = block
        """,
            12,
        ),
        lines(
            """
            elif last_kept is None:  # BUG: should be every kept block (the last wins)
                last_kept = block
        """,
            12,
        ),
    ),
    name="CursorOnFirstKept",
    doc="""`step` leaves the cursor on the *first* block it walked past and kept, not the
    last: the next step walks the same blocks again (identical with a window of 1).""",
)

ZeroCapacityUnlimited = mutant(
    SCANNER,
    CLASS,
    Edit(
        f"{CLASS}._capacity_now",
        lines("return require_capacity(source())", 12),
        lines("return require_capacity(source()) or self.pool.num_blocks  # BUG: 0 is a limit", 12),
    ),
    Edit(
        f"{CLASS}._capacity_now",
        lines("return source"),
        lines("return source or self.pool.num_blocks  # BUG: 0 is a limit"),
    ),
    name="ZeroCapacityUnlimited",
    doc="""A CPU capacity of 0 is read as "no limit" (`capacity or num_blocks`): a full CPU
    tier still gets blocks to store.""",
)

WrapAroundScan = mutant(
    SCANNER,
    CLASS,
    Edit(
        f"{CLASS}.step",
        lines("def step(self) -> list[KVCacheBlock]:", 4),
        lines(
            """
            def step(self) -> list[KVCacheBlock]:
                want = self._capacity_now()
                got = self._step()
                while len(got) < want:  # BUG: no bound on the walk
                    self._cursor = None
                    got += self._step()
                return got

            def _step(self) -> list[KVCacheBlock]:
            """,
            4,
        ),
    ),
    name="WrapAroundScan",
    doc="""`step` walks on from the front of the queue while the CPU tier could take more,
    until it has selected that many blocks: with fewer candidates than the capacity,
    it never returns (a call that hangs must be reported, not waited for).""",
)

OffloadedInverted = mutant(
    SCANNER,
    CLASS,
    Edit(
        f"{CLASS}.is_offloaded",
        "return block_hash in self._offloaded",
        "return block_hash not in self._offloaded  # BUG: the test is inverted",
    ),
    name="OffloadedInverted",
    doc="""`is_offloaded` answers the opposite: a stored hash reads as missing and every
    other hash as stored (a query only a caller sees: the scan itself is right).""",
)

CompleteUnchecked = mutant(
    SCANNER,
    CLASS,
    Edit(
        f"{CLASS}.complete",
        'checked = self._check_in_flight(blocks, "complete")',
        "checked = list(blocks)  # BUG: the batch is not checked",
    ),
    name="CompleteUnchecked",
    doc="""`complete` takes its batch unchecked: a block not in flight, a repeated block or
    a malformed batch is not refused with a named error but half-applied (a crash
    in the pool or the key table after some blocks were unpinned).""",
)

AbortUnchecked = mutant(
    SCANNER,
    CLASS,
    Edit(
        f"{CLASS}.abort",
        'checked = self._check_in_flight(blocks, "abort")',
        "checked = list(blocks)  # BUG: the batch is not checked",
    ),
    name="AbortUnchecked",
    doc="""`abort` takes its batch unchecked, as `CompleteUnchecked` does `complete`.""",
)

CapacityUnchecked = mutant(
    SCANNER,
    CLASS,
    Edit(
        f"{CLASS}.__init__",
        lines("""
            if cpu_capacity is not None and not callable(cpu_capacity):
                require_capacity(cpu_capacity)
        """),
        lines("pass  # BUG: a bad capacity (negative, a bool, a float) is accepted"),
    ),
    name="CapacityUnchecked",
    doc="""The constructor accepts any capacity: a negative one, a bool or a float is not
    refused with `InvalidArgumentError` but fails later, inside a step.""",
)

MACHINE_SCANNERS: dict[str, type[LazyOffloadScanner]] = {
    "offloaded_inverted": OffloadedInverted,
    "complete_unchecked": CompleteUnchecked,
    "abort_unchecked": AbortUnchecked,
    "capacity_unchecked": CapacityUnchecked,
}
"""Broken scanners only the lock-step machine reaches: a query, malformed batches and
bad constructor arguments are not in the breadth-first search's alphabet."""

SEEDED_SCANNERS: dict[str, type[LazyOffloadScanner]] = {
    "refcount_cursor": RefCountScanner,
    "abort_records_offloaded": AbortRecordsOffloaded,
    "cursor_on_first_kept": CursorOnFirstKept,
    "zero_capacity_unlimited": ZeroCapacityUnlimited,
    "wrap_around_scan": WrapAroundScan,
}
"""Every seeded broken scanner: the lazy engines must refute each one."""


_IntCapacityIgnored = mutant(
    SCANNER,
    CLASS,
    Edit(
        f"{CLASS}._capacity_now",
        lines("return source"),
        lines("return 1 << 30  # BUG: the int is ignored"),
    ),
    name="_IntCapacityIgnored",
    doc="""Built with an int capacity, selects as if it had none: only a callable
    capacity is honoured (a missed branch of the capacity lookup).""",
)


class _CapacityIgnored0(_IntCapacityIgnored):  # type: ignore[misc, valid-type]
    """`_IntCapacityIgnored` built with the int capacity 0, whatever the search passes
    (as `explore.lazy_fixed.FixedCapacity0` builds the real scanner)."""

    __slots__ = ()
    CAPACITY: ClassVar[int] = 0

    def __init__(self, pool: Any, window: int, cpu_capacity: object = None) -> None:
        super().__init__(pool, window, type(self).CAPACITY)


class _CapacityIgnored1(_CapacityIgnored0):
    """As `_CapacityIgnored0`, with capacity 1."""

    __slots__ = ()
    CAPACITY: ClassVar[int] = 1


CAPACITY_IGNORED: dict[int, type[LazyOffloadScanner]] = {
    0: _CapacityIgnored0,
    1: _CapacityIgnored1,
}
"""For `explore.lazy_fixed`: scanners built with capacity 0 / 1 that ignore it."""
