"""The free-queue Z3 obligations (proofs/z3/free_queue.py) at the quick bound, with controls."""

from __future__ import annotations

import pytest

from evictable.model.lifecycle import GPU_MACHINE, Hook
from evictable.proofs.base.records import Status, run_one
from evictable.proofs.obligations.z3_free_queue import obligations
from evictable.proofs.z3.free_queue import check_table, check_wf

OBLIGATIONS = {ob.name: ob for ob in obligations("quick")}


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_obligation_and_its_negative_control_hold(name: str) -> None:
    results = run_one(OBLIGATIONS[name])
    assert [r.name for r in results] == [name, f"{name}~neg"]
    claim, control = results
    assert claim.status is Status.PROVED, f"{claim.name}: {claim.counterexample}"
    assert control.status is Status.REFUTED, f"{control.name}: {control.counterexample}"


def test_every_gpu_row_has_a_table_obligation() -> None:
    rows = [n for n in OBLIGATIONS if n.startswith("free_queue.table.")]
    assert len(rows) == len(GPU_MACHINE.transitions)


def test_broken_remove_counterexample_shows_the_dangling_prev() -> None:
    out = check_wf("remove", 3, True, 30.0)
    assert out.status is Status.COUNTEREXAMPLE
    assert out.counterexample.startswith("pre: count=")
    assert "| post: " in out.counterexample


def test_freeing_the_last_reference_without_linking_is_refuted() -> None:
    last_free = next(
        t for t in GPU_MACHINE.transitions if t.event.value == "free" and t.target.name == "FREE"
    )
    assert check_table(last_free, 3, Hook.NONE, 30.0).status is Status.COUNTEREXAMPLE
    assert check_table(last_free, 3, Hook.FLAG_ON, 30.0).status is Status.PROVED
