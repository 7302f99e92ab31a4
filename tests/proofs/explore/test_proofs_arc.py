"""The ARC obligations (`explore.arc`, `z3.arc`) hold; every negative control is refuted."""

from __future__ import annotations

import pytest

from evictable.proofs.base.records import Status, run_one
from evictable.proofs.explore import arc as bounded
from evictable.proofs.explore.arc import _explore_model
from evictable.proofs.registry import GROUPS
from evictable.proofs.z3 import arc as z3_arc

OBLIGATIONS = [*z3_arc.obligations("quick"), *bounded.obligations("quick")]


def test_arc_group_is_registered() -> None:
    assert {"evictable.proofs.explore.arc", "evictable.proofs.z3.arc"} <= set(GROUPS)
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
    report = _explore_model(2, 3)  # shared with the quick-level obligations above
    assert report.violation is None
    assert report.states > 1000
    assert report.depth > 10
