"""`bmc.manager`: symbolic bounded model checking of the manager relation, with the
seeded broken relations it must find.
"""

from __future__ import annotations

from collections.abc import Callable

from evictable.model.lifecycle import CpuEvent, CpuState, Machine
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import (
    Kind,
    Obligation,
    Outcome,
    Status,
    refuted,
)
from evictable.proofs.controls.encodings import forgetting, hook_dropped
from evictable.proofs.z3.bmc import Bmc, bmc
from evictable.proofs.z3.manager_ops import (
    Variant,
)
from evictable.proofs.z3.manager_state import (
    REFERENCE,
)

BOUNDS: dict[str, Bmc] = {
    "quick": Bmc(slots=1, keys=2, batch=2, depth=4),
    "default": Bmc(slots=1, keys=3, batch=2, depth=4),
    "thorough": Bmc(slots=2, keys=3, batch=2, depth=6),
}
"""Per level. The seeded bugs are sought at the claim's own bounds (a control at other
bounds says nothing of what the claim's search can see), so every level's depth is at
least 4: the longest seeded bug (`missed_mark_evictable_on_load_end`: store, commit,
load, end of load) needs 4 calls to show, and its keys at least 3 (fewer hide
`counter_drift_on_eviction` and `eviction_ignores_protected`). Two slots cost the
default level 4x (claim 18 s and controls 55 s against 5 s and 11 s on a loaded
2-core machine) for what the free stack's order adds, which `bound.slots` and the
unbounded `manager.consecution.*` already cover: the second slot is thorough's."""


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


def _check_seeded(bounds: Bmc, backstop_s: float) -> Outcome:
    machine = REFERENCE  # the controls break the reference table, whatever is tested
    found = []
    for name, variant in SEEDED_VARIANTS(machine).items():
        out = bmc(bounds, backstop_s, machine, variant)
        if out.status is not Status.COUNTEREXAMPLE:
            return Outcome(
                Status.PROVED if out.status is Status.PROVED else out.status,
                f"seeded bug {name} was not found: {out.counterexample or out.detail}",
            )
        found.append(f"{name}: {out.counterexample}")
    return refuted("\n".join(found))


def obligations(level: Level) -> list[Obligation]:
    """`bmc.manager`: every call sequence up to the level's depth keeps every claim."""
    bounds = BOUNDS[level]
    seeded = ", ".join(SEEDED_VARIANTS(REFERENCE))
    return [
        Obligation(
            "bmc.manager",
            "every sequence of calls from a fresh manager keeps the manager-level invariant "
            "(counters = counts, residents <= capacity included) and every call's claims",
            lambda t: bmc(bounds, t),
            lambda t: _check_seeded(bounds, t),
            f"each seeded bug, as a relation variant, gives a counterexample trace at the "
            f"claim's own bounds ({bounds.describe()}): {seeded}",
            kind=Kind.BOUNDED,
            bounds=bounds.describe(),
        )
    ]
