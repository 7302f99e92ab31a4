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
depend on which keys are idle, so their records' counts are left at 0.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence, Set
from typing import ClassVar

from evictable.impl.block import BlockStatus
from evictable.impl.policies.arc import ARCCachePolicy
from evictable.model.arc import ModelArc
from evictable.model.policy import RefOf
from evictable.model.types import Key

__all__ = ["ImplArc"]


class ImplArc(ModelArc):
    """`ModelArc`'s interface, every event made by `impl_class` (see the module doc)."""

    impl_class: ClassVar[type[ARCCachePolicy]] = ARCCachePolicy

    def _impl(self, ref_of: RefOf) -> ARCCachePolicy:
        """An implementation policy in this object's state (records carry `ref_of`)."""
        impl = self.impl_class(self.capacity)
        clock = 0
        for entries, listed, eligible in (
            (self.t1, impl.t1, impl._elig1),
            (self.t2, impl.t2, impl._elig2),
        ):
            for key in entries:
                block = BlockStatus(clock, key)
                ref = ref_of(key)
                block.ref_cnt = 0 if ref is None else ref
                clock += 1
                listed[key] = block
                impl._stamp[key] = clock
                if block.ref_cnt == 0:
                    eligible.add(key, clock)
        impl._clock = clock
        impl.b1 = OrderedDict.fromkeys(self.b1)
        impl.b2 = OrderedDict.fromkeys(self.b2)
        impl.target_t1_size = self.target
        return impl

    def _adopt(self, impl: ARCCachePolicy) -> None:
        self.t1, self.t2 = list(impl.t1), list(impl.t2)
        self.b1, self.b2 = list(impl.b1), list(impl.b2)
        self.target = impl.target_t1_size

    def _idle(self, _key: Key) -> int:
        return 0

    def insert(self, key: Key) -> None:
        impl = self._impl(self._idle)
        block = BlockStatus(-1, key)
        impl.insert(key, block)
        self._adopt(impl)

    def remove(self, key: Key) -> None:
        impl = self._impl(self._idle)
        impl.remove(key)
        self._adopt(impl)

    def mark_evictable(self, key: Key) -> None:
        impl = self._impl(self._idle)
        block = impl.get(key)
        if block is not None:
            block.ref_cnt = 0
        impl.mark_evictable(key)
        self._adopt(impl)

    def mark_non_evictable(self, key: Key) -> None:
        impl = self._impl(self._idle)
        block = impl.get(key)
        if block is not None:
            block.ref_cnt = 1
        impl.mark_non_evictable(key)
        self._adopt(impl)

    def touch(self, keys: Sequence[Key], ref_of: RefOf) -> None:
        impl = self._impl(ref_of)
        impl.touch(keys)
        self._adopt(impl)

    def evict(self, n: int, protected: Set[Key], ref_of: RefOf) -> list[Key] | None:
        impl = self._impl(ref_of)
        out = impl.evict(n, protected)
        self._adopt(impl)
        return None if out is None else [key for key, _ in out]

    def clear(self) -> None:
        impl = self._impl(self._idle)
        impl.clear()
        self._adopt(impl)
