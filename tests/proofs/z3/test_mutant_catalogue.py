"""Z3 alone, on every table mutant of `proofs.controls.tables` applied to the table
tested (`model.lifecycle.CPU_MACHINE`): the enabledness and manager groups are
collected without error (their controls break the frozen copy of the table, never the
tested one), every control is still refuted, and some claim of the two groups gives a
precise counterexample -- a step or a call, not a collection error."""

from __future__ import annotations

import pytest

from evictable.model import lifecycle
from evictable.model.lifecycle import CpuEvent
from evictable.proofs.base.records import Obligation, Status
from evictable.proofs.controls.tables import (
    ENABLEDNESS_CONTROLS,
    SAFETY_CONTROLS,
    TABLE_MUTANTS,
    Mutant,
)
from evictable.proofs.obligations import z3_enabledness, z3_manager
from tests.obligation_checks import BACKSTOP_S

CATALOGUE: dict[str, Mutant] = {
    **{f"enabledness.{e.value}": m for e, m in ENABLEDNESS_CONTROLS.items()},
    **{
        f"safety.{name}[{i}]": m
        for name, mutants in SAFETY_CONTROLS.items()
        for i, m in enumerate(mutants)
    },
    **{f"class: {name}": m for name, m in TABLE_MUTANTS.items()},
}

EVENTS = tuple(e.value for e in CpuEvent)
OPS_TEXT = ("prepare_store", "complete_store", "prepare_load", "complete_load", "touch")


def _precise(ob: Obligation, text: str) -> bool:
    """A counterexample that names an event (a step) or an operation (a call) or a row."""
    return bool(text) and (
        text.startswith(EVENTS) or text.startswith(OPS_TEXT) or "dead rows:" in text
    )


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_a_table_mutant_gives_a_precise_counterexample_not_a_collection_error(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken, _ = CATALOGUE[name](lifecycle.CPU_MACHINE)
    monkeypatch.setattr(lifecycle, "CPU_MACHINE", broken)
    table_level = z3_enabledness.obligations("quick")  # no KeyError: frozen controls
    manager_level = z3_manager.obligations("quick")
    for ob in table_level:
        assert ob.negative is not None
        assert ob.negative(BACKSTOP_S).status is Status.COUNTEREXAMPLE, ob.name
    found = []
    for ob in [*table_level, *manager_level]:
        out = ob.check(BACKSTOP_S)
        assert out.status is not Status.UNKNOWN, (ob.name, out.detail)
        if out.status is Status.COUNTEREXAMPLE:
            assert _precise(ob, out.counterexample), (ob.name, out.counterexample)
            found.append(ob.name)
            break  # one precise counterexample is the point; the rest costs time
    assert found, f"{name}: no enabledness or manager record refutes it"
