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

The queue and pool run their lock-step machines in rounds, the lazy target the
breadth-first search of `explore.lazy_contract` (`check.gpu`); this module prints
what they found and builds the report.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from evictable.impl.block_pool import BlockPool
from evictable.proofs.base.contract import Contract
from evictable.proofs.base.findings import findings_block
from evictable.proofs.check.gpu import check_machine, check_scanner

__all__ = ["check_gpu"]


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
        pools = pool if pool is not None else getattr(factory, "evictable_pool", BlockPool)
        result = check_scanner(factory, pools, contract, args.blocks)
        bounds = result.bounds
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
        run = check_machine(args.target, factory, contract, args.examples, args.steps, args.seed)
        findings = run.findings
        totals = {"examples": run.examples, "calls": run.calls}
        status = "failed" if findings else "passed"
        print(
            f"{run.engine} ({args.examples} examples x {args.steps} steps): "
            f"{run.examples} examples, {run.calls} calls"
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
            "trace": findings[0].as_dict()["trace"] if findings else [],
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
