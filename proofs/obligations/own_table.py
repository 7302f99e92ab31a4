"""`explore.<policy>.own_table`, `explore.lru.plain`: the manager's generic path (a
policy that shares no key table) explored, with a manager whose own table keeps
aborted keys as the control.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.levels import Level
from evictable.proofs.base.own_table import OwnTableManager, PlainPolicyManager
from evictable.proofs.base.protocol import Factory
from evictable.proofs.base.records import Kind, Obligation, Outcome, Status, proved, refuted


def obligations(level: Level) -> list[Obligation]:
    """`explore.<policy>.own_table` for every verified policy (its explorer bounds at
    `level`, with and without the fault alphabet) and `explore.lru.plain`, with a
    negative control: a manager whose own table keeps the keys of a failed store."""
    from evictable.proofs.base.profiles import profile, verified_policies
    from evictable.proofs.controls.contract import OwnTableKeepsAborted
    from evictable.proofs.explore.manager import CONTROL_BOUNDS, explore

    def check(bounds: Bounds, factory: Factory) -> Callable[[float], Outcome]:
        def run(_backstop_s: float) -> Outcome:
            out = explore(bounds, factory)
            if out.failure is not None:
                return refuted(out.summary())
            if not out.ok:
                return Outcome(Status.UNKNOWN, out.summary())
            return proved(out.figures.line())

        return run

    out: list[Obligation] = []
    runs: list[tuple[str, str, Factory]] = [
        (p, "own_table", OwnTableManager) for p in verified_policies()
    ]
    if "lru" in verified_policies():
        runs.append(("lru", "plain", PlainPolicyManager))
    for policy, what, factory in runs:
        control = replace(CONTROL_BOUNDS, policy=policy)
        for bounds in (profile(policy).generic[level], profile(policy).faults[level]):
            tail = ".faults" if bounds.faults else ""
            out.append(
                Obligation(
                    name=f"explore.{policy}{tail}.{what}",
                    statement=(
                        f"as explore.{policy}{tail}, at the generic path's bounds, with the "
                        "manager running a variant of the policy that shares no key table "
                        f"({what}: "
                        f"{'the policy subclassed' if what == 'own_table' else 'PlainLru'})"
                    ),
                    check=check(bounds, factory),
                    negative=check(control, OwnTableKeepsAborted),
                    negative_statement=(
                        "the explorer catches a manager whose own key table keeps the keys "
                        "of a failed store"
                    ),
                    tags=("explore", "own_table"),
                    kind=Kind.EXPLORED,
                    bounds=bounds.describe(),
                    negative_bounds=control.describe(),
                )
            )
    return out
