"""`explore.<policy>`, `explore.<policy>.faults`: every reachable state of the CPU
manager, the implementation in lock-step on every edge (with and without faults):
the built-in policy, and the manager's generic path (the policy subclassed so that it
shares no key table with the manager; for LRU also `PlainLru`), each record with a
seeded broken manager per path as its control.

The generic-path runs were records of their own (`explore.<policy>[.faults].own_table`,
`explore.lru[.faults].plain`): they always passed or failed with the built-in run of
the same world, so they are one record now, whose check explores every path.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial

from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.levels import Level
from evictable.proofs.base.own_table import OwnTableManager, PlainPolicyManager
from evictable.proofs.base.profiles import profile, verified_policies
from evictable.proofs.base.protocol import Factory
from evictable.proofs.base.records import (
    Kind,
    Obligation,
    Outcome,
    Status,
    every_refuted,
    proved,
    refuted,
)
from evictable.proofs.controls.contract import OwnTableKeepsAborted
from evictable.proofs.controls.manager import NoPolicyRollbackOnFault, non_atomic_complete_load
from evictable.proofs.explore.manager import CONTROL_BOUNDS, Exploration, explore

Run = tuple[str, Bounds, Factory | None]
"""One exploration of a record: what runs (for the texts), its bounds, the factory
(None: the built-in implementation)."""


def _outcome(run: Exploration) -> Outcome:
    if run.failure is not None:
        return refuted(run.summary())
    if not run.figures.complete or run.unfaulted:
        return Outcome(Status.UNKNOWN, run.summary())
    return proved(run.figures.line())


def _explore_check(bounds: Bounds, factory: Factory | None) -> Callable[[float], Outcome]:
    def check(_backstop_s: float) -> Outcome:
        return _outcome(explore(bounds, factory))

    return check


def _every_run(runs: Sequence[Run]) -> Callable[[float], Outcome]:
    """Every run of the record must hold; the first that does not is the outcome."""

    def check(backstop_s: float) -> Outcome:
        lines = []
        for what, bounds, factory in runs:
            out = _explore_check(bounds, factory)(backstop_s)
            if out.status is not Status.PROVED:
                return Outcome(out.status, f"{what}: {out.counterexample}", out.detail)
            lines.append(f"{what}: {out.detail}")
        return proved("; ".join(lines))

    return check


def _runs(policy: str, faults: bool, level: Level) -> list[Run]:
    p = profile(policy)
    built_in = p.faults[level] if faults else p.explore[level]
    generic = p.faults[level] if faults else p.generic[level]
    out: list[Run] = [("built-in", built_in, None), ("own table", generic, OwnTableManager)]
    if policy == "lru":
        out.append(("PlainLru", generic, PlainPolicyManager))
    return out


def obligations(level: Level) -> list[Obligation]:
    """`explore.<policy>` for every verified policy (`proofs.base.profiles`), each with
    its controls: a seeded non-atomic implementation, and a manager whose own key
    table keeps the keys of a failed store; and `explore.<policy>.faults`, the same
    with the fault alphabet (a fault at call 1 or 2 of every hook an op reaches, at its
    entry and after its body), whose controls are a manager that does not roll its
    policy back and the same own-table manager."""
    out: list[Obligation] = []
    for policy in verified_policies():
        control = replace(CONTROL_BOUNDS, policy=policy)
        for faults in (False, True):
            runs = _runs(policy, faults, level)
            name = f"explore.{policy}" + (".faults" if faults else "")
            first = (
                (
                    "a manager that restores its own records but not its policy when a hook fails",
                    _explore_check(replace(control, faults=True), NoPolicyRollbackOnFault),
                )
                if faults
                else (
                    "an implementation whose complete_load releases keys one by one",
                    _explore_check(control, non_atomic_complete_load),
                )
            )
            controls = [
                first,
                (
                    "a manager whose own key table keeps the keys of a failed store",
                    _explore_check(control, OwnTableKeepsAborted),
                ),
            ]
            claim = (
                "under a fault in any policy hook an op reaches, the implementation "
                "re-raises it and changes nothing (all-or-nothing under faults)"
                if faults
                else "every reachable state satisfies every named invariant, and the "
                "implementation agrees with the model on every edge"
            )
            out.append(
                Obligation(
                    name=name,
                    statement=(
                        f"{claim}: for the built-in policy and for the manager's generic path "
                        "(the policy subclassed to share no key table"
                        + (", and PlainLru" if policy == "lru" else "")
                        + ")"
                    ),
                    check=_every_run(runs),
                    negative=partial(every_refuted, controls),
                    negative_statement="the explorer finds a shortest trace against each of: "
                    + "; ".join(text for text, _ in controls),
                    tags=("explore",) + (("faults",) if faults else ()),
                    kind=Kind.EXPLORED,
                    bounds="; ".join(f"{what}: {b.describe()}" for what, b, _ in runs),
                    negative_bounds=control.describe(),
                )
            )
    return out
