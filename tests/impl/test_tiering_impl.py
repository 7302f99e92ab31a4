"""Our tiering orchestrator (`evictable.impl.tiering.TieringManager`) on its own: strict
input, tier faults tolerated, a prefix longer than the primary answered, a poll round
from a thread."""

from __future__ import annotations

import threading
from collections.abc import Iterable

import pytest

from evictable.impl.tiering import PeerParent, TieringManager, TierJob
from evictable.model.errors import (
    DuplicateKeysError,
    DuplicateRequestError,
    InvalidArgumentError,
    RequestFinishedError,
    ShutdownError,
    UnknownRequestError,
)
from evictable.model.tiering_types import JobId, JobKind, JobOutcome, ReqId, TierAnswer
from evictable.model.types import Key


class MemoryTier:
    """A tier holding copies in a dict; jobs finish at the next report (or raise)."""

    serving = False
    request_level = False

    def __init__(self, fail: set[str] | None = None) -> None:
        self.copies: set[Key] = set()
        self.fail = fail or set()
        self.done: list[tuple[JobId, JobOutcome]] = []
        self.ended: list[ReqId] = []

    def maybe(self, what: str) -> None:
        if what in self.fail:
            raise RuntimeError(f"tier {what} fails")

    def lookup(self, key: Key, req: ReqId) -> TierAnswer:
        self.maybe("lookup")
        return TierAnswer.HIT if key in self.copies else TierAnswer.MISS

    def submit_store(self, job: TierJob) -> None:
        self.maybe("submit")
        self.copies.update(job.keys)
        self.done.append((job.job, JobOutcome.ok()))

    def submit_load(self, job: TierJob) -> None:
        self.maybe("submit")
        self.done.append((job.job, JobOutcome.ok()))

    def finished_jobs(self) -> Iterable[tuple[JobId, JobOutcome]]:
        self.maybe("report")
        out, self.done = self.done, []
        if "garbage" in self.fail:
            out = [(JobId(999), JobOutcome.ok()), "nonsense", *out, *out]  # type: ignore[list-item]
        return out

    def drain(self) -> None:
        self.maybe("drain")

    def serve_peers(self, parent: PeerParent) -> None:
        self.maybe("serve")

    def new_request(self, req: ReqId) -> None:
        self.maybe("new")

    def request_finished(self, req: ReqId) -> None:
        self.ended.append(req)
        self.maybe("finished")

    def end_of_step(self) -> None:
        self.maybe("end")

    def has_pending_work(self) -> bool:
        return bool(self.done)

    def shutdown(self) -> None:
        self.maybe("shutdown")


def step_until_answer(m: TieringManager, req: str, keys: list[str], steps: int = 10) -> int:
    for _ in range(steps):
        got = m.scan(ReqId(req), keys)
        m.end_step()
        if got is not None:
            return got
    raise AssertionError("the scan never answered")


def test_a_prefix_longer_than_the_primary_answers_the_part_that_fits() -> None:
    tier = MemoryTier()
    tier.copies.update(["a", "b", "c"])
    m = TieringManager(2, [tier])
    m.new_request(ReqId("r"))
    assert step_until_answer(m, "r", ["a", "b", "c"]) == 2


def test_a_completed_store_is_cascaded_and_the_request_finalised_once() -> None:
    tier = MemoryTier()
    m = TieringManager(4, [tier])
    r = ReqId("r")
    m.new_request(r)
    out = m.store(r, ["a", "b"])
    assert out is not None and out.keys_to_store == ["a", "b"]
    m.finish(r)
    assert tier.ended == []  # its store is outstanding
    m.complete_store(r, ["a", "b"])
    assert tier.copies == {"a", "b"} and tier.ended == [r]
    m.end_step()  # the step's poll point came with the store: reports are taken next step
    assert m.has_pending_work()
    m.end_step()
    assert not m.has_pending_work()


@pytest.mark.parametrize(
    "faults", [{"submit"}, {"report"}, {"lookup"}, {"garbage"}, {"finished", "end", "drain"}]
)
def test_tier_faults_leave_the_orchestrator_consistent(faults: set[str]) -> None:
    tier = MemoryTier(faults)
    tier.copies.update(["x"])
    m = TieringManager(2, [tier])
    for i in range(3):
        r = ReqId(f"r{i}")
        m.new_request(r)
        m.scan(r, ["x", f"k{i}"])
        m.store(r, [f"k{i}"])
        m.complete_store(r, [f"k{i}"])
        m.finish(r)
        m.end_step()
    m.reset()
    m.reset_flushed()
    m.primary.check_invariants()
    assert not m.jobs and not m.staged
    assert all(b.ref_cnt == 0 for b in m.primary.snapshot().blocks)


def test_rejects_bad_input_with_nothing_changed() -> None:
    m = TieringManager(2, [MemoryTier()])
    m.new_request(ReqId("r"))
    before = m.primary.snapshot()
    with pytest.raises(DuplicateKeysError):
        m.store(ReqId("r"), ["a", "a"])
    with pytest.raises(InvalidArgumentError):
        m.scan(ReqId("r"), "ab")
    with pytest.raises(UnknownRequestError):
        m.store(ReqId("nobody"), ["a"])
    with pytest.raises(InvalidArgumentError):
        m.complete_store(ReqId("r"), ["a"], success=1)  # type: ignore[arg-type]
    with pytest.raises(DuplicateRequestError):
        m.new_request(ReqId("r"))
    m.finish(ReqId("r"))
    with pytest.raises(UnknownRequestError):
        m.finish(ReqId("r"))  # finalised at once: nothing was outstanding
    assert m.primary.snapshot() == before


def test_rejects_a_second_finish_and_a_scan_after_finish() -> None:
    m = TieringManager(2, [MemoryTier()])
    r = ReqId("r")
    m.new_request(r)
    m.store(r, ["a"])
    m.finish(r)
    with pytest.raises(RequestFinishedError):
        m.finish(r)
    with pytest.raises(UnknownRequestError):
        m.scan(ReqId("s"), ["a"])


def test_rejects_calls_after_shutdown_and_bad_tiers() -> None:
    m = TieringManager(1)
    m.shutdown()
    with pytest.raises(ShutdownError):
        m.end_step()
    with pytest.raises(InvalidArgumentError):
        TieringManager(1, [object()])
    with pytest.raises(InvalidArgumentError):
        TieringManager()


def test_poll_rounds_from_a_thread_keep_the_state_consistent() -> None:
    tier = MemoryTier()
    tier.serving = True
    m = TieringManager(8, [tier])
    stop = threading.Event()

    def poller() -> None:
        while not stop.is_set():
            m.poll()

    thread = threading.Thread(target=poller)
    thread.start()
    try:
        for i in range(50):
            r = ReqId(f"r{i}")
            m.new_request(r)
            m.scan(r, [f"k{i % 5}"])
            out = m.store(r, [f"k{i % 5}"])
            if out is not None:
                m.complete_store(r, out.keys_to_store)
            m.finish(r)
            m.end_step()
    finally:
        stop.set()
        thread.join()
    m.end_step()
    m.primary.check_invariants()
    assert not m.jobs


def test_a_promotion_job_is_one_per_tier_and_request() -> None:
    tier = MemoryTier()
    tier.copies.update(["a", "b"])
    m = TieringManager(4, [tier])
    m.new_request(ReqId("r"))
    assert m.scan(ReqId("r"), ["a", "b"]) is None
    assert [len(k) for by in m.staged.values() for k, _ in by.values()] == [2]
    m.end_step()
    assert [rec.job.kind for rec in m.jobs.values()] == [JobKind.PROMOTION]
    assert step_until_answer(m, "r", ["a", "b"]) == 2
