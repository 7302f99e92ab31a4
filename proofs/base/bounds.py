"""The explorer's bounds for the CPU manager: the size of the explored world.

One value shared by the policy profiles (`base.profiles`), the explorer
(`explore.manager`), `evictable check` and the obligations that name their bounds.
"""

from __future__ import annotations

from dataclasses import dataclass

from evictable.model.lmcache05 import POLICIES_05
from evictable.model.manager import MODEL_POLICIES

__all__ = ["Bounds"]


@dataclass(frozen=True)
class Bounds:
    """The size of the explored world. `events` is the most pending events a state
    may hold (0: events off); successors beyond it are checked but not expanded."""

    slots: int = 2
    keys: int = 3
    max_ref: int = 2
    batch: int = 2
    policy: str = "lru"
    events: int = 0
    faults: bool = False
    """Also inject a fault at call k (1, 2) of every hook an op reaches, at the hook's
    entry and after its body (the implementation then runs its policy's
    fault-injecting variant, `base.faults`)."""

    def describe(self) -> str:
        ev = f"events<={self.events}" if self.events else "events off"
        faults = " faults at call 1-2 of every hook" if self.faults else ""
        return (
            f"policy={self.policy} slots={self.slots} keys={self.keys} "
            f"max_ref={self.max_ref} batch={self.batch} {ev}{faults}"
        )

    def check(self) -> None:
        """Raise `ValueError` for bounds the explorer cannot use."""
        for name in ("slots", "keys", "max_ref", "batch", "events"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"bound {name} must be a non-negative int, got {v!r}")
        if not 1 <= self.keys <= 26:
            raise ValueError(f"keys must be in 1..26, got {self.keys}")
        if self.max_ref < 1:
            raise ValueError("max_ref must be at least 1")
        if self.policy not in MODEL_POLICIES and self.policy not in POLICIES_05:
            known = sorted({*MODEL_POLICIES, *POLICIES_05})
            raise ValueError(f"unknown policy {self.policy!r}; known: {known}")
