"""Lock-step conformance of the lazy offload scanner (`proofs.lockstep.lazy_machine`)."""

from __future__ import annotations

from hypothesis import settings

from evictable.proofs.lockstep.lazy_machine import lazy_machine

LazyConformance = lazy_machine()
LazyConformance.TestCase.settings = settings(stateful_step_count=40)
test_lazy_conformance = LazyConformance.TestCase
