"""`explore.<policy>`, `explore.<policy>.faults`: every reachable state of the CPU
manager, the implementation in lock-step on every edge (with and without faults),
each with a seeded broken manager.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.levels import Level
from evictable.proofs.base.profiles import profile, verified_policies
from evictable.proofs.base.protocol import Factory
from evictable.proofs.base.records import Kind, Obligation, Outcome, Status, proved, refuted
from evictable.proofs.controls.manager import NoPolicyRollbackOnFault, non_atomic_complete_load
from evictable.proofs.explore.manager import CONTROL_BOUNDS, Exploration, explore


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


def obligations(level: Level) -> list[Obligation]:
    """`explore.<policy>` for every verified policy (`proofs.base.profiles`), each with a
    negative control: a seeded non-atomic implementation that must be caught; and
    `explore.<policy>.faults`, the same with the fault alphabet (a fault at call 1 or
    2 of every hook an op reaches, at its entry and after its body), whose control
    is a manager that does not roll its policy back."""
    out: list[Obligation] = []
    for policy in verified_policies():
        bounds = profile(policy).explore[level]
        control = replace(CONTROL_BOUNDS, policy=policy)
        faults = profile(policy).faults[level]
        out.append(
            Obligation(
                name=f"explore.{policy}",
                statement=(
                    f"every reachable state ({bounds.describe()}) satisfies every named "
                    "invariant, and the implementation agrees with the model on every edge"
                ),
                check=_explore_check(bounds, None),
                negative=_explore_check(control, non_atomic_complete_load),
                negative_statement=(
                    "the explorer finds a shortest trace against an implementation "
                    "whose complete_load releases keys one by one"
                ),
                tags=("explore",),
                kind=Kind.EXPLORED,
                bounds=bounds.describe(),
                negative_bounds=control.describe(),
            )
        )
        out.append(
            Obligation(
                name=f"explore.{policy}.faults",
                statement=(
                    f"every reachable state ({faults.describe()}): under a fault in any "
                    "policy hook an op reaches, the implementation re-raises it and "
                    "changes nothing (all-or-nothing under faults)"
                ),
                check=_explore_check(faults, None),
                negative=_explore_check(replace(control, faults=True), NoPolicyRollbackOnFault),
                negative_statement=(
                    "the explorer finds a manager that restores its own records but not "
                    "its policy when a hook fails"
                ),
                tags=("explore", "faults"),
                kind=Kind.EXPLORED,
                bounds=faults.describe(),
            )
        )
    return out
