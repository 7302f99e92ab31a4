"""`policy.lru.*`: the LRU's own state composed with the manager relation is proved
per operation, and each broken hook relation is refuted with the claim it breaks."""

from __future__ import annotations

import pytest

from evictable.model.lifecycle import CPU_MACHINE
from evictable.proofs.base.records import Status
from evictable.proofs.controls.policy_relations import LRU_CONTROLS
from evictable.proofs.obligations import z3_policy
from evictable.proofs.z3.policy_compose import check_lru
from tests.obligation_checks import BACKSTOP_S, assert_proved, refuted_control

OBLIGATIONS = {ob.name: ob for ob in z3_policy.obligations("quick")}


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_obligation_is_proved(name: str) -> None:
    assert_proved(OBLIGATIONS[name])


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_negative_control_gives_a_counterexample(name: str) -> None:
    assert "violated:" in refuted_control(OBLIGATIONS[name])


@pytest.mark.parametrize(
    ("op", "what", "claim"),
    [
        ("prepare_store", "victims chosen most recent first", "victims_are_the_least_recent"),
        ("touch", "touch walks first to last", "touch_first_key_most_recent"),
        ("prepare_load", "became_pinned leaves", "lru_list_is_the_evictable_set"),
        ("complete_load", "joins at the least-recent end", "_most_recent"),
    ],
)
def test_each_broken_hook_breaks_its_claim(op: str, what: str, claim: str) -> None:
    hooks = next(h for w, h in LRU_CONTROLS[op] if what in w)
    out = check_lru(CPU_MACHINE, op, 2, BACKSTOP_S, hooks)
    assert out.status is Status.COUNTEREXAMPLE
    assert claim in out.counterexample.rsplit("violated:", 1)[1]


def test_claims_proved_without_the_finite_search_too() -> None:
    out = check_lru(CPU_MACHINE, "prepare_store", 3, BACKSTOP_S, search=True)
    assert out.status is Status.PROVED
