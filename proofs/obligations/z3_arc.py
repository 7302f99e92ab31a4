"""The obligations of `z3.arc`, each paired with its negative control."""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from evictable.model.arc import target_after_b1_hit, target_after_b2_hit
from evictable.model.invariants import Logic
from evictable.proofs.base.records import Kind, Obligation, Outcome, proved, refuted
from evictable.proofs.controls.arc_models import floor_division_b1_hit
from evictable.proofs.z3.arc import (
    RELATIONS,
    KeyView,
    Params,
    _z3,
    b1_hit_term,
    b2_hit_term,
    inductive_check,
)
from evictable.proofs.z3.solver import z3_valid


def _range_check(which: str, broken: bool) -> Callable[[float], Outcome]:
    def run(timeout_s: float) -> Outcome:
        z3 = _z3()
        t = z3.Real("target")
        n, b1, b2 = z3.Ints("N b1 b2")
        rn = z3.ToReal(n)
        pre = [n >= 0, b1 >= 0, b2 >= 0, b1 <= n, b2 <= n, t >= 0, t <= rn]
        if which == "b1":
            pre.append(b1 >= 1)
            new = b1_hit_term(t, b1, b2, n, capped=not broken)
        else:
            pre.append(b2 >= 1)
            new = b2_hit_term(t, b1, b2, floored=not broken)
        claim = z3.And(new >= 0, new <= rn)

        def describe(m: Any) -> str:
            return (
                f"target={m.eval(t)}, N={m.eval(n)}, |B1|={m.eval(b1)}, |B2|={m.eval(b2)}"
                f" -> target'={m.eval(new, model_completion=True)}"
            )

        return z3_valid(claim, timeout_s, describe, pre)

    return run


def _as_fraction(z3: Any, term: Any) -> Fraction:
    v = z3.simplify(term)
    return Fraction(v.numerator_as_long(), v.denominator_as_long())


def _encoding_check(
    b1_fn: Callable[[float, int, int, int], float],
    b2_fn: Callable[[float, int, int], float],
) -> Callable[[float], Outcome]:
    """The Z3 terms and the Python functions agree on every small concrete input."""

    def run(timeout_s: float) -> Outcome:
        z3 = _z3()
        for n in range(0, 5):
            targets = sorted({Fraction(i, 6) * n for i in range(7)} | {Fraction(1, 3)})
            for b1 in range(0, n + 1):
                for b2 in range(0, n + 1):
                    for t in (x for x in targets if x <= n):
                        tz = z3.RealVal(str(t))
                        zb1, zb2, zn = z3.IntVal(b1), z3.IntVal(b2), z3.IntVal(n)
                        checks = []
                        if b1 >= 1:
                            checks.append(
                                ("b1", b1_hit_term(tz, zb1, zb2, zn), b1_fn(float(t), b1, b2, n))
                            )
                        if b2 >= 1:
                            checks.append(
                                ("b2", b2_hit_term(tz, zb1, zb2), b2_fn(float(t), b1, b2))
                            )
                        for which, term, py in checks:
                            exact = _as_fraction(z3, term)
                            if not math.isclose(float(exact), py, rel_tol=1e-12, abs_tol=1e-12):
                                return refuted(
                                    f"{which} hit at target={t}, N={n}, |B1|={b1}, "
                                    f"|B2|={b2}: z3 {exact} != model {py}"
                                )
        return proved()

    return run


def _leaky_touch(lg: Logic, k: KeyView, n: KeyView, p: Params) -> Any:
    """Broken touch relation: a ready T1 key joins T2 but stays in T1."""
    promoted = lg.and_(p.is_x, k.t1, lg.ge(k.ref, 0))
    return lg.and_(
        lg.implies(
            promoted,
            lg.and_(
                n.t1,
                n.t2,
                lg.iff(n.b1, k.b1),
                lg.iff(n.b2, k.b2),
                lg.iff(n.res, k.res),
                lg.eq(n.ref, k.ref),
            ),
        ),
        lg.implies(
            lg.not_(promoted),
            lg.and_(
                lg.iff(n.t1, k.t1),
                lg.iff(n.t2, k.t2),
                lg.iff(n.b1, k.b1),
                lg.iff(n.b2, k.b2),
                lg.iff(n.res, k.res),
            ),
        ),
    )


def obligations(level: str) -> list[Obligation]:
    """The ARC target-range proofs (reals) and the membership induction over keys."""
    obs: list[Obligation] = [
        Obligation(
            "arc.z3.target_b1_hit_in_range",
            "0 ≤ t ≤ N ∧ 1 ≤ |B1| ⇒ 0 ≤ min(t + max(1, |B2|/|B1|), N) ≤ N (reals, unbounded)",
            _range_check("b1", broken=False),
            _range_check("b1", broken=True),
            "a B1 hit without the cap at N is refuted",
            tags=("z3", "arc"),
            kind=Kind.UNBOUNDED,
        ),
        Obligation(
            "arc.z3.target_b2_hit_in_range",
            "0 ≤ t ≤ N ∧ 1 ≤ |B2| ⇒ 0 ≤ max(t − max(1, |B1|/|B2|), 0) ≤ N (reals, unbounded)",
            _range_check("b2", broken=False),
            _range_check("b2", broken=True),
            "a B2 hit without the floor at 0 is refuted",
            tags=("z3", "arc"),
            kind=Kind.UNBOUNDED,
        ),
        Obligation(
            "arc.z3.target_encoding_matches_model",
            "the Z3 target terms compute model.arc's target functions (N ≤ 4, all sizes)",
            _encoding_check(target_after_b1_hit, target_after_b2_hit),
            _encoding_check(floor_division_b1_hit, target_after_b2_hit),
            "a B1 hit computed with integer division is told apart from the encoding",
            tags=("z3", "arc"),
            kind=Kind.EXPLORED,
            bounds="N <= 4, every list size, 8 targets per N",
        ),
    ]
    obs.append(
        Obligation(
            "arc.z3.membership_inductive",
            "T1 ∩ T2 = ∅, B1 ∩ B2 = ∅, residents ∩ ghosts = ∅, T1 ∪ T2 = residents: true "
            "initially and kept by every ARC event, for any number of keys (per-key "
            "relation of evictable.proofs.z3.arc; each event non-vacuous)",
            inductive_check(RELATIONS),
            inductive_check({**RELATIONS, "touch": _leaky_touch}),
            "a touch relation that adds the key to T2 without taking it out of T1 is refuted",
            tags=("z3", "arc"),
            kind=Kind.UNBOUNDED,
        )
    )
    return obs
