"""The obligations that bind the proofs to the code: the refinement bridges, the counters
of the implementation, and the eviction and slot encodings evaluated against the code.
Each is explored exhaustively at its bound and each planted bug is caught."""

from __future__ import annotations

import pytest

from evictable.impl.policies.lru import LRUCachePolicy
from evictable.impl.slots import SlotAllocator
from evictable.model.lifecycle import CPU_MACHINE, GPU_MACHINE
from evictable.proofs.base.records import Kind, Status
from evictable.proofs.controls.encodings import (
    ARC_BUGS,
    LRU_EVICTION_BUGS,
    LRU_ORDER_BUGS,
    SLOT_BUGS,
    SlotsBulkReuseOldestFirst,
)
from evictable.proofs.controls.tables import step_ignoring_guards
from evictable.proofs.obligations import refine_bound, refine_bridges
from evictable.proofs.refine import bound, bridges
from tests.obligation_checks import assert_proved, refuted_control

OBLIGATIONS = {
    ob.name: ob for ob in [*refine_bridges.obligations("quick"), *refine_bound.obligations("quick")]
}


def test_every_binding_is_an_exploration() -> None:
    assert {
        "bridge.block.cpu",
        "bridge.block.gpu",
        "bridge.free_queue",
        "bound.eviction.lru",
        "bound.eviction.lru.order",
        "bound.eviction.arc",
        "bound.slots",
    } == set(OBLIGATIONS)
    assert all(ob.kind is Kind.EXPLORED for ob in OBLIGATIONS.values())


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_obligation_holds(name: str) -> None:
    assert_proved(OBLIGATIONS[name])


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_negative_control_is_caught(name: str) -> None:
    assert refuted_control(OBLIGATIONS[name])


def test_a_step_ignoring_guards_leaves_the_relation() -> None:
    outcome = bridges.check_block_bridge(CPU_MACHINE, step_ignoring_guards)
    assert outcome.status is Status.COUNTEREXAMPLE
    assert outcome.counterexample.startswith("load_end:")
    assert bridges.check_block_bridge(GPU_MACHINE).status is Status.PROVED


@pytest.mark.parametrize(
    ("check", "bugs"),
    [
        (lambda c: bound.check_lru_eviction(3, c), LRU_EVICTION_BUGS),
        (lambda c: bound.check_lru_order(3, c), LRU_ORDER_BUGS),
        (lambda c: bound.check_slots(3, c), SLOT_BUGS),
        (lambda c: bound.check_arc(((1, 3),), c), ARC_BUGS),
    ],
)
def test_every_planted_encoding_bug_is_caught_on_its_own(
    check: object, bugs: dict[str, type]
) -> None:
    for name, cls in bugs.items():
        outcome = check(cls)  # type: ignore[operator]
        assert outcome.status is Status.COUNTEREXAMPLE, name


def test_the_unbroken_code_agrees_with_every_encoding() -> None:
    assert bound.check_lru_eviction(3, LRUCachePolicy).status is Status.PROVED
    assert bound.check_lru_order(3, LRUCachePolicy).status is Status.PROVED
    assert bound.check_slots(3, SlotAllocator).status is Status.PROVED


def test_the_free_queue_bridge_covers_every_operation() -> None:
    outcome = bridges.check_free_queue(2)
    assert outcome.status is Status.PROVED and "pairs" in outcome.detail


def test_bound_slots_judges_the_bulk_take_the_manager_uses() -> None:
    # The seeded bug agrees with the allocator on every take of one id: only a bulk
    # take(count, released) -- the path the manager takes -- shows it.
    for high in range(4):
        for stack in ([], [0], [1, 0], [0, 2, 1]):
            if any(s >= high for s in stack):
                continue
            good, bad = SlotAllocator(3), SlotsBulkReuseOldestFirst(3)
            for a in (good, bad):
                a.high_water, a.freed = high, list(stack)
            if good.free_count():
                assert good.take(1) == bad.take(1)
    outcome = bound.check_slots(3, SlotsBulkReuseOldestFirst)
    assert outcome.status is Status.COUNTEREXAMPLE
    assert outcome.counterexample.startswith("take(")
