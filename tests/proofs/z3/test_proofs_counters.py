"""The counter updates are claims of each operation's consecution
(`manager.consecution.<op>`, `*_tracks_count`): each operation forgetting one of its
updates is among that record's controls and is refuted, naming the counter."""

from __future__ import annotations

import pytest

from evictable.model.lifecycle import CPU_MACHINE
from evictable.proofs.base.records import Status
from evictable.proofs.controls.encodings import (
    COUNTER_UPDATES,
    consecution_controls,
    forgetting,
    more_consecution_controls,
)
from evictable.proofs.obligations import z3_manager
from evictable.proofs.z3.counter_rules import COUNTER_RULES, CallCounts, counters_after
from evictable.proofs.z3.manager import check_consecution
from evictable.proofs.z3.manager_ops import OPS, Variant
from evictable.proofs.z3.manager_state import REFERENCE
from tests.obligation_checks import BACKSTOP_S


def test_every_operation_that_updates_a_counter_has_a_forgetting_control() -> None:
    assert set(COUNTER_UPDATES) == {op for op in OPS if op != "touch"}
    assert set(COUNTER_RULES) == set(OPS)
    obligations = {ob.name: ob for ob in z3_manager.obligations("quick")}
    more = more_consecution_controls(REFERENCE)
    for op, (_what, text) in COUNTER_UPDATES.items():
        texts = [consecution_controls(REFERENCE)[op][1], *(t for _v, t in more.get(op, []))]
        assert any(text in t for t in texts), op
        assert text in obligations[f"manager.consecution.{op}"].negative_statement, op


@pytest.mark.parametrize("op", sorted(COUNTER_UPDATES))
def test_forgetting_a_counter_update_is_refuted_naming_the_counter(op: str) -> None:
    what = COUNTER_UPDATES[op][0]
    variant = Variant(counters=forgetting(op, what))
    outcome = check_consecution(REFERENCE, op, 2, BACKSTOP_S, variant)
    assert outcome.status is Status.COUNTEREXAMPLE
    assert "_tracks_count" in outcome.counterexample


def test_forgotten_eviction_decrement_is_the_seeded_counter_drift() -> None:
    variant = Variant(counters=forgetting("prepare_store", "victims"))
    outcome = check_consecution(CPU_MACHINE, "prepare_store", 2, BACKSTOP_S, variant)
    assert outcome.status is Status.COUNTEREXAMPLE
    text = outcome.counterexample
    assert "READY(ref 0, listed, slot" in text and "-> ABSENT" in text  # a victim
    assert "num_evictable_tracks_count" in text


def test_the_rule_is_the_implementations_arithmetic() -> None:
    did = CallCounts(victims=2, stored=3, acted=1, pinned=1, unpinned=2)
    assert counters_after("prepare_store", 5, 0, did) == (3, 3)
    assert counters_after("complete_store.success", 5, 2, did) == (6, 1)
    assert counters_after("complete_store.failure", 5, 2, did) == (5, 1)
    assert counters_after("prepare_load", 5, 0, did) == (4, 0)
    assert counters_after("complete_load", 5, 0, did) == (7, 0)
    assert counters_after("touch", 5, 1, did) == (5, 1)
    assert counters_after("reset_cache", 5, 1, did) == (0, 0)


def test_a_reset_forgetting_only_num_pending_is_refuted_on_num_pending() -> None:
    variant = Variant(counters=forgetting("reset_cache", "reset_pending"))
    outcome = check_consecution(REFERENCE, "reset_cache", 2, BACKSTOP_S, variant)
    assert outcome.status is Status.COUNTEREXAMPLE
    assert "num_pending_tracks_count" in outcome.counterexample
    assert "num_evictable_tracks_count" not in outcome.counterexample.split("violated:")[-1]
