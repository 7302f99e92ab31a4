"""`enabledness.*`, `safety.*`: the table against the separately written enabledness
and safety spec (`z3.enabledness`), each with mutated tables it must refute -- built
from the frozen copy of the table (`base.frozen_spec`), never from the table tested,
so a mutated `model/lifecycle.py` gives a counterexample per event, not a crash.
"""

from __future__ import annotations

from functools import partial

from evictable.model import lifecycle
from evictable.model.lifecycle import CpuEvent
from evictable.proofs.base.frozen_spec import CPU_SPEC
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, every_refuted
from evictable.proofs.controls import tables
from evictable.proofs.z3.enabledness import SAFETY, check_event, check_safety


def obligations(level: Level) -> list[Obligation]:
    """`enabledness.<event>` and `safety.<property>` (unbounded: the same at every level)."""
    del level
    machine = lifecycle.CPU_MACHINE  # the table tested; the controls break the frozen copy
    reference = CPU_SPEC
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
        mutants = [build(reference) for build in tables.SAFETY_CONTROLS[name]]
        controls = [(text, partial(check_safety, mutant, name)) for mutant, text in mutants]
        out.append(
            Obligation(
                f"safety.{name}",
                f"{prop.statement} (the table's step relation, every ref)",
                partial(check_safety, machine, name),
                partial(every_refuted, controls),
                f"each of {len(controls)} tables breaking it one way is refuted: "
                + "; ".join(text for text, _ in controls),
                kind=Kind.UNBOUNDED,
            )
        )
    return out
