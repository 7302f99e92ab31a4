"""vLLM 0.33's lazy offload walk behind this project's lazy-scanner API.

`lazy_scanner(pool, window, capacity)` runs vLLM's own code:
`vllm.v1.simple_kv_offload.manager.SimpleCPUOffloadScheduler._prepare_lazy_store_specs`,
the method vLLM's scheduler calls once per step in lazy mode, over the real vLLM
`BlockPool` of `pool` (a `gpu.VllmBlockPool`). The scheduler object is made without
its constructor (`object.__new__`) and given exactly the attributes the walk and
the store completions read: the GPU pool, a CPU pool (a real vLLM `BlockPool` of
`CPU_BLOCKS` blocks, whose free-block count the harness caps at `capacity()`: the
CPU room of this step), the target (`window`: blocks covered per step) and the
cursor (None).

* `step()` -- vLLM's walk; the selected GPU blocks come back (vLLM pins them);
* `complete(blocks)` -- vLLM's `_process_store_completion`: the CPU pool caches the
  blocks' hashes (offloaded), both pools unpin;
* `abort(blocks)` -- vLLM's `_release_transfer_refs`: unpin, cache nothing;
* `snapshot()` -- the cursor (its block id), the blocks in flight with their hash
  names, the offloaded hash names: what the walk's future depends on.

The factory declares the safety contract (vLLM's walk is free to choose which blocks
to offload and where its cursor rests), builtin errors and valid calls only.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from types import SimpleNamespace
from typing import Any

from vllm.v1.core.block_pool import BlockPool
from vllm.v1.simple_kv_offload.manager import SimpleCPUOffloadScheduler

from evictable.model.lazy_offload import LazyOffloadSnapshot
from evictable.proofs.adapters.vllm.gpu import HASH_BLOCK_SIZE, VllmBlockPool, block_pool

__all__ = ["CPU_BLOCKS", "VllmLazyScanner", "lazy_scanner"]

CPU_BLOCKS = 64
"""Blocks of the CPU pool (far more than a check stores: it never evicts)."""


class _CappedCpuPool:
    """The CPU pool as the walk sees it: vLLM's pool, its free count capped at the
    harness's capacity for this step."""

    def __init__(self, pool: Any, capacity: Callable[[], int]) -> None:
        self.pool = pool
        self.capacity = capacity

    def get_num_free_blocks(self) -> int:
        return min(int(self.pool.get_num_free_blocks()), int(self.capacity()))

    def __getattr__(self, name: str) -> Any:
        if name in ("pool", "capacity"):  # not set yet (while unpickling)
            raise AttributeError(name)
        return getattr(self.pool, name)


class VllmLazyScanner:
    """vLLM's lazy walk over a vLLM block pool (see the module docstring)."""

    def __init__(self, pool: VllmBlockPool, window: int, capacity: Callable[[], int]) -> None:
        self.pool = pool
        self.window = window
        self.cpu = BlockPool(CPU_BLOCKS + 1, True, HASH_BLOCK_SIZE)
        sched: Any = object.__new__(SimpleCPUOffloadScheduler)
        sched._gpu_block_pool = pool.vllm
        sched.cpu_block_pool = _CappedCpuPool(self.cpu, capacity)
        sched._target_free = window
        sched._cursor = None
        sched._lazy_mode = True
        sched.enable_kv_cache_events = False
        self.scheduler = sched
        self.in_flight: dict[int, int] = {}
        """GPU block id -> the CPU block vLLM allocated for its copy."""

    def step(self) -> list[Any]:
        gpu_ids, cpu_ids, _, _ = self.scheduler._prepare_lazy_store_specs()
        for g, c in zip(gpu_ids, cpu_ids, strict=True):
            self.in_flight[int(g)] = int(c)
        blocks = self.pool.vllm.blocks
        return [blocks[g] for g in gpu_ids]

    def _ids(self, blocks: Sequence[Any]) -> tuple[list[int], list[int]]:
        gpu = [int(b.block_id) for b in blocks]
        return gpu, [self.in_flight.pop(g) for g in gpu]

    def complete(self, blocks: Sequence[Any]) -> None:
        gpu, cpu = self._ids(blocks)
        self.scheduler._process_store_completion(gpu, cpu)

    def abort(self, blocks: Sequence[Any]) -> None:
        gpu, cpu = self._ids(blocks)
        self.scheduler._release_transfer_refs(SimpleNamespace(gpu_block_ids=gpu, cpu_block_ids=cpu))

    def snapshot(self) -> LazyOffloadSnapshot:
        cursor = self.scheduler._cursor
        blocks = self.pool.vllm.blocks
        offloaded: set[Hashable] = set()
        for key in self.cpu.cached_block_hash_to_block._cache:
            name = self.pool.name_of(key)
            if name is not None:
                offloaded.add(name)
        return LazyOffloadSnapshot(
            window=self.window,
            cursor=None if cursor is None else (int(cursor.block_id), 0),
            in_flight=tuple((g, self.pool.name_of(blocks[g].block_hash)) for g in self.in_flight),
            offloaded=frozenset(offloaded),
        )


def lazy_scanner(pool: VllmBlockPool, window: int, capacity: Callable[[], int]) -> VllmLazyScanner:
    """vLLM's lazy offload walk over `pool` (make it with `gpu.block_pool`)."""
    return VllmLazyScanner(pool, window, capacity)


lazy_scanner.evictable_pool = block_pool  # type: ignore[attr-defined]
lazy_scanner.evictable_contract = {  # type: ignore[attr-defined]
    "mode": "safety",
    "errors": "builtin",
    "valid_only": True,
}
