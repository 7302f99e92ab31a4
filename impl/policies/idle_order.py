"""Entries in recency order whose idle ones are indexed apart: victims without a rescan.

LMCache's policies keep their chunks in one ordered map and find victims by walking
it from the old end past every chunk that is pinned or read (LMCache's `can_evict`),
at every eviction. `IdleOrder` keeps the same order -- an entry goes to the most recent
end when it is added or hit -- and, beside it, the entries *believed idle*, in that
order (`impl.policies.rank_index.RankIndex`, keyed by a rank drawn from one counter).
An entry is believed idle when it is added and whenever its owner says it may be idle
again (`mark_idle`); a victim search asks the owner whether the least recent believed
entry is really idle (`busy`), and *parks* one that is not: it leaves the index, and
is not visited again until `mark_idle` brings it back (at its old place: a rank below
the newest goes on a heap, O(log n)). So a pinned or read entry is visited at most
once per busy period, by the first search after it became busy, and no search walks
past the same busy entry twice.

It holds entries, not a key table (the caller keeps each `RankEntry` with its object,
so no call hashes a key), and knows nothing of LMCache (`evictable.lmcache` binds it).
The caller's duty: an entry that is parked must get `mark_idle` once it may be idle
(`is_parked` says whether it is).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from evictable.impl.policies.rank_index import RankEntry, RankIndex

__all__ = ["Busy", "IdleOrder"]

Busy = Callable[[RankEntry], bool]
"""Whether an entry is busy (pinned, read) now: the owner's oracle."""


def _never(entry: RankEntry) -> bool:
    return False


class IdleOrder:
    """Entries in recency order, those believed idle indexed in that order.

    >>> pinned = set()
    >>> busy = lambda e: e.key in pinned
    >>> order = IdleOrder()
    >>> a, b, c = (order.add(key, payload=None) for key in "abc")
    >>> pinned.add("a")
    >>> order.hit(b)                          # b becomes the most recent
    >>> [e.key for e in order.candidates(2, busy)]  # a is visited once and parked
    ['c', 'b']
    >>> order.is_parked(a)
    True
    >>> pinned.discard("a"); order.mark_idle(a)  # back at its old place
    >>> order.first(busy).key, len(order)
    ('a', 3)

    Complexity: O(1) memory per entry (one `RankEntry`), plus the heap's garbage bound.
    """

    __slots__ = ("idle", "rank", "size")

    def __init__(self) -> None:
        self.idle = RankIndex()
        self.rank = 0
        self.size = 0

    def __len__(self) -> int:
        """The number of entries held (idle, busy or parked). Complexity: O(1)."""
        return self.size

    def add(self, key: Hashable, payload: Any) -> RankEntry:
        """A new entry at the most recent end, believed idle. Complexity: O(1)."""
        self.rank += 1
        entry = RankEntry(key, payload, self.rank)
        self.size += 1
        self.idle.admit(entry)
        return entry

    def hit(self, entry: RankEntry) -> None:
        """Move a held `entry` to the most recent end. Complexity: O(1) amortised."""
        self.rank += 1
        if self.idle.discard(entry):
            entry.order = self.rank
            self.idle.admit(entry)  # the newest rank: the ring's end, O(1)
        else:
            entry.order = self.rank

    def is_parked(self, entry: RankEntry) -> bool:
        """Whether a held `entry` was found busy and waits for `mark_idle`. Complexity: O(1)."""
        return entry.prev is None and not entry.heaped

    def mark_idle(self, entry: RankEntry) -> None:
        """A held `entry` may be idle again: believed idle at its place (no change when it
        already is). Complexity: O(log n) at most."""
        if entry.prev is None and not entry.heaped:
            self.idle.admit(entry)

    def discard(self, entry: RankEntry) -> None:
        """Stop holding `entry`. Pre: it is held. Complexity: O(1) amortised."""
        self.idle.discard(entry)
        self.size -= 1

    def _park(self, entry: RankEntry, busy: Busy) -> bool:
        """Park a busy `entry`; True if it stays parked. It is asked again once parked:
        a change that made it idle meanwhile, whose owner saw it still believed idle,
        is not lost."""
        self.idle.discard(entry)
        if busy(entry):
            return True
        self.idle.admit(entry)
        return False

    def first(self, busy: Busy = _never) -> RankEntry | None:
        """The least recent idle entry (busy ones met on the way are parked), None when
        none is idle. Complexity: O(1) amortised, plus one visit per entry parked."""
        while True:
            entry = self.idle.first()
            if entry is None or not busy(entry):
                return entry
            self._park(entry, busy)

    def candidates(self, n: int, busy: Busy = _never) -> list[RankEntry]:
        """Up to `n` idle entries, least recent first (busy ones met on the way are
        parked); nothing else changes. Complexity: O(k log n) for the k returned, plus
        one visit per entry parked."""
        if n == 1:
            got = self.first(busy)
            return [] if got is None else [got]
        while True:
            k = min(n, len(self.idle))
            if k <= 0:
                return []
            chosen = self.idle.select(k, frozenset()) or []
            self.idle.restore(chosen)
            found = [e for e in chosen if busy(e)]
            if not found:
                return chosen
            for entry in found:
                self._park(entry, busy)

    def idle_entries(self) -> list[RankEntry]:
        """Every entry believed idle, least recent first (for tests). Complexity: O(n log n)."""
        return list(self.idle.ordered())

    def clear(self) -> None:
        """Hold nothing. Complexity: O(n)."""
        self.idle.clear()
        self.size = 0
