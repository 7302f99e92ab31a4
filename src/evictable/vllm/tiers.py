"""vLLM 0.33's secondary tiers behind our orchestrator's tier protocol.

`VllmTier` wraps one vLLM `SecondaryTierManager` (fs, obj, p2p, kvcr, example, or an
out-of-tree tier built by vLLM's `SecondaryTierFactory`) as an
`evictable.impl.tiering.SecondaryTier`: our `TierJob` becomes vLLM's `TransferJob`
(the primary chunks' slots as its `chunk_ids`, the request's `ReqContext`), vLLM's
`JobResult` becomes `(job id, JobOutcome)` (success -> ok, a failure naming
successful keys -> partial, else failed), vLLM's `LookupResult` becomes a
`TierAnswer` (HIT_PENDING, which the tier API does not allow, is a MISS, as vLLM's
orchestrator treats it). `PeerShim` is vLLM's `ParentManager` handed to a serving
tier's `serve_external_requests`, over our orchestrator's `PeerParent` handle: each
`lookup` is one lookup in the serve's hold, `create_store_job` pins the hits in one
peer store job.

`Contexts` keeps each request's one `ReqContext` (vLLM's tiers key their own state by
it); the orchestrator's requests and the peers' requests share it.
"""

from __future__ import annotations

# first, before anything of vLLM: vLLM 0.33 present, or one clear ImportError
from evictable.vllm.base import VLLM_VERSION  # noqa: F401

# isort: split
from collections.abc import Collection, Iterable
from typing import Any

import numpy as np
from vllm.v1.kv_offload.base import (
    LookupResult,
    OffloadPolicy,
    ReqContext,
    RequestOffloadingContext,
    ScheduleEndContext,
)
from vllm.v1.kv_offload.tiering.base import ParentManager, TransferJob

from evictable.impl.tiering import JobReport, Parent, TierJob
from evictable.model.tiering_types import JobId, JobOutcome, ReqId, TierAnswer
from evictable.model.types import Key

__all__ = ["Contexts", "PeerShim", "VllmTier", "answer_of", "lookup_result"]

_ANSWERS = {
    LookupResult.HIT: TierAnswer.HIT,
    LookupResult.MISS: TierAnswer.MISS,
    LookupResult.RETRY: TierAnswer.RETRY,
    LookupResult.HIT_PENDING: TierAnswer.MISS,
}
_RESULTS = {
    TierAnswer.HIT: LookupResult.HIT,
    TierAnswer.HIT_PENDING: LookupResult.HIT_PENDING,
    TierAnswer.RETRY: LookupResult.RETRY,
    TierAnswer.MISS: LookupResult.MISS,
}
END_OF_STEP = ScheduleEndContext(new_req_ids=(), preempted_req_ids=())


def answer_of(result: object) -> TierAnswer:
    """A tier's `LookupResult` as our `TierAnswer` (anything else: MISS)."""
    return _ANSWERS.get(result, TierAnswer.MISS)


def lookup_result(answer: TierAnswer) -> Any:
    """Our orchestrator's answer as vLLM's `LookupResult`."""
    return _RESULTS[answer]


class Contexts:
    """Request id -> its one `ReqContext` (made on demand for an id never seen)."""

    def __init__(self) -> None:
        self.by_id: dict[str, Any] = {}

    def put(self, ctx: Any) -> None:
        self.by_id[ctx.req_id] = ctx

    def get(self, req: str) -> Any:
        ctx = self.by_id.get(req)
        if ctx is None:
            ctx = self.by_id[req] = ReqContext(req_id=req)
        return ctx

    def drop(self, req: str) -> None:
        self.by_id.pop(req, None)


class VllmTier:
    """One vLLM `SecondaryTierManager` as our `SecondaryTier` (module doc)."""

    request_level = False

    def __init__(self, tier: Any, contexts: Contexts) -> None:
        self.tier = tier
        self.contexts = contexts
        self.serving = bool(getattr(tier, "tolerates_off_thread_polling", False))
        self.schedule_end: Any = END_OF_STEP
        """The `ScheduleEndContext` handed to the tier's `on_schedule_end`."""
        self.request_level_reqs = 0
        """Requests for which the tier asked REQUEST_LEVEL (our orchestrator cascades
        every completed store, which covers what a request-level tier asks)."""

    def job(self, job: TierJob, promotion: bool) -> Any:
        return TransferJob(
            job_id=int(job.job),
            keys=list(job.keys),
            chunk_ids=np.array(job.slots, dtype=np.int32),
            is_promotion=promotion,
            req_context=self.contexts.get(job.req),
        )

    def lookup(self, key: Key, req: ReqId) -> TierAnswer:
        return answer_of(self.tier.lookup(key, self.contexts.get(req)))

    def submit_store(self, job: TierJob) -> None:
        self.tier.submit_store(self.job(job, False))

    def submit_load(self, job: TierJob) -> None:
        self.tier.submit_load(self.job(job, True))

    def finished_jobs(self) -> Iterable[JobReport]:
        reports: list[JobReport] = []
        for result in self.tier.get_finished_jobs():
            if result.success:
                outcome = JobOutcome.ok()
            elif result.successful_keys:
                outcome = JobOutcome.partial(tuple(result.successful_keys))
            else:
                outcome = JobOutcome.failed()
            reports.append((JobId(result.job_id), outcome))
        return reports

    def drain(self) -> None:
        self.tier.drain_jobs()

    def serve_peers(self, parent: Parent) -> None:
        self.tier.serve_external_requests(PeerShim(parent, self.contexts))

    def new_request(self, req: ReqId) -> None:
        got = self.tier.on_new_request(self.contexts.get(req))
        if getattr(got, "policy", None) is OffloadPolicy.REQUEST_LEVEL:
            self.request_level_reqs += 1

    def request_finished(self, req: ReqId) -> None:
        self.tier.on_request_finished(self.contexts.get(req))

    def end_of_step(self) -> None:
        self.tier.on_schedule_end(self.schedule_end)

    def has_pending_work(self) -> bool:
        return bool(self.tier.has_pending_work())

    def shutdown(self) -> None:
        self.tier.shutdown()


class PeerShim(ParentManager):  # type: ignore[misc]
    """vLLM's `ParentManager` over our orchestrator's handle for one serving tier,
    valid during one `serve_external_requests` call (module doc)."""

    def __init__(self, parent: Parent, contexts: Contexts) -> None:
        self.parent = parent
        self.contexts = contexts

    def on_new_request(self, req_context: Any) -> Any:
        self.contexts.put(req_context)
        self.parent.open_request(ReqId(req_context.req_id))
        return RequestOffloadingContext()

    def lookup(self, key: Any, req_context: Any) -> Any:
        return lookup_result(self.parent.lookup(ReqId(req_context.req_id), key))

    def create_store_job(self, keys: Collection[Any], req_context: Any) -> Any:
        job = self.parent.pin(ReqId(req_context.req_id), list(keys))
        return TransferJob(
            job_id=int(job.job),
            keys=list(job.keys),
            chunk_ids=np.array(job.slots, dtype=np.int32),
            is_promotion=False,
            req_context=req_context,
        )

    def on_request_finished(self, req_context: Any) -> None:
        self.parent.finish_request(ReqId(req_context.req_id))
