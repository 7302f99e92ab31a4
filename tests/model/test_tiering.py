"""The reference tiering orchestrator: each operation, each rejection (typed error,
snapshot unchanged), and the two profiles."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from evictable.model.errors import (
    DuplicateKeysError,
    DuplicateRequestError,
    InvalidArgumentError,
    LifecycleError,
    RequestFinishedError,
    ShutdownError,
    TieringAssertionError,
    TierSubmitError,
    UnknownJobError,
    UnknownRequestError,
    UnknownTierError,
)
from evictable.model.lifecycle import CpuState
from evictable.model.tiering import ModelTiering, check_profile
from evictable.model.tiering_invariants import check_tiering
from evictable.model.tiering_types import (
    Cascade,
    CopyState,
    GpuLoad,
    GpuStore,
    JobId,
    JobKind,
    JobOutcome,
    JobPhase,
    MicroKind,
    PeerPhase,
    ProbePhase,
    Profile,
    ReqId,
    RequestPhase,
    StagedPromotion,
    SubmittedPromotion,
    TierAnswer,
    TierId,
    TieringConfig,
    TieringSnapshot,
    TierSpec,
)

R0, R1 = ReqId("r0"), ReqId("r1")
T0, T1 = TierId(0), TierId(1)


def make(slots: int = 2, *tiers: TierSpec, profile: str = "spec") -> ModelTiering:
    return ModelTiering(TieringConfig(slots, tiers or (TierSpec(),)), profile)


def finish_all(m: ModelTiering, outcome: JobOutcome | None = None) -> None:
    """Every submitted job finishes (ok by default)."""
    for j in m.snapshot().jobs:
        if j.phase is JobPhase.SUBMITTED:
            m.job_finishes(j.job, outcome or JobOutcome.ok())


def stored(m: ModelTiering, req: ReqId, *keys: str) -> None:
    """`req` stores `keys` (GPU store done), the cascades finish and are processed (the
    store's step polled already: the next step's poll point takes them)."""
    m.store(req, list(keys))
    m.complete_store(req, list(keys))
    finish_all(m)
    m.end_step()
    m.end_step()


def chunk_states(s: TieringSnapshot) -> dict[object, str]:
    return {c.key: c.state.name for c in s.primary.chunks}


def assert_ok(m: ModelTiering) -> None:
    assert check_tiering(m.snapshot(), between_steps=True).ok


# ---------------------------------------------------------------- construction


def test_rejects_a_bad_profile() -> None:
    with pytest.raises(InvalidArgumentError, match=r"vllm-0\.33"):
        check_profile("vllm-0.32")


def test_rejects_a_bad_config() -> None:
    with pytest.raises(InvalidArgumentError):
        ModelTiering(TieringConfig(-1))
    with pytest.raises(InvalidArgumentError):
        ModelTiering("two slots")  # type: ignore[arg-type]


def test_a_fresh_orchestrator_is_empty_and_idle() -> None:
    m = make()
    s = m.snapshot()
    assert not s.primary.chunks and not s.jobs and not s.requests
    assert m.has_pending_work() is False
    assert s.log == ()


# ---------------------------------------------------------------- the scan


def test_scan_answers_the_resident_prefix_and_pins_it() -> None:
    m = make(2)
    m.new_request(R0)
    stored(m, R0, "a")
    m.new_request(R1)
    assert m.scan(R1, ["a", "b"]) == 1
    c = m.snapshot().chunk("a")
    assert c is not None and c.state is CpuState.LOADING
    assert GpuLoad(R1) in c.pins
    m.complete_load(R1, ["a"])
    assert chunk_states(m.snapshot())["a"] == "READY"
    assert_ok(m)


def test_scan_of_no_key_answers_zero() -> None:
    m = make()
    m.new_request(R0)
    assert m.scan(R0, []) == 0


def test_scan_promotes_from_a_tier_and_answers_try_later() -> None:
    m = make(1)
    m.new_request(R0)
    stored(m, R0, "a")  # a READY, cascaded to tier 0
    m.store(R0, ["b"])  # evicts a; a stays in the tier
    m.complete_store(R0, ["b"], success=False)
    m.end_step()
    m.new_request(R1)
    assert m.scan(R1, ["a"]) is None  # a promoted: HIT_PENDING
    s = m.snapshot()
    assert s.staged[0].keys == ("a",)
    assert s.chunk("a") is not None and StagedPromotion(T0, R1) in s.chunk("a").owners  # type: ignore[union-attr]
    m.end_step()  # submitted
    job = m.snapshot().jobs[0]
    assert job.kind is JobKind.PROMOTION and job.phase is JobPhase.SUBMITTED
    assert m.snapshot().chunk("a").owners == (SubmittedPromotion(job.job),)  # type: ignore[union-attr]
    m.job_finishes(job.job, JobOutcome.ok())
    assert m.scan(R1, ["a"]) == 1  # its poll point processes the promotion
    assert_ok(m)


def test_spec_scan_answers_what_fits_and_vllm_never_answers() -> None:
    for profile, answers in (("spec", 1), ("vllm-0.33", None)):
        m = make(1, profile=profile)
        m.new_request(R0)
        for key in ("a", "b"):
            stored(m, R0, key)
        m.new_request(R1)
        got = []
        for _ in range(4):
            got.append(m.scan(R1, ["a", "b"]))
            m.end_step()
            finish_all(m)
        assert got[-1] == answers, (profile, got)


def test_a_promotion_in_a_scan_evicts_a_reported_hit_only_in_vllm() -> None:
    for profile, evicted in (("spec", False), ("vllm-0.33", True)):
        m = make(1, profile=profile)
        m.new_request(R0)
        for key in ("b", "a"):
            stored(m, R0, key)  # a READY, both in the tier
        m.new_request(R1)
        m.scan(R1, ["a", "b"])
        log = m.snapshot().log or ()
        assert any(x.kind is MicroKind.EVICT for x in log) is evicted
        assert check_tiering(m.snapshot()).ok is not evicted


# ---------------------------------------------------------------- stores


def test_store_allocates_evicts_and_completes_with_cascades() -> None:
    m = make(1, TierSpec(), TierSpec())
    m.new_request(R0)
    out = m.store(R0, ["a"])
    assert out is not None and out.keys_to_store == ["a"] and out.slot_ids == [0]
    c = m.snapshot().chunk("a")
    assert c is not None and c.owners == (GpuStore(R0),)
    m.complete_store(R0, ["a"])
    jobs = m.snapshot().jobs
    assert [(j.tier, j.kind) for j in jobs] == [(T0, JobKind.CASCADE), (T1, JobKind.CASCADE)]
    assert m.snapshot().chunk("a").pins == (Cascade(jobs[0].job), Cascade(jobs[1].job))  # type: ignore[union-attr]
    assert m.store(R0, ["b"]) is None  # a pinned by its cascades: no room
    finish_all(m)
    copies = {(c.tier, c.key): c.state for c in m.snapshot().copies or ()}
    assert copies == {(T0, "a"): CopyState.PRESENT, (T1, "a"): CopyState.PRESENT}
    out = m.store(R0, ["b"])  # processes the cascades first
    assert out is not None and out.evicted_keys == ["a"]
    assert_ok(m)


def test_a_failed_store_frees_its_slot_and_cascades_nothing() -> None:
    m = make(1)
    m.new_request(R0)
    m.store(R0, ["a"])
    m.complete_store(R0, ["a"], success=False)
    s = m.snapshot()
    assert not s.primary.chunks and not s.jobs and s.primary.free_stack == (0,)


def test_a_request_is_finalised_once_after_its_last_store() -> None:
    m = make(1, TierSpec(), TierSpec())
    m.new_request(R0)
    m.store(R0, ["a"])
    m.finish(R0)
    r = m.snapshot().request(R0)
    assert r is not None and r.phase is RequestPhase.FINISHED and r.finalised == (0, 0)
    m.complete_store(R0, ["a"])
    r = m.snapshot().request(R0)
    assert r is not None and r.phase is RequestPhase.FINALISED and r.finalised == (1, 1)
    assert_ok(m)


def test_spec_ignores_a_completion_of_a_store_a_reset_cancelled() -> None:
    m = make(1)
    m.new_request(R0)
    m.store(R0, ["a"])
    m.reset()
    m.new_request(R1)
    m.store(R1, ["a"])  # the key is R1's now
    before = m.snapshot().chunk("a")
    m.complete_store(R0, ["a"])  # R0's late completion
    assert m.snapshot().chunk("a") == before
    assert_ok(m)


def test_vllm_lets_a_late_completion_complete_another_owners_chunk() -> None:
    m = make(1, profile="vllm-0.33")
    m.new_request(R0)
    m.store(R0, ["a"])
    m.reset()
    m.new_request(R1)
    m.store(R1, ["a"])
    with pytest.raises(TieringAssertionError):
        m.complete_store(R0, ["a"])  # completes R1's chunk, cascades, then asserts
    verdict = check_tiering(m.snapshot())
    assert "owner_completes" in verdict.violated


# ---------------------------------------------------------- peers and polls


def test_a_peer_lookup_is_served_at_the_next_poll_and_pins_its_hits() -> None:
    m = make(2, TierSpec(serving=True), TierSpec())
    m.new_request(R0)
    stored(m, R0, "a")
    m.peer_request(T0, ["a", "z"])
    assert m.snapshot().peers[0].phase is PeerPhase.QUEUED  # type: ignore[index]
    assert m.has_pending_work()
    m.poll()
    s = m.snapshot()
    (job,) = s.jobs
    assert job.kind is JobKind.PEER_STORE and job.keys == ("a",) and job.tier == T0
    peer = s.request(ReqId("peer0"))
    assert peer is not None and peer.phase is RequestPhase.FINALISED
    assert peer.finalised == (0, 1) and peer.origin == T0  # its own tier is never told
    m.job_finishes(job.job, JobOutcome.ok())  # the peer fetched
    m.poll()
    assert chunk_states(m.snapshot())["a"] == "READY"
    assert_ok(m)


def test_a_peer_serve_pins_an_evicted_hit_only_in_vllm() -> None:
    for profile in ("spec", "vllm-0.33"):
        m = make(1, TierSpec(serving=True), TierSpec(), profile=profile)
        m.new_request(R0)
        for key in ("b", "a"):
            stored(m, R0, key)  # a READY in the primary, both in tier 1
        m.peer_request(T0, ["a", "b"])
        if profile == "spec":
            m.poll()
            assert [j.keys for j in m.snapshot().jobs] == [("a",)]
            assert_ok(m)
        else:
            with pytest.raises(TieringAssertionError, match="not readable"):
                m.poll()
            assert "hits_stay_resident" in check_tiering(m.snapshot()).violated


def test_a_parked_peer_lookup_gives_up_at_its_deadline() -> None:
    m = make(1, TierSpec(serving=True), TierSpec())
    m.new_request(R0)
    stored(m, R0, "a")  # a in tier 1
    m.store(R0, ["b"])  # a evicted, b pending
    m.peer_request(T0, ["b"])
    m.poll()  # b HIT_PENDING: parked
    assert m.snapshot().peers[0].phase is PeerPhase.PARKED  # type: ignore[index]
    m.peer_gives_up(T0)
    s = m.snapshot()
    assert s.peers == () and s.request(ReqId("peer0")).phase is RequestPhase.FINALISED  # type: ignore[union-attr]
    with pytest.raises(UnknownJobError):
        m.peer_gives_up(T0)


def test_a_poll_round_keeps_the_steps_gate() -> None:
    m = make(1, TierSpec(serving=True))
    m.new_request(R0)
    m.scan(R0, ["a"])  # the step's first lookup closed the gate
    assert m.snapshot().gate is True
    m.end_step()
    m.poll()
    assert m.snapshot().gate is False


# ---------------------------------------------------------------- reset


def test_reset_leaves_nothing_in_flight_staged_or_pinned() -> None:
    m = make(2, TierSpec(serving=True), TierSpec())
    m.new_request(R0)
    stored(m, R0, "a")
    m.store(R0, ["b"])
    m.complete_store(R0, ["b"])  # cascades in flight
    m.peer_request(T0, ["a"])
    m.poll()  # a peer store awaits its fetch
    m.finish(R0)
    m.reset()
    s = m.snapshot()
    assert check_tiering(s, after="reset").ok
    assert not s.jobs and not s.staged and not s.primary.chunks and s.held
    assert s.request(R0).phase is RequestPhase.FINALISED  # type: ignore[union-attr]
    m.new_request(R1)
    assert m.scan(R1, ["a"]) == 0  # promotions held: MISS
    m.reset_flushed()
    assert m.scan(R1, ["a"]) is None  # promoted again


def test_vllm_reset_asserts_over_a_peer_store_awaiting_its_fetch() -> None:
    m = make(2, TierSpec(serving=True), profile="vllm-0.33")
    m.new_request(R0)
    stored(m, R0, "a")
    m.peer_request(T0, ["a"])
    m.poll()
    with pytest.raises(TieringAssertionError, match="never reported"):
        m.reset()
    assert m.snapshot().primary.chunks  # half reset: the primary was not reset


# ---------------------------------------------------------------- tier faults


def test_a_raising_cascade_submit_fails_its_job_in_spec() -> None:
    m = make(1)
    m.new_request(R0)
    m.store(R0, ["a"])
    m.submit_raises(T0)
    m.complete_store(R0, ["a"])
    s = m.snapshot()
    assert not s.jobs and chunk_states(s) == {"a": "READY"} and not s.armed
    assert_ok(m)


def test_a_raising_cascade_submit_leaks_its_job_in_vllm() -> None:
    m = make(1, profile="vllm-0.33")
    m.new_request(R0)
    m.store(R0, ["a"])
    m.submit_raises(T0)
    with pytest.raises(TierSubmitError):
        m.complete_store(R0, ["a"])
    s = m.snapshot()
    assert [j.phase for j in s.jobs] == [JobPhase.REGISTERED]
    assert s.request(R0).store_calls == 1  # type: ignore[union-attr]
    assert m.has_pending_work()
    with pytest.raises(TieringAssertionError):
        m.reset()


def test_a_raising_promotion_submit_owns_a_chunk_twice_in_vllm() -> None:
    m = make(2, profile="vllm-0.33")
    m.new_request(R0)
    for key in ("a", "b"):
        stored(m, R0, key)
    m.store(R0, ["c", "d"])  # evicts a and b
    m.complete_store(R0, ["c", "d"], success=False)
    m.end_step()
    m.new_request(R1)
    m.scan(R0, ["a"])
    m.scan(R1, ["b"])
    m.submit_raises(T0)
    with pytest.raises(TierSubmitError):
        m.end_step()  # r0's promotion submitted, r1's raises
    m.end_step()  # both submitted again
    assert "one_pending_owner" in check_tiering(m.snapshot()).violated


def test_a_stray_report_is_ignored_in_spec_and_loses_the_batch_in_vllm() -> None:
    for profile in ("spec", "vllm-0.33"):
        m = make(1, profile=profile)
        m.new_request(R0)
        m.store(R0, ["a"])
        m.complete_store(R0, ["a"])
        finish_all(m)
        m.tier_reports_unknown(T0)
        m.end_step()  # the store's step polled already
        if profile == "spec":
            m.end_step()
            assert not m.snapshot().jobs
        else:
            with pytest.raises(TieringAssertionError):
                m.end_step()
            assert [j.phase for j in m.snapshot().jobs] == [JobPhase.REGISTERED]


def test_a_garbage_partial_outcome_keeps_only_the_jobs_keys_in_spec() -> None:
    m = make(1)
    m.new_request(R0)
    stored(m, R0, "a")
    m.store(R0, ["b"])
    m.complete_store(R0, ["b"], success=False)
    m.end_step()
    m.new_request(R1)
    m.scan(R1, ["a"])
    m.end_step()
    (job,) = m.snapshot().jobs
    m.job_finishes(job.job, JobOutcome.partial(("a", "zz")))
    m.end_step()
    assert chunk_states(m.snapshot()) == {"a": "READY"}


def test_an_async_tier_answers_retry_until_its_probe_answers() -> None:
    m = make(1, TierSpec(async_lookup=True))
    m.new_request(R0)
    assert m.scan(R0, ["a"]) is None  # RETRY
    probes = m.snapshot().probes
    assert probes is not None
    (probe,) = probes
    assert probe.phase is ProbePhase.QUEUED
    assert m.has_pending_work()
    m.end_step()  # posted
    m.probe_answers(T0, "a", False)
    assert m.scan(R0, ["a"]) == 0
    m.finish(R0)
    assert not m.snapshot().probes  # released with its request


def test_a_tier_drop_loses_its_copy() -> None:
    m = make(1)
    m.new_request(R0)
    stored(m, R0, "a")
    m.tier_drops(T0, "a")
    assert not m.snapshot().copies


# ---------------------------------------------------------------- rejections


def rejects(m: ModelTiering, call: Callable[[], object], error: type[LifecycleError]) -> None:
    before = m.snapshot()
    with pytest.raises(error):
        call()
    assert m.snapshot() == before


@pytest.fixture
def busy() -> ModelTiering:
    m = make(2, TierSpec(serving=True), TierSpec(async_lookup=True))
    m.new_request(R0)
    stored(m, R0, "a")
    m.store(R0, ["b"])
    return m


def test_rejects_a_known_request_id(busy: ModelTiering) -> None:
    rejects(busy, lambda: busy.new_request(R0), DuplicateRequestError)


def test_rejects_a_non_str_request_id(busy: ModelTiering) -> None:
    rejects(busy, lambda: busy.new_request(7), InvalidArgumentError)  # type: ignore[arg-type]


def test_rejects_an_unknown_request(busy: ModelTiering) -> None:
    rejects(busy, lambda: busy.scan(R1, ["a"]), UnknownRequestError)
    rejects(busy, lambda: busy.store(R1, ["a"]), UnknownRequestError)
    rejects(busy, lambda: busy.complete_store(R1, ["a"]), UnknownRequestError)
    rejects(busy, lambda: busy.complete_load(R1, ["a"]), UnknownRequestError)
    rejects(busy, lambda: busy.finish(R1), UnknownRequestError)


def test_rejects_duplicate_keys(busy: ModelTiering) -> None:
    rejects(busy, lambda: busy.scan(R0, ["a", "a"]), DuplicateKeysError)
    rejects(busy, lambda: busy.store(R0, ["c", "c"]), DuplicateKeysError)
    rejects(busy, lambda: busy.peer_request(T0, ["a", "a"]), DuplicateKeysError)


def test_rejects_a_second_finish_and_a_scan_after_it(busy: ModelTiering) -> None:
    busy.finish(R0)
    rejects(busy, lambda: busy.finish(R0), RequestFinishedError)
    rejects(busy, lambda: busy.scan(R0, ["a"]), RequestFinishedError)


def test_rejects_a_bad_success_flag(busy: ModelTiering) -> None:
    rejects(busy, lambda: busy.complete_store(R0, ["b"], success=1), InvalidArgumentError)  # type: ignore[arg-type]


def test_rejects_an_event_of_a_job_not_in_flight(busy: ModelTiering) -> None:
    rejects(busy, lambda: busy.job_finishes(JobId(99), JobOutcome.ok()), UnknownJobError)
    rejects(busy, lambda: busy.job_finishes(JobId(0), "ok"), InvalidArgumentError)  # type: ignore[arg-type]


def test_rejects_events_a_tier_cannot_have(busy: ModelTiering) -> None:
    rejects(busy, lambda: busy.submit_raises(TierId(5)), UnknownTierError)
    rejects(busy, lambda: busy.peer_request(T1, ["a"]), UnknownTierError)
    rejects(busy, lambda: busy.probe_answers(T0, "a", True), UnknownTierError)
    rejects(busy, lambda: busy.probe_answers(T1, "a", True), UnknownJobError)
    rejects(busy, lambda: busy.tier_drops(True, "a"), UnknownTierError)  # type: ignore[arg-type]


def test_rejects_every_call_after_shutdown(busy: ModelTiering) -> None:
    busy.shutdown()
    rejects(busy, busy.end_step, ShutdownError)
    rejects(busy, lambda: busy.new_request(R1), ShutdownError)


# ---------------------------------------------------------------- snapshots


def test_restore_rebuilds_the_same_state(busy: ModelTiering) -> None:
    snap = busy.snapshot()
    again = ModelTiering.restore(snap, Profile.SPEC)
    assert again.snapshot() == snap
    again.complete_store(R0, ["b"])
    busy.complete_store(R0, ["b"])
    assert again.snapshot() == busy.snapshot()


def test_the_log_records_a_scans_hold() -> None:
    m = make(2)
    m.new_request(R0)
    stored(m, R0, "a")
    m.new_request(R1)
    m.scan(R1, ["a", "b"])
    kinds = [(x.kind, x.key, x.answer) for x in m.snapshot().log or ()]
    assert kinds == [
        (MicroKind.OPEN, None, None),
        (MicroKind.LOOKUP, "a", TierAnswer.HIT),
        (MicroKind.LOOKUP, "b", TierAnswer.MISS),
        (MicroKind.PIN, "a", None),
        (MicroKind.CLOSE, None, None),
    ]
