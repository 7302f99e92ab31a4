"""Every deliberately broken variant, in one place.

Negative controls of `evictable verify` and the seeded bugs of the test suite are
the same objects: a check that cannot tell one of these from the real thing is
vacuous. Each variant makes one realistic mistake (the kind a hand-written KV-cache
manager makes, several of them what vLLM does).

* `manager` -- broken CPU offloading managers, and `key_by_key`, the one
  non-atomic variant of any adapter method;
* `policies` -- broken LRU and ARC policies (registered under `seeded-…` names);
* `arc_models` -- broken ARC *models*, for the exhaustive ARC exploration;
* `gpu` -- broken free queues, block pools and lazy offload scanners.

`SEEDED_BUGS` (with policy "lru") and `ARC_BUGS` (with policy "arc") are the
catalogue the conformance engine must refute, each a `SeededBug` with a factory
`(num_blocks, policy, enable_events) -> manager`.
"""

from __future__ import annotations

from evictable.proofs.controls.bug import SeededBug
from evictable.proofs.controls.manager import MANAGER_BUGS
from evictable.proofs.controls.policies import ARC_BUGS, POLICY_BUGS

__all__ = ["ARC_BUGS", "SEEDED_BUGS", "SeededBug"]

SEEDED_BUGS: tuple[SeededBug, ...] = (*MANAGER_BUGS, *POLICY_BUGS)
"""Seeded bugs checked with policy "lru"."""
