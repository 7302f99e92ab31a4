"""Z3 obligations for ARC: the adaptive target over the reals, and list membership
as a per-key transition relation (induction over an unbounded key sort).

* `arc.z3.target_b1_hit_in_range` / `_b2_hit_in_range`: a ghost hit keeps
  `0 <= target <= N` for every real target in range and all list sizes (unbounded);
  `arc.z3.target_encoding_matches_model`: the Z3 terms compute what
  `model.arc.target_after_b1_hit` / `_b2_hit` compute, so the two cannot drift.
* `arc.z3.membership_inductive`, below.

One key's ARC position is four booleans -- in T1, in T2, in B1, in B2 -- next to its
residency and ref count. Each event is a relation between that key's values before
and after (`RELATIONS`), written once over `model.invariants.Logic`, so that:

* Z3 proves, for an arbitrary key of an uninterpreted sort (so for any number of
  keys), that `membership` -- T1 ∩ T2 = ∅, B1 ∩ B2 = ∅, residents and ghosts
  disjoint, T1 ∪ T2 = residents -- holds initially and is kept by every event
  (`arc.z3.membership_inductive`), and that each event is possible (non-vacuity);
* the *bridge* evaluates the same relations on Python booleans over every edge of
  the exhaustive exploration of the executable model (`explore.arc`), for
  every key: the model's steps are steps of the proved relation
  (`arc.z3.relation_matches_model`), so the two cannot drift apart.

The eviction relation leaves the victim choice and the ghost trimming free (they
are parameters: `victim`, `trim1`, `trim2`), constrained only by what the spec
promises: a victim is resident with ref 0, goes to B1 from T1 and to B2 from T2.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from evictable.model.invariants import Logic
from evictable.proofs.base.records import Outcome, Status, proved, refuted
from evictable.proofs.z3.solver import z3_sat, z3_valid

__all__ = [
    "EVENTS",
    "RELATIONS",
    "KeyView",
    "Params",
    "inductive_check",
    "membership",
]


@dataclass(frozen=True)
class KeyView:
    """One key's ARC terms (Python values or Z3 terms)."""

    t1: Any
    t2: Any
    b1: Any
    b2: Any
    res: Any
    ref: Any


@dataclass(frozen=True)
class Params:
    """An event's free choices for this key: is it the event's key; victim; trimmed."""

    is_x: Any
    victim: Any
    trim1: Any
    trim2: Any


Relation = Callable[[Logic, KeyView, KeyView, Params], Any]


def membership(lg: Logic, k: KeyView) -> Any:
    """The list-membership invariant of one key."""
    resident_listed = lg.or_(k.t1, k.t2)
    ghost = lg.or_(k.b1, k.b2)
    return lg.and_(
        lg.not_(lg.and_(k.t1, k.t2)),
        lg.not_(lg.and_(k.b1, k.b2)),
        lg.not_(lg.and_(resident_listed, ghost)),
        lg.iff(resident_listed, k.res),
        lg.implies(k.res, lg.ge(k.ref, -1)),
    )


def _same_lists(lg: Logic, a: KeyView, b: KeyView) -> Any:
    return lg.and_(lg.iff(a.t1, b.t1), lg.iff(a.t2, b.t2), lg.iff(a.b1, b.b1), lg.iff(a.b2, b.b2))


def _same(lg: Logic, a: KeyView, b: KeyView) -> Any:
    return lg.and_(
        _same_lists(lg, a, b), lg.iff(a.res, b.res), lg.implies(a.res, _eq_ref(lg, a, b))
    )


def _eq_ref(lg: Logic, a: KeyView, b: KeyView) -> Any:
    """a.ref == b.ref (both are terms of the same Logic)."""
    return lg.eq(a.ref, b.ref)


def _insert(lg: Logic, k: KeyView, n: KeyView, p: Params) -> Any:
    """Store begins (key absent): T1 MRU, out of B1/B2, PENDING."""
    return lg.and_(
        lg.implies(
            p.is_x,
            lg.and_(
                lg.not_(k.res),
                n.res,
                lg.eq(n.ref, -1),
                n.t1,
                lg.iff(n.t2, k.t2),
                lg.not_(n.b1),
                lg.not_(n.b2),
            ),
        ),
        lg.implies(lg.not_(p.is_x), _same(lg, k, n)),
    )


def _ref_only(expect: int, becomes: int) -> Relation:
    def rel(lg: Logic, k: KeyView, n: KeyView, p: Params) -> Any:
        return lg.and_(
            lg.implies(
                p.is_x,
                lg.and_(
                    k.res, lg.eq(k.ref, expect), n.res, lg.eq(n.ref, becomes), _same_lists(lg, k, n)
                ),
            ),
            lg.implies(lg.not_(p.is_x), _same(lg, k, n)),
        )

    return rel


def _abort(lg: Logic, k: KeyView, n: KeyView, p: Params) -> Any:
    """Failed store (PENDING): out of T1/T2, no ghost, absent."""
    return lg.and_(
        lg.implies(
            p.is_x,
            lg.and_(
                k.res,
                lg.eq(k.ref, -1),
                lg.not_(n.res),
                lg.not_(n.t1),
                lg.not_(n.t2),
                lg.iff(n.b1, k.b1),
                lg.iff(n.b2, k.b2),
            ),
        ),
        lg.implies(lg.not_(p.is_x), _same(lg, k, n)),
    )


def _touch(lg: Logic, k: KeyView, n: KeyView, p: Params) -> Any:
    """Touch: a ready T1 key moves to T2; every other membership stays."""
    promoted = lg.and_(p.is_x, k.t1, lg.ge(k.ref, 0))
    return lg.and_(
        lg.implies(
            promoted,
            lg.and_(
                lg.not_(n.t1),
                n.t2,
                lg.iff(n.b1, k.b1),
                lg.iff(n.b2, k.b2),
                lg.iff(n.res, k.res),
                _eq_ref(lg, k, n),
            ),
        ),
        lg.implies(lg.not_(promoted), _same(lg, k, n)),
    )


def _evict(lg: Logic, k: KeyView, n: KeyView, p: Params) -> Any:
    """Eviction: a victim (resident, ref 0) leaves T1/T2 for B1/B2; ghosts may be trimmed."""
    from_t1 = lg.and_(p.victim, k.t1)
    from_t2 = lg.and_(p.victim, lg.not_(k.t1))
    return lg.and_(
        lg.implies(
            p.victim, lg.and_(k.res, lg.eq(k.ref, 0), lg.not_(n.res), lg.not_(n.t1), lg.not_(n.t2))
        ),
        lg.implies(
            lg.not_(p.victim),
            lg.and_(
                lg.iff(n.t1, k.t1),
                lg.iff(n.t2, k.t2),
                lg.iff(n.res, k.res),
                lg.implies(k.res, _eq_ref(lg, k, n)),
            ),
        ),
        lg.iff(n.b1, lg.and_(lg.or_(k.b1, from_t1), lg.not_(p.trim1))),
        lg.iff(n.b2, lg.and_(lg.or_(k.b2, from_t2), lg.not_(p.trim2))),
    )


def _clear(lg: Logic, k: KeyView, n: KeyView, p: Params) -> Any:
    return lg.and_(lg.not_(n.t1), lg.not_(n.t2), lg.not_(n.b1), lg.not_(n.b2), lg.not_(n.res))


RELATIONS: dict[str, Relation] = {
    "insert": _insert,
    "commit": _ref_only(-1, 0),
    "load": _ref_only(0, 1),
    "unload": _ref_only(1, 0),
    "abort": _abort,
    "touch": _touch,
    "evict": _evict,
    "clear": _clear,
}
EVENTS = tuple(RELATIONS)


# ---------------------------------------------------------------- Z3: induction


def _z3_view(z3: Any, tag: str) -> KeyView:
    t1, t2, b1, b2, res = (z3.Bool(f"{n}{tag}") for n in ("t1", "t2", "b1", "b2", "res"))
    return KeyView(t1, t2, b1, b2, res, z3.Int(f"ref{tag}"))


def inductive_check(relations: dict[str, Relation]) -> Callable[[float], Outcome]:
    """Initiation, consecution of every event, and non-vacuity of `Inv ∧ T` per event."""

    def run(backstop_s: float) -> Outcome:
        import z3

        from evictable.proofs.z3.encode import Z3_LOGIC as lg

        pre, post = _z3_view(z3, ""), _z3_view(z3, "'")
        p = Params(*z3.Bools("is_x victim trim1 trim2"))
        no = z3.BoolVal(False)
        empty = KeyView(no, no, no, no, no, z3.Int("ref0"))
        init = z3_valid(membership(lg, empty), backstop_s, lambda m: "initial state")
        if init.status is not Status.PROVED:
            return init
        for event, rel in relations.items():
            step = rel(lg, pre, post, p)

            def describe(m: Any, event: str = event) -> str:
                def show(v: KeyView) -> str:
                    return ", ".join(
                        f"{f}={m.eval(getattr(v, f), model_completion=True)}"
                        for f in ("t1", "t2", "b1", "b2", "res", "ref")
                    )

                return (
                    f"{event}: before [{show(pre)}] after [{show(post)}] "
                    f"is_x={m.eval(p.is_x, model_completion=True)} "
                    f"victim={m.eval(p.victim, model_completion=True)}"
                )

            out = z3_valid(membership(lg, post), backstop_s, describe, [membership(lg, pre), step])
            if out.status is not Status.PROVED:
                return out
            witness = p.victim if event == "evict" else p.is_x
            live = z3_sat([membership(lg, pre), step, witness], backstop_s, f"Inv ∧ {event}")
            if live.status is not Status.PROVED:
                return live
        return proved()

    return run


# ---------------------------------------------------------------- the bridge


# ---------------------------------------------------------------- the target range


def _z3() -> Any:
    import z3

    return z3


def _max(z3: Any, a: Any, b: Any) -> Any:
    """Python's `max(a, b)`: `b` when `b > a`, else `a`."""
    return z3.If(b > a, b, a)


def _min(z3: Any, a: Any, b: Any) -> Any:
    """Python's `min(a, b)`: `b` when `b < a`, else `a`."""
    return z3.If(b < a, b, a)


def b1_hit_term(t: Any, b1: Any, b2: Any, n: Any, capped: bool = True) -> Any:
    """Z3 encoding of `target_after_b1_hit` (real arithmetic)."""
    z3 = _z3()
    raw = t + _max(z3, z3.RealVal(1), z3.ToReal(b2) / z3.ToReal(b1))
    return _min(z3, raw, z3.ToReal(n)) if capped else raw


def b2_hit_term(t: Any, b1: Any, b2: Any, floored: bool = True) -> Any:
    """Z3 encoding of `target_after_b2_hit` (real arithmetic)."""
    z3 = _z3()
    raw = t - _max(z3, z3.RealVal(1), z3.ToReal(b1) / z3.ToReal(b2))
    return _max(z3, raw, z3.RealVal(0)) if floored else raw


# ---------------------------------------------------------------- the group


def check_target_range(which: str, broken: bool) -> Callable[[float], Outcome]:
    def run(backstop_s: float) -> Outcome:
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

        return z3_valid(claim, backstop_s, describe, pre)

    return run


def _as_fraction(z3: Any, term: Any) -> Fraction:
    v = z3.simplify(term)
    return Fraction(v.numerator_as_long(), v.denominator_as_long())


def check_encoding(
    b1_fn: Callable[[float, int, int, int], float],
    b2_fn: Callable[[float, int, int], float],
) -> Callable[[float], Outcome]:
    """The Z3 terms and the Python functions agree on every small concrete input."""

    def run(backstop_s: float) -> Outcome:
        z3 = _z3()
        for n in range(0, 5):
            targets = sorted({Fraction(i, 6) * n for i in range(7)})
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
