"""ARC whose eviction never scans pinned entries (docs/semantics.md, "ARC").

The observable behaviour is exactly `model.arc.ModelArc`'s; this is the fast path.

**One hash table per resident block.** Every resident key maps to its record in one
dict, `table`, which the manager reads as its own key table (`shared_table`). A
record (`ArcRecord`) carries its list (`in_t2`) and its position stamp: T1 and T2
are the resident records of each list in stamp order, so a move to a list's
most-recent end is a new stamp, and only the idle records of each list are kept in
an order structure of their own, the idle index (`impl.policies.arc_index`: sorted
intrusive rings plus a heap for records that become idle out of order).
`t1_size` counts T1 (pinned and pending entries included: ARC's choice between the
lists reads it). B1 and B2 are ghost lists (`impl.policies.arc_ghosts`: a dict and a
deque each), least recent first.

**Batches** (`impl.policies.base`): `stored`, `aborted`, `became_evictable` and
`became_pinned` act on the records of one call without a per-key method call,
with the same effect as `insert`, `remove`, `mark_evictable` and
`mark_non_evictable` key by key; the victims' records are released
(`releases_evicted_records`), so the manager reuses them. A subclass gets the
per-key calls (so a subclass's override of a per-key method is always honoured).
Records are `record_class` objects: the manager creates them, and `insert` refuses
any other kind of record.

**Eviction** has one fast path, for the common case: every round takes from T1
(T1 is at least `target` + n - 1 long) and T1's heap is empty, so the victims are
the first idle unprotected records of T1's two rings, merged by stamp. Anything
else goes through `arc_index.select`, which follows ARC's rounds in general.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Set
from operator import attrgetter
from typing import Any, ClassVar, NoReturn

from evictable.impl._compat import mypyc_attr
from evictable.impl.block import BlockStatus
from evictable.impl.policies.arc_ghosts import GhostList
from evictable.impl.policies.arc_index import ArcRecord, IdleIndex, select
from evictable.impl.policies.base import CachePolicy, own_abc_caches
from evictable.model.arc import target_after_b1_hit, target_after_b2_hit
from evictable.model.errors import InvalidArgumentError, InvariantViolationError
from evictable.model.types import ArcPolicySnapshot, Key

__all__ = ["ARCCachePolicy", "ArcRecord"]

_BATCH_METHODS = ("stored", "aborted", "became_evictable", "became_pinned")
"""The batch methods this class implements without per-key calls (see the module doc)."""

_by_stamp = attrgetter("stamp")


@mypyc_attr(allow_interpreted_subclasses=True)
class ARCCachePolicy(CachePolicy):
    """Adaptive Replacement Cache with an O(victims) eviction that skips no pinned entry.

    >>> arc = ARCCachePolicy(2)
    >>> for slot, key in enumerate([b"a", b"b"]):
    ...     arc.insert(key, arc.record_class(slot, key))  # T1's most-recent end
    ...     arc.get(key).ref_cnt = 0
    ...     arc.mark_evictable(key)  # idle: eligible for eviction
    >>> arc.touch([b"a"])  # seen again while stored: T1 -> T2
    >>> [key for key, _ in arc.evict(1, protected=set())]
    [b'b']
    >>> view = arc.snapshot()
    >>> view.t1, view.t2, view.b1, view.b2, view.target, view.evictable
    ((), (b'a',), (b'b',), (), 0.0, frozenset({b'a'}))


    State: `table` (every resident key -> its record), each record's list and
    stamp, `t1_size`, one idle index per list holding exactly its ref-0 records,
    the ghost lists `b1`, `b2` (least recent first) and `target_t1_size` in [0, N].
    """

    __slots__ = ("_clock", "_idle1", "_idle2", "b1", "b2", "t1_size", "table", "target_t1_size")

    name = "arc"

    releases_evicted_records = True

    record_class: ClassVar[type[BlockStatus]] = ArcRecord

    def __init__(self, cache_capacity: object) -> None:
        if (
            isinstance(cache_capacity, bool)
            or not isinstance(cache_capacity, int)
            or cache_capacity < 0
        ):
            raise InvalidArgumentError(f"ARC capacity must be an int >= 0, got {cache_capacity!r}")
        super().__init__(cache_capacity)
        self.table: dict[Key, ArcRecord] = {}
        self.t1_size = 0
        self.b1 = GhostList()
        self.b2 = GhostList()
        self.target_t1_size: float = 0.0
        self._clock = 0
        self._idle1 = IdleIndex()
        self._idle2 = IdleIndex()

    def __init_subclass__(cls, **kwargs: object) -> None:
        """A subclass gets the per-key batch methods of `CachePolicy` (unless it
        defines its own), so that its overrides of the per-key methods are called."""
        super().__init_subclass__(**kwargs)
        for name in _BATCH_METHODS:
            if name not in vars(cls):
                setattr(cls, name, getattr(CachePolicy, name))

    # ------------------------------------------------------------ batches

    def shared_table(self) -> dict[Key, BlockStatus]:
        """`table`: the manager reads it as its key table. Complexity: O(1)."""
        return self.table  # type: ignore[return-value]

    def stored(self, keys: Sequence[Key], blocks: Sequence[BlockStatus]) -> None:
        """New PENDING records at T1's most-recent end, in key order; their keys stop
        being ghosts. Pre: the records are unfiled (`in_t2` False, no links): new, or
        released by `evict`. Complexity: O(len(keys))."""
        # A list (the manager's batches are): iterated natively when compiled.
        records: list[ArcRecord] = blocks if type(blocks) is list else list(blocks)  # type: ignore[arg-type]
        table = self.table
        if len(keys) != len(records):
            table.update(zip(keys, records, strict=True))  # raises, as it always did
        for key, record in zip(keys, records):  # noqa: B905 - lengths checked; native loop
            table[key] = record
        ghosts = self.b1.members
        if ghosts and not ghosts.keys().isdisjoint(keys):
            self.b1.discard_all(keys)
        ghosts = self.b2.members
        if ghosts and not ghosts.keys().isdisjoint(keys):
            self.b2.discard_all(keys)
        clock = self._clock
        for record in records:
            clock += 1
            record.stamp = clock
        self._clock = clock
        self.t1_size += len(records)

    def aborted(self, blocks: Sequence[BlockStatus]) -> None:
        """Failed stores (PENDING: in no index) leave T1/T2, with no ghost.

        Complexity: O(len(blocks)).
        """
        records: Sequence[ArcRecord] = blocks  # type: ignore[assignment]
        table = self.table
        for record in records:
            del table[record.key]
            self.t1_size -= not record.in_t2

    def became_evictable(self, blocks: Sequence[BlockStatus]) -> None:
        """Records whose ref count reached 0 join their list's idle index, in place
        (`IdleIndex.admit`, inline for T1: a committed store goes to the end of the
        ring, a load end of an older block to the end of the late ring, most often).

        Complexity: O(len(blocks)), plus O(log n) for each record that goes to a heap.
        """
        # A list (the manager's batches are): iterated natively when compiled.
        records: list[ArcRecord] = blocks if type(blocks) is list else list(blocks)  # type: ignore[arg-type]
        one, two = self._idle1, self._idle2
        main, late = one.ring, one.late
        last: ArcRecord  # the links typed as records: native field access when compiled
        for record in records:
            if record.in_t2 or record.next is not None:
                (two if record.in_t2 else one).admit(record)  # T2, or a dormant heap entry
                continue
            last = main.prev  # type: ignore[assignment]
            if last is main or last.stamp < record.stamp:
                record.prev = last
                record.next = main
                last.next = record
                main.prev = record
                continue
            last = late.prev  # type: ignore[assignment]
            if last is late or last.stamp < record.stamp:
                record.prev = last
                record.next = late
                last.next = record
                late.prev = record
            else:
                one.admit(record)  # behind both rings' ends: the heap

    def became_pinned(self, blocks: Sequence[BlockStatus]) -> None:
        """Records whose ref count left 0 leave their ring (a heaped one's entry goes
        dormant). Complexity: O(len(blocks))."""
        for block in blocks:
            before = block.prev
            if before is not None:
                after: BlockStatus = block.next  # type: ignore[assignment]
                before.next = after
                after.prev = before
                block.prev = block.next = None

    # ------------------------------------------------------------ per key

    def get(self, key: Key) -> BlockStatus | None:
        """The key's record (T1 or T2), or None. No recency change. Complexity: O(1)."""
        return self.table.get(key)

    def insert(self, key: Key, block: BlockStatus) -> None:
        """A new resident key: T1's most-recent end; it stops being a ghost.

        Pre: key not resident, `block` an unfiled `ArcRecord` (else
        `InvalidArgumentError`, nothing changes). Complexity: O(1).
        """
        if not isinstance(block, ArcRecord):
            raise InvalidArgumentError(
                f"ARC insert: the record for {key!r} is a {type(block).__name__}, "
                "not an ArcRecord (ARCCachePolicy.record_class)"
            )
        if key in self.table:
            raise InvalidArgumentError(f"ARC insert: key {key!r} is already resident")
        if block.prev is not None or block.next is not None:
            raise InvalidArgumentError(f"ARC insert: the record for {key!r} is already filed")
        block.key = key
        block.in_t2 = False
        ARCCachePolicy.stored(self, (key,), (block,))

    def remove(self, key: Key) -> None:
        """A failed store: out of T1/T2, no ghost.

        Pre: key resident (else `InvalidArgumentError`, nothing changes).
        Complexity: amortised O(1).
        """
        block = self.table.get(key)
        if block is None:
            raise InvalidArgumentError(f"ARC remove: key {key!r} is not resident")
        self._index(block).detach(block)
        del self.table[key]
        self.t1_size -= not block.in_t2

    def mark_evictable(self, key: Key) -> None:
        """Ref count reached 0: join its list's idle index, keeping list order.

        No-op for a key that is not resident or already idle. Complexity: O(log n).
        """
        block = self.table.get(key)
        if block is not None and block.prev is None:
            self._index(block).admit(block)

    def mark_non_evictable(self, key: Key) -> None:
        """Ref count left 0: leave the idle index (lazily). Complexity: O(1)."""
        block = self.table.get(key)
        if block is not None:
            ARCCachePolicy.became_pinned(self, (block,))

    def _index(self, block: ArcRecord) -> IdleIndex:
        return self._idle2 if block.in_t2 else self._idle1

    # ------------------------------------------------------------ recency

    def touch(self, keys: Iterable[Key]) -> None:
        """Recency hint, keys in reverse: docs/semantics.md, "ARC" (promotion, ghost hits).

        In T1 and ready -> T2 MRU; in T1 and pending -> T1 MRU; in T2 -> T2 MRU;
        in B1 / B2 -> adapt the target, ghost to its list's MRU end; others ignored.
        Never raises (an unhashable key is ignored: it cannot be in any list).
        Complexity: O(len(keys)) amortised.
        """
        try:
            walk = keys if type(keys) is list or type(keys) is tuple else list(keys)
        except TypeError:
            return
        get, b1, b2 = self.table.get, self.b1, self.b2
        for key in reversed(walk):
            try:
                block = get(key)
            except TypeError:
                continue
            if block is not None:
                self._to_mru(block, block.in_t2 or block.ref_cnt >= 0)
            elif key in b1:
                self.target_t1_size = target_after_b1_hit(
                    self.target_t1_size, len(b1), len(b2), self.cache_capacity
                )
                b1.move_to_end(key)
            elif key in b2:
                self.target_t1_size = target_after_b2_hit(self.target_t1_size, len(b1), len(b2))
                b2.move_to_end(key)

    def _to_mru(self, block: ArcRecord, to_t2: bool) -> None:
        """Move a resident record to the most-recent end of T2 (`to_t2`) or T1, idle
        or not as before. Complexity: amortised O(1)."""
        idle = self._index(block).detach(block)
        self.t1_size += block.in_t2 - to_t2
        self._clock += 1
        block.stamp = self._clock
        block.in_t2 = to_t2
        if idle:
            self._index(block).append(block)

    # ------------------------------------------------------------ eviction

    def evict(self, n: object, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:
        """Remove `n` idle unprotected entries in ARC order, or return None, changing nothing.

        Selection as the model: simulated `t1 = |T1|`; each round T1 first when
        `t1 >= int(target)`, else (or if T1 had none) T2, then T1 as the fallback
        (`arc_index.select`; the fast path of the module doc when every round is T1's).
        Commit: leave T1/T2, append to B1/B2 in victim order, trim both ghost lists
        to N. Pre: `n` an int >= 0 (else `InvalidArgumentError`).
        Complexity: O(n + protected idle entries skipped), plus O(log n) per victim
        taken from a heap and the garbage and dormant heap entries dropped on the
        way (each left by an earlier hook call, dropped once). A pinned or pending
        entry is never visited.
        """
        if (type(n) is not int and (isinstance(n, bool) or not isinstance(n, int))) or n < 0:
            raise InvalidArgumentError(f"ARC evict: n must be an int >= 0, got {n!r}")
        if not n:
            return []
        one = self._idle1
        if not one.heap and self.t1_size - int(self.target_t1_size) >= n - 1:
            victims = self._evict_from_t1(one, n, protected)
            if victims is not None:
                return victims
        chosen = select(one, self._idle2, self.t1_size, int(self.target_t1_size), n, protected)
        return None if chosen is None else self._commit(chosen)

    def _evict_from_t1(
        self, one: IdleIndex, n: int, protected: Set[Key]
    ) -> list[tuple[Key, BlockStatus]] | None:
        """The fast path: the first `n` idle unprotected records of T1's two rings (its
        heap is empty), committed; or None, changing nothing, if there are fewer.
        Complexity: O(n + protected skipped)."""
        ring, late = one.ring, one.late
        # The links typed as records (not Optional): native field access when compiled.
        at: ArcRecord = ring.next  # type: ignore[assignment]
        lat: ArcRecord = late.next  # type: ignore[assignment]
        record: ArcRecord
        chosen: list[ArcRecord] = []
        need = n
        while need:
            if at.stamp < lat.stamp:
                record = at
                at = at.next  # type: ignore[assignment]
            elif lat is not late:
                record = lat
                lat = lat.next  # type: ignore[assignment]
            else:
                return None  # both rings walked to their sentinel (stamp END)
            if record.key not in protected:
                chosen.append(record)
                need -= 1
        table, ghosts = self.table, self.b1
        members, order = ghosts.members, ghosts.order.append
        victims: list[tuple[Key, BlockStatus]] = []
        for record in chosen:
            before: BlockStatus = record.prev  # type: ignore[assignment]
            after: BlockStatus = record.next  # type: ignore[assignment]
            before.next = after
            after.prev = before
            record.prev = record.next = None
            key = record.key
            del table[key]
            members[key] = None
            order(key)
            victims.append((key, record))
        self.t1_size -= n
        if len(members) > self.cache_capacity:
            ghosts.trim(self.cache_capacity)
        return victims

    def _commit(self, chosen: list[ArcRecord]) -> list[tuple[Key, BlockStatus]]:
        """Victims leave their index, T1/T2 and the table; they become ghosts, in
        order. A T2 record goes back to T1's defaults (`in_t2` False) for its reuse."""
        table, one, two = self.table, self._idle1, self._idle2
        victims: list[tuple[Key, BlockStatus]] = []
        for record in chosen:
            before = record.prev
            if before is not None:
                after = record.next
                before.next = after
                after.prev = before  # type: ignore[union-attr]
                record.prev = None
            else:  # heaped; its entry is already popped
                (two if record.in_t2 else one).marked -= 1
            record.next = None
            key = record.key
            del table[key]
            if record.in_t2:
                self.b2.extend((key,))
                record.in_t2 = False
            else:
                self.b1.extend((key,))
                self.t1_size -= 1
            victims.append((key, record))
        self.b1.trim(self.cache_capacity)
        self.b2.trim(self.cache_capacity)
        return victims

    # ------------------------------------------------------------ reset, undo, copies

    def clear(self) -> None:
        """All four lists empty, target back to 0 (the table in place). Complexity: O(n)."""
        self._idle1.clear()
        self._idle2.clear()
        self.table.clear()
        self.b1.clear()
        self.b2.clear()
        self.target_t1_size = 0.0
        self.t1_size = 0
        self._clock = 0

    def checkpoint(self) -> object:
        """Every field `rollback` restores: the table, each record's place, both
        indexes, the ghosts and the counters (records shared). Complexity: O(n)."""
        indexes = (self._idle1, self._idle2)
        rings = [(r, r.prev, r.next) for i in indexes for r in (i.ring, i.late)]
        places = [(b, b.stamp, b.in_t2, b.prev, b.next) for b in self.table.values()]
        heaps = [(list(i.heap), i.marked) for i in indexes]
        ghosts = (self.b1.copy(), self.b2.copy())
        scalars = (self.target_t1_size, self.t1_size, self._clock)
        return dict(self.table), rings, places, heaps, ghosts, scalars

    def rollback(self, saved: object) -> None:
        """Restore the state captured by `checkpoint`, in place. Complexity: O(n)."""
        if not isinstance(saved, tuple) or len(saved) != 6:
            raise InvalidArgumentError("ARC rollback: not a token from checkpoint()")
        table, rings, places, heaps, ghosts, scalars = saved
        for ring, before, after in rings:
            ring.prev, ring.next = before, after
        for block, stamp, in_t2, before, after in places:
            block.stamp, block.in_t2, block.prev, block.next = stamp, in_t2, before, after
        for index, (heap, marked) in zip((self._idle1, self._idle2), heaps, strict=True):
            index.heap, index.marked = heap, marked
        self.table.clear()
        self.table.update(table)
        self.b1, self.b2 = ghosts
        self.target_t1_size, self.t1_size, self._clock = scalars

    def __getstate__(self) -> tuple[Any, ...]:
        """Copies carry the table (records with stamp and list), ghosts and counters;
        the indexes are rebuilt from the ref counts (every ref-0 record is idle)."""
        return (
            self.cache_capacity,
            self.table,
            self.b1,
            self.b2,
            self.target_t1_size,
            self.t1_size,
            self._clock,
        )

    def __setstate__(self, state: tuple[Any, ...]) -> None:
        (
            self.cache_capacity,
            self.table,
            self.b1,
            self.b2,
            self.target_t1_size,
            self.t1_size,
            self._clock,
        ) = state
        self._idle1, self._idle2 = IdleIndex(), IdleIndex()
        for block in sorted(self.table.values(), key=_by_stamp):
            if block.ref_cnt == 0:
                self._index(block).append(block)

    # ------------------------------------------------------------ views

    def snapshot(self) -> ArcPolicySnapshot:
        """The four lists, least recent first, the target, and the keys of the two
        idle indexes (`IdleIndex.idle`). Complexity: O(n log n)."""
        order = sorted(self.table.values(), key=_by_stamp)
        idle = [*self._idle1.idle(), *self._idle2.idle()]
        return ArcPolicySnapshot(
            t1=tuple(b.key for b in order if not b.in_t2),
            t2=tuple(b.key for b in order if b.in_t2),
            b1=tuple(self.b1),
            b2=tuple(self.b2),
            target=float(self.target_t1_size),
            evictable=frozenset(r.key for r in idle),
        )

    def check_invariants(self) -> None:
        """Raise `InvariantViolationError` naming the first broken internal invariant.

        Every resident record is an `ArcRecord` filed under its key, with a distinct
        stamp in (0, clock]; `t1_size` counts T1; the lists are disjoint, the ghost
        lists well formed and at most N long, the target in [0, N]; each idle index
        is well formed (`IdleIndex.check`) and holds exactly its list's ref-0 records.
        Complexity: O(n).
        """
        table, n = self.table, self.cache_capacity
        idle = {False: 0, True: 0}
        stamps: set[int] = set()
        for key, block in table.items():
            if not isinstance(block, ArcRecord) or block.key != key:
                _fail(f"record under {key!r} is {block!r}")
            if not 0 < block.stamp <= self._clock or block.stamp in stamps:
                _fail(f"{key!r} has a stale or repeated position stamp {block.stamp}")
            stamps.add(block.stamp)
            idle[block.in_t2] += block.ref_cnt == 0
            if key in self.b1 or key in self.b2:
                _fail(f"resident key {key!r} is also a ghost")
        if self.t1_size != sum(1 for b in table.values() if not b.in_t2):
            _fail(f"t1_size {self.t1_size} does not count T1")
        self.b1.check("b1")
        self.b2.check("b2")
        if not self.b1.members.keys().isdisjoint(self.b2.members):
            _fail("a key is in both B1 and B2")
        if len(self.b1) > n or len(self.b2) > n:
            _fail(f"ghost list longer than N={n}: |B1|={len(self.b1)}, |B2|={len(self.b2)}")
        if not 0.0 <= self.target_t1_size <= n:
            _fail(f"target {self.target_t1_size} outside [0, {n}]")
        for name, index, in_t2 in (("t1", self._idle1, False), ("t2", self._idle2, True)):
            held = index.check(name, table, in_t2)
            if held != idle[in_t2]:
                _fail(f"{name}: eligible index holds {held} records, {idle[in_t2]} are idle")


def _fail(message: str) -> NoReturn:
    raise InvariantViolationError(["arc_internal"], f"ARCCachePolicy: {message}")


own_abc_caches(ARCCachePolicy)
