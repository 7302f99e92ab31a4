"""`arc.targets`: ARC with a fractional target (three slots; a B1 hit and a B2 hit at
3/2, on ghost lists of two and three keys), then evictions whose victims depend on how
the target is rounded; the implementation in lock-step with the model on every call,
and every call of both sides a step of the proved manager relation composed with
ARC's own (`refine.conformance`), with an implementation that rounds the target as
its control (no world of two slots can tell it from the model: there the target is
always an integer).
"""

from __future__ import annotations

from collections.abc import Callable

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.base.levels import Level
from evictable.proofs.base.protocol import Factory
from evictable.proofs.base.records import Kind, Obligation, Outcome, proved, refuted
from evictable.proofs.controls.catalogue import CATALOGUE
from evictable.proofs.lockstep.arc_targets import Shape, Targets, run
from evictable.proofs.refine.conformance import RefinementObserver
from evictable.proofs.refine.manager import ManagerOracle, OracleCache
from evictable.proofs.z3.policy_arc import ARC_HOOKS

__all__ = ["SHAPES", "obligations"]

SHAPES: dict[Level, tuple[Shape, bool]] = {
    "quick": (Shape(t1_moves=(0,), victims=(1,), pinned=(False,)), False),
    "default": (Shape(), True),
    "thorough": (Shape(t1_moves=(0, 1), victims=(1, 2, 3), pinned=(False, True)), True),
}
"""The call-sequence family replayed at each level (both ghost-hit kinds at every
level: the bug class needs them), and whether the relation judges every call too (not
at quick: building its shapes over three slots costs seconds there; the lock-step
comparison alone catches the control)."""

CONTROLS = tuple(bug for bug in CATALOGUE if bug.klass == "targets")
"""The seeded bugs only a fractional target shows."""

LONGEST_CALL = 4
"""Every call of the family is judged by the relation (its longest has 3 keys)."""

_CACHE = OracleCache()
"""The shapes of the proved relation composed with ARC's, shared by the claim and the
controls (one batch, one process)."""


def _run(shape: Shape, judged: bool, factory: Factory) -> tuple[Targets, RefinementObserver | None]:
    observer = (
        RefinementObserver(ManagerOracle(arc=ARC_HOOKS, cache=_CACHE), LONGEST_CALL)
        if judged
        else None
    )
    return run(shape, factory, observer=observer), observer


def _claim(shape: Shape, judged: bool) -> Callable[[float], Outcome]:
    def check(_backstop_s: float) -> Outcome:
        out, observer = _run(shape, judged, CPUOffloadingManager)
        if out.failure is not None:
            return refuted(out.failure.text())
        return proved(out.line() + (f"; {observer.figures()}" if observer is not None else ""))

    return check


def _controls(shape: Shape, judged: bool) -> Callable[[float], Outcome]:
    def check(_backstop_s: float) -> Outcome:
        caught = []
        for bug in CONTROLS:
            out, _ = _run(shape, judged, bug.factory)
            if out.failure is None:
                return proved(f"{bug.name} was not caught")
            caught.append(f"{bug.name}: {out.failure.reason.splitlines()[0]}")
        return refuted("\n".join(caught))

    return check


def obligations(level: Level) -> list[Obligation]:
    shape, judged = SHAPES[level]
    relation = (
        "; every call of both sides is the one step the proved manager relation composed "
        "with ARC's hook relations admits"
        if judged
        else ""
    )
    return [
        Obligation(
            name="arc.targets",
            statement=(
                "CPUOffloadingManager('arc') agrees with the model on every call of every "
                "sequence that takes ARC's target to 1.5 by a B1 hit and by a B2 hit (ghost "
                "lists of two and three keys) and then evicts with T1 at or around the "
                "target" + relation
            ),
            check=_claim(shape, judged),
            negative=_controls(shape, judged),
            negative_statement=(
                f"each of {len(CONTROLS)} seeded bugs only a fractional target shows "
                f"({', '.join(b.name for b in CONTROLS)}) is caught"
            ),
            tags=("arc", "lockstep", "refine"),
            batch="arc.targets",
            kind=Kind.EXPLORED,
            bounds=shape.describe()
            + (f"; calls of up to {LONGEST_CALL} keys judged" if judged else ""),
        )
    ]
