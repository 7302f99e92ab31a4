"""The tiering records at the quick level: each claim holds for the spec orchestrator and
each control -- every broken orchestrator named for it, and vLLM 0.33's profile -- is
refuted by that record's own check."""

from __future__ import annotations

import pytest

from evictable.proofs.base.records import Status, run_claim, run_control
from evictable.proofs.controls.tiering import LIVENESS_BREAKERS, SAFETY_BREAKERS
from evictable.proofs.obligations.explore_tiering import (
    CONTROLS,
    LIVENESS_CONTROLS,
    obligations,
)

QUICK = {ob.name: ob for ob in obligations("quick")}


@pytest.mark.parametrize("name", sorted(QUICK))
def test_the_claim_holds_and_its_control_is_refuted(name: str) -> None:
    ob = QUICK[name]
    claim = run_claim(ob)
    assert claim.status is Status.PROVED, claim.counterexample
    assert "states" in claim.detail
    control = run_control(ob)
    assert control.status is Status.REFUTED, control.counterexample or control.detail
    if name == "refine.tiering":  # one control: our orchestrator with a seeded break
        return
    assert control.counterexample.count("\n") + 1 == len(
        (LIVENESS_CONTROLS if name.startswith("liveness") else CONTROLS)[name.split(".")[-1]]
    )


def test_every_broken_orchestrator_controls_some_record() -> None:
    used = {n for names in (*CONTROLS.values(), *LIVENESS_CONTROLS.values()) for n in names}
    assert set(SAFETY_BREAKERS) | set(LIVENESS_BREAKERS) <= used
