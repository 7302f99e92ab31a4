"""Our tiering orchestrator inside vLLM 0.33 (`evictable.vllm`'s `EvictableTieringSpec`)
against vLLM's own (`TieringOffloadingSpec`), side by side.

The behaviours vLLM's own tiering tests check (its `test_tiering_offloading.py` and its
fs tier's, restated here in our words, through the manager vLLM's connector calls):
each test runs on both orchestrators, built by vLLM's spec factory from the same
extra config -- the only difference is `spec_name` / `spec_module_path`. Where ours
differs on purpose (a defect of vLLM's fixed), the test says which finding, and
asserts each side's own answer.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from typing import Any
from unittest.mock import MagicMock

import pytest

pytest.importorskip("vllm")

from vllm.distributed.kv_transfer.kv_connector.v1.offloading.metrics import (
    OffloadingConnectorStats,
)
from vllm.v1.kv_offload.base import (
    LookupResult,
    Medium,
    OffloadingEvent,
    ReqContext,
    ScheduleEndContext,
    make_offload_key,
)
from vllm.v1.kv_offload.factory import OffloadingSpecFactory
from vllm.v1.kv_offload.tiering.base import JobResult

from evictable.proofs.adapters.vllm.tiering_build import offloading_config, stub_p2p_transports

OURS = {"spec_name": "EvictableTieringSpec", "spec_module_path": "evictable.vllm"}
THEIRS = {"spec_name": "TieringOffloadingSpec"}
SIDES = ("vllm", "ours")
CTX = ReqContext(req_id="r")
EXAMPLES = [{"type": "example"}, {"type": "example"}]
STEP_BACKSTOP = 400
"""Steps a test waits for vLLM's fs threads at most (a hang backstop, not a verdict)."""


def keys(ids: Any) -> list[Any]:
    return [make_offload_key(str(i).encode(), 0) for i in ids]


def build(side: str, num_chunks: int, tiers: list[dict[str, Any]]) -> Any:
    """A manager as vLLM's connector gets it: vLLM's spec factory, one extra config."""
    config = offloading_config(num_chunks, tiers)
    config.extra_config.update(OURS if side == "ours" else THEIRS)
    spec = OffloadingSpecFactory.create_spec(config)
    with stub_p2p_transports():
        return spec.get_manager()


@pytest.fixture(params=SIDES)
def side(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def made(side: str) -> Iterator[Any]:
    m = build(side, 5, EXAMPLES)
    yield m
    m.shutdown()


def end_step(m: Any) -> None:
    m.on_schedule_end(ScheduleEndContext(new_req_ids=[], preempted_req_ids=()))
    list(m.take_events())


def primary_answer(m: Any, key: Any) -> Any:
    """The primary tier's own answer for `key` (no tier consulted)."""
    if hasattr(m, "orch"):
        return LookupResult[m.orch.primary.lookup(key).name]
    return m.primary_tier.lookup(key, CTX)


def ref_cnt(m: Any, key: Any) -> int:
    if hasattr(m, "orch"):
        (entry,) = [b for b in m.orch.primary.snapshot().blocks if b.key == key]
        return int(entry.ref_cnt)
    return int(m.primary_tier._policy.get(key).ref_cnt)


def leading_hits(m: Any, batch: list[Any], ctx: Any = CTX, primary: bool = False) -> int | None:
    """Leading HITs, or None once a lookup answers HIT_PENDING or RETRY."""
    n = 0
    for key in batch:
        got = primary_answer(m, key) if primary else m.lookup(key, ctx)
        if got in (LookupResult.HIT_PENDING, LookupResult.RETRY):
            return None
        if got is not LookupResult.HIT:
            break
        n += 1
    return n


def stored(m: Any, batch: list[Any], ctx: Any = CTX) -> Any:
    m.on_new_request(ctx)
    out = m.prepare_store(batch, ctx)
    m.complete_store(batch, ctx, success=True)
    return out


# ---------------------------------------------------------------- the spec


def test_the_three_config_lines_select_our_orchestrator_over_vllms_fs_tier() -> None:
    root = tempfile.mkdtemp()
    m = build("ours", 4, [{"type": "fs", "root_dir": root}])
    try:
        assert type(m).__name__ == "EvictableTieringManager"
        assert [type(t).__name__ for t in m.secondary_tiers] == ["FileSystemTierManager"]
    finally:
        m.shutdown()


def test_rejects_a_primary_policy_ours_does_not_have() -> None:
    config = offloading_config(2, [])
    config.extra_config.update(OURS, eviction_policy="NoSuchPolicy")
    spec = OffloadingSpecFactory.create_spec(config)
    with pytest.raises(ValueError, match="eviction_policy"):
        spec.get_manager()


# ---------------------------------------------------------------- vLLM's cases


def test_a_store_lands_in_the_primary(made: Any) -> None:
    out = stored(made, keys(range(3)))
    assert out is not None and len(out.keys_to_store) == 3
    assert leading_hits(made, keys(range(3)), primary=True) == 3


def test_a_completed_store_cascades_to_every_tier(made: Any) -> None:
    t1, t2 = made.secondary_tiers
    t1.submit_store = MagicMock(wraps=t1.submit_store)
    t2.submit_store = MagicMock(wraps=t2.submit_store)
    stored(made, keys(range(3)))
    t1.submit_store.assert_called_once()
    t2.submit_store.assert_called_once()
    for tier in (t1, t2):
        assert tier.get_num_chunks() == 3
        assert all(tier.lookup(k, CTX) is LookupResult.HIT for k in keys(range(3)))


def test_a_cascade_pins_its_chunks_until_its_report_is_taken(made: Any) -> None:
    stored(made, keys(range(3)))
    assert [ref_cnt(made, k) for k in keys(range(3))] == [2, 2, 2]
    end_step(made)  # this step already polled (prepare_store): reports wait
    assert [ref_cnt(made, k) for k in keys(range(3))] == [2, 2, 2]
    end_step(made)  # the next step's poll point takes them
    assert [ref_cnt(made, k) for k in keys(range(3))] == [0, 0, 0]


def test_a_lookup_hits_the_primary(made: Any) -> None:
    stored(made, keys(range(3)))
    assert leading_hits(made, keys(range(3))) == 3


def test_a_partial_prefix_counts_the_leading_hits(made: Any) -> None:
    stored(made, keys(range(3)))
    assert leading_hits(made, keys(range(5))) == 3


def test_a_tier_hit_is_promoted_and_then_hits(made: Any) -> None:
    t1 = made.secondary_tiers[0]
    for k in keys(range(3)):
        t1.chunks[k] = True
    made.on_new_request(CTX)
    assert [made.lookup(k, CTX) for k in keys(range(3))] == [LookupResult.HIT_PENDING] * 3
    end_step(made)  # submitted
    end_step(made)  # reported
    assert leading_hits(made, keys(range(3)), primary=True) == 3
    assert leading_hits(made, keys(range(3))) == 3


@pytest.mark.parametrize(
    ("written", "expected"),
    [((0, 2), ["HIT", "MISS", "HIT"]), (None, ["MISS", "MISS", "MISS"])],
    ids=["partial", "failed"],
)
def test_a_failed_promotion_keeps_only_the_keys_it_wrote(
    made: Any, written: tuple[int, ...] | None, expected: list[str]
) -> None:
    t1 = made.secondary_tiers[0]
    batch = keys(range(3))
    for k in batch:
        t1.chunks[k] = True

    def partial(job: Any) -> None:
        ok = None if written is None else tuple(batch[i] for i in written)
        t1.completed_jobs.append(JobResult(job_id=job.job_id, success=False, successful_keys=ok))

    t1.submit_load = partial
    made.on_new_request(CTX)
    assert [made.lookup(k, CTX) for k in batch] == [LookupResult.HIT_PENDING] * 3
    end_step(made)
    end_step(made)
    assert [primary_answer(made, k).name for k in batch] == expected


def test_a_full_primary_evicts_for_a_new_store(made: Any) -> None:
    stored(made, keys(range(5)))
    end_step(made)
    out = made.prepare_store(keys(range(5, 7)), CTX)
    assert out is not None
    assert (len(out.evicted_keys), len(out.keys_to_store)) == (2, 2)


def test_a_touch_reaches_every_tier(made: Any) -> None:
    stored(made, keys(range(3)))
    end_step(made)
    end_step(made)
    t1, t2 = made.secondary_tiers
    t1.touch = MagicMock(wraps=t1.touch)
    t2.touch = MagicMock(wraps=t2.touch)
    made.touch(keys(range(3)), CTX)
    t1.touch.assert_called_once_with(keys(range(3)), CTX)
    t2.touch.assert_called_once_with(keys(range(3)), CTX)


def test_a_failed_gpu_store_is_not_cascaded(made: Any) -> None:
    t1, t2 = made.secondary_tiers
    t1.submit_store = MagicMock(wraps=t1.submit_store)
    t2.submit_store = MagicMock(wraps=t2.submit_store)
    made.on_new_request(CTX)
    assert made.prepare_store(keys(range(3)), CTX) is not None
    made.complete_store(keys(range(3)), CTX, success=False)
    t1.submit_store.assert_not_called()
    t2.submit_store.assert_not_called()


def test_promotions_are_submitted_at_the_end_of_the_step_one_job_per_request(
    made: Any,
) -> None:
    t1 = made.secondary_tiers[0]
    batch = keys(range(4))
    for k in batch:
        t1.chunks[k] = True
    t1.submit_load = MagicMock(wraps=t1.submit_load)
    a, b = ReqContext(req_id="a"), ReqContext(req_id="b")
    for ctx in (a, b):
        made.on_new_request(ctx)
    got = [made.lookup(batch[i], a if i < 2 else b) for i in range(4)]
    assert got == [LookupResult.HIT_PENDING] * 4
    t1.submit_load.assert_not_called()
    end_step(made)
    jobs = [c.args[0] for c in t1.submit_load.call_args_list]
    assert [(set(j.keys), j.req_context) for j in jobs] == [
        (set(batch[:2]), a),
        (set(batch[2:]), b),
    ]
    assert jobs[0].req_context is a and jobs[1].req_context is b


def test_a_key_two_requests_look_up_is_promoted_once(made: Any) -> None:
    t1 = made.secondary_tiers[0]
    (k,) = keys([0])
    t1.chunks[k] = True
    t1.submit_load = MagicMock(wraps=t1.submit_load)
    a, b = ReqContext(req_id="a"), ReqContext(req_id="b")
    for ctx in (a, b):
        made.on_new_request(ctx)
    assert [made.lookup(k, a), made.lookup(k, b)] == [LookupResult.HIT_PENDING] * 2
    end_step(made)
    t1.submit_load.assert_called_once()
    job = t1.submit_load.call_args.args[0]
    assert list(job.keys) == [k] and job.req_context is a


def test_a_cascade_carries_its_requests_context(made: Any) -> None:
    t1 = made.secondary_tiers[0]
    t1.submit_store = MagicMock(wraps=t1.submit_store)
    ctx = ReqContext(req_id="c", kv_transfer_params={"key": "value"})
    stored(made, keys(range(2)), ctx)
    assert t1.submit_store.call_count == 1
    assert t1.submit_store.call_args.args[0].req_context is ctx


def test_the_tiers_hear_a_request_finish_after_its_last_store(made: Any) -> None:
    t1 = made.secondary_tiers[0]
    t1.on_request_finished = MagicMock(wraps=t1.on_request_finished)
    ctx = ReqContext(req_id="late")
    made.on_new_request(ctx)
    made.prepare_store(keys(range(2)), ctx)
    made.on_request_finished(ctx)
    t1.on_request_finished.assert_not_called()  # its store is outstanding
    made.complete_store(keys(range(2)), ctx, success=True)
    t1.on_request_finished.assert_called_once_with(ctx)


def test_the_tiers_events_are_passed_on(made: Any) -> None:
    t1, t2 = made.secondary_tiers
    e1 = OffloadingEvent(keys([2]), Medium.STORAGE, removed=False)
    e2 = OffloadingEvent(keys([3]), Medium.STORAGE, removed=True)
    t1.take_events = MagicMock(return_value=[e1])
    t2.take_events = MagicMock(return_value=[e2])
    assert [e for e in made.take_events() if e.medium is Medium.STORAGE] == [e1, e2]


def test_the_tiers_stats_are_aggregated(made: Any) -> None:
    t1 = made.secondary_tiers[0]
    mine = OffloadingConnectorStats()
    mine.increase_counter("evictable_test_counter", 7, ("example",))
    t1.get_stats = MagicMock(side_effect=[mine, None])
    stats = made.get_stats()
    assert stats is not None
    assert stats.data["data"]["evictable_test_counter"][("example",)] == 7
    again = made.get_stats()
    assert again is None or "evictable_test_counter" not in again.data["data"]


def test_config_info_lists_the_primary_then_each_tier(made: Any) -> None:
    labels = [info["tier"] for info in made.config_info()]
    assert labels == ["0:primary", "1:example", "2:example"]


def test_a_reset_drains_and_holds_promotions_until_flushed(made: Any) -> None:
    stored(made, keys(range(2)))
    made.reset_cache()
    assert not made.has_pending_work()
    assert leading_hits(made, keys(range(2)), primary=True) == 0
    assert made.lookup(keys([0])[0], CTX) is LookupResult.MISS  # promotions held
    made.on_reset_flushed()
    assert made.lookup(keys([0])[0], CTX) is LookupResult.HIT_PENDING


# ---------------------------------------------------------------- vLLM's fs tier


def settle_fs(m: Any, ctx: Any, batch: list[Any]) -> tuple[int, int | None]:
    """Step (lookups of `batch` for `ctx`, end of step) until the prefix answers;
    (steps, answer) -- the answer None if it never did within the backstop."""
    for step in range(STEP_BACKSTOP):
        with m.lock:
            got = leading_hits(m, batch, ctx)
            end_step(m)
        if got is not None:
            return step, got
        time.sleep(0.005)
    return STEP_BACKSTOP, None


def test_the_fs_tier_round_trip_through_each_orchestrator(side: str) -> None:
    m = build(side, 4, [{"type": "fs", "root_dir": tempfile.mkdtemp()}])
    try:
        with m.lock:
            stored(m, keys(range(3)), ReqContext(req_id="writer"))
            m.on_request_finished(ReqContext(req_id="writer"))
        for tier in m.secondary_tiers:
            tier.drain_jobs()
        with m.lock:
            end_step(m)
            end_step(m)
            m.reset_cache()
            m.on_reset_flushed()
        reader = ReqContext(req_id="reader")
        with m.lock:
            m.on_new_request(reader)
        _, answer = settle_fs(m, reader, keys(range(3)))
        assert answer == 3
    finally:
        m.shutdown()


# ---------------------------------------------------------------- on purpose


def test_a_prefix_longer_than_the_primary_answers_on_ours_only(side: str) -> None:
    """Tiering finding 2: vLLM's scan answers "try later" for ever; ours answers the
    part that fits (the resident keys, protected from this hold's promotions)."""
    m = build(side, 2, [{"type": "example"}])
    try:
        for i in range(3):
            with m.lock:
                stored(m, keys([i]), ReqContext(req_id=f"w{i}"))
                end_step(m)
        with m.lock:
            end_step(m)
        reader = ReqContext(req_id="reader")
        answers: list[int | None] = []
        with m.lock:
            m.on_new_request(reader)
        for _ in range(20):
            with m.lock:
                answers.append(leading_hits(m, keys(range(3)), reader))
                end_step(m)
        if side == "vllm":
            assert answers == [None] * 20
        else:
            assert 2 in answers
    finally:
        m.shutdown()


def test_a_raising_cascade_submit_is_survived_on_ours_only(side: str) -> None:
    """Tiering finding 5: vLLM lets the exception escape half way (the pin leaks, the
    next tier gets no cascade); ours fails that job, releases its pin, goes on."""
    m = build(side, 4, EXAMPLES)
    try:
        t1, t2 = m.secondary_tiers
        t1.submit_store = MagicMock(side_effect=RuntimeError("tier down"))
        t2.submit_store = MagicMock(wraps=t2.submit_store)
        (k,) = keys([1])
        m.on_new_request(CTX)
        m.prepare_store([k], CTX)
        if side == "vllm":
            with pytest.raises(RuntimeError, match="tier down"):
                m.complete_store([k], CTX, success=True)
            t2.submit_store.assert_not_called()
            assert ref_cnt(m, k) == 1
        else:
            m.complete_store([k], CTX, success=True)
            t2.submit_store.assert_called_once()
            end_step(m)
            end_step(m)
            assert ref_cnt(m, k) == 0
    finally:
        m.shutdown()
