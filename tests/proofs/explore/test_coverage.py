"""rows.coverage: the explorer fires every row of the CPU table (touch included) and every
rejection of a caller-chosen event, never an evict rejection; a dead row is found."""

from __future__ import annotations

from evictable.model.lifecycle import CPU_MACHINE, CpuEvent
from evictable.proofs.base.records import Kind, Status
from evictable.proofs.explore import coverage
from evictable.proofs.obligations import explore_coverage


def test_the_explorer_fires_every_row_of_the_table() -> None:
    cov = coverage.coverage(explore_coverage.BOUNDS["quick"])
    assert cov.complete and cov.failure is None
    assert cov.rows == frozenset(CPU_MACHINE.transitions)
    assert not cov.missing() and not cov.forbidden()


def test_every_touch_row_is_executed_by_the_model() -> None:
    cov = coverage.coverage(explore_coverage.BOUNDS["quick"])
    touch_rows = {t for t in CPU_MACHINE.transitions if t.event is CpuEvent.TOUCH}
    assert len(touch_rows) == 4 and touch_rows <= cov.rows


def test_a_dead_row_fails_coverage() -> None:
    out = coverage.check_coverage(explore_coverage.BOUNDS["quick"], explore_coverage.DeadRowModel)
    assert out.status is Status.COUNTEREXAMPLE
    assert "never fired: row evict LOADING->ABSENT" in out.counterexample


def test_evict_rejections_are_unreachable_not_missing() -> None:
    cov = coverage.coverage(explore_coverage.BOUNDS["quick"])
    assert all(event not in coverage.POLICY_CHOSEN for event, _ in cov.refusals)
    expected = {(r.event, r.state.name) for r in CPU_MACHINE.rejections}
    assert {p for p in expected if p[0] not in coverage.POLICY_CHOSEN} == set(cov.refusals)


def test_the_obligation_is_an_exploration_with_a_control() -> None:
    ob, _gpu = explore_coverage.obligations("default")
    assert ob.kind is Kind.EXPLORED and ob.negative is not None
    assert ob.check(60).status is Status.PROVED


def test_edges_hands_every_call_its_key_events() -> None:
    seen: list[coverage.Call] = []

    def keep(call: coverage.Call) -> str | None:
        seen.append(call)
        return None

    walk = coverage.edges(explore_coverage.BOUNDS["quick"], keep)
    assert walk.complete and walk.failure is None and len(seen) == walk.transitions
    stores = [c for c in seen if c.op.method == "prepare_store" and not c.model.reply.raised]
    assert any(e.event is CpuEvent.EVICT for c in stores for e in c.events)


def test_the_pool_fires_every_row_of_the_gpu_table() -> None:
    from evictable.model.lifecycle import GPU_MACHINE, GpuEvent

    cov = coverage.gpu_coverage(3)
    assert cov.complete and cov.rows == frozenset(GPU_MACHINE.transitions)
    assert {e for e, _ in cov.refusals} == {GpuEvent.FREE}  # allocate's never fire


def test_a_dead_gpu_row_fails_coverage() -> None:
    from evictable.model.lifecycle import GPU_MACHINE
    from evictable.proofs.controls.tables import gpu_dead_row_table

    out = coverage.check_gpu_coverage(3, gpu_dead_row_table(GPU_MACHINE))
    assert out.status is Status.COUNTEREXAMPLE
    assert "never fired: row allocate IN_USE->IN_USE" in out.counterexample
