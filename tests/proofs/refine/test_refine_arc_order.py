"""ARC's own state bound to the code: the order of T1 and T2 and the victims ARC's rule
picks are the relation's (`z3.policy_arc`), on the explored walk and on `arc.orders`'
family of five blocks."""

from __future__ import annotations

import pytest

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.base.levels import Level
from evictable.proofs.base.protocol import Factory
from evictable.proofs.base.records import Status
from evictable.proofs.controls.catalogue import by_name
from evictable.proofs.lockstep.arc_orders import run
from evictable.proofs.obligations import refine_manager
from evictable.proofs.obligations.lockstep_arc_orders import LONGEST_CALL, SHAPES
from evictable.proofs.obligations.refine_manager import ARC_BROKEN, BINDS_ARC, relation_bounds
from evictable.proofs.refine.conformance import RefinementObserver
from evictable.proofs.refine.manager import ManagerOracle
from evictable.proofs.refine.manager_walk import check_refinement
from evictable.proofs.z3.policy_arc import ARC_HOOKS

QUICK = refine_manager.BOUNDS["arc"]["quick"]


def _orders(factory: Factory, bound: bool) -> str | None:
    observer = RefinementObserver(ManagerOracle(arc=ARC_HOOKS if bound else None), LONGEST_CALL)
    out = run(SHAPES["quick"], factory, observer=observer)
    return None if out.failure is None else out.failure.reason.splitlines()[0]


@pytest.mark.parametrize(
    "name", ["dropped_t2_walk_finish", "failed_evict_loses_heap_entries", "evictable_moves_to_mru"]
)
def test_the_orders_family_refutes_an_arc_order_bug_by_the_relation(name: str) -> None:
    first = _orders(by_name(name).factory, bound=True)
    assert first is not None
    assert "the implementation: " in first and "left the proved relation" in first, first


def test_the_manager_relation_alone_leaves_an_order_bug_to_the_comparison() -> None:
    first = _orders(by_name("evictable_moves_to_mru").factory, bound=False)
    assert first is not None
    assert "left the proved relation" not in first, first  # the comparison found it


def test_the_orders_family_is_a_step_of_the_arc_composed_relation() -> None:
    observer = RefinementObserver(ManagerOracle(arc=ARC_HOOKS), LONGEST_CALL)
    out = run(SHAPES["quick"], CPUOffloadingManager, observer=observer)
    assert out.failure is None, out.failure.text()
    assert observer.steps == 2 * out.calls  # both sides, every call judged
    assert observer.longer == 0


def test_the_walk_names_t2_order_for_a_moved_idle_entry() -> None:
    outcome = check_refinement(QUICK, factory=by_name("evictable_moves_to_mru").factory)
    assert outcome.status is Status.COUNTEREXAMPLE
    first = outcome.counterexample.splitlines()[0]
    assert first.startswith("the implementation: "), first
    assert ".rank of" in first and "arc.t" in first, first


def test_an_arc_relation_choosing_the_most_recent_is_left_by_the_model() -> None:
    outcome = check_refinement(relation_bounds(QUICK), arc=ARC_BROKEN)
    assert outcome.status is Status.COUNTEREXAMPLE
    first = outcome.counterexample.splitlines()[0]
    assert first.startswith("the model: prepare_store("), first
    assert "the ARC relation" in first, first


@pytest.mark.parametrize("level", ["quick", "default"])
def test_the_refine_records_say_whether_they_bind_arc(level: Level) -> None:
    records = {ob.name: ob for ob in refine_manager.obligations(level)}
    for name in ("refine.manager.arc", "refine.conformance.arc"):
        if name not in records:
            assert ("arc", level) in refine_manager.WALKED_ELSEWHERE
            continue
        says = records[name].statement
        if BINDS_ARC[level]:
            assert "ARC's four lists in order" in says, says
        else:
            assert "not bound at this level" in says, says
