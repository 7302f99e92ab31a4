"""`refine.manager.<policy>`: every explored call of the model and of the implementation
is a step of the manager relation the Z3 records prove (`proofs.refine.manager_walk`);
`refine.conformance.<policy>`: so is every call of a lock-step conformance run
(`proofs.refine.conformance`).

The explored record's control is a set of broken variants, every one of which must be
caught: the relation drifted from the code (its `prepare_store` ignores the free
stack), a relation that leaves a field free (it admits two outcomes of one call), a
model that forgets `mark_evictable`, and implementations broken in the manager
(counters, slot reuse, a failed store's slot). The relation is composed with the
policy's own hook relations (`z3.policy_lru`, `z3.policy_arc`), so each control also
holds that policy's relation drifted (victims most recent first) and policy bugs only
the policy's bound state shows: for the LRU its order bugs (touch order, victim
order, a touch that lists pinned keys, a copy that loses recency), sought in a world
where one call evicts two victims (`ORDER_BOUNDS`); for ARC a pinned record left
idle, a pending key promoted, T2's order, the target, the T1 fallback.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial

import z3

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.levels import Level
from evictable.proofs.base.protocol import Factory
from evictable.proofs.base.records import Kind, Obligation, Outcome, Status, proved, refuted
from evictable.proofs.controls.catalogue import by_name
from evictable.proofs.controls.encodings import forgetting
from evictable.proofs.controls.policy_relations import LRU_CONTROLS
from evictable.proofs.controls.tables import MissesMarkEvictableOnLoadEnd
from evictable.proofs.explore.coverage import RecordingModel
from evictable.proofs.lockstep.conformance import run_conformance
from evictable.proofs.refine.conformance import RefinementObserver
from evictable.proofs.refine.manager import ManagerOracle, OracleCache
from evictable.proofs.refine.manager_shape import FUNCTIONAL_BATCH
from evictable.proofs.refine.manager_walk import check_refinement
from evictable.proofs.z3.counter_rules import CallCounts, counters_after
from evictable.proofs.z3.manager_ops import MANAGER, Variant
from evictable.proofs.z3.policy_arc import ARC_HOOKS, ArcHooks

__all__ = ["BOUNDS", "obligations"]

WALKED_ELSEWHERE: frozenset[tuple[str, Level]] = frozenset({("arc", "quick")})
"""(policy, level) pairs without a `refine.manager.<policy>` record: at quick, ARC's
world is `explore.arc`'s (which holds the implementation equal to the model on every
edge of it), and the relation judges both sides' calls in `refine.conformance.arc`
and `arc.orders` -- the walk added nothing at that level."""

BOUNDS: dict[str, dict[Level, Bounds]] = {
    "lru": {
        "quick": Bounds(slots=2, keys=3, max_ref=1, batch=2),
        "default": Bounds(slots=3, keys=4, max_ref=1, batch=2),
        "thorough": Bounds(slots=3, keys=5, max_ref=2, batch=3),
    },
    "arc": {
        "quick": Bounds(slots=2, keys=3, max_ref=1, batch=1, policy="arc"),
        "default": Bounds(slots=2, keys=3, max_ref=1, batch=1, policy="arc"),
        "thorough": Bounds(slots=3, keys=4, max_ref=2, batch=2, policy="arc"),
    },
}
"""The worlds walked, per policy and level. The LRU's quick and default worlds hold
loads one at a time (ref <= 1): with the list's order judged on every call, a second
concurrent load doubled the default walk's solver checks (17,096 against 9,405) and
made it verify's longest record; concurrent loads are walked with the comparison by
`explore.lru` at every level and with the relation at thorough. ARC's world is held
at ref <= 1 at the default level for the same reason: with ARC's own state bound
(its lists' order, ghosts and target are part of every call's values), ref 2 took
19,597 solver checks against 10,739 (`explore.arc` walks it with the comparison)."""


class _MissesMarkEvictable(RecordingModel, MissesMarkEvictableOnLoadEnd):
    """The recording model over the broken one (`controls.tables`)."""


def _pending_left_free(
    op: str, ne: z3.ArithRef, np_: z3.ArithRef, n: CallCounts
) -> tuple[z3.ArithRef, z3.ArithRef]:
    """A counter rule that leaves `num_pending` free after every call."""
    return counters_after(op, ne, np_, n)[0], z3.FreshInt("free_num_pending")


DRIFTED = Variant(ignores_free_stack=True)
"""The relation drifted from the code: `prepare_store` evicts although freed slots exist."""

FORGETFUL = Variant(counters=forgetting("complete_store.success", "acted"))
"""The relation drifted from the code another way: a committed store forgets
`num_pending -= #acted` (met by the first commit of any run)."""

LOOSE = Variant(counters=_pending_left_free)
"""A relation that admits two outcomes of one call (any `num_pending`)."""

_CACHES: dict[str, OracleCache] = {
    "manager": OracleCache(),
    "drifted": OracleCache(),
    "forgetful": OracleCache(),
}
"""Shapes shared by this process's runs of one relation (the obligations of this
module run in one process: `batch`). The loose relation gets none: each of its runs
must meet its looseness itself."""

_IMPL_BUGS: dict[str, tuple[str, ...]] = {
    "lru": ("counter_drift_on_eviction", "fifo_slot_reuse", "failed_store_keeps_slot"),
    "arc": (
        "pinned_stays_idle",
        "counter_drift_on_eviction",
        "touch_promotes_pending",
        "evictable_moves_to_mru",
        "b2_hit_grows_target",
        "no_t1_fallback",
    ),
}
"""Seeded implementation bugs (`controls.catalogue`) each control run must catch; ARC's
last four are policy bugs only ARC's own state, bound, shows to the relation (T1/T2
membership, T2's order, the target, the victims' rule)."""

ORDER_BOUNDS = Bounds(slots=2, keys=4, max_ref=1, batch=2)
"""Where the LRU's order bugs are sought: two free keys besides two resident ones,
so that one call evicts two victims (victim order) and a touch moves two."""

_ORDER_BUGS: tuple[str, ...] = (
    "forward_touch",
    "victims_most_recent_first",
    "touch_moves_pinned",
    "copy_loses_recency",
)
"""Seeded LRU policy bugs the composed relation catches (`policy.lru.*`'s hooks)."""


def relation_bounds(bounds: Bounds) -> Bounds:
    """Where a drifted relation is sought: the claim's world with calls of one key (a
    freed slot beside an evictable key, two evictable keys and one victim show each
    drift; a call of two keys would add the shapes, and their functionality proofs,
    of every operation at batch 2 to each control's own relation)."""
    return replace(bounds, batch=1)


_LRU_BROKEN = dict(LRU_CONTROLS["prepare_store"])[
    "victims chosen most recent first (VictimsMostRecentFirst's order)"
]
"""The LRU relation drifted: victims most recent first (`controls.policy_relations`)."""

ARC_BROKEN = replace(ARC_HOOKS, least_recent=False)
"""ARC's relation drifted: each round of the victims' choice takes the most recent
eligible entry of its list."""


def _bugs(policy: str, arc: ArcHooks | None) -> tuple[str, ...]:
    """The seeded implementation bugs of the control (ARC's policy bugs need its state
    bound)."""
    return _IMPL_BUGS[policy] if policy == "lru" or arc is not None else _IMPL_BUGS[policy][:2]


def _controls(
    bounds: Bounds, policy: str, arc: ArcHooks | None
) -> dict[str, Callable[[], Outcome]]:
    mine = _CACHES["manager"]
    drift = relation_bounds(bounds)
    out: dict[str, Callable[[], Outcome]] = {
        "relation ignores the free stack": lambda: check_refinement(
            drift, variant=DRIFTED, cache=_CACHES["drifted"], arc=arc
        ),
        "relation leaves num_pending free": lambda: check_refinement(drift, variant=LOOSE, arc=arc),
        "model forgets mark_evictable": lambda: check_refinement(
            bounds, model=_MissesMarkEvictable, cache=mine, arc=arc
        ),
    }
    for name in _bugs(policy, arc):
        factory = by_name(name).factory
        out[f"implementation {name}"] = partial(
            check_refinement, bounds, factory=factory, cache=mine, arc=arc
        )
    if policy == "arc" and arc is not None:
        out["ARC relation chooses each list's most recent victim"] = partial(
            check_refinement, drift, arc=ARC_BROKEN
        )
    if policy == "lru":
        out["LRU relation chooses victims most recent first"] = partial(
            check_refinement, drift, lru=_LRU_BROKEN
        )
        for name in _ORDER_BUGS:
            factory = by_name(name).factory
            out[f"implementation {name}"] = partial(
                check_refinement, ORDER_BOUNDS, factory=factory, cache=_CACHES["manager"]
            )
    return out


def _tested(run: Callable[[], Outcome]) -> Callable[[float], Outcome]:
    return lambda _backstop_s: run()


BINDS_ARC: dict[Level, bool] = {"quick": False, "default": True, "thorough": True}
"""Whether `refine.manager.arc` and `refine.conformance.arc` compose ARC's hook
relations with the manager's. At quick they judge by the manager relation alone:
bound, ARC's state (its lists' order, ghosts and target) makes most calls distinct
(the explored walk: 10,739 solver checks against 657, 12 s against 2.4 s of CPU).
`arc.orders` binds ARC's state at every level."""


def _arc(policy: str, level: Level) -> ArcHooks | None:
    """ARC's hook relations to compose on an ARC's calls at `level` (None: none)."""
    del policy  # an LRU's walk meets no ARC snapshot
    return ARC_HOOKS if BINDS_ARC[level] else None


def _claim(bounds: Bounds, arc: ArcHooks | None) -> Callable[[float], Outcome]:
    return lambda _backstop_s: check_refinement(bounds, cache=_CACHES["manager"], arc=arc)


CONFORMANCE: dict[Level, tuple[int, int, int | None, int]] = {
    "quick": (10, 20, 0, 2),
    "default": (20, 30, 0, FUNCTIONAL_BATCH),
    "thorough": (300, 60, None, FUNCTIONAL_BATCH),
}
"""Examples x steps, seed and the longest call the relation judges (longer ones are
left to the comparison and counted) of `refine.conformance.<policy>`: the relation
judges every call, which costs more per step than the comparison of `conformance.*`,
and each batch length up to the bound costs a functionality proof per operation."""


CONFORMANCE_BUGS: tuple[str, ...] = (
    "touch_promotes_pending",
    "evictable_moves_to_mru",
    "ghosts_never_trimmed",
    "b2_hit_grows_target",
)
"""Seeded ARC bugs `refine.conformance.arc`'s control must see refuted *by the relation*
where ARC's state is bound (T1/T2 membership, T2's order, the ghost lists' length, the
target: one that grows past the relation's, which only the observed target's lower
bound tells apart)."""


def _conformance(
    policy: str,
    level: Level,
    variant: Variant = MANAGER,
    cache: OracleCache | None = None,
    factory: Factory = CPUOffloadingManager,
) -> Callable[[], Outcome]:
    examples, steps, seed, max_batch = CONFORMANCE[level]
    arc = _arc(policy, level)

    def run() -> Outcome:
        oracle = ManagerOracle(variant=variant, cache=cache, arc=arc)
        observer = RefinementObserver(oracle, max_batch)
        record = run_conformance(
            factory,
            policy,
            examples,
            steps,
            seed,
            inject_faults=True,
            stop_at_first=True,
            require_copies=True,
            observer=observer,
        )
        out = record.outcome()
        if out.status is Status.PROVED:
            return proved(f"{out.detail}; {observer.figures()}")
        return out

    return run


def _by_relation(run: Callable[[], Outcome]) -> Callable[[], Outcome]:
    """`run`'s outcome, a counterexample only when the relation found it (a failure
    the lock-step comparison found first does not count)."""

    def judged() -> Outcome:
        out = run()
        if out.status is Status.COUNTEREXAMPLE and "left the proved relation" not in (
            out.counterexample
        ):
            return proved(f"found, but not by the relation: {out.counterexample.splitlines()[0]}")
        return out

    return judged


def _conformance_controls(policy: str, level: Level) -> dict[str, Callable[[], Outcome]]:
    out = {
        "relation forgets a commit's num_pending update": _conformance(
            policy, level, FORGETFUL, _CACHES["forgetful"]
        ),
        "relation leaves num_pending free": _conformance(policy, level, LOOSE),
    }
    if policy == "arc" and BINDS_ARC[level]:
        for name in CONFORMANCE_BUGS:
            run = _conformance(policy, level, MANAGER, _CACHES["manager"], by_name(name).factory)
            out[f"implementation {name}"] = _by_relation(run)
    return out


def _every(controls: dict[str, Callable[[], Outcome]]) -> Callable[[float], Outcome]:
    """Refuted only when every broken variant is caught; the text says how each was."""

    def run(_backstop_s: float) -> Outcome:
        caught = []
        for what, control in controls.items():
            out = control()
            if out.status is not Status.COUNTEREXAMPLE:
                return proved(f"{what} was not caught ({out.status.value})")
            caught.append(f"{what}: {out.counterexample.splitlines()[0]}")
        return refuted("\n".join(caught))

    return run


def _policy_part(policy: str, arc: ArcHooks | None) -> str:
    """What of the policy's own state the walk binds, in words."""
    if policy == "lru":
        return "the policy's own state: the LRU's order"
    if arc is not None:
        return "the policy's own state: ARC's four lists in order, its idle view and target"
    return (
        "ARC's own state is not bound at this level: arc.orders and refine.conformance.arc bind it"
    )


def _negative_statement(policy: str, arc: ArcHooks | None) -> str:
    out = (
        "every broken variant is caught: a relation that ignores the free stack, one that "
        "leaves num_pending free, a model that forgets mark_evictable, implementations "
        + ", ".join(_bugs(policy, arc))
    )
    if policy == "lru":
        return (
            f"{out}; and, composed with the LRU's hook relations, an LRU relation whose "
            f"victims are the most recent, implementations {', '.join(_ORDER_BUGS)}"
        )
    if arc is not None:
        return (
            f"{out}; and, composed with ARC's hook relations, an ARC relation whose victims "
            "are each list's most recent"
        )
    return out


def obligations(level: Level) -> list[Obligation]:
    """`refine.manager.<policy>` and `refine.conformance.<policy>` at `level`."""
    examples, steps, seed, max_batch = CONFORMANCE[level]
    out = []
    for policy, by_level in BOUNDS.items():
        bounds = by_level[level]
        arc = _arc(policy, level)
        if (policy, level) not in WALKED_ELSEWHERE:
            out.append(
                Obligation(
                    f"refine.manager.{policy}",
                    "every call on every reachable state, of the model and of the "
                    "implementation, is the one step the proved manager relation admits "
                    "(key states, refs, evictable view, slots, free stack, high-water mark, "
                    f"counters, refusal and reply; {_policy_part(policy, arc)}), each key a "
                    "step of T, the counters as counters_after says",
                    _claim(bounds, arc),
                    _every(_controls(bounds, policy, arc)),
                    _negative_statement(policy, arc),
                    tags=("refine", "manager"),
                    batch=f"refine.{policy}",
                    kind=Kind.EXPLORED,
                    bounds=bounds.describe(),
                    negative_bounds=(
                        f"{bounds.describe()}; the drifted relations at batch=1"
                        + (
                            f"; the LRU order controls at {ORDER_BOUNDS.describe()}"
                            if policy == "lru"
                            else ""
                        )
                    ),
                )
            )
        out.append(
            Obligation(
                f"refine.conformance.{policy}",
                "every call of the lock-step conformance run (ordinary, refused, malformed, "
                "with a policy hook failing), of the model and of the implementation, is "
                f"the one step the proved manager relation admits ({_policy_part(policy, arc)}), "
                "and each side's next call starts from the state its last call left "
                "(copies included)",
                _tested(_conformance(policy, level, MANAGER, _CACHES["manager"])),
                _every(_conformance_controls(policy, level)),
                "a relation that forgets a commit's num_pending update, and one that leaves "
                "num_pending free, are each refuted on a step of the run"
                + (
                    f"; so is each of {', '.join(CONFORMANCE_BUGS)}, by the relation"
                    if policy == "arc" and BINDS_ARC[level]
                    else ""
                ),
                tags=("refine", "conformance"),
                batch=f"refine.{policy}",
                kind=Kind.TESTED,
                bounds=f"{examples} examples x {steps} steps, seed {seed}, "
                f"batches <= {max_batch} keys",
            )
        )
    return out
