"""Building vLLM 0.33's `TieringOffloadingManager` on a CPU machine, and the stub
network transports of its p2p tier.

`build_manager(num_slots, tiers)` goes through vLLM's own construction path:
`TieringOffloadingSpec(OffloadingConfig(...)).get_manager()`, which creates the
primary tier's `SharedOffloadRegion` (a file under /dev/shm, removed by the manager's
`shutdown()`), the `CPUPrimaryTierOffloadingManager` and each secondary tier through
vLLM's `SecondaryTierFactory` (shipped tiers by name, ours by `module_path`). The
configuration is the smallest one vLLM accepts on a CPU: one KV group, one block per
chunk, a chunk of one memory page (`kv_bytes_per_chunk` must be a multiple of it), so
`cpu_bytes_to_use = num_slots * PAGESIZE` gives `num_slots` primary chunks; and
`tier_poll_interval_s = 0`, so no tier-poll thread starts and `poll_tiers()` is an
ordinary call (each poll round is an explicit event of the engine).

The p2p tier (`P2PSecondaryTierManager`) builds without NIXL (its `NixlTransport`
then has no agent), but it would bind a ZMQ socket: while `get_manager()` runs, the
two transport names of `vllm.v1.kv_offload.tiering.p2p.manager` are replaced by
`StubData` and `StubControl` (in memory: a peer is a `StubConnection` whose inbox the
adapter fills with wire messages; writes complete at the transport's next poll).
"""

from __future__ import annotations

import mmap
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import vllm.v1.kv_offload.tiering.p2p.manager as p2p_manager
from vllm.v1.kv_offload.config import (
    OffloadingCacheConfig,
    OffloadingConfig,
    OffloadingGroupConfig,
    OffloadingModelConfig,
    OffloadingParallelConfig,
)
from vllm.v1.kv_offload.factory import OffloadingSpecFactory
from vllm.v1.kv_offload.tiering.p2p.control.base import ControlConnection, ControlTransport
from vllm.v1.kv_offload.tiering.p2p.data.base import DataTransport, PollResult
from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec

__all__ = [
    "PAGE",
    "StubConnection",
    "StubControl",
    "StubData",
    "build_manager",
    "offloading_config",
    "stub_p2p_transports",
]

PAGE = mmap.PAGESIZE
"""Bytes of one primary chunk: the smallest `kv_bytes_per_chunk` vLLM accepts."""


def offloading_config(num_slots: int, tiers: Sequence[dict[str, Any]]) -> OffloadingConfig:
    """vLLM's normalized offloading configuration for `num_slots` primary chunks and
    the secondary tiers `tiers` (vLLM's `secondary_tiers` entries), no poll thread."""
    return OffloadingConfig(
        groups=(OffloadingGroupConfig(tokens_per_block=16, layer_names=("l0",), group_id=0),),
        worker_kv_bytes_per_block=PAGE,
        enable_kv_cache_events=False,
        extra_config={
            "cpu_bytes_to_use": num_slots * PAGE,
            "secondary_tiers": [dict(t) for t in tiers],
            "tier_poll_interval_s": 0,
        },
        engine_id=f"evictable-{uuid.uuid4().hex[:12]}",
        model=OffloadingModelConfig(name="evictable-check", dtype="float16"),
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


def build_manager(
    num_slots: int,
    tiers: Sequence[dict[str, Any]],
    spec_name: str = "TieringOffloadingSpec",
    spec_module_path: str | None = None,
) -> Any:
    """A real `TieringOffloadingManager` made by vLLM's `TieringOffloadingSpec`, with
    the p2p tier's transports stubbed (see the module docstring); or the manager of
    the spec that vLLM's `OffloadingSpecFactory` loads for `spec_name` /
    `spec_module_path`, as a user's config selects an out-of-tree spec
    (`EvictableTieringSpec` from `evictable.vllm`: our orchestrator)."""
    config = offloading_config(num_slots, tiers)
    if spec_name == "TieringOffloadingSpec" and spec_module_path is None:
        spec = TieringOffloadingSpec(config)
    else:
        config.extra_config["spec_name"] = spec_name
        if spec_module_path is not None:
            config.extra_config["spec_module_path"] = spec_module_path
        spec = OffloadingSpecFactory.create_spec(config)
    with stub_p2p_transports():
        return spec.get_manager()


@contextmanager
def stub_p2p_transports() -> Iterator[None]:
    """Within the block, vLLM's p2p tier is built with `StubData` / `StubControl`."""
    saved = p2p_manager.NixlTransport, p2p_manager.ZmqTransport
    p2p_manager.NixlTransport, p2p_manager.ZmqTransport = StubData, StubControl
    try:
        yield
    finally:
        p2p_manager.NixlTransport, p2p_manager.ZmqTransport = saved


class StubConnection(ControlConnection):  # type: ignore[misc]
    """A peer's control connection in memory: `inbox` holds the wire messages (dicts)
    the peer sent, `outbox` what the tier sent it."""

    def __init__(self, peer_id: str) -> None:
        super().__init__(peer_id)
        self.inbox: list[dict[str, Any]] = []
        self.outbox: list[dict[str, Any]] = []
        self.up = True

    @property
    def alive(self) -> bool:
        return self.up

    def send(self, msg: dict[str, Any]) -> None:
        self.outbox.append(msg)

    def recv(self) -> list[dict[str, Any]]:
        msgs, self.inbox = self.inbox, []
        return msgs

    def mark_dead(self) -> None:
        self.up = False

    def close(self) -> None:
        self.up = False


class StubControl(ControlTransport):  # type: ignore[misc]
    """The control transport in memory: `incoming` connections are accepted at the
    tier's next poll."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.incoming: list[StubConnection] = []

    def connect(self, peer_id: str) -> StubConnection:
        return StubConnection(peer_id)

    def poll(self) -> list[StubConnection]:
        new, self.incoming = self.incoming, []
        return new

    def close(self) -> None:
        self.incoming = []


class StubData(DataTransport):  # type: ignore[misc]
    """The data transport in memory: every write (an RDMA WRITE in vLLM) completes at
    the transport's next poll, or fails there when `fail_next` was set for it."""

    def __init__(self, agent_name: str, view: memoryview, **kwargs: Any) -> None:
        super().__init__(view)
        self.count = 0
        self.inflight: dict[int, str] = {}
        self.fail_next = False
        self.failing: set[int] = set()

    def get_agent_metadata(self) -> bytes:
        return b"stub"

    def add_remote_peer(self, *args: Any, **kwargs: Any) -> None:
        return None

    def remove_remote_peer(self, peer_id: str) -> None:
        return None

    def write_blocks(self, peer_id: str, local_idxs: list[int], remote_idxs: list[int]) -> int:
        self.count += 1
        self.inflight[self.count] = peer_id
        if self.fail_next:
            self.fail_next = False
            self.failing.add(self.count)
        return self.count

    def poll(self, peer_id: str | None = None) -> PollResult:
        ids = [t for t, p in self.inflight.items() if peer_id is None or p == peer_id]
        for t in ids:
            del self.inflight[t]
        failed = [t for t in ids if t in self.failing]
        self.failing.difference_update(failed)
        return PollResult(done=[t for t in ids if t not in failed], failed=failed)

    def cancel(self, transfer_ids: Any, mode: str = "immediate") -> list[int]:
        for t in list(transfer_ids):
            self.inflight.pop(t, None)
        return []

    def close(self) -> None:
        self.inflight.clear()
