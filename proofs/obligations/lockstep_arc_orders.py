"""`arc.orders`: ARC's idle index where it is hardest (every order in which five
blocks come back idle, a protected key, a refused eviction), the implementation in
lock-step with the model on every call, and every call of both sides a step of the
proved manager relation composed with ARC's own (`refine.conformance`: its four
lists in order, the victims ARC's rule picks, the idle view, the target), with the
seeded index bugs no other engine reaches as its controls.
"""

from __future__ import annotations

from collections.abc import Callable

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.base.levels import Level
from evictable.proofs.base.protocol import Factory
from evictable.proofs.base.records import Kind, Obligation, Outcome, proved, refuted
from evictable.proofs.controls.catalogue import CATALOGUE, by_name
from evictable.proofs.lockstep.arc_orders import Orders, Shape, run
from evictable.proofs.refine.conformance import RefinementObserver
from evictable.proofs.refine.manager import ManagerOracle, OracleCache
from evictable.proofs.z3.policy_arc import ARC_HOOKS

__all__ = ["SHAPES", "obligations"]

SHAPES: dict[str, Shape] = {
    "quick": Shape(victims=(2,), touched=(3,), failed_first=(True,)),
    "default": Shape(victims=(1, 3), touched=(3,)),
    "thorough": Shape(victims=(1, 2, 3, 4), touched=(3, 2, 0)),
}
"""The call-sequence family replayed at each level."""

CONTROLS = tuple(bug for bug in CATALOGUE if bug.klass == "orders")
"""The seeded bugs of ARC's idle index that only this family reaches."""

ORDER_BUGS = ("evictable_moves_to_mru",)
"""Seeded ARC bugs of T1's and T2's order the relation must also refute here."""

LONGEST_CALL = 8
"""Every call of the family is judged by the relation (its longest has 6 keys)."""

_CACHE = OracleCache()
"""The shapes of the proved relation composed with ARC's, shared by the claim and
the controls (one batch, one process)."""


def _run(shape: Shape, factory: Factory) -> tuple[Orders, RefinementObserver]:
    observer = RefinementObserver(ManagerOracle(arc=ARC_HOOKS, cache=_CACHE), LONGEST_CALL)
    return run(shape, factory, observer=observer), observer


def _claim(shape: Shape) -> Callable[[float], Outcome]:
    def check(_backstop_s: float) -> Outcome:
        out, observer = _run(shape, CPUOffloadingManager)
        if out.failure is not None:
            return refuted(out.failure.text())
        return proved(f"{out.line()}; {observer.figures()}")

    return check


def _caught(out: Orders, by_relation: bool) -> str | None:
    """The failure's first line, if there is one (and the relation found it, when it
    must have)."""
    if out.failure is None:
        return None
    line = out.failure.reason.splitlines()[0]
    if by_relation and "left the proved relation" not in line:
        return None
    return line


def _controls(shape: Shape) -> Callable[[float], Outcome]:
    def check(_backstop_s: float) -> Outcome:
        caught = []
        runs: list[tuple[str, Factory]] = [
            *((bug.name, bug.factory) for bug in CONTROLS),
            *((name, by_name(name).factory) for name in ORDER_BUGS),
        ]
        for name, factory in runs:
            line = _caught(_run(shape, factory)[0], by_relation=True)
            if line is None:
                return proved(f"{name} was not refuted by the relation")
            caught.append(f"{name}: {line}")
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
                "and heap of both lists), then a protected or refused eviction and another; "
                "every call of both sides is the one step the proved manager relation "
                "composed with ARC's hook relations admits"
            ),
            check=_claim(shape),
            negative=_controls(shape),
            negative_statement=(
                f"the proved relation refutes each of {len(CONTROLS)} seeded bugs of ARC's "
                f"idle index ({', '.join(b.name for b in CONTROLS)}) and the order bug "
                f"{', '.join(ORDER_BUGS)}"
            ),
            tags=("arc", "lockstep", "refine"),
            batch="arc.orders",
            kind=Kind.EXPLORED,
            bounds=f"{shape.describe()}; calls of up to {LONGEST_CALL} keys judged",
        )
    ]
