"""The ARC obligations (`explore.arc`, `z3.arc`) hold; every negative control is refuted."""

from __future__ import annotations

import pytest

from evictable.model.arc import target_after_b1_hit
from evictable.proofs.base.records import Status, run_one
from evictable.proofs.controls.arc_models import floor_division_b2_hit
from evictable.proofs.explore.arc import explore_properties
from evictable.proofs.obligations import explore_arc as bounded
from evictable.proofs.obligations import z3_arc
from evictable.proofs.obligations.registry import GROUPS
from evictable.proofs.z3.arc import check_encoding

OBLIGATIONS = [*z3_arc.obligations("quick"), *bounded.obligations("quick")]


def test_arc_group_is_registered() -> None:
    assert {
        "evictable.proofs.obligations.explore_arc",
        "evictable.proofs.obligations.z3_arc",
    } <= set(GROUPS)
    names = [ob.name for ob in OBLIGATIONS]
    assert len(names) == len(set(names))
    assert all(ob.negative is not None for ob in OBLIGATIONS)


@pytest.mark.parametrize("ob", OBLIGATIONS, ids=lambda ob: ob.name)
def test_obligation_is_proved_and_its_negative_control_refuted(ob: object) -> None:
    claim, control = run_one(ob)  # type: ignore[arg-type]
    assert claim.status is Status.PROVED, claim.counterexample
    assert control.status is Status.REFUTED, control.counterexample  # broken variant caught
    assert control.counterexample  # the broken variant's counterexample is shown


def test_exploration_is_exhaustive_and_nontrivial() -> None:
    report = explore_properties(2, 3, bounded.PROPS)
    assert report.violation is None
    assert report.states > 1000
    assert report.depth > 10


def test_a_b2_step_with_integer_division_is_told_apart_beside_a_nonempty_b1() -> None:
    out = check_encoding(target_after_b1_hit, floor_division_b2_hit)(60.0)
    assert out.status is Status.COUNTEREXAMPLE
    assert out.counterexample.startswith("b2 hit"), out.counterexample
