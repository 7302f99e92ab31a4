"""The eviction, list-order and slot obligations are proved and each broken variant is refuted."""

from __future__ import annotations

import pytest

from evictable.proofs.base.records import Status
from evictable.proofs.obligations import z3_eviction
from evictable.proofs.z3 import eviction, slots
from evictable.proofs.z3.eviction import Walk
from evictable.proofs.z3.slots import Allocator
from tests.obligation_checks import BACKSTOP_S, assert_proved, refuted_control

OBLIGATIONS = {ob.name: ob for ob in z3_eviction.obligations("quick")}


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_obligation_is_proved(name: str) -> None:
    assert_proved(OBLIGATIONS[name])


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_negative_control_gives_a_counterexample(name: str) -> None:
    assert "violated:" in refuted_control(OBLIGATIONS[name])


def test_eviction_ignoring_protection_takes_a_protected_block() -> None:
    outcome = eviction.check_exact_victims(4, BACKSTOP_S, Walk(skips_protected=False))
    assert outcome.status is Status.COUNTEREXAMPLE
    assert "protected, TAKEN" in outcome.counterexample


def test_eviction_from_most_recent_end_is_refuted_for_least_recent() -> None:
    outcome = eviction.check_least_recent(4, BACKSTOP_S, Walk(from_lru_end=False))
    assert outcome.status is Status.COUNTEREXAMPLE
    assert outcome.counterexample.startswith("evict n=")
    assert outcome.counterexample.endswith("violated: least_recent")


def test_most_recent_walk_still_takes_exactly_n_eligible() -> None:
    # Walking from the wrong end is not caught by exact_victims: the claims are distinct.
    outcome = eviction.check_exact_victims(4, BACKSTOP_S, Walk(from_lru_end=False))
    assert outcome.status is Status.PROVED


def test_allocator_that_double_hands_a_slot_is_refuted() -> None:
    outcome = slots.check_slot_step("alloc", 4, BACKSTOP_S, Allocator(bumps_high_water=False))
    assert outcome.status is Status.COUNTEREXAMPLE
    assert outcome.counterexample.startswith("alloc slot ")
    assert "violated: slot_partition" in outcome.counterexample


def test_fifo_allocator_keeps_partition_but_breaks_lifo_reuse() -> None:
    fifo = Allocator(pops_top=False)
    assert slots.check_slot_step("alloc", 4, BACKSTOP_S, fifo).status is Status.PROVED
    outcome = slots.check_lifo_reuse(4, BACKSTOP_S, fifo)
    assert outcome.status is Status.COUNTEREXAMPLE
    assert "violated: lifo_reuse" in outcome.counterexample
