"""The counter obligations aim at the implementation's per-operation updates: each is
proved, and each operation forgetting one of its updates is refuted, naming the counter."""

from __future__ import annotations

import pytest

from evictable.model.lifecycle import CPU_MACHINE
from evictable.proofs.base.records import Status
from evictable.proofs.controls.encodings import forgetting
from evictable.proofs.obligations import z3_counters
from evictable.proofs.z3 import counters
from evictable.proofs.z3.counter_rules import COUNTER_RULES, CallCounts, counters_after
from evictable.proofs.z3.manager_ops import OPS, Variant
from tests.obligation_checks import BACKSTOP_S, assert_proved, refuted_control

OBLIGATIONS = {ob.name: ob for ob in z3_counters.obligations("quick")}


def test_every_operation_that_updates_a_counter_has_an_obligation() -> None:
    assert {f"counters.{op}" for op in OPS if op != "touch"} == set(OBLIGATIONS)
    assert set(COUNTER_RULES) == set(OPS)


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_obligation_is_proved(name: str) -> None:
    assert_proved(OBLIGATIONS[name])


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_negative_control_names_the_counter_that_drifts(name: str) -> None:
    assert "_tracks_count" in refuted_control(OBLIGATIONS[name])


def test_forgotten_eviction_decrement_is_the_seeded_counter_drift() -> None:
    variant = Variant(counters=forgetting("prepare_store", "victims"))
    outcome = counters.check_counters(CPU_MACHINE, "prepare_store", 2, BACKSTOP_S, variant)
    assert outcome.status is Status.COUNTEREXAMPLE
    text = outcome.counterexample
    assert "READY(ref 0, listed, slot" in text and "-> ABSENT" in text  # a victim
    assert text.endswith("violated: num_evictable_tracks_count")


def test_the_rule_is_the_implementations_arithmetic() -> None:
    did = CallCounts(victims=2, stored=3, acted=1, pinned=1, unpinned=2)
    assert counters_after("prepare_store", 5, 0, did) == (3, 3)
    assert counters_after("complete_store.success", 5, 2, did) == (6, 1)
    assert counters_after("complete_store.failure", 5, 2, did) == (5, 1)
    assert counters_after("prepare_load", 5, 0, did) == (4, 0)
    assert counters_after("complete_load", 5, 0, did) == (7, 0)
    assert counters_after("touch", 5, 1, did) == (5, 1)
    assert counters_after("reset_cache", 5, 1, did) == (0, 0)


def test_batch_bound_grows_with_level() -> None:
    quick = z3_counters.obligations("quick")[0].bounds
    thorough = z3_counters.obligations("thorough")[0].bounds
    assert "<= 2 keys" in quick and "<= 4 keys" in thorough
