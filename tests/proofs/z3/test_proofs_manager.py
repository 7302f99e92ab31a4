"""The manager-level obligations: an inductive invariant over an unbounded key sort, each
operation a relation over a batch; proved, with each control refuted for its own reason."""

from __future__ import annotations

import dataclasses

import pytest
import z3

from evictable.model.lifecycle import CPU_MACHINE, CpuEvent, CpuState, Hook
from evictable.proofs.base.records import Kind, Status
from evictable.proofs.controls import encodings
from evictable.proofs.obligations import z3_manager
from evictable.proofs.z3 import manager
from evictable.proofs.z3.encode import hook_effect
from evictable.proofs.z3.manager_ops import OPS, Variant
from evictable.proofs.z3.manager_state import UNBOUNDED, invariant
from tests.obligation_checks import BACKSTOP_S, assert_proved, refuted_control

OBLIGATIONS = {ob.name: ob for ob in z3_manager.obligations("quick")}


def test_every_operation_has_a_consecution_obligation() -> None:
    names = {f"manager.consecution.{op}" for op in OPS}
    assert names | {"manager.initiation", "manager.nonvacuity", "manager.rows"} == set(OBLIGATIONS)


def test_kinds_say_what_is_bounded() -> None:
    assert OBLIGATIONS["manager.initiation"].kind is Kind.UNBOUNDED
    for op in OPS:
        ob = OBLIGATIONS[f"manager.consecution.{op}"]
        if manager.unbounded_in_batch(op):
            assert ob.kind is Kind.UNBOUNDED
            assert "any number of keys" in ob.bounds and "batches of <=" not in ob.bounds
        else:
            b = manager.BATCH["quick"]
            assert ob.kind is Kind.BOUNDED and f"(B = {b})" in ob.bounds


def test_no_operation_stays_bounded_in_the_batch() -> None:
    bounded = [op for op in OPS if not manager.unbounded_in_batch(op)]
    assert bounded == []


def test_counterexample_worlds_have_a_slot_more_than_the_batch() -> None:
    for b in manager.BATCH.values():
        world = manager.counterexample_world(b)
        assert world.slots >= b + 1 and world.keys > world.slots
        assert f"{b} distinct keys" in OBLIGATIONS["manager.nonvacuity"].statement or b != 2


def test_the_invariant_names_the_mission_claim_and_the_slot_partition() -> None:
    clauses = invariant(UNBOUNDED, UNBOUNDED.fresh("s"))
    assert {"listed_iff_ready", "slots_owned_injectively", "slot_partition"} <= set(clauses)


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_obligation_is_proved(name: str) -> None:
    assert_proved(OBLIGATIONS[name])


EXPECTED = {
    "manager.initiation": "listed_iff_ready",
    "manager.consecution.prepare_store": "num_evictable_tracks_count",
    "manager.consecution.complete_store.success": "listed_iff_ready",
    "manager.consecution.complete_store.failure": "slot_partition",
    "manager.consecution.prepare_load": "listed_iff_ready",
    "manager.consecution.complete_load": "listed_iff_ready",
    "manager.consecution.touch": "listed_iff_ready",
    "manager.consecution.reset_cache": "free_stack",
    "manager.nonvacuity": "'evicts a victim' never happens",
    "manager.rows": "evict LOADING->ABSENT",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_negative_control_is_refuted_for_its_own_reason(name: str) -> None:
    assert EXPECTED[name] in refuted_control(OBLIGATIONS[name])


def test_a_counterexample_shows_the_keys_before_and_after() -> None:
    variant, _ = encodings.consecution_controls(CPU_MACHINE)["complete_load"]
    outcome = manager.check_consecution(CPU_MACHINE, "complete_load", 2, BACKSTOP_S, variant)
    assert outcome.status is Status.COUNTEREXAMPLE
    text = outcome.counterexample
    assert text.startswith("complete_load (accepted): k")
    assert "LOADING(ref 1, slot" in text and "-> READY(ref 0, slot" in text  # not listed
    assert "violated: blocks, listed_iff_ready" in text


def test_non_atomic_prepare_load_breaks_rejected_changes_nothing() -> None:
    outcome = manager.search_consecution(
        CPU_MACHINE, "prepare_load", 2, BACKSTOP_S, Variant(atomic=False)
    )
    assert outcome is not None and outcome.status is Status.COUNTEREXAMPLE
    assert "prepare_load (rejected)" in outcome.counterexample
    assert "rejected_changes_nothing" in outcome.counterexample


def test_an_eviction_ignoring_protection_evicts_an_input_key() -> None:
    outcome = manager.search_consecution(
        CPU_MACHINE, "prepare_store", 2, BACKSTOP_S, Variant(protects_input=False)
    )
    assert outcome is not None and outcome.status is Status.COUNTEREXAMPLE
    assert "input_keys_not_evicted" in outcome.counterexample


def test_a_table_refusing_to_evict_ready_keys_is_caught_at_prepare_store() -> None:
    from evictable.model.errors import BlockNotReadyError
    from evictable.model.lifecycle import Rejection
    from evictable.proofs.controls.tables import row_to_noop

    dropped = row_to_noop(CPU_MACHINE, CpuEvent.EVICT, CpuState.READY, CpuState.ABSENT)
    refusing = dataclasses.replace(
        dropped,
        ignored=tuple(p for p in dropped.ignored if p != (CpuState.READY, CpuEvent.EVICT)),
        rejections=(
            *dropped.rejections,
            Rejection(CpuEvent.EVICT, CpuState.READY, BlockNotReadyError, "never"),
        ),
    )
    outcome = manager.check_consecution(refusing, "prepare_store", 2, BACKSTOP_S)
    assert outcome.status is Status.COUNTEREXAMPLE
    assert "victims_accepted_by_the_table" in outcome.counterexample


def test_drop_and_flag_off_are_different_list_effects() -> None:
    listed = z3.Bool("listed")
    assert z3.is_false(hook_effect(Hook.FLAG_OFF, listed, resident_after=True))
    assert hook_effect(Hook.DROP, listed, resident_after=True) is listed  # no call: stays
    assert z3.is_false(hook_effect(Hook.DROP, listed, resident_after=False))


def test_a_resident_flip_classed_drop_is_caught_at_prepare_load() -> None:
    variant = encodings.hook_misclassed_drop(
        CPU_MACHINE, CpuEvent.LOAD_BEGIN, CpuState.READY, CpuState.LOADING
    )
    outcome = manager.check_consecution(CPU_MACHINE, "prepare_load", 2, BACKSTOP_S, variant)
    assert outcome.status is Status.COUNTEREXAMPLE
    assert "-> LOADING(ref 1, listed" in outcome.counterexample
    assert "listed_iff_ready" in outcome.counterexample
