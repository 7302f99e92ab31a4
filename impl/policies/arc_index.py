"""ARC's idle index: the ref-0 records of one resident list, in list order, never a pinned one.

**Position stamps.** Every time a record arrives at the most-recent end of T1 or T2
(a new key, a touch) it gets a fresh, strictly increasing stamp (`ArcRecord.stamp`),
so within one list, list order is stamp order. Pinning, unpinning and committing a
store never move an entry, so a record that becomes idle again goes back to the
place its stamp says, which is not always the end.

**Three structures per list** (`IdleIndex`) hold exactly the list's idle records,
each sorted by stamp:

* the **ring**: an intrusive doubly linked list through the records' `prev` / `next`
  slots, closed by a sentinel, as the LRU's. A record that becomes idle with a stamp
  above the ring's last one (a store committed after the keys stored before it, a
  touched record) is linked at its end. O(1).
* the **late ring**: the same, for records that become idle *behind* the ring's last
  record but above the late ring's last one: the end of a load of an older block,
  when loads end in list order (a request's blocks, one batch after another). O(1).
* the **heap**: `(stamp, record)` entries for everything else, O(log n) each. A
  record with an entry of its current stamp in the heap is *heaped*: its `next` is
  the marker `HEAPED` (and its `prev` None). Leaving the heap is lazy: pinning a
  heaped record leaves its entry *dormant* (it is live again when the record is
  unpinned, with no push), and a touch or a removal unmarks the record, which turns
  the entry into garbage. Eviction drops garbage and dormant entries as they reach
  the top (each at most once, each paid for by the hook call that left it), and the
  heap is rebuilt from its marked entries once garbage outnumbers them.

A record that becomes pinned leaves its ring in O(1) (a heaped one goes dormant).
Eviction (`Walk`) merges the two rings, walked from their least-recent ends, and the
heap's live top, by stamp: it visits idle records (and protected idle ones it must
skip), never a pinned or pending one, and changes nothing until it has found all
its victims. The sentinels' stamp is `END`, above every real stamp, so an exhausted
ring never wins the merge.

A resident record is in one of three places: *listed* (in a ring: `prev is not
None`), *heaped* (`next is HEAPED`) or *neither* (both None). Listed records are
idle; heaped records are idle or dormant; a record in neither place is pending,
pinned, or (outside the manager's protocol) idle but never reported so.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Set
from heapq import heapify, heappop, heappush
from typing import NoReturn

from evictable.impl._compat import mypyc_attr
from evictable.impl.block import BlockStatus
from evictable.model.errors import InvariantViolationError
from evictable.model.types import Key

__all__ = ["END", "HEAPED", "ArcRecord", "IdleIndex", "Walk", "link_after", "new_ring", "select"]

COMPACT_SLACK = 32
"""Garbage heap entries tolerated on top of twice the marked ones before a rebuild."""


@mypyc_attr(allow_interpreted_subclasses=True)
class ArcRecord(BlockStatus):
    """A `BlockStatus` with ARC's two fields: `stamp` (position stamp, 0 until filed)
    and `in_t2` (the resident list: T2 when True, else T1).

    >>> r = ArcRecord(7, b"k")
    >>> (r.block_id, r.key, r.ref_cnt, r.stamp, r.in_t2)
    (7, b'k', -1, 0, False)

    `prev` / `next` are the links of the idle ring of its list (`IdleIndex`), or
    `next is HEAPED` while the record has an entry in that list's heap. Copies carry
    the stamp and the list, never the links (the policy relinks its copy).
    Complexity: O(1) memory (seven slots, no `__dict__`).
    """

    __slots__ = ("in_t2", "stamp")

    def __init__(self, block_id: int, key: Key | None = None) -> None:
        self.ref_cnt = -1
        self.block_id = block_id
        self.key = key
        self.prev: BlockStatus | None = None
        self.next: BlockStatus | None = None
        self.stamp = 0
        self.in_t2 = False

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:  # type: ignore[override]
        """Pickle as (slot, key, ref count, stamp, list): no links."""
        return _restore, (self.block_id, self.key, self.ref_cnt, self.stamp, self.in_t2)

    def __deepcopy__(self, memo: dict[int, object]) -> ArcRecord:
        """The record itself inside `impl.block.sharing_records()`, else an unlinked copy."""
        if BlockStatus.__deepcopy__(self, memo) is self:
            return self  # records are shared (a policy checkpoint)
        clone = _restore(self.block_id, self.key, self.ref_cnt, self.stamp, self.in_t2)
        memo[id(self)] = clone
        return clone


def _restore(block_id: int, key: Key | None, ref_cnt: int, stamp: int, in_t2: bool) -> ArcRecord:
    record = ArcRecord(block_id, key)
    record.ref_cnt = ref_cnt
    record.stamp = stamp
    record.in_t2 = in_t2
    return record


class _Marker(ArcRecord):
    """The one `HEAPED` marker: every copy of it (pickle, deepcopy) is itself, so that
    `next is HEAPED` survives a copy of a structure that links to it."""

    __slots__ = ()

    def __reduce__(self) -> str:  # type: ignore[override]
        return "HEAPED"

    def __deepcopy__(self, memo: dict[int, object]) -> ArcRecord:
        return self


HEAPED = _Marker(-2)
"""The marker in `next` of a record that has an entry of its current stamp in a heap."""

END = 1 << 62
"""The stamp of every ring sentinel: above every real stamp (the clock never gets there)."""


def new_ring() -> ArcRecord:
    """An empty ring: a sentinel (slot -1, stamp `END`) linked to itself."""
    ring = ArcRecord(-1)
    ring.stamp = END
    ring.prev = ring.next = ring
    return ring


_Entry = tuple[int, ArcRecord]
"""A heap entry: (stamp when pushed, record). Live iff the record is heaped with that stamp."""


def link_after(last: BlockStatus, record: BlockStatus, ring: BlockStatus) -> None:
    """Link `record` between `last` (the ring's last record or sentinel) and `ring`."""
    record.prev = last
    record.next = ring
    last.next = record
    ring.prev = record


class IdleIndex:
    """The idle records of one resident list: two sorted rings and a heap.

    >>> index = IdleIndex()
    >>> a, b, c = (ArcRecord(slot, key) for slot, key in enumerate("abc"))
    >>> for stamp, record in enumerate((a, b, c), 1):
    ...     record.stamp, record.ref_cnt = stamp, 0
    ...     index.append(record)
    >>> b.ref_cnt = 1; index.detach(b)  # pinned: out of the index
    True
    >>> b.ref_cnt = 0; index.admit(b)  # idle again, behind c: the late ring
    >>> [r.key for r in index.listed()]
    ['a', 'c', 'b']

    `marked` counts the heaped records (live or dormant); every other heap entry is
    garbage. Complexity: O(1) memory per idle record, plus at most
    `marked + COMPACT_SLACK` garbage entries.
    """

    __slots__ = ("heap", "late", "marked", "ring")

    def __init__(self) -> None:
        self.ring = new_ring()
        self.late = new_ring()
        self.heap: list[_Entry] = []
        self.marked = 0

    def admit(self, record: ArcRecord) -> None:
        """`record` just became idle: at the end of the ring or the late ring, whichever
        keeps it sorted (the ring first), else on the heap; nothing if already heaped.

        Pre: the record is not listed. Complexity: O(1), or O(log n) for a heap push.
        """
        if record.next is HEAPED:
            return  # a dormant entry comes back to life
        stamp = record.stamp
        ring = self.ring
        last = ring.prev
        if last is not ring and last.stamp > stamp:  # type: ignore[union-attr]
            ring = self.late
            last = ring.prev
            if last is not ring and last.stamp > stamp:  # type: ignore[union-attr]
                heappush(self.heap, (stamp, record))
                record.next = HEAPED
                self.marked += 1
                return
        link_after(last, record, ring)  # type: ignore[arg-type]

    def append(self, record: ArcRecord) -> None:
        """Link an unlisted, unheaped record at the ring's end. Pre: its stamp is the
        highest of the list (a fresh one). Complexity: O(1)."""
        ring = self.ring
        link_after(ring.prev, record, ring)  # type: ignore[arg-type]

    def detach(self, record: ArcRecord) -> bool:
        """Take `record` out of the index (it moves or leaves); True if it was idle.

        A heaped record's entry becomes garbage. Complexity: amortised O(1).
        """
        before = record.prev
        if before is not None:
            after = record.next
            before.next = after
            after.prev = before  # type: ignore[union-attr]
            record.prev = record.next = None
            return True
        if record.next is HEAPED:
            record.next = None
            self.marked -= 1
            if len(self.heap) > 2 * self.marked + COMPACT_SLACK:
                self.compact()
            return record.ref_cnt == 0
        return False

    def compact(self) -> None:
        """Rebuild the heap from its marked entries. Complexity: O(len(heap))."""
        self.heap = [e for e in self.heap if e[1].next is HEAPED and e[1].stamp == e[0]]
        heapify(self.heap)

    def listed(self) -> Iterator[ArcRecord]:
        """The records of the ring, then of the late ring, each least recent first.

        Complexity: O(1) per record.
        """
        for ring in (self.ring, self.late):
            record = ring.next
            while record is not ring:
                yield record  # type: ignore[misc]
                record = record.next  # type: ignore[union-attr]

    def idle(self) -> Iterator[ArcRecord]:
        """The records an eviction may take: the rings' records, then the heaped ones
        at ref 0 (a heaped record pinned since is dormant, not idle).

        Complexity: O(n).
        """
        yield from self.listed()
        for stamp, record in self.heap:
            if record.next is HEAPED and record.stamp == stamp and record.ref_cnt == 0:
                yield record

    def clear(self) -> None:
        """Empty the index, unlinking and unmarking every record. Complexity: O(n)."""
        for record in list(self.listed()):
            record.prev = record.next = None
        for _, record in self.heap:
            if record.next is HEAPED:
                record.next = None
        for ring in (self.ring, self.late):
            ring.prev = ring.next = ring
        self.heap = []
        self.marked = 0

    def check(self, name: str, resident: Mapping[Key, ArcRecord], in_t2: bool) -> int:
        """Raise `InvariantViolationError` unless the index is well formed; return the
        number of idle records it holds.

        Each ring: links both ways, no cycle, stamps increasing, every record resident,
        of this list, at ref 0. The heap: heap order, and exactly one entry of the
        current stamp for each heaped record of this list, `marked` of them.
        Complexity: O(n).
        """
        count = 0
        for ring in (self.ring, self.late):
            if ring.key is not None or ring.block_id != -1 or ring.stamp != END:
                _fail(f"{name}: a ring's sentinel was modified")
            record, stamp = ring, 0
            while True:
                after = record.next
                if not isinstance(after, ArcRecord) or after.prev is not record:
                    _fail(f"{name}: broken ring link after {record!r}")
                if after is ring:
                    break
                count += 1
                if count > len(resident):
                    _fail(f"{name}: a ring has a cycle")
                if resident.get(after.key) is not after or after.in_t2 is not in_t2:
                    _fail(f"{name}: ring record {after.key!r} is not a resident of this list")
                if after.ref_cnt != 0:
                    _fail(f"{name}: ring record {after.key!r} has ref {after.ref_cnt}")
                if after.stamp <= stamp:
                    _fail(f"{name}: ring stamps are not increasing at {after.key!r}")
                stamp = after.stamp
                record = after
        heap = self.heap
        if any(heap[(i - 1) // 2][0] > heap[i][0] for i in range(1, len(heap))):
            _fail(f"{name}: heap order is broken")
        live = [r for s, r in heap if r.next is HEAPED and r.stamp == s]
        if len(live) != len({id(r) for r in live}) or len(live) != self.marked:
            _fail(f"{name}: {self.marked} marked records but {len(live)} marked heap entries")
        for r in live:
            if resident.get(r.key) is not r or r.in_t2 is not in_t2 or r.prev is not None:
                _fail(f"{name}: heaped record {r.key!r} is not an unlisted resident of this list")
        heaped = sum(1 for r in resident.values() if r.next is HEAPED and r.in_t2 is in_t2)
        if heaped != self.marked:
            _fail(f"{name}: {heaped} records are marked heaped, the heap has {self.marked}")
        return count + sum(1 for r in live if r.ref_cnt == 0)


class Walk:
    """One list's side of an eviction: its idle records, least recent first, merged
    from the two rings and the heap, protected keys skipped.

    >>> index = IdleIndex()
    >>> for stamp, key in enumerate("abc", 1):
    ...     record = ArcRecord(stamp, key)
    ...     record.stamp, record.ref_cnt = stamp, 0
    ...     index.append(record)
    >>> walk, victims = Walk(index, protected={"a"}), []
    >>> walk.take(2, victims), [r.key for r in victims]
    (2, ['b', 'c'])
    >>> walk.finish()

    `take` appends the next records to a victim list without changing the index,
    apart from dropping garbage and dormant heap entries on the way; the caller then
    either commits the victims (unlinks them, unmarks the heaped ones) or pushes the
    heaped ones back, and calls `finish` in both cases.
    """

    __slots__ = ("at", "heap", "index", "lat", "late", "protected", "ring", "skipped", "top")

    def __init__(self, index: IdleIndex, protected: Set[Key]) -> None:
        self.index = index
        self.ring = ring = index.ring
        self.late = late = index.late
        self.at = ring.next
        self.lat = late.next
        self.heap = index.heap
        self.protected = protected
        self.skipped: list[_Entry] = []
        self.top = self._next_live() if self.heap else None

    def _next_live(self) -> _Entry | None:
        """Pop the heap down to its least-recent live unprotected entry, or None.

        Garbage is dropped, dormant entries are dropped (their records unmarked),
        protected live entries are kept aside for `finish`. Complexity:
        O((1 + dropped + skipped) · log n).
        """
        heap, protected = self.heap, self.protected
        while heap:
            entry = heappop(heap)
            record = entry[1]
            if record.next is not HEAPED or record.stamp != entry[0]:
                continue  # garbage
            if record.ref_cnt:
                record.next = None  # dormant: pinned since it was heaped
                self.index.marked -= 1
                continue
            if record.key in protected:
                self.skipped.append(entry)
                continue
            return entry
        return None

    def take(self, k: int, out: list[ArcRecord]) -> int:
        """Append up to `k` more victims to `out`, least recent first; return how many.

        Complexity: O(k + protected skipped) on the rings, O(log n) per heap victim.
        """
        at, lat, late, top, protected = self.at, self.lat, self.late, self.top, self.protected
        taken = 0
        while taken < k:
            if top is not None and top[0] < at.stamp and top[0] < lat.stamp:  # type: ignore[union-attr]
                out.append(top[1])
                top = self._next_live()
                taken += 1
                continue
            if at.stamp < lat.stamp:  # type: ignore[union-attr]
                record = at
                at = at.next  # type: ignore[union-attr]
            elif lat is not late:
                record = lat
                lat = lat.next  # type: ignore[union-attr]
            else:
                break  # both rings walked to their sentinel (stamp END), no heap entry
            if record.key not in protected:  # type: ignore[union-attr]
                out.append(record)  # type: ignore[arg-type]
                taken += 1
        self.at, self.lat, self.top = at, lat, top
        return taken

    def finish(self) -> None:
        """Return the entries popped but not taken (the live top, protected ones)."""
        heap = self.heap
        if self.top is not None:
            heappush(heap, self.top)
            self.top = None
        for entry in self.skipped:
            heappush(heap, entry)
        self.skipped = []


def select(
    one: IdleIndex, two: IdleIndex, t1: int, limit: int, n: int, protected: Set[Key]
) -> list[ArcRecord] | None:
    """ARC's `n` victims from T1's index `one` and T2's `two`, in ARC's order, or None.

    ARC's rounds (`model.arc.ModelArc.evict`): each round takes T1's next idle entry
    while the simulated `t1` (|T1|, minus the T1 victims so far) is at least `limit`
    (`int(target)`), else (or if T1 has none) T2's, else T1's as the fallback. So the
    rounds split into runs: T1 while `t1 >= limit`, then T2, then T1 again; each run
    continues its list's walk. Nothing changes but dropped heap entries; on success
    the caller commits the victims and calls `finish` on both walks, which this does
    itself on failure (pushing back the heap entries it took).
    Complexity: O(n + protected skipped), plus O(log n) per heap entry popped.
    """
    chosen: list[ArcRecord] = []
    first = max(0, min(n, t1 - limit + 1))
    walk1 = Walk(one, protected)
    got = walk1.take(first, chosen)
    walk2 = Walk(two, protected)
    if got < first:  # T1 ran dry in its own rounds: every later round is T2's
        ok = walk2.take(n - got, chosen) == n - got
    else:
        got += walk2.take(n - got, chosen)
        ok = got == n or walk1.take(n - got, chosen) == n - got
    if not ok:
        for record in chosen:
            if record.next is HEAPED:  # taken from a heap: put it back
                heappush((two if record.in_t2 else one).heap, (record.stamp, record))
    walk1.finish()
    walk2.finish()
    return chosen if ok else None


def _fail(message: str) -> NoReturn:
    raise InvariantViolationError(["arc_internal"], f"ARCCachePolicy: {message}")
