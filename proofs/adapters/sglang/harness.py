"""The two pieces of a serving process that SGLang's host tier needs and a CPU machine
lacks: a device KV pool allocator and the copy engine (its `HybridCacheController`).

Both are test doubles that move no data. What they decide is what SGLang's own would:

* `DevicePool` hands out page-aligned device token slots from a free list (SGLang's
  `TokenToKVPoolAllocator` does the same on a GPU); it is sized so that it never runs
  short (one page per host slot, plus one), so SGLang never evicts device copies on
  its own and the adapter decides when a device copy goes.
* `CopyEngine` is the controller's allocation path, unchanged in substance: `write`
  allocates host slots from SGLang's own host pool group (`HostPoolGroup` over a
  `LogicalHostPool`, a host pool that holds no KV tensor) exactly as
  `HybridCacheController.allocate_host_transfers` does, and `load` allocates device
  slots. A copy never finishes on its own: `finish_write` / `finish_load` append its
  acknowledgement (SGLang's `HiCacheAck`, with an event that reports done) to the
  queue that `UnifiedRadixCache.writing_check` / `loading_check` drain.
"""

from __future__ import annotations

from typing import Any

import torch
from sglang.srt.managers.cache_controller import HiCacheAck

__all__ = ["CopyEngine", "DevicePool", "DoneEvent"]


class DoneEvent:
    """A finished copy's event (SGLang polls `query()` and waits with `synchronize()`)."""

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def elapsed_time(self, other: object) -> float:
        return 0.0


class DevicePool:
    """A page-aligned device token-slot allocator with the methods SGLang's unified
    radix cache calls on its `token_to_kv_pool_allocator`."""

    device = "cpu"

    def __init__(self, pages: int, page_size: int) -> None:
        self.page_size = page_size
        self.size = pages * page_size
        self.free_pages = list(range(pages))

    def available_size(self) -> int:
        return len(self.free_pages) * self.page_size

    def alloc(self, need_size: int) -> torch.Tensor | None:
        if need_size % self.page_size or need_size > self.available_size():
            return None
        pages = [self.free_pages.pop(0) for _ in range(need_size // self.page_size)]
        return torch.tensor(
            [p * self.page_size + i for p in pages for i in range(self.page_size)],
            dtype=torch.int64,
        )

    def free(self, indices: torch.Tensor) -> None:
        for token in indices.tolist()[:: self.page_size]:
            self.free_pages.append(int(token) // self.page_size)

    def free_segment(self, indices: torch.Tensor, start_pos: int = 0) -> None:
        self.free(indices)

    def clear(self) -> None:
        self.free_pages = list(range(self.size // self.page_size))


class CopyEngine:
    """SGLang's copy controller for one FULL KV pool, without the copies (see the
    module docstring). Attributes are the ones `UnifiedRadixCache` reads."""

    write_policy = "write_through"
    enable_storage = False
    storage_backend = None

    def __init__(self, host_group: Any, device: DevicePool) -> None:
        self.mem_pool_host = host_group
        self.device_pool = device
        self.ack_write_queue: list[HiCacheAck] = []
        self.ack_load_queue: list[HiCacheAck] = []
        self.writes: dict[int, torch.Tensor] = {}
        """node id -> host slots of a write in flight."""
        self.loads: dict[int, torch.Tensor] = {}
        """node id -> device slots of a load in flight."""

    # ------------------------------------------------------------ what SGLang calls

    def write(
        self,
        device_indices: torch.Tensor,
        priority: int | None = None,
        node_id: int = -1,
        extra_pools: Any = None,
        flush: bool = True,
        start_owner: int | None = None,
    ) -> torch.Tensor | None:
        host: torch.Tensor | None = self.mem_pool_host.alloc(len(device_indices))
        if host is not None:
            self.writes[node_id] = host
        return host

    def load(
        self,
        host_indices: torch.Tensor,
        priority: int | None = None,
        node_id: int = -1,
        extra_pools: Any = None,
        *,
        device_indices: torch.Tensor | None = None,
        anchor_indices: torch.Tensor | None = None,
    ) -> torch.Tensor | None:
        got = self.device_pool.alloc(len(host_indices))
        if got is not None:
            self.loads[node_id] = got
        return got

    def start_writing(self) -> None:
        return None

    def start_loading(self) -> int:
        return 0

    def reset(self) -> None:
        self.ack_write_queue.clear()
        self.ack_load_queue.clear()
        self.writes.clear()
        self.loads.clear()

    # ------------------------------------------------------------ the adapter's side

    def finish_write(self, node_id: int) -> None:
        """The write of `node_id` has landed: its acknowledgement joins the queue."""
        self.writes.pop(node_id)
        self.ack_write_queue.append(HiCacheAck(DoneEvent(), DoneEvent(), [node_id]))

    def finish_load(self, node_id: int) -> None:
        """The load of `node_id` has landed: its acknowledgement joins the queue."""
        self.loads.pop(node_id)
        self.ack_load_queue.append(HiCacheAck(DoneEvent(), DoneEvent(), [node_id]))
