"""Obligations for the ARC policy (DESIGN.md §4 "ARC"), each with a negative control.

Three kinds:

* **Z3 over the reals** (`arc.z3.target_*`): the target adaptation of a ghost hit
  keeps `0 <= target <= N` for every real target in range and all list sizes
  (unbounded), and the Z3 encoding is checked to compute what the model's functions
  (`model.arc.target_after_b1_hit` / `_b2_hit`) compute, so the two cannot drift.
* **Z3 induction over keys** (`arc.z3.membership_inductive`, `evictable.proofs.z3.arc`): list
  membership of one key of an uninterpreted sort, event by event: T1 ∩ T2 = ∅,
  B1 ∩ B2 = ∅, residents and ghosts disjoint, T1 ∪ T2 = residents, for any number
  of keys. `arc.bounded.relation_matches_model` is its bridge to the real model.
* **Bounded, exhaustive** (`arc.bounded.*`): every reachable state of the executable
  model `model.arc.ModelArc` for small N (`proofs.explore.arc_search`), and every event out
  of it, satisfies: the memberships above, each ghost list ≤ N, 0 ≤ target ≤ N;
  eviction takes exactly n distinct resident, idle (ref 0), unprotected keys, fails
  only when fewer than n exist (the T1 fallback), and a failed eviction changes
  nothing; and every step is a step of the Z3 relation. One exploration per bound
  checks all of them (it is cached): the first `arc.bounded.*` record carries its
  time, the others only read the result.

Each negative control runs the same check against a deliberately broken ARC
(`evictable.proofs.controls.arc_models`, or a wrong formula or relation) and must produce a
counterexample. The lock-step conformance of `impl` ARC against this model is
`conformance.arc` (`evictable.proofs.lockstep.conformance`, with the ARC rules of
`evictable.proofs.lockstep.arc_rules`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Set
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from evictable.model.arc import ModelArc, target_after_b1_hit, target_after_b2_hit
from evictable.model.invariants import Logic
from evictable.model.types import Key
from evictable.proofs.controls import arc_models as controls
from evictable.proofs.explore.arc_search import (
    Edge,
    EdgeCheck,
    ExploreReport,
    StateCheck,
    World,
    explore,
)
from evictable.proofs.obligations import Obligation, Outcome, Status, proved, refuted, z3_valid
from evictable.proofs.z3.arc import RELATIONS, KeyView, Params, inductive_check, relation_edge_check

__all__ = ["BOUNDS", "obligations"]

BOUNDS: dict[str, tuple[tuple[int, int], ...]] = {
    "quick": ((1, 3), (2, 3)),
    "default": ((1, 3), (2, 4)),
    "thorough": ((1, 3), (2, 4), (3, 4)),
}
"""(N, number of keys) explored exhaustively, by level."""


# ---------------------------------------------------------------- bounded properties


def _show(keys: Set[Key]) -> str:
    return "{" + ", ".join(sorted(map(repr, keys))) + "}"


def _t1_t2_disjoint(w: World, n: int) -> str | None:
    both = set(w.policy.t1) & set(w.policy.t2)
    return f"T1 ∩ T2 = {_show(both)}" if both else None


def _b1_b2_disjoint(w: World, n: int) -> str | None:
    both = set(w.policy.b1) & set(w.policy.b2)
    return f"B1 ∩ B2 = {_show(both)}" if both else None


def _residents_ghosts_disjoint(w: World, n: int) -> str | None:
    both = (set(w.policy.t1) | set(w.policy.t2)) & (set(w.policy.b1) | set(w.policy.b2))
    return f"(T1 ∪ T2) ∩ (B1 ∪ B2) = {_show(both)}" if both else None


def _lists_without_repeats(w: World, n: int) -> str | None:
    for name in ("t1", "t2", "b1", "b2"):
        entries = getattr(w.policy, name)
        if len(set(entries)) != len(entries):
            return f"{name.upper()} repeats a key: {list(entries)}"
    return None


def _residents_tracked(w: World, n: int) -> str | None:
    listed = set(w.policy.t1) | set(w.policy.t2)
    resident = {k for k, _ in w.refs}
    return None if listed == resident else f"T1 ∪ T2 = {_show(listed)} != {_show(resident)}"


def _ghosts_bounded(w: World, n: int) -> str | None:
    b1, b2 = len(w.policy.b1), len(w.policy.b2)
    return None if b1 <= n and b2 <= n else f"|B1| = {b1}, |B2| = {b2} > N = {n}"


def _target_in_range(w: World, n: int) -> str | None:
    t = w.policy.target
    return None if 0 <= t <= n else f"target = {t} outside [0, {n}]"


def _evicts_only_idle_unprotected(e: Edge, n: int) -> str | None:
    if not e.is_evict or e.victims is None:
        return None
    resident = set(e.pre.policy.t1) | set(e.pre.policy.t2)
    if len(e.victims) != e.n or len(set(e.victims)) != e.n:
        return f"asked for {e.n} victims, got {list(e.victims)}"
    for v in e.victims:
        if v not in resident or e.pre.ref_of(v) != 0 or v in e.protected:
            return f"victim {v!r} is not a resident, idle, unprotected key (ref {e.pre.ref_of(v)})"
    return None


def _evict_fails_only_when_short(e: Edge, n: int) -> str | None:
    if not e.is_evict or e.victims is not None:
        return None
    idle = [k for k, r in e.pre.refs if r == 0 and k not in e.protected]
    return None if len(idle) < e.n else f"evict({e.n}) failed with idle unprotected {idle}"


def _failed_evict_changes_nothing(e: Edge, n: int) -> str | None:
    if not e.is_evict or e.victims is not None or e.post == e.pre:
        return None
    return f"failed evict changed the policy: {e.pre.policy} -> {e.post.policy}"


# ---------------------------------------------------------------- bounded obligations


@dataclass(frozen=True)
class _Prop:
    name: str
    statement: str
    state_check: StateCheck | None
    edge_check: EdgeCheck | None
    broken: type[ModelArc]
    broken_statement: str


PROPS: tuple[_Prop, ...] = (
    _Prop("t1_t2_disjoint", "T1 ∩ T2 = ∅ and no list repeats a key",
          lambda w, n: _t1_t2_disjoint(w, n) or _lists_without_repeats(w, n), None,
          controls.LeakyPromotion, "a touch that copies a T1 key to T2 is refuted"),
    _Prop("b1_b2_disjoint", "B1 ∩ B2 = ∅", _b1_b2_disjoint, None,
          controls.GhostInBoth, "an eviction that ghosts a T2 key in B1 too is refuted"),
    _Prop("residents_ghosts_disjoint", "(T1 ∪ T2) ∩ (B1 ∪ B2) = ∅, and T1 ∪ T2 = residents",
          lambda w, n: _residents_ghosts_disjoint(w, n) or _residents_tracked(w, n), None,
          controls.InsertKeepsGhost, "an insert that keeps the key's ghost is refuted"),
    _Prop("ghosts_bounded", "|B1| ≤ N and |B2| ≤ N in every state (trimmed after eviction)",
          _ghosts_bounded, None,
          controls.NeverTrims, "an eviction that never trims the ghost lists is refuted"),
    _Prop("target_in_range", "0 ≤ target ≤ N in every reachable state",
          _target_in_range, None,
          controls.UncappedTarget, "a B1 hit without the cap at N is refuted"),
    _Prop("evicts_only_idle", "evict(n) takes exactly n distinct resident ref-0 keys",
          None, _evicts_only_idle_unprotected,
          controls.EvictsPinned, "an eviction that ignores ref counts is refuted"),
    _Prop("evicts_only_unprotected", "evict(n, protected) never takes a protected key",
          None, _evicts_only_idle_unprotected,
          controls.IgnoresProtected, "an eviction that ignores the protected set is refuted"),
    _Prop("evict_fails_only_when_short",
          "evict(n) fails only when fewer than n idle unprotected keys exist (T1 fallback)",
          None, _evict_fails_only_when_short,
          controls.NoT1Fallback, "an eviction without the T1 fallback is refuted"),
    _Prop("relation_matches_model",
          "every model step satisfies its event's per-key relation in evictable.proofs.z3.arc "
          "(the bridge from the Z3 induction to the executable model)",
          None, relation_edge_check(RELATIONS),
          controls.TouchPromotesPending,
          "a touch that promotes a pending key steps outside the relation"),
    _Prop("failed_evict_changes_nothing", "a failed evict leaves lists and target unchanged",
          None, _failed_evict_changes_nothing,
          controls.PartialEvict, "an eviction that commits victim by victim is refuted"),
)


def _all_states(w: World, n: int) -> str | None:
    for p in PROPS:
        if p.state_check is not None and (why := p.state_check(w, n)) is not None:
            return f"{p.name}: {why}"
    return None


def _all_edges(e: Edge, n: int) -> str | None:
    for p in PROPS:
        if p.edge_check is not None and (why := p.edge_check(e, n)) is not None:
            return f"{p.name}: {why}"
    return None


@functools.cache
def _explore_model(capacity: int, num_keys: int) -> ExploreReport:
    """One exhaustive run of the real model checking every property (shared, cached)."""
    return explore(capacity, num_keys, _all_states, _all_edges)


def _bounded_check(prop: _Prop, bounds: tuple[tuple[int, int], ...]) -> Callable[[float], Outcome]:
    def run(timeout_s: float) -> Outcome:
        for capacity, num_keys in bounds:
            report = _explore_model(capacity, num_keys)
            if report.violation is not None:
                if report.violation.startswith(prop.name + ":"):
                    return refuted(f"N={capacity}: {report.counterexample()}")
                return Outcome(Status.ERROR, f"N={capacity}: exploration stopped early at "
                                             f"{report.counterexample()}")
        return proved()

    return run


def _bounded_negative(prop: _Prop, bounds: tuple[tuple[int, int], ...]) -> Callable[
        [float], Outcome]:
    def run(timeout_s: float) -> Outcome:
        for capacity, num_keys in bounds:
            report = explore(capacity, num_keys, prop.state_check, prop.edge_check, prop.broken)
            if report.violation is not None:
                return refuted(f"N={capacity}: {report.counterexample()}")
        return proved()

    return run


# ---------------------------------------------------------------- Z3: target range


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
            return (f"target={m.eval(t)}, N={m.eval(n)}, |B1|={m.eval(b1)}, |B2|={m.eval(b2)}"
                    f" -> target'={m.eval(new, model_completion=True)}")

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
                            checks.append(("b1", b1_hit_term(tz, zb1, zb2, zn),
                                           b1_fn(float(t), b1, b2, n)))
                        if b2 >= 1:
                            checks.append(("b2", b2_hit_term(tz, zb1, zb2),
                                           b2_fn(float(t), b1, b2)))
                        for which, term, py in checks:
                            exact = _as_fraction(z3, term)
                            if not math.isclose(float(exact), py, rel_tol=1e-12, abs_tol=1e-12):
                                return refuted(f"{which} hit at target={t}, N={n}, |B1|={b1}, "
                                               f"|B2|={b2}: z3 {exact} != model {py}")
        return proved()

    return run


def _floor_division_b1_hit(target: float, b1: int, b2: int, capacity: int) -> float:
    """A plausible slip: the ratio computed with integer division."""
    return min(target + max(1, b2 // b1), capacity)


def _leaky_touch(lg: Logic, k: KeyView, n: KeyView, p: Params) -> Any:
    """Broken touch relation: a ready T1 key joins T2 but stays in T1."""
    promoted = lg.and_(p.is_x, k.t1, lg.ge(k.ref, 0))
    return lg.and_(
        lg.implies(promoted, lg.and_(n.t1, n.t2, lg.iff(n.b1, k.b1), lg.iff(n.b2, k.b2),
                                     lg.iff(n.res, k.res), lg.eq(n.ref, k.ref))),
        lg.implies(lg.not_(promoted),
                   lg.and_(lg.iff(n.t1, k.t1), lg.iff(n.t2, k.t2), lg.iff(n.b1, k.b1),
                           lg.iff(n.b2, k.b2), lg.iff(n.res, k.res))),
    )


# ---------------------------------------------------------------- the group


def obligations(level: str) -> list[Obligation]:
    """Z3 target-range proofs and bounded exhaustive list properties, with controls."""
    bounds = BOUNDS[level]
    shown = ", ".join(f"N={c}/{k} keys" for c, k in bounds)
    obs = [
        Obligation(
            "arc.z3.target_b1_hit_in_range",
            "0 ≤ t ≤ N ∧ 1 ≤ |B1| ⇒ 0 ≤ min(t + max(1, |B2|/|B1|), N) ≤ N (reals, unbounded)",
            _range_check("b1", broken=False),
            _range_check("b1", broken=True),
            "a B1 hit without the cap at N is refuted",
            tags=("z3", "arc"),
        ),
        Obligation(
            "arc.z3.target_b2_hit_in_range",
            "0 ≤ t ≤ N ∧ 1 ≤ |B2| ⇒ 0 ≤ max(t − max(1, |B1|/|B2|), 0) ≤ N (reals, unbounded)",
            _range_check("b2", broken=False),
            _range_check("b2", broken=True),
            "a B2 hit without the floor at 0 is refuted",
            tags=("z3", "arc"),
        ),
        Obligation(
            "arc.z3.target_encoding_matches_model",
            "the Z3 target terms compute model.arc's target functions (N ≤ 4, all sizes)",
            _encoding_check(target_after_b1_hit, target_after_b2_hit),
            _encoding_check(_floor_division_b1_hit, target_after_b2_hit),
            "a B1 hit computed with integer division is told apart from the encoding",
            tags=("z3", "arc"),
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
        )
    )
    for prop in PROPS:
        obs.append(
            Obligation(
                f"arc.bounded.{prop.name}",
                f"{prop.statement} (model.arc, every reachable state and event, {shown})",
                _bounded_check(prop, bounds),
                _bounded_negative(prop, bounds),
                prop.broken_statement,
                tags=("bounded", "arc"),
            )
        )
    return obs
