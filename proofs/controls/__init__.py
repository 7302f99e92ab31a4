"""Every deliberately broken variant, in one place.

Negative controls of `evictable verify` and the seeded bugs of the test suite are
the same objects: a check that cannot tell one of these from the real thing is
vacuous. Each variant makes one realistic mistake (the kind a hand-written KV-cache
manager makes, several of them what vLLM does).

* `manager` -- broken CPU offloading managers, and `key_by_key`, the one
  non-atomic variant of any adapter method;
* `policies` -- broken LRU and ARC policies (known under `seeded-…` names only
  while their factories build a manager: nothing is registered);
* `arc_models` -- broken ARC *models*, for the exhaustive ARC exploration;
* `gpu`, `scanners` -- broken free queues, block pools and lazy offload scanners;
* `contract` -- broken managers and a broken policy registry, for the probes;
* `tables`, `encodings` -- broken lifecycle tables, and the encodings' bugs planted
  in code.

A mistake made through an implementation class's public interface is a wrapper or a
subclass of it; a mistake inside one is the class itself, compiled again from its
module's source with the mistake written in (`mutant`: an edit that no longer fits
`impl/` fails at import). No broken variant reads another package's private names,
and none is registered anywhere.

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
