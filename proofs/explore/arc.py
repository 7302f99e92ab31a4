"""Bounded, exhaustive exploration of the ARC model (docs/semantics.md, "ARC").

Every reachable state of the executable model `model.arc.ModelArc` for small N
(`explore.arc_search`, on the one search engine), and every event out of it, is
checked against `PROPERTIES`: T1 ∩ T2 = ∅, B1 ∩ B2 = ∅, residents and ghosts
disjoint, T1 ∪ T2 = residents, each ghost list ≤ N, 0 ≤ target ≤ N; eviction takes
exactly n distinct resident, idle (ref 0), unprotected keys, fails only when fewer
than n exist (the T1 fallback), and a failed eviction changes nothing.

`explore_properties(capacity, num_keys, properties, model)` runs one exploration that
checks all of the given properties and names the first one violated. The
obligations (`obligations.explore_arc`) pair each property with the broken model
that must violate it, and add the bridge to the Z3 relation (`refine.arc`).
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass

from evictable.model.arc import ModelArc
from evictable.model.types import Key
from evictable.proofs.explore.arc_search import (
    Edge,
    EdgeCheck,
    ExploreReport,
    StateCheck,
    World,
    explore,
)

__all__ = ["PROPERTIES", "Property", "explore_properties"]


@dataclass(frozen=True)
class Property:
    """One property of every reachable state (`state_check`) or every edge
    (`edge_check`): each returns why it fails, or None."""

    name: str
    statement: str
    state_check: StateCheck | None
    edge_check: EdgeCheck | None


# ---------------------------------------------------------------- the properties


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


PROPERTIES: tuple[Property, ...] = (
    Property(
        "t1_t2_disjoint",
        "T1 ∩ T2 = ∅ and no list repeats a key",
        lambda w, n: _t1_t2_disjoint(w, n) or _lists_without_repeats(w, n),
        None,
    ),
    Property(
        "b1_b2_disjoint",
        "B1 ∩ B2 = ∅",
        _b1_b2_disjoint,
        None,
    ),
    Property(
        "residents_ghosts_disjoint",
        "(T1 ∪ T2) ∩ (B1 ∪ B2) = ∅, and T1 ∪ T2 = residents",
        lambda w, n: _residents_ghosts_disjoint(w, n) or _residents_tracked(w, n),
        None,
    ),
    Property(
        "ghosts_bounded",
        "|B1| ≤ N and |B2| ≤ N in every state (trimmed after eviction)",
        _ghosts_bounded,
        None,
    ),
    Property(
        "target_in_range",
        "0 ≤ target ≤ N in every reachable state",
        _target_in_range,
        None,
    ),
    Property(
        "evicts_only_idle",
        "evict(n) takes exactly n distinct resident ref-0 keys",
        None,
        _evicts_only_idle_unprotected,
    ),
    Property(
        "evicts_only_unprotected",
        "evict(n, protected) never takes a protected key",
        None,
        _evicts_only_idle_unprotected,
    ),
    Property(
        "evict_fails_only_when_short",
        "evict(n) fails only when fewer than n idle unprotected keys exist (T1 fallback)",
        None,
        _evict_fails_only_when_short,
    ),
    Property(
        "failed_evict_changes_nothing",
        "a failed evict leaves lists and target unchanged",
        None,
        _failed_evict_changes_nothing,
    ),
)
"""Every property of the ARC model the exploration checks."""


def explore_properties(
    capacity: int,
    num_keys: int,
    properties: Sequence[Property] = PROPERTIES,
    model: type[ModelArc] = ModelArc,
) -> ExploreReport:
    """One exhaustive run of `model` checking every one of `properties`; a violation
    names the property first (`<name>: <why>`)."""

    def states(w: World, n: int) -> str | None:
        for p in properties:
            if p.state_check is not None and (why := p.state_check(w, n)) is not None:
                return f"{p.name}: {why}"
        return None

    def edges(e: Edge, n: int) -> str | None:
        for p in properties:
            if p.edge_check is not None and (why := p.edge_check(e, n)) is not None:
                return f"{p.name}: {why}"
        return None

    return explore(capacity, num_keys, states, edges, model)
