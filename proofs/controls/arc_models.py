"""Negative controls for `evictable.proofs.explore.arc`: deliberately broken ARC models.

Each is a `model.arc.ModelArc` subclass with one realistic mistake; the obligation
that names it must find a counterexample when it explores that variant instead of
the real model.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from typing import Any

from evictable.model.arc import ModelArc, is_evictable_ref
from evictable.model.invariants import Logic
from evictable.model.policy import RefOf
from evictable.model.types import Key
from evictable.proofs.z3.arc import (
    KeyView,
    Params,
)

__all__ = [
    "EvictsPinned",
    "GhostInBoth",
    "IgnoresProtected",
    "InsertKeepsGhost",
    "LeakyPromotion",
    "NeverTrims",
    "NoT1Fallback",
    "PartialEvict",
    "TouchPromotesPending",
    "UncappedTarget",
]


class LeakyPromotion(ModelArc):
    """Touch promotes a ready T1 key to T2 but leaves it in T1 too."""

    def touch_one(self, key: Key, ref_of: RefOf) -> None:
        ref = ref_of(key) if key in self.t1 else None
        if key not in self.t2 and ref is not None and ref >= 0:
            self.t2.append(key)
            return
        super().touch_one(key, ref_of)


class GhostInBoth(ModelArc):
    """An eviction from T2 leaves a ghost in B1 as well as in B2."""

    def evict(self, n: int, protected: Set[Key], ref_of: RefOf) -> list[Key] | None:
        t2_before = set(self.t2)
        victims = super().evict(n, protected, ref_of)
        for v in victims or ():
            if v in t2_before and v not in self.b1:
                self.b1.append(v)
        return victims


class InsertKeepsGhost(ModelArc):
    """Insert does not take the key out of B1/B2."""

    def insert(self, key: Key) -> None:
        self.t1.append(key)


class NeverTrims(ModelArc):
    """Eviction never trims the ghost lists (as if N were unbounded there)."""

    def evict(self, n: int, protected: Set[Key], ref_of: RefOf) -> list[Key] | None:
        capacity, self.capacity = self.capacity, 1 << 30
        try:
            return super().evict(n, protected, ref_of)
        finally:
            self.capacity = capacity


class UncappedTarget(ModelArc):
    """A B1 ghost hit grows the target without the cap at N."""

    def touch_one(self, key: Key, ref_of: RefOf) -> None:
        if key in self.b1 and key not in self.t1 and key not in self.t2:
            self.target += max(1.0, len(self.b2) / len(self.b1))
            self.b1.remove(key)
            self.b1.append(key)
            return
        super().touch_one(key, ref_of)


class EvictsPinned(ModelArc):
    """Eviction reads every resident as idle (it does not look at ref counts)."""

    def evict(self, n: int, protected: Set[Key], ref_of: RefOf) -> list[Key] | None:
        return super().evict(n, protected, lambda k: 0 if ref_of(k) is not None else None)


class IgnoresProtected(ModelArc):
    """Eviction forgets the protected set."""

    def evict(self, n: int, protected: Set[Key], ref_of: RefOf) -> list[Key] | None:
        return super().evict(n, frozenset(), ref_of)


class NoT1Fallback(ModelArc):
    """When T1 is below target and T2 has no idle entry, eviction gives up."""

    def evict(self, n: int, protected: Set[Key], ref_of: RefOf) -> list[Key] | None:
        t1, taken = len(self.t1), set[Key]()
        for _ in range(n):
            pool = self.t1 if t1 >= int(self.target) else []
            pick = _first_idle(pool, protected | taken, ref_of)
            if pick is None:
                pick = _first_idle(self.t2, protected | taken, ref_of)
                if pick is None:
                    return None
            else:
                t1 -= 1
            taken.add(pick)
        return super().evict(n, protected, ref_of)


class PartialEvict(ModelArc):
    """Eviction commits victims one at a time and stops when it runs out."""

    def evict(self, n: int, protected: Set[Key], ref_of: RefOf) -> list[Key] | None:
        out: list[Key] = []
        for _ in range(n):
            one = super().evict(1, protected, ref_of)
            if one is None:
                return None
            out.extend(one)
        return out


def _first_idle(entries: Sequence[Key], excluded: Set[Key], ref_of: RefOf) -> Key | None:
    return next((k for k in entries if k not in excluded and is_evictable_ref(ref_of(k))), None)


class TouchPromotesPending(ModelArc):
    """Touch promotes a T1 key to T2 even while its store is in flight."""

    def touch_one(self, key: Key, ref_of: RefOf) -> None:
        if key in self.t1:
            self.t1.remove(key)
            self.t2.append(key)
            return
        super().touch_one(key, ref_of)


def floor_division_b1_hit(target: float, b1: int, b2: int, capacity: int) -> float:
    """A plausible slip: the ratio computed with integer division."""
    return min(target + max(1, b2 // b1), capacity)


def floor_division_b2_hit(target: float, b1: int, b2: int) -> float:
    """The same slip in the B2 step: `|B1| // |B2|` (told apart only when |B1| >= 1,
    where the B1 step is checked too)."""
    return max(target - max(1, b1 // b2), 0.0)


def leaky_touch_relation(lg: Logic, k: KeyView, n: KeyView, p: Params) -> Any:
    """Broken touch relation: a ready T1 key joins T2 but stays in T1."""
    promoted = lg.and_(p.is_x, k.t1, lg.ge(k.ref, 0))
    return lg.and_(
        lg.implies(
            promoted,
            lg.and_(
                n.t1,
                n.t2,
                lg.iff(n.b1, k.b1),
                lg.iff(n.b2, k.b2),
                lg.iff(n.res, k.res),
                lg.eq(n.ref, k.ref),
            ),
        ),
        lg.implies(
            lg.not_(promoted),
            lg.and_(
                lg.iff(n.t1, k.t1),
                lg.iff(n.t2, k.t2),
                lg.iff(n.b1, k.b1),
                lg.iff(n.b2, k.b2),
                lg.iff(n.res, k.res),
            ),
        ),
    )
