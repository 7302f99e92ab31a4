"""The idle entries of a ranked LRU, least rank first: eviction visits no pinned entry.

A *ranked* LRU (vLLM 0.33's request-scoped LRU, `evictable.vllm.EvictableLRU`) orders
its entries by a rank that is set from outside -- a fresh global counter for a
touched key, a request's own rank for a key it stores or reads at a token position --
and may be set while the entry is pinned or pending. When an entry becomes idle it
goes to the place its rank says, which is not always the end. `RankIndex` holds
exactly the idle entries, ordered by `RankEntry.order` (any totally ordered value;
the LRU uses `(rank, position, key)`), in two structures:

* the **ring**: an intrusive doubly linked list through the entries' `prev` / `next`
  slots, closed by a sentinel, in strictly increasing order. An entry whose order is
  above the ring's last one (a freshly ranked key, a store committed in rank order)
  is linked at its end: O(1).
* the **heap**: `(order, sequence, entry)` for everything else, O(log n) each. An
  entry is *heaped* while `heaped` holds the sequence number of its live heap
  entry. Leaving the heap is lazy: `discard` sets `heaped` to 0 and the heap entry
  becomes garbage, dropped when it reaches the top (each once, paid for by the call
  that left it) or when the heap is rebuilt (garbage above the live entries plus
  `COMPACT_SLACK`).

`select(n, protected)` merges the ring, walked from its least end, with the heap's
live top: it visits idle entries (and the protected idle ones it must skip), never a
pinned or pending one, and changes nothing until it has found all `n`; `commit` then
takes the victims out, `restore` puts them back instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Set
from heapq import heapify, heappop, heappush, merge
from typing import Any

from evictable.model.types import Key

__all__ = ["COMPACT_SLACK", "RankEntry", "RankIndex"]

COMPACT_SLACK = 64
"""Garbage heap entries tolerated on top of the live ones before the heap is rebuilt."""


class RankEntry:
    """One resident key of a ranked LRU: its `order`, what it carries, its links.

    >>> entry = RankEntry(b"k", payload="chunk", order=(3, 0, b"k"))
    >>> entry.prev is entry.next is None and entry.heaped == 0
    True

    `payload` is the caller's record for the key (vLLM's `ChunkStatus`); `prev` /
    `next` are the ring links (None while not in the ring); `heaped` is the sequence
    number of the entry's live heap entry, 0 when it has none.
    Complexity: O(1) memory (six slots, no `__dict__`).
    """

    __slots__ = ("heaped", "key", "next", "order", "payload", "prev")

    def __init__(self, key: Key, payload: Any, order: Any) -> None:
        self.key = key
        self.payload = payload
        self.order = order
        self.prev: RankEntry | None = None
        self.next: RankEntry | None = None
        self.heaped = 0

    def __repr__(self) -> str:
        return f"RankEntry({self.key!r}, order={self.order!r})"


_Heaped = tuple[Any, int, RankEntry]
"""A heap entry: (order when pushed, sequence number, entry). Live iff `entry.heaped`
is that sequence number."""


class RankIndex:
    """The idle entries of a ranked LRU, least order first (see the module doc).

    >>> index = RankIndex()
    >>> a, b, c = (RankEntry(k, None, (o, k)) for k, o in (("a", 1), ("b", 2), ("c", 3)))
    >>> index.admit(b); index.admit(c); index.admit(a)  # a is older: it goes to the heap
    >>> [e.key for e in index.ordered()]
    ['a', 'b', 'c']
    >>> chosen = index.select(2, protected={"a"})
    >>> [e.key for e in chosen]
    ['b', 'c']
    >>> index.commit(chosen); len(index)
    1

    Complexity: O(1) memory per idle entry, plus at most `live + COMPACT_SLACK`
    garbage heap entries.
    """

    __slots__ = ("garbage", "heap", "ring", "seq", "size")

    def __init__(self) -> None:
        ring = RankEntry(None, None, None)
        ring.prev = ring.next = ring
        self.ring = ring
        self.heap: list[_Heaped] = []
        self.seq = 0
        self.size = 0
        self.garbage = 0

    def __len__(self) -> int:
        """The number of idle entries. Complexity: O(1)."""
        return self.size

    def __contains__(self, entry: object) -> bool:
        """Whether `entry` is idle here (in the ring or heaped). Complexity: O(1)."""
        return isinstance(entry, RankEntry) and (entry.prev is not None or entry.heaped != 0)

    def admit(self, entry: RankEntry) -> None:
        """`entry` became idle: at the ring's end when its order is above the last one,
        else on the heap.

        Pre: `entry` is not idle here already. Complexity: O(1), or O(log n) for a push.
        """
        ring = self.ring
        last = ring.prev
        if last is ring or last.order < entry.order:  # type: ignore[union-attr]
            entry.prev = last
            entry.next = ring
            last.next = entry  # type: ignore[union-attr]
            ring.prev = entry
        else:
            self.seq += 1
            entry.heaped = self.seq
            heappush(self.heap, (entry.order, self.seq, entry))
        self.size += 1

    def discard(self, entry: RankEntry) -> bool:
        """Take `entry` out (it was pinned, re-ranked or removed); True if it was idle.

        A heaped entry's heap entry becomes garbage. Complexity: amortised O(1).
        """
        before = entry.prev
        if before is not None:
            after = entry.next
            before.next = after
            after.prev = before  # type: ignore[union-attr]
            entry.prev = entry.next = None
            self.size -= 1
            return True
        if entry.heaped:
            entry.heaped = 0
            self.size -= 1
            self.garbage += 1
            if self.garbage > len(self.heap) - self.garbage + COMPACT_SLACK:
                self.compact()
            return True
        return False

    def compact(self) -> None:
        """Rebuild the heap from its live entries. Complexity: O(len(heap))."""
        self.heap = [h for h in self.heap if h[2].heaped == h[1]]
        heapify(self.heap)
        self.garbage = 0

    def _top(self) -> _Heaped | None:
        """The live heap entry of least order, garbage above it dropped."""
        heap = self.heap
        while heap:
            top = heap[0]
            if top[2].heaped == top[1]:
                return top
            heappop(heap)
            self.garbage -= 1
        return None

    def select(self, n: int, protected: Set[Key]) -> list[RankEntry] | None:
        """The `n` idle entries of least order whose key is not in `protected`, least
        first; None (with nothing changed) when there are fewer.

        Nothing changes but dropped garbage until the caller decides: `commit(chosen)`
        takes them out, `restore(chosen)` leaves everything as it was. The protected
        heap entries popped on the way are pushed back here.
        Complexity: O(n + protected skipped) ring steps, O(log n) per heap entry
        popped; a pinned or pending entry is never visited.
        """
        ring, heap = self.ring, self.heap
        chosen: list[RankEntry] = []
        skipped: list[_Heaped] = []
        at = ring.next
        top = self._top() if heap else None
        while len(chosen) < n:
            if top is not None and (at is ring or top[0] < at.order):  # type: ignore[union-attr]
                heappop(heap)
                entry = top[2]
                if entry.key in protected:
                    skipped.append(top)
                else:
                    chosen.append(entry)
                top = self._top() if heap else None
                continue
            if at is ring:
                break
            if at.key not in protected:  # type: ignore[union-attr]
                chosen.append(at)  # type: ignore[arg-type]
            at = at.next  # type: ignore[union-attr]
        for item in skipped:
            heappush(heap, item)
        if len(chosen) < n:
            self.restore(chosen)
            return None
        return chosen

    def restore(self, chosen: list[RankEntry]) -> None:
        """Undo a `select`: push the heaped entries it popped back. Complexity: O(k log n)."""
        for entry in chosen:
            if entry.prev is None and entry.heaped:
                heappush(self.heap, (entry.order, entry.heaped, entry))

    def commit(self, chosen: list[RankEntry]) -> None:
        """Take the entries a `select` returned out of the index. Complexity: O(k)."""
        for entry in chosen:
            before = entry.prev
            if before is not None:
                after = entry.next
                before.next = after
                after.prev = before  # type: ignore[union-attr]
                entry.prev = entry.next = None
            else:  # heaped: its heap entry is already popped
                entry.heaped = 0
        self.size -= len(chosen)

    def first(self) -> RankEntry | None:
        """The idle entry of least order, None when there is none; nothing changes but
        dropped garbage. Complexity: O(1), plus the garbage dropped.
        """
        top = self._top() if self.heap else None
        at = self.ring.next
        if at is self.ring:
            return top[2] if top is not None else None
        if top is not None and top[0] < at.order:  # type: ignore[union-attr]
            return top[2]
        return at

    def ordered(self) -> Iterator[RankEntry]:
        """Every idle entry, least order first (for views and tests).

        Complexity: O(n log n).
        """
        ring = self.ring
        listed: list[RankEntry] = []
        entry = ring.next
        while entry is not ring:
            listed.append(entry)  # type: ignore[arg-type]
            entry = entry.next  # type: ignore[union-attr]
        live = sorted((h for h in self.heap if h[2].heaped == h[1]), key=lambda h: (h[0], h[1]))
        return merge(listed, (h[2] for h in live), key=_order_of)

    def clear(self) -> None:
        """No idle entry (every entry unlinked and unmarked). Complexity: O(n)."""
        ring = self.ring
        entry = ring.next
        while entry is not ring:
            after = entry.next  # type: ignore[union-attr]
            entry.prev = entry.next = None  # type: ignore[union-attr]
            entry = after
        ring.prev = ring.next = ring
        for _, _, heaped in self.heap:
            heaped.heaped = 0
        self.heap = []
        self.size = 0
        self.garbage = 0


def _order_of(entry: RankEntry) -> Any:
    return entry.order
