"""Lock-step conformance: impl free queue vs the model (proofs/lockstep/gpu_machines.py).

Examples come from the Hypothesis profile (tests/conftest.py); the step count is bounded.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from evictable.proofs.base.records import Status
from evictable.proofs.controls.gpu import SEEDED_QUEUES
from evictable.proofs.lockstep.gpu_machines import queue_machine, run_machine

FreeQueueMachine = queue_machine()
FreeQueueMachine.TestCase.settings = settings(settings(), stateful_step_count=40)
TestFreeQueueConformance = FreeQueueMachine.TestCase


@pytest.mark.parametrize("name", sorted(SEEDED_QUEUES))
def test_seeded_broken_queue_is_refuted(name: str) -> None:
    out = run_machine(queue_machine(SEEDED_QUEUES[name]), 200, 30, shrink=False)
    assert out.status is Status.COUNTEREXAMPLE, f"seeded bug {name} slipped through"
