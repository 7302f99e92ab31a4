"""Lock-step conformance: impl block pool vs the model (proofs/lockstep/gpu_machines.py).

Examples come from the Hypothesis profile (tests/conftest.py); the step count is bounded.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

from evictable.proofs.base.records import Status
from evictable.proofs.controls.gpu import SEEDED_POOLS
from evictable.proofs.lockstep.gpu_machines import pool_machine, run_machine

BlockPoolMachine = pool_machine()
BlockPoolMachine.TestCase.settings = settings(settings(), stateful_step_count=40)
TestBlockPoolConformance = BlockPoolMachine.TestCase


@pytest.mark.parametrize("name", sorted(SEEDED_POOLS))
def test_seeded_broken_pool_is_refuted(name: str) -> None:
    out = run_machine(pool_machine(SEEDED_POOLS[name]), 200, 30, shrink=False)
    assert out.status is Status.COUNTEREXAMPLE, f"seeded bug {name} slipped through"
