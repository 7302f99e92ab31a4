"""`evictable check` for a CPU manager: the `manager` target of the check pipeline.

`run_check(factory, policy, contract, ...)` runs the engines:

1. the conformance engine (`lockstep.conformance.run_conformance`): random call
   sequences, continuing past findings, one shrunk trace per class;
2. the explorer (`explore.manager.explore`) in rounds: each round is a breadth-first
   search over every state within the bounds, so the first finding it reports is a
   shortest trace of its class; the next round masks every class found so far (an
   edge that shows one is not followed) and looks for the next, until a round finds
   nothing new (or `rounds` rounds ran, or a round found a call that does not
   return: such an edge cannot be masked without making the call again);
3. following (`lockstep.follow`): a finding whose first divergence is only
   accounting or the evictable set (a counter, a listing) is driven on, the model's
   view as the truth, until it shows what it leads to -- a pinned block evicted, a
   store refused that had room -- and is reported under that class, with the first
   divergence as its cause. So a finding's class does not depend on how the manager
   computes its counters.

The findings come back unranked: the pipeline's rank stage (`check.pipeline`) and
`check_manager` group them, one per class, most severe first (`base.findings.group`:
the shortest trace of each class wins, whichever engine found it).

`MANAGER` is the target (`check.pipeline.Target`): its guide settles the policy and
probes the factory once (`check.guide.probe_manager`), its engines are `run_check`.
`check_manager` is the same for a caller in Python (`evictable.testing.check_manager`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from evictable.proofs.base import watch
from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.compare import Kind
from evictable.proofs.base.contract import Contract, resolve
from evictable.proofs.base.findings import Finding, group
from evictable.proofs.base.guard import guard_session
from evictable.proofs.base.profiles import MissingProfileError, check_bounds, policies_of
from evictable.proofs.base.protocol import Factory
from evictable.proofs.check.guide import probe_manager
from evictable.proofs.check.setup import SetupError
from evictable.proofs.check.target import EngineRun, Request, Subject, Target
from evictable.proofs.explore.manager import Exploration, exploration_fields, explore
from evictable.proofs.lockstep.conformance import ConformanceRecord, run_conformance
from evictable.proofs.lockstep.follow import follow_all
from evictable.proofs.lockstep.shrink import REPLAYS

__all__ = ["MANAGER", "ManagerCheck", "check_manager", "explore_findings", "run_check"]


@dataclass(frozen=True)
class ManagerCheck:
    """The outcome of `check_manager` (of `run_check`: its findings not yet grouped)."""

    contract: Contract
    conformance: ConformanceRecord
    explorations: tuple[Exploration, ...]
    findings: tuple[Finding, ...]
    conformance_s: float
    explorer_s: float
    followed: tuple[tuple[Kind, Kind], ...] = ()
    """(first divergence, consequence) of every finding that following moved up."""

    @property
    def ok(self) -> bool:
        return (
            self.conformance.status == "passed"
            and not self.findings
            and all(run.figures.complete for run in self.explorations)
        )


def explore_findings(
    bounds: Bounds,
    factory: Factory,
    contract: Contract,
    workers: int = 2,
    rounds: int = 8,
) -> tuple[list[Exploration], list[Finding]]:
    """Explorer rounds until no new class of finding appears (see the module doc)."""
    masked: set[Kind] = set()
    runs: list[Exploration] = []
    found: list[Finding] = []
    for i in range(rounds):
        watch.status(f"explorer round {i + 1} ({bounds.describe()})")
        run = explore(bounds, factory, workers=workers, contract=contract, masked=frozenset(masked))
        runs.append(run)
        failure = run.failure
        if failure is None or failure.kind in masked:
            break
        masked.add(failure.kind)
        calls = len(failure.path) + (failure.op is not None)
        hang = failure.kind in (Kind.HANG, Kind.BLOCKED)
        found.append(
            Finding(
                failure.kind,
                f"explorer ({bounds.describe()})",
                failure.reason,
                failure.snippet,
                failure.snippet,
                calls,
                steps=failure.steps,
                script=failure.script,
            )
        )
        if hang:  # an edge is masked only once judged, and a call that hangs never is
            break
    return runs, found


def run_check(
    factory: Factory,
    policy: str,
    contract: Contract,
    examples: int = 200,
    steps: int = 40,
    seed: int | None = None,
    bounds: Bounds | None = None,
    workers: int = 2,
    shrink_replays: int = REPLAYS,
) -> ManagerCheck:
    """The engines against `factory` under `contract` (`bounds` None: no explorer),
    then every soft finding followed to its consequence; findings not yet grouped.
    All in one guard session: once a call of the subject spun or blocked, the later
    ones are stopped after the session's shorter bound (`base.flight`)."""
    t0 = time.perf_counter()
    with guard_session():  # one for both engines: once a call spun or blocked, later ones
        watch.status(f"conformance engine ({examples} examples x {steps} steps)")
        record = run_conformance(
            factory, policy, examples, steps, seed, shrink_replays=shrink_replays, contract=contract
        )
        t1 = time.perf_counter()
        runs: list[Exploration] = []
        found: list[Finding] = []
        if bounds is not None and record.status != "error":
            runs, found = explore_findings(bounds, factory, contract, workers)
        t2 = time.perf_counter()
        watch.status("following soft findings to their consequences")
        findings, followed = follow_all(factory, policy, contract, [*found, *record.findings])
    return ManagerCheck(
        contract, record, tuple(runs), tuple(findings), t1 - t0, t2 - t1, tuple(followed)
    )


def check_manager(
    factory: Factory,
    policy: str | None = None,
    *,
    contract: Contract | str | None = None,
    errors: str | None = None,
    black_box: bool | None = None,
    valid_only: bool | None = None,
    examples: int = 200,
    steps: int = 40,
    seed: int | None = None,
    explore: bool = True,
    workers: int = 1,
) -> ManagerCheck:
    """Hold the managers `factory(num_blocks, policy, enable_events)` makes to the model.

    `contract` is a `Contract`, or a mode name (`"exact"`, `"safety"`) applied with
    `errors` (`"typed"`, `"builtin"`, `"any"`), `black_box` and `valid_only` on top
    of what the factory declares (`evictable_contract`); `policy` defaults to the
    factory's `evictable_policy`, else `"lru"`. Runs the conformance engine
    (`examples` x `steps`, `seed`) and, with `explore`, the explorer at the policy's
    `check` bounds; returns every finding, one per class (`ManagerCheck.findings`),
    and never raises for a finding. Raises `ContractError` for a bad contract and
    `MissingProfileError` for a policy without a verification profile.
    """
    chosen = (
        contract
        if isinstance(contract, Contract)
        else resolve(
            factory, mode=contract, errors=errors, black_box=black_box, valid_only=valid_only
        )
    )
    name = str(policy or getattr(factory, "evictable_policy", "lru"))
    bounds = check_bounds(name, chosen.profile) if explore else None
    result = run_check(factory, name, chosen, examples, steps, seed, bounds, workers)
    return replace(result, findings=group(result.findings))


# ------------------------------------------------------------------ the target


def _policy(subject: Subject, contract: Contract, request: Request) -> str:
    policy = str(request.policy or getattr(subject.factory, "evictable_policy", "lru"))
    known = policies_of(contract.profile)
    if policy not in known:
        raise SetupError(f"unknown policy {policy!r}; the model knows {sorted(known)}")
    try:
        check_bounds(policy, contract.profile)
    except MissingProfileError as exc:
        raise SetupError(str(exc)) from None
    return policy


def guide_manager(subject: Subject, contract: Contract, request: Request) -> Subject:
    """The manager target's guide stage: the policy, and one probe of the factory."""
    policy = _policy(subject, contract, request)
    t0 = time.perf_counter()
    probe_manager(subject.factory, policy, contract, subject.spec)
    return replace(subject, policy=policy, import_s=subject.import_s + time.perf_counter() - t0)


def _conformance_line(record: ConformanceRecord, request: Request, seconds: float) -> str:
    verdict = (
        "pass"
        if record.ok
        else f"{len(record.findings)} class(es) of finding"
        if record.findings
        else f"ERROR: {record.reason}"
    )
    first = ""
    if record.first_failure_s is not None:
        first = f" (the first after {record.first_failure_s:.1f}s)"
    return (
        f"conformance engine ({request.examples} examples x {request.steps} steps, "
        f"{seconds:.1f}s): {verdict}{first}"
    )


def _fields(result: ManagerCheck) -> dict[str, Any]:
    record = result.conformance
    return {
        "seed": record.seed,
        "conformance": {
            "status": record.status,
            "examples": record.examples,
            "steps": record.steps,
            "examples_run": record.examples_run,
            "steps_run": record.steps_run,
            "seconds": round(record.seconds, 4),
            "faults": record.faults,
            "faults_note": record.faults_note,
            "copies": list(record.copies),
            "copies_note": record.copies_note,
            "first_finding_s": (
                round(record.first_failure_s, 4) if record.first_failure_s is not None else None
            ),
            "reason": record.reason,
            "trace": record.findings[0].as_dict()["trace"] if record.findings else [],
        },
        "explorer": exploration_fields(result.explorations[0]) if result.explorations else None,
        "explorations": [exploration_fields(run) for run in result.explorations],
        "timings": {
            "conformance_s": round(result.conformance_s, 4),
            "explorer_s": round(result.explorer_s, 4),
        },
    }


def manager_engines(subject: Subject, contract: Contract, request: Request) -> EngineRun:
    """The manager target's engines (`run_check`), as the pipeline's engine run."""
    policy = subject.policy or "lru"
    bounds = check_bounds(policy, contract.profile) if request.explore else None
    result = run_check(
        subject.factory,
        policy,
        contract,
        request.examples,
        request.steps,
        request.seed,
        bounds,
        request.workers,
    )
    record = result.conformance
    lines = [
        _conformance_line(record, request, result.conformance_s),
        f"  checked: {record.scope()}",
    ]
    lines += [f"explorer: {run.summary().splitlines()[0]}" for run in result.explorations]
    if result.explorations:
        lines.append(f"explorer: {len(result.explorations)} round(s), {result.explorer_s:.1f}s")
    lines += [
        f"following: a finding first seen as [{a.value}] leads to [{b.value}]"
        for a, b in dict.fromkeys(result.followed)
    ]
    error = None
    if record.status == "error":
        error = f"the conformance run could not be made: {record.reason}"
    status = "error" if error else "failed" if result.findings else "passed"
    return EngineRun(result.findings, status, tuple(lines), _fields(result), error, result)


MANAGER = Target(
    "manager",
    "(num_blocks, policy, enable_events) -> manager",
    guide_manager,
    manager_engines,
    kinds=tuple(Kind),
)
"""The `manager` target: a CPU offloading manager (the default)."""
