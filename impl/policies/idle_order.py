"""Keys in recency order whose idle ones are indexed apart: victims without a scan.

LMCache's policies keep their chunks in one ordered map and find victims by walking
it from the old end past every chunk that is pinned or read (LMCache's `can_evict`).
`IdleOrder` keeps the same order -- a key goes to the most recent end when it is
added or hit -- and, beside it, exactly the idle keys in that order
(`impl.policies.rank_index.RankIndex`, keyed by a rank drawn from one counter): a key
whose idle flag changes is linked or unlinked in O(1) amortised (a key that becomes
idle again below the newest idle one goes on a heap, O(log n)), and the least recent
idle keys are found without visiting any busy key. It knows nothing of LMCache:
`evictable.lmcache` tells it when a key is added, hit, removed, or its idle flag may
have changed.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from evictable.impl.policies.rank_index import RankEntry, RankIndex

__all__ = ["IdleOrder"]


class IdleOrder:
    """Keys in recency order, the idle ones indexed in that order.

    >>> order = IdleOrder()
    >>> for key in "abc":
    ...     order.add(key, payload=None, idle=True)
    >>> order.update("a", idle=False)  # pinned: a is skipped without being visited
    >>> order.hit("b")                 # b becomes the most recent
    True
    >>> order.candidates(2)
    ['c', 'b']
    >>> order.update("a", idle=True)   # back in place: the least recent idle key again
    >>> order.candidates(1), list(order)
    (['a'], ['a', 'c', 'b'])

    Complexity: O(1) memory per key (one `RankEntry`), plus the heap's garbage bound.
    """

    __slots__ = ("entries", "idle", "rank")

    def __init__(self) -> None:
        self.entries: dict[Hashable, RankEntry] = {}
        self.idle = RankIndex()
        self.rank = 0

    def __len__(self) -> int:
        """The number of keys. Complexity: O(1)."""
        return len(self.entries)

    def __contains__(self, key: object) -> bool:
        """Whether `key` is held. Complexity: O(1)."""
        return key in self.entries

    def __iter__(self) -> Any:
        """Every key, least recent first. Complexity: O(n log n)."""
        return iter(sorted(self.entries, key=lambda k: self.entries[k].order))

    def add(self, key: Hashable, payload: Any, idle: bool) -> None:
        """Hold `key` at the most recent end (replacing a key already held).

        Post: `key` is idle here exactly when `idle`. Complexity: O(1).
        """
        self.discard(key)
        self.rank += 1
        entry = RankEntry(key, payload, self.rank)
        self.entries[key] = entry
        if idle:
            self.idle.admit(entry)

    def hit(self, key: Hashable) -> bool:
        """Move `key` to the most recent end; False (nothing changes) if it is not held.

        Complexity: O(1) amortised.
        """
        entry = self.entries.get(key)
        if entry is None:
            return False
        self.rank += 1
        if self.idle.discard(entry):
            entry.order = self.rank
            self.idle.admit(entry)  # the newest rank: the ring's end, O(1)
        else:
            entry.order = self.rank
        return True

    def update(self, key: Hashable, idle: bool) -> None:
        """`key`'s idle flag is now `idle` (no change when it already was; a key not
        held is ignored). It keeps its place in the order. Complexity: O(log n) at most.
        """
        entry = self.entries.get(key)
        if entry is None:
            return
        if idle and entry not in self.idle:
            self.idle.admit(entry)
        elif not idle and entry in self.idle:
            self.idle.discard(entry)

    def discard(self, key: Hashable) -> Any:
        """Stop holding `key`; its payload, or None if it was not held. Complexity: O(1)
        amortised."""
        entry = self.entries.pop(key, None)
        if entry is None:
            return None
        self.idle.discard(entry)
        return entry.payload

    def is_idle(self, key: Hashable) -> bool:
        """Whether `key` is held and idle. Complexity: O(1)."""
        entry = self.entries.get(key)
        return entry is not None and entry in self.idle

    def candidates(self, n: int) -> list[Hashable]:
        """Up to `n` idle keys, least recent first; nothing changes. A busy key is never
        visited. Complexity: O(k log n) for the k keys returned."""
        k = min(n, len(self.idle))
        if k <= 0:
            return []
        chosen = self.idle.select(k, frozenset())
        if chosen is None:  # pragma: no cover - k idle keys exist
            return []
        self.idle.restore(chosen)
        return [entry.key for entry in chosen]

    def idle_keys(self) -> list[Hashable]:
        """Every idle key, least recent first (for tests). Complexity: O(n log n)."""
        return [entry.key for entry in self.idle.ordered()]

    def clear(self) -> None:
        """Hold nothing. Complexity: O(n)."""
        self.idle.clear()
        self.entries.clear()
