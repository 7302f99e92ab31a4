"""vLLM 0.33: a result for an unknown job id crashes the poll and loses the rest of the batch.

Needs a tier that breaks the SecondaryTierManager API (it reports a job id it was never
given). The tier reports [job 0 ok, job 99 ok, job 1 ok]: job 0 is processed, then
`assert job_metadata is not None` fails at job 99, and job 1's result, already taken from
the tier, is lost: job 1 stays registered forever and K2 stays pinned.

Exits 1 while the defect is present, 0 once the unknown result is skipped and job 1 is
processed. Runs on vLLM 0.33 alone: python 07_unknown_job_result.py
"""

import mmap
import sys
import uuid

from vllm.v1.kv_offload.base import (
    LookupResult,
    ReqContext,
    RequestOffloadingContext,
    ScheduleEndContext,
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


class FaultyTier(SecondaryTierManager):
    """A tier the script drives by hand: it holds the keys in `present`, keeps every
    submitted job until the script reports it (`report`), and raises from the next
    submits while `raise_submits` > 0 (a tier fault: the API asks tiers to report
    failures as results)."""

    def __init__(self, offloading_spec, primary_kv_view, tier_type, **kwargs):
        super().__init__(offloading_spec, primary_kv_view, tier_type)
        self.present, self.submitted, self.results = set(), {}, []
        self.raise_submits = 0

    def _submit(self, job):
        if self.raise_submits:
            self.raise_submits -= 1
            raise RuntimeError(f"tier fault: submit of job {job.job_id}")
        self.submitted[job.job_id] = job

    def submit_store(self, job_metadata):
        self._submit(job_metadata)

    def submit_load(self, job_metadata):
        self._submit(job_metadata)

    def report(self, job_id, success=True, successful_keys=None):
        self.submitted.pop(job_id, None)
        self.results.append(JobResult(job_id, success, successful_keys))

    def get_finished_jobs(self):
        done, self.results = self.results, []
        return done

    def drain_jobs(self):
        for job_id in list(self.submitted):
            self.report(job_id)

    def lookup(self, key, req_context):
        return LookupResult.HIT if key in self.present else LookupResult.MISS

    def on_new_request(self, req_context):
        return RequestOffloadingContext()


def ref_cnts(manager):
    return {
        f"K{int.from_bytes(bytes(k)[:32], 'big')}": c.ref_cnt
        for k, c in manager.primary_tier._policy.chunks.items()
    }


END = ScheduleEndContext(new_req_ids=[], preempted_req_ids=())


manager = build(4, [{"type": "FaultyTier", "module_path": "__main__"}])
(faulty,) = manager.secondary_tiers
try:
    ctx = ReqContext(req_id="r1")
    manager.on_new_request(ctx)
    for key in (K(1), K(2)):
        manager.prepare_store([key], ctx)
        manager.complete_store([key], ctx)  # cascade jobs 0 (K1) and 1 (K2)
    manager.on_schedule_end(END)
    faulty.report(0)
    faulty.report(99)  # never submitted
    faulty.report(1)
    try:
        manager.on_schedule_end(END)  # the step's poll of the tiers
    except AssertionError as exc:
        print(f"on_schedule_end raised AssertionError: {exc}")
    for _ in range(2):
        manager.on_schedule_end(END)
    print(f"jobs still registered: {sorted(manager._jobs)}; ref_cnts {ref_cnts(manager)}")
    if 1 in manager._jobs:
        print("DEFECT: job 1 was reported but never processed: its pin is held forever")
        sys.exit(1)
    print("ok: the unknown result was skipped and job 1 processed")
finally:
    manager.shutdown()
