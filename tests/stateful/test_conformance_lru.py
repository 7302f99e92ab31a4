"""The implementation (policy "lru") against the model, in lock-step, under the active
Hypothesis profile (`ci`: derandomized and bounded), with faults injected into policy hooks."""

from __future__ import annotations

from hypothesis import settings

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.lockstep.conformance import make_machine

LruConformance = make_machine(CPUOffloadingManager, "lru", inject_faults=True, require_copies=True)

TestLruConformance = LruConformance.TestCase
TestLruConformance.settings = settings(settings.default, stateful_step_count=40)
