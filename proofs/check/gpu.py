"""A user's check of the GPU side: free queues, block pools and lazy scanners.

* `check_machine(target, factory, contract, examples, steps, seed)` -- the queue or
  pool lock-step machine (`lockstep.gpu_machines`) in rounds: each round is a
  Hypothesis run that stops at its first finding and shrinks it; the next round gives
  up every example that shows a class already found. The blocks are made by the
  factory's `evictable_blocks(block_id)` when it has one, else this project's
  `KVCacheBlock`.
* `check_scanner(factory, pools, contract, blocks)` -- the breadth-first search of
  `explore.lazy_contract` over small pools (`pools`: the block pool factory).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import Phase
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from evictable.impl.free_queue import KVCacheBlock
from evictable.proofs.base.compare import Kind
from evictable.proofs.base.contract import Contract
from evictable.proofs.base.findings import Finding
from evictable.proofs.explore.lazy import Bounds
from evictable.proofs.explore.lazy_contract import LazyCheck, check_lazy
from evictable.proofs.lockstep.gpu import GpuConformanceFailure
from evictable.proofs.lockstep.gpu_machines import pool_machine, queue_machine
from evictable.proofs.lockstep.settings import engine_settings

__all__ = ["MachineCheck", "check_machine", "check_scanner", "machine_findings"]


@dataclass(frozen=True)
class MachineCheck:
    """The outcome of `check_machine`: findings, one per class, and the work done."""

    engine: str
    findings: tuple[Finding, ...]
    examples: int
    calls: int


def machine_findings(
    make: Callable[[frozenset[Kind]], type[RuleBasedStateMachine]],
    engine: str,
    examples: int,
    steps: int,
    seed: int | None,
    rounds: int = 6,
) -> tuple[list[Finding], dict[str, int]]:
    """Rounds of a GPU machine (see the module docstring): findings, and the counts of
    examples and calls over all rounds."""
    masked: set[Kind] = set()
    found: list[Finding] = []
    totals = {"examples": 0, "calls": 0}
    config = engine_settings(examples, steps, derandomize=seed is None, phases=list(Phase))
    for _ in range(rounds):
        machine = make(frozenset(masked))
        if seed is not None:
            machine = hypothesis_seed(seed)(machine)
        try:
            run_state_machine_as_test(machine, settings=config)
            failure = None
        except GpuConformanceFailure as exc:
            failure = exc
        stats = getattr(machine, "stats", {})
        totals["examples"] += stats.get("examples", 0)
        totals["calls"] += stats.get("calls", 0)
        if failure is None or failure.kind in masked:
            break
        masked.add(failure.kind)
        trace = "\n".join(failure.trace)
        found.append(
            Finding(failure.kind, engine, failure.reason, trace, trace, len(failure.trace))
        )
    return found, totals


def _machine_factory(
    target: str, factory: Any, contract: Contract
) -> Callable[[frozenset[Kind]], Any]:
    build = queue_machine if target == "free-queue" else pool_machine
    block = getattr(factory, "evictable_blocks", KVCacheBlock)

    def make(masked: frozenset[Kind]) -> Any:
        base = build(factory, contract, block)
        return type(base.__name__, (base,), {"masked": masked})

    return make


def check_machine(
    target: str, factory: Any, contract: Contract, examples: int, steps: int, seed: int | None
) -> MachineCheck:
    """The `free-queue` or `block-pool` machine against `factory`, in rounds."""
    engine = f"{target} machine"
    found, totals = machine_findings(
        _machine_factory(target, factory, contract), engine, examples, steps, seed
    )
    return MachineCheck(engine, tuple(found), totals["examples"], totals["calls"])


def check_scanner(factory: Any, pools: Any, contract: Contract, blocks: int) -> LazyCheck:
    """The lazy scanners `factory(pool, window, capacity)` makes, over the pools
    `pools(num_blocks)` makes, searched breadth-first with `blocks` usable blocks."""
    bounds = Bounds(num_blocks=blocks, window=1, hashes=("a",), max_ref=1, capacities=(1,))
    return check_lazy(factory, pools, contract, bounds)
