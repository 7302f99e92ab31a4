"""ARC whose eviction never scans pinned entries (docs/semantics.md, "ARC").

The observable behaviour is exactly `model.arc.ModelArc`'s; this is the fast path.
T1/T2 are `OrderedDict`s (key -> `BlockStatus`, least recent first), B1/B2 are
`OrderedDict`s of ghost keys. What vLLM's ARC lacks is the per-list *eligible*
index: the idle (ref 0) entries of T1 and of T2, each kept in list order, so that
eviction visits only idle entries (plus protected idle ones it must skip) and never
an entry that is pending or loading.

How list order is kept without scanning: every time an entry arrives at the
most-recent end of T1 or T2 it gets a fresh, strictly increasing *position stamp*,
so within a list, list order is stamp order. The eligible entries of a list sit in a
binary heap keyed by stamp (`_EligibleIndex`), maintained by `mark_evictable` /
`mark_non_evictable` (the manager's hooks) and by `insert` / `remove` / `touch` /
`evict`. Leaving the index is lazy: the key's token is dropped from `live` and its
heap entry becomes garbage, discarded when it surfaces at the top of the heap (so
each garbage entry is popped at most once) or by a compaction that rebuilds the heap
once garbage outnumbers live entries (amortised O(1) per deletion).
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Set
from itertools import pairwise

from evictable.impl.block import BlockStatus
from evictable.impl.policies.base import CachePolicy
from evictable.model.arc import target_after_b1_hit, target_after_b2_hit
from evictable.model.errors import InvalidArgumentError, InvariantViolationError
from evictable.model.types import ArcPolicySnapshot, Key

__all__ = ["ARCCachePolicy"]

_HeapEntry = tuple[int, int, Key]
"""(position stamp, token, key). Stamps order the heap; the token tells live from garbage."""

_COMPACT_SLACK = 32
"""Garbage tolerated on top of the live entries before a heap is rebuilt."""


class _EligibleIndex:
    """The idle entries of one resident list, in list order (a heap with lazy deletion).

    An entry `(stamp, token, key)` is live iff `live.get(key) == token`; anything else
    in `heap` is garbage. Invariant: each live key has exactly one live heap entry,
    whose stamp is the key's current position stamp.
    """

    __slots__ = ("_token", "heap", "live")

    def __init__(self) -> None:
        self.heap: list[_HeapEntry] = []
        self.live: dict[Key, int] = {}
        self._token = 0

    def __len__(self) -> int:
        return len(self.live)

    def add(self, key: Key, stamp: int) -> None:
        """Make `key` (at position `stamp`) eligible. Pre: not live. Complexity: O(log N)."""
        self._token += 1
        self.live[key] = self._token
        heapq.heappush(self.heap, (stamp, self._token, key))

    def discard(self, key: Key) -> bool:
        """Make `key` ineligible; True if it was live. Complexity: amortised O(1)."""
        if self.live.pop(key, None) is None:
            return False
        if len(self.heap) > 2 * len(self.live) + _COMPACT_SLACK:
            self._compact()
        return True

    def pop_next(self, protected: Set[Key], skipped: list[_HeapEntry]) -> _HeapEntry | None:
        """Pop the least-recent live unprotected entry, or None.

        Garbage met on the way is dropped for good; live protected entries are popped
        into `skipped` (the caller pushes them back). The returned entry stays in
        `live`: the caller either commits (`live.pop`) or pushes it back.
        Complexity: O((1 + garbage + protected skipped) · log N).
        """
        heap, live = self.heap, self.live
        while heap:
            entry = heapq.heappop(heap)
            if live.get(entry[2]) != entry[1]:
                continue  # garbage: the key left this index (or re-entered later)
            if entry[2] in protected:
                skipped.append(entry)
                continue
            return entry
        return None

    def push_back(self, entries: Iterable[_HeapEntry]) -> None:
        """Return popped live entries to the heap. Complexity: O(k log N)."""
        for entry in entries:
            heapq.heappush(self.heap, entry)

    def clear(self) -> None:
        self.heap.clear()
        self.live.clear()

    def _compact(self) -> None:
        """Rebuild the heap from its live entries. Complexity: O(len(heap))."""
        live = self.live
        self.heap = [e for e in self.heap if live.get(e[2]) == e[1]]
        heapq.heapify(self.heap)


class ARCCachePolicy(CachePolicy):
    """Adaptive Replacement Cache with an O(victims · log N) eviction.

    >>> from evictable.impl.block import BlockStatus
    >>> arc = ARCCachePolicy(2)
    >>> for slot, key in enumerate([b"a", b"b"]):
    ...     arc.insert(key, BlockStatus(slot, key))  # T1's most-recent end
    ...     arc.get(key).ref_cnt = 0
    ...     arc.mark_evictable(key)  # idle: eligible for eviction
    >>> arc.touch([b"a"])  # seen again while stored: T1 -> T2
    >>> [key for key, _ in arc.evict(1, protected=set())]
    [b'b']
    >>> arc.snapshot()
    ArcPolicySnapshot(t1=(), t2=(b'a',), b1=(b'b',), b2=(), target=0.0)

    State: `t1`, `t2` (resident, key -> BlockStatus), `b1`, `b2` (ghost keys), all
    least recent first; `target_t1_size` in [0, N]; per resident key a position stamp;
    per resident list an eligible index holding exactly its ref-0 entries.
    """

    name = "arc"

    releases_evicted_records = True

    def __init__(self, cache_capacity: int) -> None:
        if (
            isinstance(cache_capacity, bool)
            or not isinstance(cache_capacity, int)
            or cache_capacity < 0
        ):
            raise InvalidArgumentError(f"ARC capacity must be an int >= 0, got {cache_capacity!r}")
        super().__init__(cache_capacity)
        self.t1: OrderedDict[Key, BlockStatus] = OrderedDict()
        self.t2: OrderedDict[Key, BlockStatus] = OrderedDict()
        self.b1: OrderedDict[Key, None] = OrderedDict()
        self.b2: OrderedDict[Key, None] = OrderedDict()
        self.target_t1_size: float = 0.0
        self._stamp: dict[Key, int] = {}
        self._clock = 0
        self._elig1 = _EligibleIndex()
        self._elig2 = _EligibleIndex()

    # ------------------------------------------------------------ helpers

    def _next_stamp(self) -> int:
        self._clock += 1
        return self._clock

    def _place_mru(self, key: Key, block: BlockStatus, to_t2: bool, eligible: bool) -> None:
        """Put a resident key at the MRU end of T1 or T2 with a fresh stamp.

        Pre: key in neither list. `eligible`: it joins that list's eligible index.
        Complexity: O(log N).
        """
        self._clock += 1
        stamp = self._stamp[key] = self._clock
        (self.t2 if to_t2 else self.t1)[key] = block
        if eligible:
            (self._elig2 if to_t2 else self._elig1).add(key, stamp)

    def _unplace(self, key: Key) -> tuple[BlockStatus, bool] | None:
        """Take a key out of T1/T2 and its eligible index: (block, was eligible), or None.

        Complexity: amortised O(1).
        """
        block = self.t1.pop(key, None)
        if block is not None:
            was_eligible = self._elig1.discard(key)
        else:
            block = self.t2.pop(key, None)
            if block is None:
                return None
            was_eligible = self._elig2.discard(key)
        del self._stamp[key]
        return block, was_eligible

    # ------------------------------------------------------------ CachePolicy

    def get(self, key: Key) -> BlockStatus | None:
        """The key's block (T1 or T2), or None. No recency change. Complexity: O(1)."""
        block = self.t1.get(key)
        return block if block is not None else self.t2.get(key)

    def insert(self, key: Key, block: BlockStatus) -> None:
        """A new resident key: T1's MRU end; it stops being a ghost.

        Pre: key not resident (else `InvalidArgumentError`, nothing changes).
        Complexity: O(log N).
        """
        if key in self.t1 or key in self.t2:
            raise InvalidArgumentError(f"ARC insert: key {key!r} is already resident")
        self.b1.pop(key, None)
        self.b2.pop(key, None)
        self._place_mru(key, block, to_t2=False, eligible=False)

    def remove(self, key: Key) -> None:
        """A failed store: out of T1/T2, no ghost.

        Pre: key resident (else `InvalidArgumentError`, nothing changes).
        Complexity: amortised O(1).
        """
        if self._unplace(key) is None:
            raise InvalidArgumentError(f"ARC remove: key {key!r} is not resident")

    def mark_evictable(self, key: Key) -> None:
        """Ref count reached 0: join its list's eligible index, keeping list order.

        No-op for a key that is not resident or already eligible. Complexity: O(log N).
        """
        if key in self.t1:
            if key not in self._elig1.live:
                self._elig1.add(key, self._stamp[key])
        elif key in self.t2 and key not in self._elig2.live:
            self._elig2.add(key, self._stamp[key])

    def mark_non_evictable(self, key: Key) -> None:
        """Ref count left 0: leave the eligible index (lazily). Complexity: amortised O(1)."""
        if not self._elig1.discard(key):
            self._elig2.discard(key)

    def touch(self, keys: Iterable[Key]) -> None:
        """Recency hint, keys in reverse: docs/semantics.md, "ARC" (promotion, ghost hits).

        In T1 and ready -> T2 MRU; in T1 and pending -> T1 MRU; in T2 -> T2 MRU;
        in B1 / B2 -> adapt the target, ghost to its list's MRU end; others ignored.
        Never raises (an unhashable key is ignored: it cannot be in any list).
        Complexity: O(len(keys) · log N).
        """
        try:
            walk = list(keys)
        except TypeError:
            return
        for key in reversed(walk):
            try:
                in_t1 = key in self.t1
            except TypeError:
                continue
            placed = self._unplace(key)
            if placed is not None:
                block, eligible = placed
                self._place_mru(key, block, (not in_t1) or block.is_ready, eligible)
            elif key in self.b1:
                self.target_t1_size = target_after_b1_hit(
                    self.target_t1_size, len(self.b1), len(self.b2), self.cache_capacity
                )
                self.b1.move_to_end(key)
            elif key in self.b2:
                self.target_t1_size = target_after_b2_hit(
                    self.target_t1_size, len(self.b1), len(self.b2)
                )
                self.b2.move_to_end(key)

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:
        """Remove `n` idle unprotected entries in ARC order, or return None, changing nothing.

        Selection as the model: simulated `t1 = |T1|`; each round T1 first when
        `t1 >= int(target)`, else (or if T1 had none) T2, then T1 as the fallback.
        Commit: leave T1/T2, append to B1/B2, trim both ghost lists to N.
        Pre: `n` an int >= 0 (else `InvalidArgumentError`).
        Complexity: O((n + protected idle entries skipped) · log N), plus stale heap
        entries dropped on the way (each left by an earlier `mark_non_evictable`,
        `touch` or `remove`, dropped once, at most O(live) of them after compaction:
        amortised O(log N) per hook call). A pinned or pending entry is never scanned.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidArgumentError(f"ARC evict: n must be an int >= 0, got {n!r}")
        if n == 0:
            return []
        elig1, elig2 = self._elig1, self._elig2
        skipped1: list[_HeapEntry] = []
        skipped2: list[_HeapEntry] = []
        chosen1: list[_HeapEntry] = []
        chosen2: list[_HeapEntry] = []
        order: list[tuple[Key, bool]] = []
        t1 = len(self.t1)
        limit = int(self.target_t1_size)
        for _ in range(n):
            from_t1 = False
            entry = None
            if t1 >= limit:
                entry = elig1.pop_next(protected, skipped1)
                from_t1 = entry is not None
            if entry is None:
                entry = elig2.pop_next(protected, skipped2)
            if entry is None:
                entry = elig1.pop_next(protected, skipped1)
                from_t1 = entry is not None
            if entry is None:
                elig1.push_back(skipped1 + chosen1)
                elig2.push_back(skipped2 + chosen2)
                return None
            if from_t1:
                t1 -= 1
                chosen1.append(entry)
            else:
                chosen2.append(entry)
            order.append((entry[2], from_t1))
        if skipped1:
            elig1.push_back(skipped1)
        if skipped2:
            elig2.push_back(skipped2)

        victims: list[tuple[Key, BlockStatus]] = []
        t1_list, t2_list, b1, b2, stamps = self.t1, self.t2, self.b1, self.b2, self._stamp
        live1, live2 = elig1.live, elig2.live
        for key, from_t1 in order:
            if from_t1:
                del live1[key]
                block = t1_list.pop(key)
                b1[key] = None
            else:
                del live2[key]
                block = t2_list.pop(key)
                b2[key] = None
            del stamps[key]
            victims.append((key, block))
        capacity = self.cache_capacity
        for ghosts in (b1, b2):
            while len(ghosts) > capacity:
                ghosts.popitem(last=False)
        return victims

    def clear(self) -> None:
        """All four lists empty, target back to 0. Complexity: O(N)."""
        self.t1.clear()
        self.t2.clear()
        self.b1.clear()
        self.b2.clear()
        self.target_t1_size = 0.0
        self._stamp.clear()
        self._elig1.clear()
        self._elig2.clear()

    def snapshot(self) -> ArcPolicySnapshot:
        """The four lists, least recent first, and the target. Complexity: O(N)."""
        return ArcPolicySnapshot(
            t1=tuple(self.t1),
            t2=tuple(self.t2),
            b1=tuple(self.b1),
            b2=tuple(self.b2),
            target=float(self.target_t1_size),
        )

    # ------------------------------------------------------------ checking

    def check_invariants(self) -> None:
        """Raise `InvariantViolationError` naming the first broken internal invariant.

        Complexity: O(N).
        """
        lists: dict[str, Mapping[Key, object]] = {
            "t1": self.t1,
            "t2": self.t2,
            "b1": self.b1,
            "b2": self.b2,
        }
        seen: dict[Key, str] = {}
        for name, entries in lists.items():
            for key in entries:
                if key in seen:
                    _fail(f"key {key!r} is in both {seen[key]} and {name}")
                seen[key] = name
        n = self.cache_capacity
        if len(self.b1) > n or len(self.b2) > n:
            _fail(f"ghost list longer than N={n}: |B1|={len(self.b1)}, |B2|={len(self.b2)}")
        if not 0.0 <= self.target_t1_size <= n:
            _fail(f"target {self.target_t1_size} outside [0, {n}]")
        if set(self._stamp) != set(self.t1) | set(self.t2):
            _fail("position stamps do not cover exactly the resident keys")
        for name, entries, index in (("t1", self.t1, self._elig1), ("t2", self.t2, self._elig2)):
            stamps = [self._stamp[k] for k in entries]
            if any(a >= b for a, b in pairwise(stamps)):
                _fail(f"{name}: position stamps are not increasing in list order")
            idle = {k for k, b in entries.items() if b.ref_cnt == 0}
            if set(index.live) != idle:
                _fail(
                    f"{name}: eligible index {sorted(map(repr, index.live))} "
                    f"!= idle entries {sorted(map(repr, idle))}"
                )
            live_entries = [e for e in index.heap if index.live.get(e[2]) == e[1]]
            if len(live_entries) != len(index.live) or {e[2] for e in live_entries} != set(
                index.live
            ):
                _fail(f"{name}: eligible index has missing or duplicate live heap entries")
            if any(self._stamp[e[2]] != e[0] for e in live_entries):
                _fail(f"{name}: a live heap entry has a stale position stamp")
            heap = index.heap
            if any(heap[(i - 1) // 2] > heap[i] for i in range(1, len(heap))):
                _fail(f"{name}: eligible heap order is broken")


def _fail(message: str) -> None:
    raise InvariantViolationError(["arc_internal"], f"ARCCachePolicy: {message}")
