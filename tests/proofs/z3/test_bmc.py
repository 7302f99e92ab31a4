"""Bounded model checking of the manager relation reaches its depth on the manager and
returns a shortest trace of calls for each seeded bug."""

from __future__ import annotations

from typing import Any

import pytest
import z3

from evictable.model.lifecycle import CPU_MACHINE, CpuEvent, CpuState, Hook
from evictable.proofs.base.records import Kind, Status
from evictable.proofs.controls import SEEDED_BUGS
from evictable.proofs.controls.encodings import positional_hook
from evictable.proofs.obligations import z3_bmc
from evictable.proofs.z3 import bmc, manager_ops
from tests.obligation_checks import BACKSTOP_S

SMALL = bmc.Bmc(slots=1, keys=2, batch=2, depth=3)


def test_every_call_sequence_of_the_manager_keeps_every_claim() -> None:
    outcome = bmc.bmc(SMALL, BACKSTOP_S)
    assert outcome.status is Status.PROVED
    assert outcome.detail.startswith("depth 3 reached")


def test_the_obligations_are_bounded_by_each_worlds_depth() -> None:
    for level in ("default", "thorough"):
        obs = z3_bmc.obligations(level)
        worlds = z3_bmc.WORLDS[level]
        assert [ob.name for ob in obs] == [f"bmc.manager.{w.name}" for w in worlds]
        for ob, world in zip(obs, worlds, strict=True):
            assert ob.kind is Kind.BOUNDED
            assert f"<= {world.bounds.depth} calls" in ob.bounds


def test_there_is_no_search_at_the_quick_level() -> None:
    # manager.initiation and the unbounded manager.consecution.* contain its claims
    assert z3_bmc.obligations("quick") == []


def test_the_batch_world_has_two_slots_so_that_two_keys_act_in_one_call() -> None:
    for level in ("default", "thorough"):
        (batches,) = [w for w in z3_bmc.WORLDS[level] if w.name == "batches"]
        assert batches.bounds.slots >= 2 and batches.bounds.keys >= 2


def test_the_seeded_variants_are_seeded_bugs_of_the_controls() -> None:
    known = {b.name for b in SEEDED_BUGS}
    assert set(z3_bmc.SEEDED_VARIANTS(CPU_MACHINE)) <= known


TRACES = {
    "missed_mark_evictable_on_load_end": ("4 calls", "complete_load", "listed_iff_ready"),
    "non_atomic_prepare_load": ("3 calls", "-> rejected", "rejected_changes_nothing"),
    "failed_store_keeps_slot": ("2 calls", "success=False", "slot_partition"),
    "touch_moves_pinned": ("2 calls", "touch", "listed_iff_ready"),
}


@pytest.mark.parametrize("bug", sorted(TRACES))
def test_a_seeded_bug_appears_as_a_shortest_trace(bug: str) -> None:
    variant = z3_bmc.SEEDED_VARIANTS(CPU_MACHINE)[bug]
    outcome = bmc.bmc(_world("default", "eviction").bounds, BACKSTOP_S, variant=variant)
    assert outcome.status is Status.COUNTEREXAMPLE
    length, call, claim = TRACES[bug]
    text = outcome.counterexample
    assert text.startswith(f"a sequence of {length} breaks")
    assert call in text and claim in text and "1. prepare_store([" in text


def _world(level: str, name: str) -> z3_bmc.BmcWorld:
    (world,) = [w for w in z3_bmc.WORLDS[level] if w.name == name]  # type: ignore[index]
    return world


def test_the_control_runs_at_the_claims_own_bounds_at_every_level() -> None:
    for level in ("default", "thorough"):
        for ob, world in zip(z3_bmc.obligations(level), z3_bmc.WORLDS[level], strict=True):
            assert world.bounds.describe() in ob.negative_statement
            assert world.bounds.depth >= 4  # the longest seeded bug needs 4 calls


def test_the_default_bounds_find_a_missed_mark_evictable_on_load_end() -> None:
    # The hand edit of issue 20: at the default bounds (depth 3 then) the control ran
    # elsewhere and this seeded bug came back "holds" at the claim's own bounds.
    variant = z3_bmc.SEEDED_VARIANTS(CPU_MACHINE)["missed_mark_evictable_on_load_end"]
    outcome = bmc.bmc(_world("default", "eviction").bounds, BACKSTOP_S, variant=variant)
    assert outcome.status is Status.COUNTEREXAMPLE
    assert outcome.counterexample.startswith("a sequence of 4 calls breaks")
    assert "complete_load" in outcome.counterexample


def test_a_second_key_that_goes_wrong_shows_only_with_two_slots() -> None:
    variant = positional_hook(
        CPU_MACHINE, CpuEvent.LOAD_END, CpuState.LOADING, CpuState.READY, Hook.NONE
    )
    one_slot = bmc.bmc(bmc.Bmc(slots=1, keys=3, batch=2, depth=4), BACKSTOP_S, variant=variant)
    assert one_slot.status is Status.PROVED  # one slot: never two keys loading at once
    two = bmc.bmc(_world("default", "batches").bounds, BACKSTOP_S, variant=variant)
    assert two.status is Status.COUNTEREXAMPLE
    assert "complete_load([" in two.counterexample and "listed_iff_ready" in two.counterexample


def test_a_relation_that_admits_no_call_is_vacuous(monkeypatch: pytest.MonkeyPatch) -> None:
    real = manager_ops.relation

    def admits_nothing(*args: Any, **kwargs: Any) -> Any:
        step = real(*args, **kwargs)
        step.facts.append(z3.BoolVal(False))
        return step

    monkeypatch.setattr(bmc, "relation", admits_nothing)
    outcome = bmc.bmc(SMALL, BACKSTOP_S)
    assert outcome.status is Status.VACUOUS
    assert "no sequence of 3 calls exists" in outcome.counterexample
