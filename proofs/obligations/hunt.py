"""Hunting a seeded bug with the engines, at their default budgets.

`hunt(bug, seed)` runs the engines that apply to the bug's target, in order, and
stops at the first that catches it with a trace of at most `MAX_CALLS` calls
(`stop=False` runs them all, for a table of every engine's verdict):

* a CPU manager: the exhaustive explorer at the policy's `check` bounds (with the
  fault alphabet, at the policy's default fault bounds, for a bug that needs
  faults), the conformance engine (default budget, the given seed), the long run
  (the policy's long-run size, the given seed) -- the long run first for a bug
  with a `long_history`;
* a free queue or a block pool: the GPU explorer (default bounds), then the
  lock-step machine (default budget, the given seed);
* a lazy scanner: the lazy explorer with the implementation judged on every edge
  (default bounds), then the lazy machine (the given seed).

Each verdict says how long the engine took and how many calls its (shortest,
shrunk) trace has. The explorers are deterministic: their verdict does not depend
on the seed; the Hypothesis engines' does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from hypothesis.stateful import RuleBasedStateMachine

from evictable.impl.block_pool import BlockPool
from evictable.proofs.base.records import Status
from evictable.proofs.controls.bug import SeededBug

__all__ = ["MAX_CALLS", "Hunt", "Verdict", "engines_for", "hunt", "machine_for"]

MAX_CALLS = 8
"""The longest trace a catch may have."""


@dataclass(frozen=True)
class Verdict:
    """One engine's run on one bug."""

    engine: str
    caught: bool
    seconds: float
    calls: int | None = None
    """Calls in the trace it reports (None when nothing was caught)."""
    reason: str = ""

    long_history: bool = False
    """The bug needs a long history (`SeededBug.long_history`): any trace counts."""

    @property
    def short(self) -> bool:
        """Caught with a trace of at most `MAX_CALLS` calls (any, for a bug that
        needs a long history)."""
        if not self.caught or self.calls is None:
            return False
        return self.long_history or self.calls <= MAX_CALLS


@dataclass(frozen=True)
class Hunt:
    """The engines' verdicts on one bug for one seed, in the order they ran."""

    bug: SeededBug
    seed: int
    verdicts: tuple[Verdict, ...]

    @property
    def winner(self) -> Verdict | None:
        """The first engine that caught the bug with a short trace."""
        return next((v for v in self.verdicts if v.short), None)

    @property
    def caught(self) -> bool:
        return self.winner is not None

    @property
    def seconds(self) -> float:
        """Seconds until the first short catch (all engines' seconds if none)."""
        total = 0.0
        for v in self.verdicts:
            total += v.seconds
            if v.short:
                break
        return total


Engine = Callable[[SeededBug, int], Verdict]


def _timed(name: str, run: Callable[[], tuple[bool, int | None, str]]) -> Verdict:
    start = time.perf_counter()
    caught, calls, reason = run()
    return Verdict(name, caught, time.perf_counter() - start, calls if caught else None, reason)


def _explore_manager(bug: SeededBug, seed: int) -> Verdict:
    from evictable.proofs.base.profiles import profile
    from evictable.proofs.explore.manager import explore

    p = profile(bug.policy)
    bounds = p.faults["default"] if bug.faults else p.check

    def run() -> tuple[bool, int | None, str]:
        found = explore(bounds, bug.factory, workers=1).failure
        if found is None:
            return False, None, ""
        return True, len(found.path) + (found.op is not None), found.reason.splitlines()[0]

    return _timed("explore", run)


def _conformance(bug: SeededBug, seed: int) -> Verdict:
    from evictable.proofs.lockstep.conformance import SIZES, run_conformance

    examples, steps = SIZES["default"]

    def run() -> tuple[bool, int | None, str]:
        faults = True if bug.faults else None
        rec = run_conformance(bug.factory, bug.policy, examples, steps, seed, inject_faults=faults)
        if rec.status != "failed":
            return False, None, rec.reason
        return True, max(0, len(rec.trace.splitlines()) - 1), rec.reason.splitlines()[0]

    return _timed("conformance", run)


def _long_run(bug: SeededBug, seed: int) -> Verdict:
    from evictable.proofs.base.profiles import profile
    from evictable.proofs.lockstep.long_run import long_run

    steps, keys, blocks = profile(bug.policy).long_run or (5000, 5, 4)

    def run() -> tuple[bool, int | None, str]:
        out = long_run(bug.factory, bug.policy, steps, seed, keys, blocks)
        if out.failure is None:
            return False, None, ""
        return True, max(0, len(out.failure.trace) - 1), out.failure.reason

    return _timed("long run", run)


def _explore_gpu(bug: SeededBug, seed: int) -> Verdict:
    from evictable.proofs.explore.gpu import (
        POOL_BOUNDS,
        QUEUE_BOUNDS,
        PoolSubject,
        QueueSubject,
        explore_gpu,
    )

    def run() -> tuple[bool, int | None, str]:
        if bug.target == "queue":
            result = explore_gpu(QueueSubject(QUEUE_BOUNDS["default"], bug.factory))
        else:
            result = explore_gpu(PoolSubject(POOL_BOUNDS["default"], bug.factory))
        if result.found is None:
            return False, None, ""
        return True, len(result.path), result.found.reason.splitlines()[0]

    return _timed("explore", run)


def _explore_lazy(bug: SeededBug, seed: int) -> Verdict:
    from evictable.proofs.explore.lazy_cursor import BOUNDS
    from evictable.proofs.explore.lazy_impl import lockstep_search

    def run() -> tuple[bool, int | None, str]:
        for bounds in BOUNDS["default"]:
            result = lockstep_search(bounds, bug.factory)  # type: ignore[arg-type]
            if result.found is not None:
                return True, len(result.path), result.found.reason.splitlines()[0]
        return False, None, ""

    return _timed("explore", run)


def machine_for(bug: SeededBug) -> type[RuleBasedStateMachine]:
    """The lock-step machine that drives a GPU-side bug (queue, pool or scanner)."""
    from evictable.proofs.lockstep.gpu_machines import pool_machine, queue_machine
    from evictable.proofs.lockstep.lazy_machine import lazy_machine

    if bug.target == "queue":
        return queue_machine(bug.factory)
    if bug.target == "pool":
        return pool_machine(bug.factory)
    return lazy_machine(BlockPool, bug.factory)


def _machine(bug: SeededBug, seed: int) -> Verdict:
    from evictable.proofs.lockstep.gpu_machines import BUDGET, run_machine

    examples, steps = BUDGET["default"]
    machine = machine_for(bug)

    def run() -> tuple[bool, int | None, str]:
        out = run_machine(machine, examples, steps, shrink=True, seed=seed)
        if out.status is not Status.COUNTEREXAMPLE:
            return False, None, ""
        lines = out.counterexample.splitlines()
        return True, max(0, len(lines) - 2), lines[0]

    return _timed("conformance", run)


def _arc_orders(bug: SeededBug, seed: int) -> Verdict:
    from evictable.proofs.lockstep.arc_orders import Shape, run

    def run_it() -> tuple[bool, int | None, str]:
        out = run(Shape(), bug.factory)
        if out.failure is None:
            return False, None, ""
        return True, out.failure.calls, out.failure.reason.splitlines()[0]

    return _timed("arc orders", run_it)


def _arc_targets(bug: SeededBug, seed: int) -> Verdict:
    from evictable.proofs.lockstep.arc_targets import Shape, run

    def run_it() -> tuple[bool, int | None, str]:
        out = run(Shape(), bug.factory)
        if out.failure is None:
            return False, None, ""
        return True, out.failure.calls, out.failure.reason.splitlines()[0]

    return _timed("arc targets", run_it)


def engines_for(bug: SeededBug) -> list[Engine]:
    """The engines that hunt `bug`, in the order they run."""
    if bug.klass == "orders":
        return [_arc_orders, _explore_manager, _conformance, _long_run]
    if bug.klass == "targets":
        return [_arc_targets, _explore_manager, _conformance, _long_run]
    if bug.target == "manager":
        if bug.long_history:  # no short trace exists: the engine that runs long first
            return [_long_run, _explore_manager, _conformance]
        return [_explore_manager, _conformance, _long_run]
    if bug.target in ("queue", "pool"):
        return [_explore_gpu, _machine]
    if bug.klass == "machine":  # the machine first: it alone makes queries and bad input
        return [_machine, _explore_lazy]
    return [_explore_lazy, _machine]


def hunt(bug: SeededBug, seed: int = 0, stop: bool = True) -> Hunt:
    """Run the engines on `bug` (see the module doc)."""
    verdicts: list[Verdict] = []
    for engine in engines_for(bug):
        verdict = engine(bug, seed)
        if bug.long_history:
            verdict = replace(verdict, long_history=True)
        verdicts.append(verdict)
        if stop and verdict.short:
            break
    return Hunt(bug, seed, tuple(verdicts))
