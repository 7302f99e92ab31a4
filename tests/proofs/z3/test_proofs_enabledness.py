"""The separate enabledness and safety spec: it covers every pair, the table meets it, and
each mutant control (a rejection turned into a no-op or a transition, ...) is refuted."""

from __future__ import annotations

import pytest

from evictable.model.lifecycle import CPU_MACHINE, CpuEvent, CpuState
from evictable.proofs.base.records import Kind, Status
from evictable.proofs.controls import tables
from evictable.proofs.obligations import z3_enabledness
from evictable.proofs.z3 import enabledness
from evictable.proofs.z3.enabledness import SPEC, Class
from tests.obligation_checks import BACKSTOP_S, assert_proved, refuted_control

OBLIGATIONS = {ob.name: ob for ob in z3_enabledness.obligations("quick")}


def test_the_spec_names_one_class_for_every_state_and_event() -> None:
    assert set(SPEC) == {(s, e) for s in CpuState for e in CpuEvent}
    for expect in SPEC.values():
        assert (expect.cls is Class.MOVES) == bool(expect.to)
        assert (expect.cls is Class.REJECTS) == (expect.error is not None)


def test_every_event_and_safety_property_has_an_unbounded_obligation() -> None:
    names = {f"enabledness.{e.value}" for e in CpuEvent}
    names |= {f"safety.{p}" for p in enabledness.SAFETY}
    assert names == set(OBLIGATIONS)
    assert all(ob.kind is Kind.UNBOUNDED for ob in OBLIGATIONS.values())


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_obligation_is_proved(name: str) -> None:
    assert_proved(OBLIGATIONS[name])


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_negative_control_is_refuted(name: str) -> None:
    assert "violated:" in refuted_control(OBLIGATIONS[name])


def test_a_rejection_turned_into_a_noop_fails_in_z3() -> None:
    broken = tables.rejection_to_noop(CPU_MACHINE, CpuEvent.LOAD_END, CpuState.READY)
    outcome = enabledness.check_event(broken, CpuEvent.LOAD_END, BACKSTOP_S)
    assert outcome.status is Status.COUNTEREXAMPLE
    assert outcome.counterexample.startswith("load_end on READY (ref 0): the spec says it rejects")
    assert "the table ignores it" in outcome.counterexample


def test_a_rejection_with_the_wrong_error_fails_in_z3() -> None:
    import dataclasses

    from evictable.model.errors import BlockNotFoundError

    rows = tuple(
        dataclasses.replace(r, error=BlockNotFoundError)
        if (r.event, r.state) == (CpuEvent.LOAD_BEGIN, CpuState.PENDING)
        else r
        for r in CPU_MACHINE.rejections
    )
    broken = dataclasses.replace(CPU_MACHINE, rejections=rows)
    outcome = enabledness.check_event(broken, CpuEvent.LOAD_BEGIN, BACKSTOP_S)
    assert outcome.status is Status.COUNTEREXAMPLE
    assert "BlockNotReadyError" in outcome.counterexample
    assert "the table rejects with BlockNotFoundError" in outcome.counterexample


def test_a_load_end_guard_gap_is_found_at_its_ref() -> None:
    broken = tables.row_to_noop(CPU_MACHINE, CpuEvent.LOAD_END, CpuState.LOADING, CpuState.LOADING)
    outcome = enabledness.check_event(broken, CpuEvent.LOAD_END, BACKSTOP_S)
    assert outcome.status is Status.COUNTEREXAMPLE
    assert "load_end on LOADING (ref " in outcome.counterexample
