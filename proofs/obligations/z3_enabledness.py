"""`enabledness.*`, `safety.*`: the table against the separately written enabledness
and safety spec (`z3.enabledness`), each with a mutated table it must refute.
"""

from __future__ import annotations

from functools import partial

from evictable.model import lifecycle
from evictable.model.lifecycle import CpuEvent
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation
from evictable.proofs.controls import tables
from evictable.proofs.z3.enabledness import SAFETY, check_event, check_safety
from evictable.proofs.z3.encode import REFERENCE_MACHINES


def obligations(level: Level) -> list[Obligation]:
    """`enabledness.<event>` and `safety.<property>` (unbounded: the same at every level)."""
    del level
    machine = lifecycle.CPU_MACHINE  # the table tested; the controls break the reference
    reference = REFERENCE_MACHINES["cpu"]
    out = []
    for event in CpuEvent:
        mutant, text = tables.ENABLEDNESS_CONTROLS[event](reference)
        out.append(
            Obligation(
                f"enabledness.{event.value}",
                f"for every state and ref, {event.value} is the class the separate spec "
                "names (move and where, rejection and which error, or no-op)",
                partial(check_event, machine, event),
                partial(check_event, mutant, event),
                f"{text} is refuted",
                kind=Kind.UNBOUNDED,
            )
        )
    for name, prop in SAFETY.items():
        mutant, text = tables.SAFETY_CONTROLS[name](reference)
        out.append(
            Obligation(
                f"safety.{name}",
                f"{prop.statement} (the table's step relation, every ref)",
                partial(check_safety, machine, name),
                partial(check_safety, mutant, name),
                f"{text} is refuted",
                kind=Kind.UNBOUNDED,
            )
        )
    return out
