"""vLLM 0.33: reset_cache() fails an assertion half way while a p2p store awaits its fetch.

Shipped tier only: the real p2p tier (its NIXL data transport and ZMQ control transport
replaced by in-memory stubs, so no network is needed). A PD prefiller request (its
kv_transfer_params name a remote decoder) stores K1; the cascade to the p2p tier is
parked until the decoder fetches, pinning K1. reset_cache() drains the tiers, but the
p2p tier's drain_jobs() waits only for transfers in flight, so the parked job is never
reported and `assert not self._jobs` fails: the primary tier is not reset, K1 stays
pinned and promotions are not held.

Exits 1 while the defect is present, 0 once the reset leaves nothing in flight.
Runs on vLLM 0.33 alone: python 03_reset_with_parked_p2p_store.py
"""

import mmap
import sys
import uuid

import vllm.v1.kv_offload.tiering.p2p.manager as p2p_manager
from vllm.v1.kv_offload.base import ReqContext, ScheduleEndContext, make_offload_key
from vllm.v1.kv_offload.config import (
    OffloadingCacheConfig,
    OffloadingConfig,
    OffloadingGroupConfig,
    OffloadingModelConfig,
    OffloadingParallelConfig,
)
from vllm.v1.kv_offload.tiering.p2p.control.base import ControlConnection, ControlTransport
from vllm.v1.kv_offload.tiering.p2p.data.base import DataTransport, PollResult
from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec


def K(i):
    return make_offload_key(i.to_bytes(32, "big"), 0)


class StubConnection(ControlConnection):
    """A peer's control connection: the test puts wire messages in `inbox`."""

    def __init__(self, peer_id):
        super().__init__(peer_id)
        self.inbox, self.outbox, self.up = [], [], True

    @property
    def alive(self):
        return self.up

    def send(self, msg):
        self.outbox.append(msg)

    def recv(self):
        msgs, self.inbox = self.inbox, []
        return msgs

    def mark_dead(self):
        self.up = False

    def close(self):
        self.up = False


class StubControl(ControlTransport):
    def __init__(self, *args, **kwargs):
        self.incoming = []

    def connect(self, peer_id):
        return StubConnection(peer_id)

    def poll(self):
        new, self.incoming = self.incoming, []
        return new

    def close(self):
        pass


class StubData(DataTransport):
    def __init__(self, agent_name, view, **kwargs):
        super().__init__(view)

    def get_agent_metadata(self):
        return b"stub"

    def add_remote_peer(self, *args, **kwargs):
        pass

    def remove_remote_peer(self, peer_id):
        pass

    def write_blocks(self, peer_id, local_idxs, remote_idxs):
        return None

    def poll(self, peer_id=None):
        return PollResult(done=[], failed=[])

    def cancel(self, transfer_ids, mode="immediate"):
        return []

    def close(self):
        pass


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
    saved = p2p_manager.NixlTransport, p2p_manager.ZmqTransport
    p2p_manager.NixlTransport, p2p_manager.ZmqTransport = StubData, StubControl
    try:
        return TieringOffloadingSpec(config).get_manager()
    finally:
        p2p_manager.NixlTransport, p2p_manager.ZmqTransport = saved


manager = build(4, [{"type": "p2p"}])
(p2p,) = manager.secondary_tiers
primary = manager.primary_tier
try:
    prefiller = ReqContext(
        req_id="r1", kv_transfer_params={"remote_decoder": {"kv_request_id": "abc"}}
    )
    manager.on_new_request(prefiller)
    manager.prepare_store([K(1)], prefiller)
    manager.complete_store([K(1)], prefiller)  # cascade to p2p: parked for the decoder
    manager.on_request_finished(prefiller)
    end = ScheduleEndContext(new_req_ids=[], preempted_req_ids=())
    manager.on_schedule_end(end)
    assert primary._policy.get(K(1)).ref_cnt == 1 and "abc" in p2p._unbound_stores
    try:
        manager.reset_cache()
    except AssertionError:
        chunk = primary._policy.get(K(1))
        print("DEFECT: reset_cache() raised AssertionError (assert not self._jobs)")
        print(f"  jobs still registered: {sorted(manager._jobs)}")
        print(f"  K1 after the reset: ref_cnt {None if chunk is None else chunk.ref_cnt}")
        print(f"  promotions held after the reset: {manager._promotions_held}")
        sys.exit(1)
    if manager._jobs or primary._policy.get(K(1)) is not None:
        print("DEFECT: the reset left work in flight")
        sys.exit(1)
    print("ok: the reset drained the parked store and left nothing in flight")
finally:
    manager.shutdown()
