"""vLLM 0.33: a promotion staged by a peer serve between steps is not pending work.

Needs a serving tier other than p2p (the p2p tier masks it: its has_pending_work() is
always True). `PeerTier` below serves peers between steps (tolerates_off_thread_polling)
and answers has_pending_work() for its own work, as the SecondaryTierManager API asks.
K1 is only in the example tier. Between steps a peer asks PeerTier for K1: the poll
round's serve looks K1 up, which stages a promotion (K1 PENDING in the primary tier),
and answers the peer. Then has_pending_work() answers False: it counts jobs, parked
cascades and the tiers' own work, not the staged promotions, which are submitted only by
on_schedule_end(). An idle engine stops stepping, the promotion is never submitted and
K1 stays PENDING (every later lookup of K1 answers HIT_PENDING).

Exits 1 while the defect is present, 0 once has_pending_work() reports the staged
promotion. Runs on vLLM 0.33 alone: python 04_staged_promotion_hidden.py
"""

import mmap
import sys
import uuid

from vllm.v1.kv_offload.base import (
    LookupResult,
    ReqContext,
    RequestOffloadingContext,
    make_offload_key,
)
from vllm.v1.kv_offload.config import (
    OffloadingCacheConfig,
    OffloadingConfig,
    OffloadingGroupConfig,
    OffloadingModelConfig,
    OffloadingParallelConfig,
)
from vllm.v1.kv_offload.tiering.base import JobResult, SecondaryTierManager
from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec


def K(i):
    return make_offload_key(i.to_bytes(32, "big"), 0)


def build(num_chunks, tiers):
    """vLLM's own TieringOffloadingSpec on a CPU machine, no poll thread."""
    config = OffloadingConfig(
        groups=(OffloadingGroupConfig(tokens_per_block=16, layer_names=("l0",), group_id=0),),
        worker_kv_bytes_per_block=mmap.PAGESIZE,
        enable_kv_cache_events=False,
        extra_config={
            "cpu_bytes_to_use": num_chunks * mmap.PAGESIZE,
            "secondary_tiers": tiers,
            "tier_poll_interval_s": 0,
        },
        engine_id=f"repro-{uuid.uuid4().hex[:8]}",
        model=OffloadingModelConfig(name="m", dtype="float16"),
        cache=OffloadingCacheConfig(tokens_per_hash=16, blocks_per_chunk=1),
        parallel=OffloadingParallelConfig(
            rank=0,
            world_size=1,
            tp_size=1,
            pp_size=1,
            pcp_size=1,
            dcp_size=1,
            data_parallel_index=0,
            data_parallel_size=1,
            data_parallel_rank_local=None,
            is_parallelism_agnostic=True,
        ),
    )
    return TieringOffloadingSpec(config).get_manager()


class PeerTier(SecondaryTierManager):
    """A tier that serves peers' lookups (and holds no data itself): each peer request
    is looked up through the parent, its hits pinned for the peer and the job finished
    at once, in one serve."""

    tolerates_off_thread_polling = True

    def __init__(self, offloading_spec, primary_kv_view, tier_type, **kwargs):
        super().__init__(offloading_spec, primary_kv_view, tier_type)
        self.asked, self.finished, self.answers = [], [], []

    def serve_external_requests(self, parent):
        asked, self.asked = self.asked, []
        for n, keys in enumerate(asked):
            ctx = ReqContext(req_id=f"peer-{n}")
            parent.on_new_request(ctx)
            answers = [parent.lookup(key, ctx) for key in keys]
            hits = [key for key, a in zip(keys, answers, strict=True) if a is LookupResult.HIT]
            if hits:
                job = parent.create_store_job(hits, ctx)
                self.finished.append(JobResult(job_id=job.job_id, success=True))
            parent.on_request_finished(ctx)
            self.answers.append([a.name for a in answers])

    def has_pending_work(self):
        return bool(self.asked or self.finished)

    def get_finished_jobs(self):
        done, self.finished = self.finished, []
        return done

    def lookup(self, key, req_context):
        return LookupResult.MISS

    def submit_store(self, job_metadata):
        self.finished.append(JobResult(job_id=job_metadata.job_id, success=True))

    def submit_load(self, job_metadata):
        self.finished.append(JobResult(job_id=job_metadata.job_id, success=False))

    def on_new_request(self, req_context):
        return RequestOffloadingContext()

    def drain_jobs(self):
        pass


manager = build(4, [{"type": "PeerTier", "module_path": "__main__"}, {"type": "example"}])
peer_tier, example = manager.secondary_tiers
try:
    example.chunks[K(1)] = True  # K1 lives in the example tier only
    assert not manager.has_pending_work()
    peer_tier.asked.append([K(1)])  # a peer's lookup arrives between steps
    with manager.lock:
        manager.poll_tiers()  # one round of the tier-poll thread
    chunk = manager.primary_tier._policy.get(K(1))
    staged = {i: sorted(d) for i, d in manager._pending_load_submissions.items()}
    print(f"peer answered {peer_tier.answers}; K1 ref_cnt {chunk.ref_cnt}; staged {staged}")
    if chunk.ref_cnt == -1 and staged and not manager.has_pending_work():
        print("DEFECT: has_pending_work() is False while a promotion is staged:")
        print("  an idle engine never calls on_schedule_end(), so K1 stays PENDING")
        sys.exit(1)
    print("ok: the staged promotion is pending work")
finally:
    manager.shutdown()
