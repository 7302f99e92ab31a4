"""Bounded model checking of the manager relation reaches its depth on the manager and
returns a shortest trace of calls for each seeded bug."""

from __future__ import annotations

import pytest

from evictable.model.lifecycle import CPU_MACHINE
from evictable.proofs.base.records import Kind, Status
from evictable.proofs.controls import SEEDED_BUGS
from evictable.proofs.obligations import z3_bmc
from evictable.proofs.z3 import bmc
from tests.obligation_checks import BACKSTOP_S

SMALL = bmc.Bmc(slots=1, keys=2, batch=2, depth=3)


def test_every_call_sequence_of_the_manager_keeps_every_claim() -> None:
    outcome = bmc.bmc(SMALL, BACKSTOP_S)
    assert outcome.status is Status.PROVED
    assert outcome.detail.startswith("depth 3 reached")


def test_the_obligation_is_bounded_by_the_levels_depth() -> None:
    (ob,) = z3_bmc.obligations("quick")
    assert ob.kind is Kind.BOUNDED
    assert f"<= {z3_bmc.BOUNDS['quick'].depth} calls" in ob.bounds
    assert z3_bmc.BOUNDS["thorough"].depth > z3_bmc.BOUNDS["default"].depth


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
    outcome = bmc.bmc(z3_bmc.BOUNDS["quick"], BACKSTOP_S, variant=variant)
    assert outcome.status is Status.COUNTEREXAMPLE
    length, call, claim = TRACES[bug]
    text = outcome.counterexample
    assert text.startswith(f"a sequence of {length} breaks")
    assert call in text and claim in text and "1. prepare_store([" in text


def test_the_control_runs_at_the_claims_own_bounds_at_every_level() -> None:
    for level in ("quick", "default", "thorough"):
        (ob,) = z3_bmc.obligations(level)
        assert z3_bmc.BOUNDS[level].describe() in ob.negative_statement
        assert z3_bmc.BOUNDS[level].depth >= 4  # the longest seeded bug needs 4 calls


def test_the_default_bounds_find_a_missed_mark_evictable_on_load_end() -> None:
    # The hand edit of issue 20: at the default bounds (depth 3 then) the control ran
    # elsewhere and this seeded bug came back "holds" at the claim's own bounds.
    variant = z3_bmc.SEEDED_VARIANTS(CPU_MACHINE)["missed_mark_evictable_on_load_end"]
    outcome = bmc.bmc(z3_bmc.BOUNDS["default"], BACKSTOP_S, variant=variant)
    assert outcome.status is Status.COUNTEREXAMPLE
    assert outcome.counterexample.startswith("a sequence of 4 calls breaks")
    assert "complete_load" in outcome.counterexample
