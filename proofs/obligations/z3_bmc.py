"""`bmc.manager.*`: symbolic bounded model checking of the manager relation, each
world with the seeded broken relations it must find.

Two worlds, each the smallest that shows the bug class its controls stand for:

* `bmc.manager.eviction` -- one slot and three keys: a full cache, a key to store
  and a victim to choose, with a protected key beside it (counter drift on eviction,
  an eviction that ignores the protected keys, a missed hook on a load's end, ...);
* `bmc.manager.batches` -- two slots and two keys: calls in which two keys act at
  once (a store commit, a load's begin or end that goes wrong for the second key of a
  call only), which one slot never shows.

There is none at the quick level: there, `manager.initiation` and the unbounded
`manager.consecution.*` contain every claim a search from a fresh manager makes
(every reachable state satisfies an inductive invariant that holds initially).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from evictable.model.lifecycle import CpuEvent, CpuState, Hook, Machine
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import (
    Kind,
    Obligation,
    Outcome,
    Status,
    refuted,
)
from evictable.proofs.controls.encodings import forgetting, hook_dropped, positional_hook
from evictable.proofs.z3.bmc import Bmc, bmc
from evictable.proofs.z3.manager_ops import (
    Variant,
)
from evictable.proofs.z3.manager_state import (
    REFERENCE,
)

__all__ = ["SEEDED_VARIANTS", "WORLDS", "BmcWorld", "obligations"]


def _seeded(machine: Machine) -> dict[str, Variant]:
    e, s = CpuEvent, CpuState
    return {
        "missed_mark_evictable_on_load_end": hook_dropped(machine, e.LOAD_END, s.LOADING, s.READY),
        "non_atomic_prepare_load": Variant(atomic=False),
        "counter_drift_on_eviction": Variant(counters=forgetting("prepare_store", "victims")),
        "failed_store_keeps_slot": Variant(keeps_slot_on=frozenset({"complete_store.failure"})),
        "touch_moves_pinned": Variant(touch_lists=True),
        "eviction_ignores_protected": Variant(protects_input=False),
    }


SEEDED_VARIANTS: Callable[[Machine], dict[str, Variant]] = _seeded
"""The seeded bugs of `proofs.controls` (by their names there) as relation variants."""


def _batch_bugs(machine: Machine) -> dict[str, Variant]:
    e, s = CpuEvent, CpuState
    return {
        "second_key_of_a_commit_stays_unlisted": positional_hook(
            machine, e.STORE_COMMIT, s.PENDING, s.READY, Hook.NONE
        ),
        "second_key_of_a_first_load_stays_listed": positional_hook(
            machine, e.LOAD_BEGIN, s.READY, s.LOADING, Hook.NONE
        ),
        "second_key_of_a_last_load_end_stays_unlisted": positional_hook(
            machine, e.LOAD_END, s.LOADING, s.READY, Hook.NONE
        ),
    }


@dataclass(frozen=True)
class BmcWorld:
    """One search: its name, its bounds and the broken relations it must find."""

    name: str
    bounds: Bmc
    bugs: Callable[[Machine], dict[str, Variant]]
    why: str


EVICTION = "a full cache, a key to store, a victim and a protected key"
BATCHES = "calls in which two keys act"

WORLDS: dict[Level, tuple[BmcWorld, ...]] = {
    "quick": (),
    "default": (
        BmcWorld("eviction", Bmc(slots=1, keys=3, batch=2, depth=4), _seeded, EVICTION),
        BmcWorld("batches", Bmc(slots=2, keys=2, batch=2, depth=4), _batch_bugs, BATCHES),
    ),
    "thorough": (
        BmcWorld("eviction", Bmc(slots=2, keys=3, batch=2, depth=6), _seeded, EVICTION),
        BmcWorld("batches", Bmc(slots=2, keys=3, batch=3, depth=5), _batch_bugs, BATCHES),
    ),
}
"""Per level, the searches. The seeded bugs are sought at the claim's own bounds (a
control at other bounds says nothing of what the claim's search can see): depth >= 4
(the longest, `missed_mark_evictable_on_load_end` or a second key's load end: store,
commit, load, end of load), and for the eviction world three keys (fewer hide
`counter_drift_on_eviction` and `eviction_ignores_protected`)."""


def _claim(bounds: Bmc, backstop_s: float) -> Outcome:
    return bmc(bounds, backstop_s)


def _check_seeded(world: BmcWorld, backstop_s: float) -> Outcome:
    found = []
    for name, variant in world.bugs(REFERENCE).items():  # the reference table, always
        out = bmc(world.bounds, backstop_s, REFERENCE, variant)
        if out.status is not Status.COUNTEREXAMPLE:
            return Outcome(
                Status.PROVED if out.status is Status.PROVED else out.status,
                f"seeded bug {name} was not found: {out.counterexample or out.detail}",
            )
        found.append(f"{name}: {out.counterexample}")
    return refuted("\n".join(found))


def obligations(level: Level) -> list[Obligation]:
    """`bmc.manager.<world>`: every call sequence up to the world's depth keeps every
    claim, each world with the broken relations it must find."""
    out = []
    for world in WORLDS[level]:
        bounds = world.bounds
        seeded = ", ".join(world.bugs(REFERENCE))
        out.append(
            Obligation(
                f"bmc.manager.{world.name}",
                "every sequence of calls from a fresh manager keeps the manager-level "
                "invariant (counters = counts, residents <= capacity included) and every "
                f"call's claims ({world.why})",
                partial(_claim, bounds),
                partial(_check_seeded, world),
                f"each broken relation gives a counterexample trace at the claim's own "
                f"bounds ({bounds.describe()}): {seeded}",
                kind=Kind.BOUNDED,
                bounds=bounds.describe(),
            )
        )
    return out
