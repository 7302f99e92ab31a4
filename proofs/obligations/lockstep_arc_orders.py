"""`arc.orders`: ARC's idle index where it is hardest (every order in which five
blocks come back idle, a protected key, a refused eviction), the implementation in
lock-step with the model on every call, with the seeded index bugs no other engine
reaches as its controls.
"""

from __future__ import annotations

from collections.abc import Callable

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, Outcome, proved, refuted
from evictable.proofs.controls.catalogue import CATALOGUE
from evictable.proofs.lockstep.arc_orders import Shape, run

__all__ = ["SHAPES", "obligations"]

SHAPES: dict[str, Shape] = {
    "quick": Shape(victims=(2,), touched=(3,), failed_first=(True,)),
    "default": Shape(victims=(1, 3), touched=(3,)),
    "thorough": Shape(victims=(1, 2, 3, 4), touched=(3, 2, 0)),
}
"""The call-sequence family replayed at each level."""

CONTROLS = tuple(bug for bug in CATALOGUE if bug.klass == "orders")
"""The seeded bugs of ARC's idle index that only this family reaches."""


def _claim(shape: Shape) -> Callable[[float], Outcome]:
    def check(_backstop_s: float) -> Outcome:
        out = run(shape, CPUOffloadingManager)
        if out.failure is not None:
            return refuted(out.failure.text())
        return proved(out.line())

    return check


def _controls(shape: Shape) -> Callable[[float], Outcome]:
    def check(_backstop_s: float) -> Outcome:
        caught = []
        for bug in CONTROLS:
            out = run(shape, bug.factory)
            if out.failure is None:
                return proved()  # this bug slipped through: the control fails
            caught.append(f"{bug.name}: {out.failure.reason.splitlines()[0]}")
        return refuted("\n".join(caught))

    return check


def obligations(level: Level) -> list[Obligation]:
    shape = SHAPES[level]
    return [
        Obligation(
            name="arc.orders",
            statement=(
                "CPUOffloadingManager('arc') agrees with the model on every call of every "
                "sequence in which idle records come back out of order (ring, late ring "
                "and heap of both lists), then a protected or refused eviction and another"
            ),
            check=_claim(shape),
            negative=_controls(shape),
            negative_statement=(
                f"each of {len(CONTROLS)} seeded bugs of ARC's idle index "
                f"({', '.join(b.name for b in CONTROLS)}) is refuted"
            ),
            tags=("arc", "lockstep"),
            kind=Kind.EXPLORED,
            bounds=shape.describe(),
        )
    ]
