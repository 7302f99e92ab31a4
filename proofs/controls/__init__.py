"""Deliberately broken CPU offloading managers: the conformance engine must catch each.

Each seeded bug is a small subclass of `impl.manager.CPUOffloadingManager` or of
`impl.policies.lru.LRUCachePolicy` that makes one realistic mistake (the kind a
hand-written KV-cache manager makes), exposed as a factory
`(num_blocks, policy, enable_events) -> manager` for `evictable.proofs.lockstep.conformance`.
`tests/test_seeded_bugs.py` checks that the engine refutes every one of them.
"""

from __future__ import annotations

from evictable.proofs.controls.bug import SeededBug
from evictable.proofs.controls.manager import MANAGER_BUGS
from evictable.proofs.controls.policies import POLICY_BUGS

__all__ = ["SEEDED_BUGS", "SeededBug"]

SEEDED_BUGS: tuple[SeededBug, ...] = (*MANAGER_BUGS, *POLICY_BUGS)
