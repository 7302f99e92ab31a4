"""Entries in recency order whose idle ones are indexed apart: victims without a scan.

LMCache's policies keep their chunks in one ordered map and find victims by walking
it from the old end past every chunk that is pinned or read (LMCache's `can_evict`).
`IdleOrder` keeps the same order -- an entry goes to the most recent end when it is
added or hit -- and, beside it, exactly the idle entries in that order
(`impl.policies.rank_index.RankIndex`, keyed by a rank drawn from one counter): an
entry whose idle flag changes is linked or unlinked in O(1) amortised (one that
becomes idle again below the newest idle one goes on a heap, O(log n)), and the least
recent idle entries are found without visiting any busy one. It holds entries, not a
key table (the caller keeps each `RankEntry` with its object, so no call hashes a
key), and knows nothing of LMCache: `evictable.lmcache` tells it when an entry is
added, hit, removed, or its idle flag may have changed.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from evictable.impl.policies.rank_index import RankEntry, RankIndex

__all__ = ["IdleOrder"]


class IdleOrder:
    """Entries in recency order, the idle ones indexed in that order.

    >>> order = IdleOrder()
    >>> a, b, c = (order.add(key, payload=None, idle=True) for key in "abc")
    >>> order.update(a, idle=False)  # pinned: a is skipped without being visited
    >>> order.hit(b)                 # b becomes the most recent
    >>> [e.key for e in order.candidates(2)]
    ['c', 'b']
    >>> order.update(a, idle=True)   # back in its place: the least recent idle entry
    >>> order.first().key, len(order)
    ('a', 3)

    Complexity: O(1) memory per entry (one `RankEntry`), plus the heap's garbage bound.
    """

    __slots__ = ("idle", "rank", "size")

    def __init__(self) -> None:
        self.idle = RankIndex()
        self.rank = 0
        self.size = 0

    def __len__(self) -> int:
        """The number of entries held (idle or not). Complexity: O(1)."""
        return self.size

    def add(self, key: Hashable, payload: Any, idle: bool) -> RankEntry:
        """A new entry at the most recent end, idle here exactly when `idle`.

        Complexity: O(1).
        """
        self.rank += 1
        entry = RankEntry(key, payload, self.rank)
        self.size += 1
        if idle:
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

    def update(self, entry: RankEntry, idle: bool) -> None:
        """A held `entry`'s idle flag is now `idle` (no change when it already was); it
        keeps its place in the order. Complexity: O(log n) at most."""
        if idle:
            if entry.prev is None and not entry.heaped:
                self.idle.admit(entry)
        elif entry.prev is not None or entry.heaped:
            self.idle.discard(entry)

    def discard(self, entry: RankEntry) -> None:
        """Stop holding `entry`. Pre: it is held. Complexity: O(1) amortised."""
        self.idle.discard(entry)
        self.size -= 1

    def is_idle(self, entry: RankEntry) -> bool:
        """Whether `entry` is idle here. Complexity: O(1)."""
        return entry in self.idle

    def first(self) -> RankEntry | None:
        """The least recent idle entry, None when none is idle; nothing changes.
        Complexity: O(1) amortised."""
        return self.idle.first()

    def candidates(self, n: int) -> list[RankEntry]:
        """Up to `n` idle entries, least recent first; nothing changes. A busy entry is
        never visited. Complexity: O(1) for one, O(k log n) for the k returned."""
        if n == 1:
            got = self.idle.first()
            return [] if got is None else [got]
        k = min(n, len(self.idle))
        if k <= 0:
            return []
        chosen = self.idle.select(k, frozenset()) or []
        self.idle.restore(chosen)
        return chosen

    def idle_entries(self) -> list[RankEntry]:
        """Every idle entry, least recent first (for tests). Complexity: O(n log n)."""
        return list(self.idle.ordered())

    def clear(self) -> None:
        """Hold nothing. Complexity: O(n)."""
        self.idle.clear()
        self.size = 0
