"""`explore.tiering.*` and `liveness.tiering.*`: the tiering orchestrator explored.

`explore.tiering.<family>`: every world of the family (`explore.tiering_bounds`) explored
exhaustively under the `spec` profile, every safety invariant of
`model.tiering_invariants` checked in every state reached (and the reset postcondition
after every reset), no call raising. Its negative control: each broken orchestrator of
`proofs.controls.tiering` named for the family, and vLLM 0.33's profile, must each be
caught by the same search (a shortest trace).

`liveness.tiering.<family>`: the fair-cycle search over the same graph finds no lasso
(no request whose scan says "try later" for ever, no staged promotion never submitted,
no job never processed, no request never finalised, no peer never answered, under fair
tier completions and no new input). Its control: `LazyFlush` (or `StagedNotPending`
with an idle engine) and vLLM 0.33's profile must each yield a lasso (vLLM's is the
livelock of a prefix longer than the primary, or a promotion staged by a poll round
never submitted).

`refine.tiering`: our orchestrator (`evictable.impl.tiering.TieringManager`, over the
harness tiers of `proofs.adapters.ours_tiering`) in lock-step with the `spec` model on
every edge of the `quick` worlds of the families `REFINE_FAMILIES` names per level (the
lock-step replays each state's path on ours: the `default` worlds would cost two
minutes): the same answers, the same exception types and the same
snapshots after every call and event. Since the graphs are equal, the model's safety
and liveness verdicts are ours. Its control: `OursForgetsHits` (ours with the hold's
HITs unprotected) must diverge.
"""

from __future__ import annotations

from collections.abc import Callable

from evictable.impl.tiering import TieringManager
from evictable.model.tiering import ModelTiering
from evictable.model.tiering_types import Profile
from evictable.proofs.adapters.ours_tiering import partner_of
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import (
    Kind,
    Obligation,
    Outcome,
    Status,
    every_refuted,
    proved,
    refuted,
)
from evictable.proofs.controls.ours_tiering import OURS_BREAKERS
from evictable.proofs.controls.tiering import (
    LIVENESS_BREAKERS,
    SAFETY_BREAKERS,
    VLLM_PROFILE,
)
from evictable.proofs.explore.engine import Result
from evictable.proofs.explore.liveness import find_lasso
from evictable.proofs.explore.tiering import explore, livelock, trace_lines
from evictable.proofs.explore.tiering_bounds import FAMILIES, WORLDS
from evictable.proofs.explore.tiering_moves import Edge, edge_props
from evictable.proofs.explore.tiering_world import TieringBounds

__all__ = ["CONTROLS", "LIVENESS_CONTROLS", "REFINE_FAMILIES", "obligations"]

VLLM = "vllm-0.33"

CONTROLS: dict[str, tuple[str, ...]] = {
    "scan": ("forgets_hits", "finalises_early", VLLM),
    "peer": ("forgets_hits", "staged_not_pending", "reset_leaves_job", VLLM),
    "faults": ("raise_keeps_pins", "reset_leaves_job", VLLM),
    "stale": ("anyone_completes", VLLM),
    "async": ("forgets_hits", VLLM),
}
"""Per family, the broken orchestrators its record must catch."""

LIVENESS_CONTROLS: dict[str, tuple[str, ...]] = {
    "scan": ("lazy_flush", VLLM),
    "peer": ("staged_not_pending", VLLM),
}
"""Per family with a liveness record, the orchestrators whose lasso it must find."""

REFINE_FAMILIES: dict[str, tuple[str, ...]] = {
    "quick": ("scan", "peer", "faults", "async"),
    "default": ("scan", "peer", "faults", "stale", "async"),
    "thorough": ("scan", "peer", "faults", "stale", "async"),
}
"""Per level, the families whose `quick` worlds `refine.tiering` replays ours on
(`stale` costs three times the rest together)."""

_GRAPHS: dict[TieringBounds, Result[Edge]] = {}
"""The `spec` graphs with their edges, shared by a family's two records (one batch)."""


def _variant(name: str) -> tuple[Profile, type[ModelTiering]]:
    if name == VLLM:
        return VLLM_PROFILE, ModelTiering
    return Profile.SPEC, {**SAFETY_BREAKERS, **LIVENESS_BREAKERS}[name]


def _figures(run: Result[Edge]) -> str:
    return f"{run.states} states, {run.transitions} transitions, depth {run.depth}"


def _spec_graph(bounds: TieringBounds) -> Result[Edge]:
    got = _GRAPHS.get(bounds)
    if got is None:
        got = explore(bounds, Profile.SPEC, record_edges=True)
        if len(_GRAPHS) < 16:
            _GRAPHS[bounds] = got
    return got


def _safety(worlds: tuple[TieringBounds, ...]) -> Callable[[float], Outcome]:
    """Every world explored under `spec` without a finding."""

    def check(_backstop_s: float) -> Outcome:
        figures = []
        for bounds in worlds:
            run = _spec_graph(bounds)
            if run.found is not None:
                lines = trace_lines(bounds, Profile.SPEC, run.path)
                return refuted("\n".join([bounds.describe(), run.found.reason, *lines]))
            if not run.complete:
                return Outcome(Status.UNKNOWN, f"state bound reached: {_figures(run)}")
            figures.append(_figures(run))
        return proved("; ".join(figures))

    return check


def _caught(worlds: tuple[TieringBounds, ...], name: str) -> Callable[[float], Outcome]:
    """A counterexample when the variant `name` fails the search in some world."""

    def check(_backstop_s: float) -> Outcome:
        profile, model = _variant(name)
        for bounds in worlds:
            run = explore(bounds, profile, model)
            if run.found is not None:
                return refuted(f"{run.found.reason} ({len(run.path)} calls)")
        return proved(f"{name} was not caught")

    return check


def _live(worlds: tuple[TieringBounds, ...]) -> Callable[[float], Outcome]:
    """No lasso in any world's `spec` graph."""

    def check(_backstop_s: float) -> Outcome:
        figures = []
        for bounds in worlds:
            run = _spec_graph(bounds)
            if run.found is not None or not run.complete:
                return Outcome(Status.UNKNOWN, f"no complete graph: {_figures(run)}")
            lasso = find_lasso(run, edge_props)
            if lasso is not None:
                text = trace_lines(bounds, Profile.SPEC, lasso.stem, cycle=lasso.cycle)
                return refuted("\n".join([f"never goes away: {lasso.token}", *text]))
            figures.append(_figures(run))
        return proved("; ".join(figures) + "; no fair cycle keeps any pending token")

    return check


def _lasso(worlds: tuple[TieringBounds, ...], name: str) -> Callable[[float], Outcome]:
    """A counterexample (the lasso) when the variant `name` has one in some world."""

    def check(_backstop_s: float) -> Outcome:
        profile, model = _variant(name)
        for bounds in worlds:
            found = livelock(bounds, profile, model)
            if found.lasso is not None:
                lasso = found.lasso
                return refuted(
                    f"{lasso.token} never goes away: stem of {len(lasso.stem)} calls, a fair "
                    f"cycle of {len(lasso.cycle)} ({_figures(found.result)})"
                )
        return proved(f"{name} has no lasso")

    return check


def _ours(worlds: tuple[TieringBounds, ...], name: str | None) -> Callable[[float], Outcome]:
    """Ours (or the seeded bug `name`) in lock-step with the spec model on every edge."""
    cls = TieringManager if name is None else OURS_BREAKERS[name]

    def check(_backstop_s: float) -> Outcome:
        figures = []
        for bounds in worlds:
            run = explore(bounds, Profile.SPEC, partner=partner_of(cls))
            if run.found is not None:
                lines = trace_lines(bounds, Profile.SPEC, run.path)
                return refuted("\n".join([bounds.describe(), run.found.reason, *lines]))
            if not run.complete:
                return Outcome(Status.UNKNOWN, f"state bound reached: {_figures(run)}")
            figures.append(_figures(run))
        return proved("; ".join(figures) + "; every edge agreed")

    return check


def _every(
    controls: list[tuple[str, Callable[[float], Outcome]]],
) -> Callable[[float], Outcome]:
    """One control made of several: refuted only when each of them is."""

    def check(backstop_s: float) -> Outcome:
        return every_refuted(controls, backstop_s)

    return check


def _describe(worlds: tuple[TieringBounds, ...]) -> str:
    return " | ".join(b.describe() for b in worlds)


def obligations(level: Level) -> list[Obligation]:
    """The tiering records at `level` (see the module doc)."""
    out: list[Obligation] = []
    for family in FAMILIES:
        worlds = WORLDS[level][family]
        controls = CONTROLS[family]
        out.append(
            Obligation(
                name=f"explore.tiering.{family}",
                statement=(
                    "every reachable state of the spec orchestrator satisfies every tiering "
                    "invariant (owners, pins, holds, finalisation, pending work) and the "
                    "reset postcondition, and no call raises"
                ),
                check=_safety(worlds),
                negative=_every([(n, _caught(worlds, n)) for n in controls]),
                negative_statement=f"each of {', '.join(controls)} is caught",
                tags=("explore", "tiering"),
                kind=Kind.EXPLORED,
                bounds=_describe(worlds),
                batch=f"tiering.{family}",
            )
        )
        if family not in LIVENESS_CONTROLS:
            continue
        lively = LIVENESS_CONTROLS[family]
        out.append(
            Obligation(
                name=f"liveness.tiering.{family}",
                statement=(
                    "under fair tier completions and no new input, every scan eventually "
                    "answers a number, every staged promotion is submitted, every job "
                    "processed, every request finalised and every peer answered (no lasso)"
                ),
                check=_live(worlds),
                negative=_every([(n, _lasso(worlds, n)) for n in lively]),
                negative_statement=f"each of {', '.join(lively)} has a lasso",
                tags=("explore", "tiering", "liveness"),
                kind=Kind.EXPLORED,
                bounds=_describe(worlds),
                batch=f"tiering.{family}",
            )
        )
    worlds = tuple(b for fam in REFINE_FAMILIES[level] for b in WORLDS["quick"][fam])
    out.append(
        Obligation(
            name="refine.tiering",
            statement=(
                "our orchestrator (impl.tiering over harness tiers) answers, raises and "
                "moves as the spec model on every edge of the explored worlds"
            ),
            check=_ours(worlds, None),
            negative=_ours(worlds, "ours_forgets_hits"),
            negative_statement="ours_forgets_hits (the hold's HITs unprotected) diverges",
            tags=("explore", "tiering", "refine"),
            kind=Kind.EXPLORED,
            bounds=_describe(worlds),
            batch="tiering.ours",
        )
    )
    return out
