"""vLLM 0.33: a peer's lookup pins a key that its own promotion has just evicted.

Shipped tiers only: the real p2p tier (its NIXL data transport and ZMQ control
transport replaced by in-memory stubs, so no network is needed) and the example tier.
A peer asks for [K2, K1]. K2 is in the primary tier (HIT), K1 only in the example tier:
looking K1 up starts a promotion, whose allocation evicts K2, and the serve then pins K2
(`create_store_job` -> `prepare_read`): AssertionError "Chunk ... not found in cache".

Exits 1 while the defect is present, 0 once the serve leaves K2 resident and pinned.
Runs on vLLM 0.33 alone: python 01_peer_serve_pins_evicted_hit.py
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


manager = build(1, [{"type": "p2p"}, {"type": "example"}])
p2p, example = manager.secondary_tiers
primary = manager.primary_tier
try:
    writer = ReqContext(req_id="writer")
    manager.on_new_request(writer)
    for key in (K(1), K(2)):  # K2's store evicts K1 from the one-chunk primary
        manager.prepare_store([key], writer)
        manager.complete_store([key], writer)  # cascaded to both tiers
    manager.on_request_finished(writer)
    end = ScheduleEndContext(new_req_ids=[], preempted_req_ids=())
    manager.on_schedule_end(end)
    manager.on_schedule_end(end)  # the step after: the cascades' results are processed
    assert primary.lookup(K(1), writer).name == "MISS" and K(1) in example.chunks
    assert primary._policy.get(K(2)).ref_cnt == 0

    peer = StubConnection("peer:1")
    p2p._control.incoming.append(peer)
    peer.inbox.append(
        {"type": "lookup", "kv_request_id": "x", "keys": [K(2), K(1)], "round_seq": 1}
    )
    try:
        manager.poll_tiers()  # the tier-poll thread's round: serves the peer
    except AssertionError as exc:
        print(f"DEFECT: the peer serve raised AssertionError: {str(exc).replace(repr(K(2)), 'K2')}")
        print(f"  K2 resident after the serve: {primary._policy.get(K(2)) is not None}")
        print(f"  synthetic peer request left open: {sorted(manager._req_state)}")
        sys.exit(1)
    chunk = primary._policy.get(K(2))
    if chunk is None or chunk.ref_cnt < 1:
        print("DEFECT: K2, reported HIT to the peer, is not resident and pinned")
        sys.exit(1)
    print("ok: K2 stayed resident and is pinned for the peer")
finally:
    manager.shutdown()
