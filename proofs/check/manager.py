"""`evictable check` for a CPU manager: both engines under one contract, findings grouped.

`run_check(factory, policy, contract, ...)` runs

1. the conformance engine (`lockstep.conformance.run_conformance`): random call
   sequences, continuing past findings, one shrunk trace per class;
2. the explorer (`explore.manager.explore`) in rounds: each round is a breadth-first
   search over every state within the bounds, so the first finding it reports is a
   shortest trace of its class; the next round masks every class found so far (an
   edge that shows one is not followed) and looks for the next, until a round finds
   nothing new (or `rounds` rounds ran);

and groups the findings of both by class (`base.findings.group`: the shortest
trace of each class wins, whichever engine found it). The pytest fixture
(`check.plugin`) and the command line both call it. `check_manager` is the same for
a caller in Python (`evictable.testing.check_manager`): the contract by name or as a
`Contract`, the factory's declarations (`evictable_contract`, `evictable_policy`)
underneath.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.compare import Kind
from evictable.proofs.base.contract import Contract, resolve
from evictable.proofs.base.findings import Finding, group
from evictable.proofs.base.profiles import profile
from evictable.proofs.base.protocol import Factory
from evictable.proofs.explore.manager import Exploration, explore
from evictable.proofs.lockstep.conformance import ConformanceRecord, run_conformance
from evictable.proofs.lockstep.shrink import REPLAYS

__all__ = ["ManagerCheck", "check_manager", "explore_findings", "run_check"]


@dataclass(frozen=True)
class ManagerCheck:
    """The outcome of `check_manager`."""

    contract: Contract
    conformance: ConformanceRecord
    explorations: tuple[Exploration, ...]
    findings: tuple[Finding, ...]
    conformance_s: float
    explorer_s: float

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
    for _ in range(rounds):
        run = explore(bounds, factory, workers=workers, contract=contract, masked=frozenset(masked))
        runs.append(run)
        failure = run.failure
        if failure is None or failure.kind in masked:
            break
        masked.add(failure.kind)
        calls = len(failure.path) + (failure.op is not None)
        found.append(
            Finding(
                failure.kind,
                f"explorer ({bounds.describe()})",
                failure.reason,
                failure.snippet,
                failure.snippet,
                calls,
                steps=failure.steps,
            )
        )
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
    """Both engines against `factory` under `contract` (`bounds` None: no explorer)."""
    t0 = time.perf_counter()
    record = run_conformance(
        factory, policy, examples, steps, seed, shrink_replays=shrink_replays, contract=contract
    )
    t1 = time.perf_counter()
    runs: list[Exploration] = []
    found: list[Finding] = []
    if bounds is not None and record.status != "error":
        runs, found = explore_findings(bounds, factory, contract, workers)
    t2 = time.perf_counter()
    return ManagerCheck(
        contract,
        record,
        tuple(runs),
        group([*found, *record.findings]),  # on a tie, the explorer's (a shortest) trace
        t1 - t0,
        t2 - t1,
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
    bounds = profile(name).check if explore else None
    return run_check(factory, name, chosen, examples, steps, seed, bounds, workers)
