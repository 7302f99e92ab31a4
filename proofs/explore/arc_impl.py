"""The implementation's ARC policy driven by the ARC model's exhaustive exploration.

`explore.arc_search` explores `model.arc.ModelArc` (or a subclass) policy event by
policy event and checks each edge against the per-key relations of `z3.arc`.
`ImplArc` is such a subclass whose every event is *made by the implementation*
(`impl.policies.arc.ARCCachePolicy`, or a class given as `impl_class`): before each
event it builds an implementation policy holding the explored state (the four lists
in order, the target, a record per resident key with the ref count the manager
would hold), makes the call there, and takes the implementation's lists and target
as the new state. So the exploration visits the implementation's own successor
states, and `bound.eviction.arc` (`proofs.z3.bound_arc`) checks the Z3 relations
-- eviction included -- on the implementation's steps.

Only `touch` and `evict` read ref counts (through `ref_of`); the other events do not
depend on which keys are idle, so their records' counts are left at 0. The idle view
(`ModelArc.idle`) is the model's bookkeeping of the hook calls, kept here as the
model keeps it: the implementation built for one event knows only the counts it was
given, and its idle view is checked against the manager's by the manager-level
engines instead.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import ClassVar

from evictable.impl.policies.arc import ARCCachePolicy
from evictable.impl.policies.arc_ghosts import GhostList
from evictable.impl.policies.arc_index import ArcRecord
from evictable.model.arc import ModelArc
from evictable.model.policy import RefOf
from evictable.model.types import Key

__all__ = ["ImplArc"]


class ImplArc(ModelArc):
    """`ModelArc`'s interface, every event made by `impl_class` (see the module doc)."""

    impl_class: ClassVar[type[ARCCachePolicy]] = ARCCachePolicy

    def _impl(self, ref_of: RefOf) -> ARCCachePolicy:
        """An implementation policy in this object's state (records carry `ref_of`),
        built through the policy's own copy protocol (`__setstate__`: the table of
        records with their stamps and lists, the ghost lists, the target)."""
        impl = self.impl_class(self.capacity)
        table: dict[Key, ArcRecord] = {}
        clock = 0
        for entries, in_t2 in ((self.t1, False), (self.t2, True)):
            for key in entries:
                clock += 1
                record = impl.record_class(clock, key)
                if not isinstance(record, ArcRecord):
                    raise TypeError(f"{self.impl_class.__name__} records are not ArcRecords")
                ref = ref_of(key)
                record.ref_cnt = 0 if ref is None else ref
                record.stamp, record.in_t2 = clock, in_t2
                table[key] = record
        # Stamps are handed out in list order, T1 before T2: within each list, list
        # order is stamp order, which is all the policy reads from them.
        b1, b2 = GhostList(), GhostList()
        b1.extend(self.b1)
        b2.extend(self.b2)
        impl.__setstate__((self.capacity, table, b1, b2, self.target, len(self.t1), clock))
        return impl

    def _adopt(self, impl: ARCCachePolicy) -> None:
        snap = impl.snapshot()
        self.t1, self.t2 = list(snap.t1), list(snap.t2)
        self.b1, self.b2 = list(snap.b1), list(snap.b2)
        self.target = snap.target

    def _idle(self, _key: Key) -> int:
        return 0

    def insert(self, key: Key) -> None:
        impl = self._impl(self._idle)
        impl.insert(key, impl.record_class(-1, key))
        self._adopt(impl)

    def remove(self, key: Key) -> None:
        impl = self._impl(self._idle)
        impl.remove(key)
        self._adopt(impl)
        self.idle.discard(key)

    def mark_evictable(self, key: Key) -> None:
        impl = self._impl(self._idle)
        block = impl.get(key)
        if block is not None:
            block.ref_cnt = 0
        impl.mark_evictable(key)
        self._adopt(impl)
        self.idle.add(key)

    def mark_non_evictable(self, key: Key) -> None:
        impl = self._impl(self._idle)
        block = impl.get(key)
        if block is not None:
            block.ref_cnt = 1
        impl.mark_non_evictable(key)
        self._adopt(impl)
        self.idle.discard(key)

    def touch(self, keys: Sequence[Key], ref_of: RefOf) -> None:
        impl = self._impl(ref_of)
        impl.touch(keys)
        self._adopt(impl)

    def evict(self, n: int, protected: Set[Key], ref_of: RefOf) -> list[Key] | None:
        impl = self._impl(ref_of)
        out = impl.evict(n, protected)
        self._adopt(impl)
        if out is None:
            return None
        victims = [key for key, _ in out]
        self.idle.difference_update(victims)
        return victims

    def clear(self) -> None:
        impl = self._impl(self._idle)
        impl.clear()
        self._adopt(impl)
        self.idle.clear()
