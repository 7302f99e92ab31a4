"""The tiering invariants: each one refuses the state it names, and skips what a snapshot
does not show."""

from __future__ import annotations

from dataclasses import replace

from evictable.model.invariants import INVARIANTS
from evictable.model.lifecycle import CpuState
from evictable.model.tiering import ModelTiering
from evictable.model.tiering_invariants import (
    BETWEEN_STEPS,
    FINDING_CLASS,
    POSTCONDITIONS,
    TIERING_INVARIANTS,
    check_tiering,
)
from evictable.model.tiering_types import (
    Cascade,
    GpuLoad,
    GpuStore,
    JobKind,
    JobOutcome,
    JobPhase,
    Micro,
    MicroKind,
    ReqId,
    RequestPhase,
    TierAnswer,
    TieringConfig,
    TieringSnapshot,
    TierSpec,
)

R0 = ReqId("r0")


def busy_snapshot() -> TieringSnapshot:
    """a loaded by r0, b pending for r0's store, a cascade of e in flight."""
    m = ModelTiering(TieringConfig(4, (TierSpec(),)))
    m.new_request(R0)
    m.store(R0, ["a", "c"])
    m.complete_store(R0, ["a", "c"])
    for j in m.snapshot().jobs:
        m.job_finishes(j.job, JobOutcome.ok())
    m.end_step()
    m.end_step()
    m.scan(R0, ["a"])
    m.store(R0, ["b", "e"])
    m.complete_store(R0, ["e"])
    return m.snapshot()


def with_chunk(s: TieringSnapshot, key: str, **changes: object) -> TieringSnapshot:
    chunks = {c if c.key != key else replace(c, **changes) for c in s.primary.chunks}  # type: ignore[arg-type]
    return replace(s, primary=replace(s.primary, chunks=frozenset(chunks)))


def test_every_invariant_is_registered_with_a_finding_class() -> None:
    names = {*TIERING_INVARIANTS, *BETWEEN_STEPS} | {n for d in POSTCONDITIONS.values() for n in d}
    assert names <= set(FINDING_CLASS)
    assert set(TIERING_INVARIANTS) | set(BETWEEN_STEPS) <= set(INVARIANTS)


def test_a_busy_state_holds_every_invariant() -> None:
    assert check_tiering(busy_snapshot(), between_steps=True).ok


def test_a_leaked_pin_breaks_pins_have_owners() -> None:
    s = with_chunk(busy_snapshot(), "a", ref_cnt=2, pins=(GpuLoad(R0), Cascade(99)))  # type: ignore[arg-type]
    assert "pins_have_owners" in check_tiering(s).violated


def test_a_lost_pin_breaks_owners_have_pins() -> None:
    s = with_chunk(busy_snapshot(), "a", state=CpuState.READY, ref_cnt=0, pins=())
    assert "owners_have_pins" in check_tiering(s).violated


def test_two_pending_owners_break_one_pending_owner() -> None:
    s = with_chunk(busy_snapshot(), "b", owners=(GpuStore(R0), GpuStore(ReqId("r9"))))
    assert "one_pending_owner" in check_tiering(s).violated
    assert "pending_owners_live" in check_tiering(s).violated


def test_a_ref_count_off_its_state_breaks_chunks_consistent() -> None:
    s = with_chunk(busy_snapshot(), "b", ref_cnt=0)
    assert "chunks_consistent" in check_tiering(s).violated


def test_an_eviction_after_a_hit_in_one_hold_breaks_hits_stay_resident() -> None:
    log = (
        Micro(MicroKind.OPEN, who=R0),
        Micro(MicroKind.LOOKUP, key="a", answer=TierAnswer.HIT),
        Micro(MicroKind.EVICT, key="a", state=CpuState.READY),
        Micro(MicroKind.CLOSE, who=R0),
    )
    s = replace(busy_snapshot(), log=log)
    assert "hits_stay_resident" in check_tiering(s).violated
    after_close = (*log[:2], log[3], log[2])
    assert "hits_stay_resident" not in check_tiering(replace(s, log=after_close)).violated


def test_evicting_a_pinned_chunk_breaks_only_idle_evicted() -> None:
    log = (Micro(MicroKind.EVICT, key="a", state=CpuState.LOADING),)
    assert "only_idle_evicted" in check_tiering(replace(busy_snapshot(), log=log)).violated


def test_a_completion_by_a_stranger_breaks_owner_completes() -> None:
    log = (Micro(MicroKind.COMPLETE, key="b", owner=GpuStore(ReqId("r9")), owners=(GpuStore(R0),)),)
    assert "owner_completes" in check_tiering(replace(busy_snapshot(), log=log)).violated


def test_a_double_finalisation_breaks_finalised_once() -> None:
    s = busy_snapshot()
    r = replace(s.requests[0], phase=RequestPhase.FINALISED, finalised=(2,))
    assert "finalised_once" in check_tiering(replace(s, requests=(r,))).violated


def test_hidden_pending_work_is_judged_between_steps_only() -> None:
    s = replace(busy_snapshot(), pending_work=False)
    assert "pending_work_visible" not in check_tiering(s).violated
    assert "pending_work_visible" in check_tiering(s, between_steps=True).violated


def test_the_reset_postcondition_refuses_work_left() -> None:
    s = busy_snapshot()
    assert "reset_left_nothing" in check_tiering(s, after="reset").violated


def test_parts_a_snapshot_does_not_show_are_skipped_not_passed() -> None:
    s = replace(busy_snapshot(), log=None, copies=None, pending_work=None)
    verdict = check_tiering(s, between_steps=True)
    assert {"hits_stay_resident", "only_idle_evicted", "owner_completes"} <= set(verdict.skipped)
    assert {"copies_written_by_jobs", "pending_work_visible"} <= set(verdict.skipped)
    assert not set(verdict.skipped) & set(verdict.violated)


def test_a_stale_promotion_write_breaks_no_stale_write() -> None:
    s = busy_snapshot()
    job = replace(s.jobs[0], phase=JobPhase.SUBMITTED)
    stale = replace(job, kind=JobKind.PROMOTION, keys=("b",), slots=(7,))
    assert "no_stale_write" in check_tiering(replace(s, jobs=(stale,))).violated
