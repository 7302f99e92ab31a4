"""A user's check of the GPU side: free queues, block pools and lazy scanners.

* `check_machine(target, factory, contract, examples, steps, seed)` -- the queue or
  pool lock-step machine (`lockstep.gpu_machines`) in rounds: each round is a
  Hypothesis run that stops at its first finding and shrinks it; the next round gives
  up every example that shows a class already found. The blocks are made by the
  factory's `evictable_blocks(block_id)` when it has one, else this project's
  `KVCacheBlock`.
* `check_scanner(factory, pools, contract, blocks)` -- the breadth-first search of
  `explore.lazy_contract` over small pools (`pools`: the block pool factory).

`GPU_TARGETS` are the check pipeline's targets for them (`check.pipeline`):
`free-queue` (`(blocks) -> queue`), `block-pool` (`(num_blocks) -> pool`) and `lazy`
(`(pool, window, capacity) -> scanner`, over the pools of `--pool`).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import Phase
from hypothesis import seed as hypothesis_seed
from hypothesis.stateful import RuleBasedStateMachine, run_state_machine_as_test

from evictable.impl.block_pool import BlockPool
from evictable.impl.free_queue import KVCacheBlock
from evictable.proofs.base import watch
from evictable.proofs.base.compare import Kind
from evictable.proofs.base.contract import Contract
from evictable.proofs.base.findings import Finding
from evictable.proofs.check.guide import probe_gpu
from evictable.proofs.check.setup import load_factory
from evictable.proofs.check.target import EngineRun, Request, Subject, Target, load_subject
from evictable.proofs.explore.lazy import Bounds
from evictable.proofs.explore.lazy_contract import LazyCheck, check_lazy
from evictable.proofs.lockstep.gpu import GpuConformanceFailure
from evictable.proofs.lockstep.gpu_machines import pool_machine, queue_machine
from evictable.proofs.lockstep.settings import engine_settings

__all__ = ["GPU_TARGETS", "MachineCheck", "check_machine", "check_scanner", "machine_findings"]


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


# ------------------------------------------------------------------ the targets


def _load_gpu(request: Request) -> Subject:
    """Load the factory and, for the lazy target, the block pool factory (`--pool`:
    else the factory's `evictable_pool`, else this project's `BlockPool`)."""
    subject = load_subject(request)
    if request.target != "lazy":
        return subject
    spec = request.option("pool")
    t0 = time.perf_counter()
    pools = load_factory(spec) if spec else getattr(subject.factory, "evictable_pool", BlockPool)
    return replace(
        subject,
        import_s=subject.import_s + time.perf_counter() - t0,
        parts={"pool": pools},
    )


def _guide_gpu(subject: Subject, contract: Contract, request: Request) -> Subject:
    probe_gpu(subject.factory, request.target, contract, subject.spec)
    return subject


def _lazy_fields(result: LazyCheck) -> dict[str, Any]:
    bounds = result.bounds
    return {
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


def _engines_gpu(subject: Subject, contract: Contract, request: Request) -> EngineRun:
    """The GPU targets' engines: the lazy search, or the queue's or pool's machine."""
    start = time.perf_counter()
    extra: dict[str, Any] = {}
    lines: list[str] = []
    error = None
    if request.target == "lazy":
        watch.status("lazy search")
        result = check_scanner(
            subject.factory, subject.parts["pool"], contract, int(request.option("blocks", 3))
        )
        lines += [f"lazy search round {i}: {line}" for i, line in enumerate(result.rounds, 1)]
        findings = result.findings
        totals = {"examples": len(result.rounds), "calls": 0}
        extra["lazy_search"] = _lazy_fields(result)
        status = "passed" if result.ok else "failed"
        if not result.complete and not findings:
            status, error = "error", "the lazy search stopped at its state limit"
    else:
        watch.status(f"{request.target} machine ({request.examples} x {request.steps})")
        run = check_machine(
            request.target, subject.factory, contract, request.examples, request.steps, request.seed
        )
        findings = run.findings
        totals = {"examples": run.examples, "calls": run.calls}
        status = "failed" if findings else "passed"
        lines.append(
            f"{run.engine} ({request.examples} examples x {request.steps} steps): "
            f"{run.examples} examples, {run.calls} calls"
        )
    seconds = time.perf_counter() - start
    lines.append(f"checked in {seconds:.1f}s")
    fields: dict[str, Any] = {
        "conformance": {
            "status": status,
            "examples": request.examples,
            "steps": request.steps,
            "examples_run": totals["examples"],
            "steps_run": totals["calls"],
            "seconds": round(seconds, 4),
            "faults": False,
            "reason": findings[0].reason if findings else "",
            "trace": findings[0].as_dict()["trace"] if findings else [],
        },
        "timings": {"check_s": round(seconds, 4)},
        **extra,
    }
    return EngineRun(tuple(findings), status, tuple(lines), fields, error)


def _positive(text: str) -> int:
    """An argparse type: an int of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _lazy_options(p: Any) -> None:
    p.add_argument(
        "--pool",
        metavar="MODULE:FACTORY",
        default=None,
        help="lazy target: the block pool factory (num_blocks) -> pool the scanner walks "
        "(default: the factory's evictable_pool, else this project's BlockPool)",
    )
    p.add_argument(
        "--blocks",
        type=_positive,
        default=3,
        help="lazy target: usable GPU blocks of the breadth-first search",
    )


GPU_TARGETS: tuple[Target, ...] = (
    Target("free-queue", "(blocks) -> queue", _guide_gpu, _engines_gpu, _load_gpu),
    Target("block-pool", "(num_blocks) -> pool", _guide_gpu, _engines_gpu, _load_gpu),
    Target(
        "lazy",
        "(pool, window, capacity) -> scanner",
        _guide_gpu,
        _engines_gpu,
        _load_gpu,
        (Kind.SCAN,),
        _lazy_options,
    ),
)
"""The GPU side's targets: `free-queue`, `block-pool`, `lazy`."""
