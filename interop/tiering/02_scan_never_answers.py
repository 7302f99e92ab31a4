"""vLLM 0.33: a request whose cached prefix is longer than the primary tier never runs.

Shipped tiers only: the example tier (the fs tier behaves the same). The primary tier
holds 2 chunks; the request's prefix K1 K2 K3 is in the example tier. Each step the
connector's own prefix scan (`OffloadingConnectorScheduler._maximal_prefix_lookup`)
looks the keys up in order: a key that is only in the tier starts a promotion, whose
allocation evicts a key the same scan reported HIT a moment before; a promotion answers
HIT_PENDING, so the scan answers None ("try later"). The next step's scan promotes the
evicted key again, evicting another: the answers cycle with period 2 and are None at
every step. Answering the resident prefix (2 chunks) would let the request run.

Exits 1 while the defect is present (no answer in 20 steps), 0 once a scan answers.
Runs on vLLM 0.33 alone: python 02_scan_never_answers.py
"""

import mmap
import sys
import uuid
from types import SimpleNamespace

from vllm.distributed.kv_transfer.kv_connector.v1.offloading.scheduler import (
    OffloadingConnectorScheduler,
)
from vllm.v1.kv_offload.base import ReqContext, ScheduleEndContext, make_offload_key
from vllm.v1.kv_offload.config import (
    OffloadingCacheConfig,
    OffloadingConfig,
    OffloadingGroupConfig,
    OffloadingModelConfig,
    OffloadingParallelConfig,
)
from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec

STEPS = 20


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


manager = build(2, [{"type": "example"}])
(example,) = manager.secondary_tiers
try:
    prefix = [K(1), K(2), K(3)]
    writer = ReqContext(req_id="writer")
    manager.on_new_request(writer)
    for key in prefix:  # stored in turn: the primary keeps K2 K3, the tier all three
        manager.prepare_store([key], writer)
        manager.complete_store([key], writer)
    manager.on_request_finished(writer)
    end = ScheduleEndContext(new_req_ids=[], preempted_req_ids=())
    manager.on_schedule_end(end)
    manager.on_schedule_end(end)
    assert all(key in example.chunks for key in prefix)

    # The connector's scan, called on a stand-in for the connector (it reads only
    # `manager` and, for events, `_events_tracker`).
    connector = SimpleNamespace(
        manager=manager, _events_tracker=SimpleNamespace(record_lookup=lambda *a: None)
    )
    reader = ReqContext(req_id="reader")
    manager.on_new_request(reader)
    answers = []
    for _ in range(STEPS):
        with manager.lock:  # one step region
            n = OffloadingConnectorScheduler._maximal_prefix_lookup(
                connector, prefix, reader, None, None, 0
            )
            if n:
                manager.prepare_load(prefix[:n], reader)  # update_state_after_alloc
            answers.append(n)
            if n is not None:
                break
            manager.on_schedule_end(end)
    if all(n is None for n in answers):
        print(f"DEFECT: the scan answered None ('try later') at each of {STEPS} steps")
        state = {
            f"K{int.from_bytes(bytes(k)[:32], 'big')}": c.ref_cnt
            for k, c in manager.primary_tier._policy.chunks.items()
        }
        print(f"  primary after the last step (key: ref_cnt): {state}")
        sys.exit(1)
    print(f"ok: the scan answered {answers[-1]} after {len(answers)} step(s)")
finally:
    manager.shutdown()
