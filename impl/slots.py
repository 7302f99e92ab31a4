"""CPU slot ids of the offloading manager: never-used ids first, then freed ids LIFO.

The ids `0 .. capacity-1` split into three disjoint parts: *fresh* ids (never handed
out: `[high_water, capacity)`), *freed* ids (on a stack, the next reuse on top) and
*owned* ids (held by a resident key, tracked by the manager's records). A new key
takes a fresh id, ascending from the high-water mark, while there is one, else the
most recently freed id (docs/semantics.md, "Slots").
"""

from __future__ import annotations

from collections.abc import Iterable

from evictable.impl._compat import mypyc_attr
from evictable.model.errors import InvariantViolationError

__all__ = ["SlotAllocator", "SlotMark"]

SlotMark = tuple[int, int, list[int]]
"""What `mark` saves: (high-water mark, stack height kept, the stack above it)."""


@mypyc_attr(allow_interpreted_subclasses=True)
class SlotAllocator:
    """Fresh ids ascending from the high-water mark, then freed ids popped LIFO.

    >>> slots = SlotAllocator(4)
    >>> slots.take(3)
    [0, 1, 2]
    >>> slots.release([2, 0])
    >>> slots.take(3)
    [3, 0, 2]

    Pre (every method): `high_water <= capacity` and the freed ids are distinct ids
    below `high_water` (the manager releases only ids it owns).
    Complexity: O(1) memory per freed id.
    """

    __slots__ = ("capacity", "freed", "high_water")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.high_water = 0
        self.freed: list[int] = []

    def free_count(self) -> int:
        """Ids a new key could take: fresh plus freed. Complexity: O(1)."""
        return self.capacity - self.high_water + len(self.freed)

    def take(self, count: int, released: Iterable[int] = ()) -> list[int]:
        """Push `released` (ids that just left residency, as `release`), then take
        `count` ids: fresh ones ascending, then freed ones, most recent first.

        Pre: `count <= free_count()` after the release (else `InvariantViolationError`;
        the release has happened, nothing is taken). Complexity: O(count + released).
        """
        if released:
            self.freed.extend(released)
        high = self.high_water
        fresh = self.capacity - high
        if count <= fresh:
            self.high_water = high + count
            return list(range(high, high + count))
        rest = count - fresh
        freed = self.freed
        if rest > len(freed):
            raise InvariantViolationError(["slot_partition"], "not enough free slots")
        slots = list(range(high, self.capacity))
        self.high_water = self.capacity
        reused = freed[-rest:]
        del freed[-rest:]
        reused.reverse()
        slots += reused
        return slots

    def release(self, ids: Iterable[int]) -> None:
        """Push ids that left residency, in order (the last one is reused first).

        Complexity: O(len(ids)).
        """
        self.freed.extend(ids)

    def mark(self, count: int) -> SlotMark:
        """What `restore` needs to undo a `take(count)` and any releases after it.

        Complexity: O(count) (only the part of the stack a take can reach is saved).
        """
        low = max(0, len(self.freed) - count)
        return self.high_water, low, self.freed[low:]

    def restore(self, saved: SlotMark) -> None:
        """Undo everything since `mark`. Complexity: O(count)."""
        high, low, tail = saved
        self.high_water = high
        del self.freed[low:]
        self.freed.extend(tail)

    def reset(self) -> None:
        """Every id fresh again. Complexity: O(1) (amortised: the stack is dropped)."""
        self.high_water = 0
        self.freed.clear()
