"""Lock-step conformance of the GPU free queue and block pool: running the machines.

The machines themselves are `lockstep.queue_machine` (two free queues sharing
blocks) and `lockstep.pool_machine` (a block pool); this module runs them without
pytest and turns them into obligations.

* `queue_machine(factory)` / `pool_machine(factory)` -- the machine classes (pytest
  uses `.TestCase`); a factory builds the implementation under test.
* `run_machine(machine, examples, steps, seed=...)` -- one run without pytest, as an
  `Outcome`; a counterexample names the seed (or "derandomized") that reproduces it.
* `obligations(level)` -- `conformance.free_queue` and `conformance.block_pool`, each
  with a negative control: every seeded broken variant (`proofs.controls.gpu`) must
  be refuted by the same run.
"""

from __future__ import annotations

from hypothesis import Phase
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from evictable.proofs.base.guard import guard_session
from evictable.proofs.base.records import Outcome, proved, refuted
from evictable.proofs.lockstep.gpu import GpuConformanceFailure
from evictable.proofs.lockstep.pool_machine import PoolFactory, pool_machine
from evictable.proofs.lockstep.queue_machine import QueueFactory, queue_machine
from evictable.proofs.lockstep.settings import engine_settings

__all__ = [
    "BUDGET",
    "GpuConformanceFailure",
    "PoolFactory",
    "QueueFactory",
    "pool_machine",
    "queue_machine",
    "run_machine",
]


# ------------------------------------------------------------------ obligations

BUDGET: dict[str, tuple[int, int]] = {
    "quick": (30, 30),
    "default": (100, 50),
    "thorough": (600, 80),
}


def run_machine(
    machine: type[RuleBasedStateMachine],
    examples: int,
    steps: int,
    shrink: bool = True,
    seed: int | None = None,
) -> Outcome:
    """Run a machine without pytest; a disagreement is a counterexample with its trace.

    `shrink=False` stops at the first failure found (enough for a negative control).
    `seed` None derandomizes (the same run every time); an int runs that seed. The
    counterexample's first line after the reason says how to reproduce it.
    """
    phases = list(Phase) if shrink else [Phase.explicit, Phase.reuse, Phase.generate]
    config = engine_settings(examples, steps, derandomize=seed is None, phases=phases)
    run = machine if seed is None else hypothesis_seed(seed)(machine)
    try:
        with guard_session():  # a hanging call, once found, is shrunk under a short bound
            run_state_machine_as_test(run, settings=config)
    except GpuConformanceFailure as failure:
        how = "derandomized run" if seed is None else f"seed {seed}"
        return refuted(
            f"{failure.reason}\n(reproduce: {how}, {examples} examples x {steps} steps)\n"
            + "\n".join(failure.trace)
        )
    return proved()
