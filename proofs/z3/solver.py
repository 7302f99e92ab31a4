"""Discharging a claim with Z3: validity by refuting the negation, and satisfiability.

A claim is *proved* when its negation is unsatisfiable; the model of a satisfiable
negation is the counterexample, rendered by the caller; a Z3 `unknown` (a timeout,
say) is reported as `unknown`, which counts as a failure. Each solver call's
timeout is clipped to the running obligation's deadline (`obligations.deadline`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from evictable.proofs.base.records import Outcome, Status, proved, refuted, remaining

__all__ = ["z3_sat", "z3_valid"]


def _z3() -> Any:
    import z3  # imported lazily: only proofs/ depends on z3

    return z3


def z3_valid(
    claim: Any,
    timeout_s: float,
    describe: Callable[[Any], str],
    assumptions: Sequence[Any] = (),
) -> Outcome:
    """Prove `assumptions ⇒ claim` by refuting its negation.

    `describe(model)` renders a counterexample model as readable text.
    """
    z3 = _z3()
    s = z3.Solver()
    s.set("timeout", int(min(timeout_s, remaining(timeout_s)) * 1000))
    s.add(*assumptions)
    s.add(z3.Not(claim))
    r = s.check()
    if r == z3.unsat:
        return proved()
    if r == z3.sat:
        return refuted(describe(s.model()))
    return Outcome(Status.UNKNOWN, f"z3 returned unknown: {s.reason_unknown()}")


def z3_sat(formulas: Sequence[Any], timeout_s: float, what: str = "formula") -> Outcome:
    """Non-vacuity: `formulas` are jointly satisfiable (PROVED), else COUNTEREXAMPLE."""
    z3 = _z3()
    s = z3.Solver()
    s.set("timeout", int(min(timeout_s, remaining(timeout_s)) * 1000))
    s.add(*formulas)
    r = s.check()
    if r == z3.sat:
        return proved()
    if r == z3.unsat:
        return refuted(f"{what} is unsatisfiable (vacuous)")
    return Outcome(Status.UNKNOWN, f"z3 returned unknown: {s.reason_unknown()}")
