"""`policy.lru.*` / `policy.arc.*`: each policy's own state composed with the manager
relation is proved per operation, and each broken hook relation is refuted with the
claim it breaks."""

from __future__ import annotations

import pytest

from evictable.model.lifecycle import CPU_MACHINE
from evictable.proofs.base.records import Status
from evictable.proofs.controls.policy_relations import ARC_CONTROLS, LRU_CONTROLS
from evictable.proofs.obligations import z3_policy
from evictable.proofs.z3.policy_compose import check_arc, check_lru
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
        ("complete_load", "joins at the least-recent end", "lru_"),
    ],
)
def test_each_broken_hook_breaks_its_claim(op: str, what: str, claim: str) -> None:
    hooks = next(h for w, h in LRU_CONTROLS[op] if what in w)
    out = check_lru(CPU_MACHINE, op, 2, BACKSTOP_S, hooks)
    assert out.status is Status.COUNTEREXAMPLE
    violated = out.counterexample.rsplit("violated:", 1)[1]
    # a key joining below the others breaks "most recent" or, when its stamp meets
    # another's, "distinct": which one the model shows is the solver's choice
    assert claim in violated or (claim == "lru_" and "_most_recent" in violated), violated


def test_claims_proved_without_the_finite_search_too() -> None:
    out = check_lru(CPU_MACHINE, "prepare_store", 3, BACKSTOP_S, search=True)
    assert out.status is Status.PROVED


def test_both_policies_have_a_record_per_operation() -> None:
    ops = {n.split(".", 2)[2] for n in OBLIGATIONS}
    assert {f"policy.{p}.{op}" for p in ("lru", "arc") for op in ops} == set(OBLIGATIONS)


@pytest.mark.parametrize(
    ("op", "what", "claim"),
    [
        ("prepare_store", "B1 never trimmed", "arc_ghosts_bounded"),
        ("prepare_store", "B2 never trimmed", "arc_ghosts_bounded"),
        ("prepare_load", "PinnedStaysIdle", "arc_idle_is_the_evictable_set"),
        ("touch", "B2HitGrowsTarget", "arc_target_within_0_capacity"),
        ("complete_store.failure", "leaves the key in T1", "arc_t1_t2_partition_residents"),
    ],
)
def test_each_broken_arc_hook_breaks_its_claim(op: str, what: str, claim: str) -> None:
    world, batch = z3_policy.ARC_WORLD["quick"]
    hooks = next(h for w, h in ARC_CONTROLS[op] if what in w)
    out = check_arc(CPU_MACHINE, op, world, batch, BACKSTOP_S, hooks)
    assert out.status is Status.COUNTEREXAMPLE
    assert claim in out.counterexample.rsplit("violated:", 1)[1]
