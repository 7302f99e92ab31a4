"""Bounded, exhaustive obligations for the ARC model (docs/semantics.md, "ARC").

`arc.bounded.*`: every reachable state of the executable model `model.arc.ModelArc`
for small N (`explore.arc_search`, on the one search engine), and every event out
of it, satisfies: T1 ∩ T2 = ∅, B1 ∩ B2 = ∅, residents and ghosts disjoint,
T1 ∪ T2 = residents, each ghost list ≤ N, 0 ≤ target ≤ N; eviction takes exactly n
distinct resident, idle (ref 0), unprotected keys, fails only when fewer than n
exist (the T1 fallback), and a failed eviction changes nothing; and every step
satisfies its event's per-key relation of `z3.arc` (`relation_matches_model`: the
bridge from the Z3 induction to the executable model). One exploration per bound
checks all of them (it is cached): the first `arc.bounded.*` record carries its
time, the others only read the result.

Each negative control explores a deliberately broken ARC model
(`controls.arc_models`) and must produce a counterexample. The Z3 obligations of
ARC are in `z3.arc`; the lock-step conformance of `impl` ARC against this model is
`conformance.arc` (`lockstep.conformance`, with the ARC rules of `lockstep.arc_rules`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Set
from dataclasses import dataclass
from typing import Any

from evictable.model.arc import ModelArc
from evictable.model.invariants import PY_LOGIC
from evictable.model.types import Key
from evictable.proofs.base.records import Kind, Obligation, Outcome, Status, proved, refuted
from evictable.proofs.controls import arc_models as controls
from evictable.proofs.explore.arc_search import (
    Edge,
    EdgeCheck,
    ExploreReport,
    StateCheck,
    World,
    explore,
)
from evictable.proofs.z3.arc import RELATIONS, KeyView, Params, Relation

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


# ---------------------------------------------------------------- the bridge to the Z3 relation


def _py_view(w: Any, key: Key) -> KeyView:
    pol = w.policy
    ref = w.ref_of(key)
    return KeyView(
        key in pol.t1,
        key in pol.t2,
        key in pol.b1,
        key in pol.b2,
        ref is not None,
        -9 if ref is None else ref,
    )


def _event_of(e: Edge) -> tuple[str, int | None]:
    if e.is_evict:
        return "evict", None
    name, _, key = e.label.partition(" ")
    return name, int(key) if key else None


def relation_edge_check(relations: dict[str, Relation]) -> EdgeCheck:
    """An explorer edge check: the model's step satisfies its event's relation, per key."""

    def check(e: Edge, capacity: int) -> str | None:
        event, x = _event_of(e)
        victims = set(e.victims or ())
        keys: set[Key] = {k for w in (e.pre, e.post) for k, _ in w.refs}
        for w in (e.pre, e.post):
            keys |= {*w.policy.t1, *w.policy.t2, *w.policy.b1, *w.policy.b2}
        for key in sorted(keys | ({x} if x is not None else set()), key=repr):
            k, n = _py_view(e.pre, key), _py_view(e.post, key)
            victim = key in victims
            p = Params(
                is_x=key == x,
                victim=victim,
                trim1=(k.b1 or (victim and k.t1)) and not n.b1,
                trim2=(k.b2 or (victim and not k.t1)) and not n.b2,
            )
            if not relations[event](PY_LOGIC, k, n, p):
                return f"step `{e.label}` is not a `{event}` step for key {key}: {k} -> {n}"
        return None

    return check


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
    _Prop(
        "t1_t2_disjoint",
        "T1 ∩ T2 = ∅ and no list repeats a key",
        lambda w, n: _t1_t2_disjoint(w, n) or _lists_without_repeats(w, n),
        None,
        controls.LeakyPromotion,
        "a touch that copies a T1 key to T2 is refuted",
    ),
    _Prop(
        "b1_b2_disjoint",
        "B1 ∩ B2 = ∅",
        _b1_b2_disjoint,
        None,
        controls.GhostInBoth,
        "an eviction that ghosts a T2 key in B1 too is refuted",
    ),
    _Prop(
        "residents_ghosts_disjoint",
        "(T1 ∪ T2) ∩ (B1 ∪ B2) = ∅, and T1 ∪ T2 = residents",
        lambda w, n: _residents_ghosts_disjoint(w, n) or _residents_tracked(w, n),
        None,
        controls.InsertKeepsGhost,
        "an insert that keeps the key's ghost is refuted",
    ),
    _Prop(
        "ghosts_bounded",
        "|B1| ≤ N and |B2| ≤ N in every state (trimmed after eviction)",
        _ghosts_bounded,
        None,
        controls.NeverTrims,
        "an eviction that never trims the ghost lists is refuted",
    ),
    _Prop(
        "target_in_range",
        "0 ≤ target ≤ N in every reachable state",
        _target_in_range,
        None,
        controls.UncappedTarget,
        "a B1 hit without the cap at N is refuted",
    ),
    _Prop(
        "evicts_only_idle",
        "evict(n) takes exactly n distinct resident ref-0 keys",
        None,
        _evicts_only_idle_unprotected,
        controls.EvictsPinned,
        "an eviction that ignores ref counts is refuted",
    ),
    _Prop(
        "evicts_only_unprotected",
        "evict(n, protected) never takes a protected key",
        None,
        _evicts_only_idle_unprotected,
        controls.IgnoresProtected,
        "an eviction that ignores the protected set is refuted",
    ),
    _Prop(
        "evict_fails_only_when_short",
        "evict(n) fails only when fewer than n idle unprotected keys exist (T1 fallback)",
        None,
        _evict_fails_only_when_short,
        controls.NoT1Fallback,
        "an eviction without the T1 fallback is refuted",
    ),
    _Prop(
        "relation_matches_model",
        "every model step satisfies its event's per-key relation in evictable.proofs.z3.arc "
        "(the bridge from the Z3 induction to the executable model)",
        None,
        relation_edge_check(RELATIONS),
        controls.TouchPromotesPending,
        "a touch that promotes a pending key steps outside the relation",
    ),
    _Prop(
        "failed_evict_changes_nothing",
        "a failed evict leaves lists and target unchanged",
        None,
        _failed_evict_changes_nothing,
        controls.PartialEvict,
        "an eviction that commits victim by victim is refuted",
    ),
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
                return Outcome(
                    Status.ERROR,
                    f"N={capacity}: exploration stopped early at {report.counterexample()}",
                )
        return proved(
            "; ".join(
                f"N={c}: {r.states} states, {r.edges} transitions, depth {r.depth}"
                for c, k in bounds
                for r in (_explore_model(c, k),)
            )
        )

    return run


def _bounded_negative(
    prop: _Prop, bounds: tuple[tuple[int, int], ...]
) -> Callable[[float], Outcome]:
    def run(timeout_s: float) -> Outcome:
        for capacity, num_keys in bounds:
            report = explore(capacity, num_keys, prop.state_check, prop.edge_check, prop.broken)
            if report.violation is not None:
                return refuted(f"N={capacity}: {report.counterexample()}")
        return proved()

    return run


# ---------------------------------------------------------------- the group


def obligations(level: str) -> list[Obligation]:
    """Z3 target-range proofs and bounded exhaustive list properties, with controls."""
    bounds = BOUNDS[level]
    shown = ", ".join(f"N={c}/{k} keys" for c, k in bounds)
    obs: list[Obligation] = []
    for prop in PROPS:
        obs.append(
            Obligation(
                f"arc.bounded.{prop.name}",
                f"{prop.statement} (model.arc, every reachable state and event, {shown})",
                _bounded_check(prop, bounds),
                _bounded_negative(prop, bounds),
                prop.broken_statement,
                tags=("bounded", "arc"),
                kind=Kind.EXPLORED,
                bounds=shown,
            )
        )
    return obs
