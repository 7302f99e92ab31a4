"""`evictable check --target free-queue|block-pool|lazy`: the GPU side under a contract.

* `free-queue`: FACTORY is `(blocks) -> queue` (this project's free-queue API:
  `popleft`, `popleft_n`, `remove`, `append`, `append_n`, `prepend_n`,
  `get_all_free_blocks`, `cursor_for`, `iter_blocks_after`, and `snapshot()` unless
  black box); the blocks are made by the factory's `evictable_blocks(block_id)`
  when it has one, else this project's `KVCacheBlock`.
* `block-pool`: FACTORY is `(num_blocks) -> pool` (`get_new_blocks`, `touch`,
  `free_blocks`, `cache_block`, `get_cached_block`, `reset_prefix_cache`, `blocks`,
  `free_block_queue`, `snapshot()` unless black box).
* `lazy`: FACTORY is `(pool, window, capacity) -> scanner` (`step`, `complete`,
  `abort`, `snapshot()` unless black box), over the pools of `--pool MODULE:FACTORY`
  (default: the factory's `evictable_pool`, else this project's `BlockPool`).

The queue and pool run their lock-step machines (`lockstep.gpu_machines`) in rounds:
each round is a Hypothesis run that stops at its first finding and shrinks it;
the next round gives up every example that shows a class already found. The lazy
target runs the breadth-first search of `explore.lazy_contract`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from hypothesis import Phase
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from evictable.proofs.base.compare import Kind
from evictable.proofs.base.contract import Contract
from evictable.proofs.base.findings import Finding, findings_block
from evictable.proofs.lockstep.gpu import GpuConformanceFailure
from evictable.proofs.lockstep.settings import engine_settings

__all__ = ["check_gpu", "machine_findings"]


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


def _machine(target: str, factory: Any, contract: Contract) -> Callable[[frozenset[Kind]], Any]:
    from evictable.impl.free_queue import KVCacheBlock
    from evictable.proofs.lockstep.gpu_machines import pool_machine, queue_machine

    build = queue_machine if target == "free-queue" else pool_machine
    block = getattr(factory, "evictable_blocks", KVCacheBlock)

    def make(masked: frozenset[Kind]) -> Any:
        base = build(factory, contract, block)
        return type(base.__name__, (base,), {"masked": masked})

    return make


def check_gpu(
    args: argparse.Namespace, factory: Any, pool: Any, contract: Contract, import_s: float
) -> tuple[int, dict[str, Any]]:
    """The GPU-side forms of `evictable check` (see the module docstring)."""
    print(f"evictable check {args.spec} (target {args.target})")
    print(f"contract: {contract.describe()}")
    print(f"import: {import_s:.1f}s")
    start = time.perf_counter()
    extra: dict[str, Any] = {}
    if args.target == "lazy":
        from evictable.impl.block_pool import BlockPool
        from evictable.proofs.explore.lazy import Bounds
        from evictable.proofs.explore.lazy_contract import check_lazy

        bounds = Bounds(num_blocks=args.blocks, window=1, hashes=("a",), max_ref=1, capacities=(1,))
        pools = pool if pool is not None else getattr(factory, "evictable_pool", BlockPool)
        result = check_lazy(factory, pools, contract, bounds)
        for i, line in enumerate(result.rounds, 1):
            print(f"lazy search round {i}: {line}")
        findings = result.findings
        totals = {"examples": len(result.rounds), "calls": 0}
        extra["lazy_search"] = {
            "bounds": {
                "num_blocks": bounds.num_blocks,
                "window": bounds.window,
                "hashes": list(bounds.hashes),
                "max_ref": bounds.max_ref,
                "capacities": list(bounds.capacities),
            },
            "rounds": list(result.rounds),
            "complete": result.complete,
        }
        status = "passed" if result.ok else "failed"
        if not result.complete and not findings:
            status = "error"
    else:
        engine = f"{args.target} machine"
        found, totals = machine_findings(
            _machine(args.target, factory, contract), engine, args.examples, args.steps, args.seed
        )
        findings = tuple(found)
        status = "failed" if findings else "passed"
        print(
            f"{engine} ({args.examples} examples x {args.steps} steps): "
            f"{totals['examples']} examples, {totals['calls']} calls"
        )
    seconds = time.perf_counter() - start
    print(f"checked in {seconds:.1f}s\n")
    print(findings_block(tuple(findings)))
    code = 1 if findings else 2 if status == "error" else 0
    fields: dict[str, Any] = {
        "spec": args.spec,
        "target": args.target,
        "policy": "none",
        "seed": args.seed,
        "contract": contract.as_dict(),
        "verdict": "conforms" if code == 0 else "rejected",
        "conformance": {
            "status": status,
            "examples": args.examples,
            "steps": args.steps,
            "examples_run": totals["examples"],
            "steps_run": totals["calls"],
            "seconds": round(seconds, 4),
            "faults": False,
            "reason": findings[0].reason if findings else "",
            "trace": findings[0].trace if findings else "",
        },
        "explorer": None,
        "explorations": [],
        "findings": [f.as_dict() for f in findings],
        "timings": {"import_s": round(import_s, 4), "check_s": round(seconds, 4)},
        **extra,
    }
    if code == 2:
        fields["error"] = "evictable check: the lazy search stopped at its state limit"
    return code, fields
