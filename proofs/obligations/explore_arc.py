"""`arc.bounded.*`: every property of the ARC exploration, each with the broken ARC
model that must violate it.

One exploration of the real model per bound checks every property at once (cached):
the first record carries its time, the others only read the result. The properties
are `explore.arc.PROPERTIES` plus `relation_matches_model`, the bridge from the Z3
induction over `z3.arc`'s per-key relations to the executable model
(`refine.arc.relation_edge_check`). Each control explores a deliberately broken ARC
model (`controls.arc_models`) checking only its own property, and must produce a
counterexample.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from evictable.model.arc import ModelArc
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, Outcome, Status, proved, refuted
from evictable.proofs.controls import arc_models as controls
from evictable.proofs.explore.arc import PROPERTIES, Property, explore_properties
from evictable.proofs.explore.arc_search import ExploreReport
from evictable.proofs.refine.arc import relation_edge_check
from evictable.proofs.z3.arc import RELATIONS

__all__ = ["BOUNDS", "PROPS", "obligations"]

BOUNDS: dict[str, tuple[tuple[int, int], ...]] = {
    "quick": ((1, 3), (2, 3)),
    "default": ((1, 3), (2, 4)),
    "thorough": ((1, 3), (2, 4), (3, 4)),
}
"""(N, number of keys) explored exhaustively, by level."""

RELATION = Property(
    "relation_matches_model",
    "every model step satisfies its event's per-key relation in evictable.proofs.z3.arc "
    "(the bridge from the Z3 induction to the executable model)",
    None,
    relation_edge_check(RELATIONS),
)

CONTROLS: dict[str, tuple[type[ModelArc], str]] = {
    "t1_t2_disjoint": (controls.LeakyPromotion, "a touch that copies a T1 key to T2 is refuted"),
    "b1_b2_disjoint": (
        controls.GhostInBoth,
        "an eviction that ghosts a T2 key in B1 too is refuted",
    ),
    "residents_ghosts_disjoint": (
        controls.InsertKeepsGhost,
        "an insert that keeps the key's ghost is refuted",
    ),
    "ghosts_bounded": (
        controls.NeverTrims,
        "an eviction that never trims the ghost lists is refuted",
    ),
    "target_in_range": (controls.UncappedTarget, "a B1 hit without the cap at N is refuted"),
    "evicts_only_idle": (controls.EvictsPinned, "an eviction that ignores ref counts is refuted"),
    "evicts_only_unprotected": (
        controls.IgnoresProtected,
        "an eviction that ignores the protected set is refuted",
    ),
    "evict_fails_only_when_short": (
        controls.NoT1Fallback,
        "an eviction without the T1 fallback is refuted",
    ),
    "relation_matches_model": (
        controls.TouchPromotesPending,
        "a touch that promotes a pending key steps outside the relation",
    ),
    "failed_evict_changes_nothing": (
        controls.PartialEvict,
        "an eviction that commits victim by victim is refuted",
    ),
}
"""Per property: the broken model that must violate it, and what its control says."""

PROPS: tuple[Property, ...] = (*PROPERTIES[:-1], RELATION, PROPERTIES[-1])
"""Every property the obligations check, in the order a violation is reported."""


@functools.cache
def _explore_model(capacity: int, num_keys: int) -> ExploreReport:
    """One exhaustive run of the real model checking every property (shared, cached)."""
    return explore_properties(capacity, num_keys, PROPS)


def _bounded_check(
    prop: Property, bounds: tuple[tuple[int, int], ...]
) -> Callable[[float], Outcome]:
    def run(backstop_s: float) -> Outcome:
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
    prop: Property, bounds: tuple[tuple[int, int], ...]
) -> Callable[[float], Outcome]:
    def run(backstop_s: float) -> Outcome:
        broken, _ = CONTROLS[prop.name]
        for capacity, num_keys in bounds:
            report = explore_properties(capacity, num_keys, (prop,), broken)
            if report.violation is not None:
                return refuted(f"N={capacity}: {report.counterexample()}")
        return proved()

    return run


def obligations(level: Level) -> list[Obligation]:
    """`arc.bounded.<property>` for every property, each with its broken model."""
    bounds = BOUNDS[level]
    shown = ", ".join(f"N={c}/{k} keys" for c, k in bounds)
    return [
        Obligation(
            f"arc.bounded.{prop.name}",
            f"{prop.statement} (model.arc, every reachable state and event, {shown})",
            _bounded_check(prop, bounds),
            _bounded_negative(prop, bounds),
            CONTROLS[prop.name][1],
            tags=("bounded", "arc"),
            kind=Kind.EXPLORED,
            bounds=shown,
            batch="arc.bounded",  # one cached exploration per bound serves every claim
        )
        for prop in PROPS
    ]
