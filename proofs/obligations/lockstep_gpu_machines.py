"""`conformance.free_queue`, `conformance.block_pool`, `conformance.lazy_scanner`: the
GPU lock-step machines, each with the seeded broken queues, pools and scanners they
must refute (the scanner's: those only the machine reaches -- a query, malformed
batches, bad constructor arguments).
"""

from __future__ import annotations

from hypothesis.stateful import RuleBasedStateMachine

from evictable.impl.block_pool import BlockPool
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, Outcome, Status, proved, refuted
from evictable.proofs.controls.gpu import SEEDED_POOLS, SEEDED_QUEUES
from evictable.proofs.controls.scanners import MACHINE_SCANNERS
from evictable.proofs.lockstep.gpu_machines import BUDGET, run_machine
from evictable.proofs.lockstep.lazy_machine import lazy_machine
from evictable.proofs.lockstep.pool_machine import pool_machine
from evictable.proofs.lockstep.queue_machine import queue_machine


def _seeded(machines: dict[str, type[RuleBasedStateMachine]], examples: int, steps: int) -> Outcome:
    """Refuted only when every seeded broken variant is caught.

    Detection stops at the first failure (no shrinking), so the budget is larger
    than the positive run's: at least 200 examples.
    """
    caught: list[str] = []
    for name, machine in machines.items():
        out = run_machine(machine, max(3 * examples, 200), steps, shrink=False)
        if out.status is not Status.COUNTEREXAMPLE:
            return proved()  # this variant slipped through: the control fails
        caught.append(f"{name}: {out.counterexample.splitlines()[0]}")
    return refuted("\n".join(caught))


def obligations(level: Level) -> list[Obligation]:
    examples, steps = BUDGET[level]
    queues = {name: queue_machine(f) for name, f in SEEDED_QUEUES.items()}
    pools = {name: pool_machine(f) for name, f in SEEDED_POOLS.items()}
    scanners = {name: lazy_machine(BlockPool, cls) for name, cls in MACHINE_SCANNERS.items()}
    return [
        Obligation(
            name="conformance.free_queue",
            statement=f"impl free queue ≡ model in lock-step ({examples} examples × "
            f"{steps} steps, bad input and cursors included)",
            check=lambda _t: run_machine(queue_machine(), examples, steps),
            negative=lambda _t: _seeded(queues, examples, steps),
            negative_statement=f"each of {len(queues)} seeded broken queues is refuted",
            tags=("conformance", "gpu"),
            kind=Kind.TESTED,
            bounds=f"{examples} examples x {steps} steps, derandomized",
            negative_bounds=f"each variant: {max(3 * examples, 200)} examples x {steps} steps",
        ),
        Obligation(
            name="conformance.block_pool",
            statement=f"impl block pool ≡ model in lock-step ({examples} examples × "
            f"{steps} steps, bad input and cursors included)",
            check=lambda _t: run_machine(pool_machine(), examples, steps),
            negative=lambda _t: _seeded(pools, examples, steps),
            negative_statement=f"each of {len(pools)} seeded broken pools is refuted",
            tags=("conformance", "gpu"),
            kind=Kind.TESTED,
            bounds=f"{examples} examples x {steps} steps, derandomized",
            negative_bounds=f"each variant: {max(3 * examples, 200)} examples x {steps} steps",
        ),
        Obligation(
            name="conformance.lazy_scanner",
            statement=f"impl lazy offload scanner over the impl block pool ≡ the model in "
            f"lock-step ({examples} examples × {steps} steps: steps, completions, aborts, "
            "queries, bad input, pool calls between steps)",
            check=lambda _t: run_machine(lazy_machine(), examples, steps),
            negative=lambda _t: _seeded(scanners, examples, steps),
            negative_statement=f"each of {len(scanners)} seeded broken scanners only the "
            f"machine reaches ({', '.join(scanners)}) is refuted",
            tags=("conformance", "gpu", "lazy"),
            kind=Kind.TESTED,
            bounds=f"{examples} examples x {steps} steps, derandomized",
            negative_bounds=f"each variant: {max(3 * examples, 200)} examples x {steps} steps",
        ),
    ]
