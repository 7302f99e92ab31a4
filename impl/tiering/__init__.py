"""Our tiering orchestrator (docs/semantics.md, "Tiered offloading", profile `spec`;
docs/interop.md, "Our orchestrator").

* `TieringManager` -- the orchestrator: our `CPUOffloadingManager` (any policy) as the
  primary tier in front of any number of secondary tiers, one lock;
* `SecondaryTier`, `PeerParent` -- what it asks of a tier, and what a serving tier may
  ask back; `TierJob`, `JobReport` -- a job handed to a tier, and a tier's report;
* `MemoryTier` -- an in-memory tier, the reference for tests and examples.

Importing it loads neither z3 nor hypothesis.
"""

from __future__ import annotations

from evictable.impl.tiering.manager import TIER_METHODS, Parent, TieringManager
from evictable.impl.tiering.memory import MemoryTier
from evictable.impl.tiering.tiers import JobReport, PeerParent, SecondaryTier, TierJob

__all__ = [
    "TIER_METHODS",
    "JobReport",
    "MemoryTier",
    "Parent",
    "PeerParent",
    "SecondaryTier",
    "TierJob",
    "TieringManager",
]
