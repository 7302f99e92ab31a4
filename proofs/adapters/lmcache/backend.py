"""LMCache 0.5's `LocalCPUBackend` behind the manager adapter protocol (profile `lmcache-0.5`).

`LmcacheBackend(num_blocks, policy, enable_events)` holds one real
`lmcache.v1.storage_backend.local_cpu_backend.LocalCPUBackend` (its hot cache on,
`cache_policy` = the LMCache policy named) over LMCache's default allocator
(`MixedMemoryAllocator`) sized to `num_blocks` pages, and makes each protocol call
the way LMCache's own storage manager and cache engine make it:

* `prepare_store(keys)`: per key in order, skip it when the backend `contains` it or
  its page is still being written; else `allocate(..., eviction=True,
  busy_loop=False)` (which asks the policy for one victim at a time), stopping at the
  first key it cannot place (LMCache's store is best effort). The slot of a chunk is
  its page (`address // page size`); the victims are the keys that left the index.
* `complete_store(keys, success)`: the pending chunks, in order: `batched_submit_put_task`
  then `ref_count_down` (the writer's reference, as `StorageManager.batched_put`), or
  `ref_count_down` alone (which frees the page) on failure.
* `prepare_load(keys)`: LMCache's `batched_get_non_blocking` (its coroutine driven to
  completion here: it awaits nothing); the memory objects it returns are held, per
  key, oldest first. `complete_load(keys)` releases the oldest held object of each key
  (`ref_count_down`).
* `lookup(key)`: `contains(key)` (no pin). `lookup_pin(keys)`: `batched_contains(keys,
  pin=True)`; `touch_cache()`, `unpin(keys)` (one `unpin` per key), `remove(keys)`
  (`batched_remove(keys, force=True)`) and `reset_cache()` (`clear()`) are the
  backend's own; `expire_pins(keys)` is what LMCache's `PinMonitor` does to a pin whose
  lease ran out (`_force_unpin_timeout_object`, the monitor's own method).
* Layerwise (`layers=2`): each protocol key is one chunk stored as two per-layer keys
  (`CacheEngineKey.split_layers`) through `batched_allocate(..., batch_size=2)`; every
  call acts on all of a chunk's layer keys, as LMCache's layerwise cache engine does,
  and a chunk's slot is its first layer's page divided by the number of layers.

What the adapter hides, on purpose:

* **Keys.** The engines' keys (`b'k0'`, ...) are mapped to real `CacheEngineKey`s
  (`chunk_hash` = the order of first use); traces show the engines' keys.
* **Pending chunks** are the writer's memory objects, which LMCache does not track
  (they are outside its index): the adapter remembers them, so that a key whose page
  is being written is not allocated again.
* **Refusals it makes itself.** `complete_load` of a key it holds no read for raises
  `NotLoadingError` before calling LMCache (a reader can only release a reference it
  holds); `touch` does nothing (LMCache has no recency hint by key); there are no
  events (LMCache's CPU tier has none).
* **What a snapshot reads.** The hot cache's order and each object's `pin_count` and
  `ref_count` (a chunk's ref count is pins + reads; the index's own reference is not
  counted), the allocator's free list, LFU's buckets, the recorded lookup keys
  (`keys_in_request`). A black-box run (`--black-box`) never calls it.
* **LMCache's log** is set to errors only (it warns on every eviction and on every
  object collected with references left, which the engines do on purpose).

Errors are LMCache's own (a missing key in a batched get is a `KeyError`): the
factories declare the exact contract under the `lmcache-0.5` profile with builtin
error types, valid calls only for duplicates and malformed arguments (LMCache does not
validate argument types).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch
from lmcache.utils import CacheEngineKey
from lmcache.v1.config import LMCacheEngineConfig
from lmcache.v1.memory_allocators.mixed_memory_allocator import MixedMemoryAllocator
from lmcache.v1.memory_management import MemoryFormat
from lmcache.v1.pin_monitor import PinMonitor
from lmcache.v1.storage_backend.local_cpu_backend import LocalCPUBackend

from evictable.model.errors import NotLoadingError
from evictable.model.lifecycle import CpuState
from evictable.model.types import (
    BlockEntry,
    Key,
    LookupResult,
    ManagerSnapshot,
    OffloadingEvent,
    OpaquePolicySnapshot,
    PrepareStoreOutput,
)

__all__ = [
    "LMCACHE_CONTRACT",
    "PAGE",
    "LmcacheBackend",
    "backend",
    "fifo_backend",
    "key_for",
    "lfu_backend",
    "lfu_layerwise_backend",
    "lru_backend",
    "lru_layerwise_backend",
    "mru_backend",
    "run_coroutine",
]

PAGE = 4096
"""Bytes of one chunk (one layer of one chunk, layerwise): LMCache's default alignment."""

LMCACHE_CONTRACT: dict[str, Any] = {
    "profile": "lmcache-0.5",
    "errors": "builtin",
    "duplicates": False,
    "malformed": False,
}
"""The contract every LMCache factory declares (`base.contract.declared`)."""

_SHAPE = torch.Size([2, 1, 32, 64])
"""One chunk in LMCache's `KV_2LTD` format (K and V, 1 layer, 32 tokens, 64 bytes)."""
_LAYER_SHAPE = torch.Size([32, 2, 64])
"""One layer of one chunk in LMCache's layerwise `KV_T2D` format."""


def key_for(chunk_hash: int) -> CacheEngineKey:
    """The `CacheEngineKey` the adapter uses for its `chunk_hash`-th key."""
    return CacheEngineKey("evictable", 1, 0, chunk_hash, torch.uint8)


def run_coroutine(coro: Any) -> Any:
    """Drive a coroutine that awaits nothing to its result (LMCache's batched gets)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("the coroutine awaited something")


def _config(policy: str, layerwise: bool) -> LMCacheEngineConfig:
    return LMCacheEngineConfig.from_defaults(
        local_cpu=True,
        cache_policy=policy,
        use_layerwise=layerwise,
        pin_timeout_sec=10**9,  # leases expire only when the engines say so
        pin_check_interval_sec=3600,
    )


class LmcacheBackend:
    """One LMCache `LocalCPUBackend` with this project's manager API (module doc).

    `lmcache_policy`: LMCache's `cache_policy` setting (default: `policy` upper-cased);
    `backend_class`: `LocalCPUBackend` or a subclass (a corrected test double, say).
    """

    def __init__(
        self,
        num_blocks: int,
        policy: str = "lru",
        enable_events: bool = False,
        layers: int = 0,
        lmcache_policy: str | None = None,
        backend_class: type = LocalCPUBackend,
    ) -> None:
        self.num_blocks = num_blocks
        self.policy_name = policy
        self.layers = layers
        self.per_chunk = max(1, layers)
        config = _config(lmcache_policy or policy.upper(), layers > 0)
        PinMonitor.GetOrCreate(config)  # the pins' lease keeper (one per process)
        pages = max(1, num_blocks * self.per_chunk)
        self.allocator = MixedMemoryAllocator(pages * PAGE)
        self.reserved = None
        if num_blocks == 0:  # a cache without room: its one page is taken for good
            self.reserved = self.allocator.allocate(_SHAPE, torch.uint8, MemoryFormat.KV_2LTD)
        self.lmc = backend_class(config, memory_allocator=self.allocator)
        self._hashes: dict[Key, int] = {}
        self._keys: dict[int, Key] = {}
        self.pending: dict[Key, list[Any]] = {}
        self.held: dict[Key, list[list[Any]]] = {}

    # ------------------------------------------------------------ keys

    def ck(self, key: Key) -> CacheEngineKey:
        """The chunk's `CacheEngineKey` (the same one every time)."""
        h = self._hashes.get(key)
        if h is None:
            h = self._hashes[key] = len(self._hashes)
            self._keys[h] = key
        return key_for(h)

    def layer_keys(self, key: Key) -> list[CacheEngineKey]:
        """The backend keys of one chunk: the chunk's key, or its per-layer keys."""
        ck = self.ck(key)
        return ck.split_layers(self.layers) if self.layers else [ck]

    def key_of(self, ck: CacheEngineKey) -> Key:
        return self._keys[ck.chunk_hash]

    def _chunk_keys(self) -> list[Key]:
        """The chunks in the index, in its order (each once)."""
        return list(dict.fromkeys(self.key_of(ck) for ck in self.lmc.hot_cache))

    def slot_of(self, obj: Any) -> int:
        return int(obj.meta.address) // (PAGE * self.per_chunk)

    # ------------------------------------------------------------ the manager API

    def lookup(self, key: Key) -> LookupResult:
        hit = all(self.lmc.contains(ck) for ck in self.layer_keys(key))
        return LookupResult.HIT if hit else LookupResult.MISS

    def _allocate(self) -> list[Any] | None:
        if self.layers:
            got = self.lmc.batched_allocate(
                _LAYER_SHAPE, torch.uint8, self.layers, fmt=MemoryFormat.KV_T2D, busy_loop=False
            )
            return list(got) if got is not None else None
        one = self.lmc.allocate(_SHAPE, torch.uint8, fmt=MemoryFormat.KV_2LTD, busy_loop=False)
        return [one] if one is not None else None

    def prepare_store(self, keys: Sequence[Key]) -> PrepareStoreOutput:
        stored: list[Key] = []
        victims: list[Key] = []
        for key in keys:
            if key in self.pending or self.lookup(key) is LookupResult.HIT:
                continue
            before = self._chunk_keys()
            objs = self._allocate()
            after = set(self._chunk_keys())
            victims.extend(k for k in before if k not in after)
            if objs is None:
                break
            self.pending[key] = objs
            stored.append(key)
        slots = [self.slot_of(self.pending[k][0]) for k in stored]
        return PrepareStoreOutput(keys_to_store=stored, slot_ids=slots, evicted_keys=victims)

    def complete_store(self, keys: Sequence[Key], success: bool = True) -> list[Key]:
        acted = [k for k in keys if k in self.pending]
        for key in acted:
            objs = self.pending.pop(key)
            if success:
                self.lmc.batched_submit_put_task(self.layer_keys(key), objs)
            for obj in objs:
                obj.ref_count_down()
        return acted

    def prepare_load(self, keys: Sequence[Key]) -> list[int]:
        cks = [ck for key in keys for ck in self.layer_keys(key)]
        objs = run_coroutine(self.lmc.batched_get_non_blocking("evictable", cks))
        n = self.per_chunk
        slots = []
        for i, key in enumerate(keys):
            chunk = list(objs[i * n : (i + 1) * n])
            self.held.setdefault(key, []).append(chunk)
            slots.append(self.slot_of(chunk[0]))
        return slots

    def complete_load(self, keys: Sequence[Key]) -> None:
        for key in keys:
            if not self.held.get(key):
                raise NotLoadingError([key])
        for key in keys:
            chunk = self.held[key].pop(0)
            if not self.held[key]:
                del self.held[key]
            for obj in chunk:
                obj.ref_count_down()

    def touch(self, keys: Iterable[Key]) -> None:
        """No effect (LMCache has no recency hint by key; see the module doc)."""

    def reset_cache(self) -> None:
        self.lmc.clear()

    def take_events(self) -> list[OffloadingEvent]:
        return []

    # ------------------------------------------------------------ LMCache's own calls

    def lookup_pin(self, keys: Sequence[Key]) -> int:
        if not self.layers:
            return int(self.lmc.batched_contains([self.ck(k) for k in keys], pin=True))
        hits = 0
        for key in keys:  # as LMCache's layerwise lookup: a chunk hits when every layer does
            if self.lmc.batched_contains(self.layer_keys(key), pin=True) != self.layers:
                break
            hits += 1
        return hits

    def touch_cache(self) -> None:
        self.lmc.touch_cache()

    def unpin(self, keys: Sequence[Key]) -> None:
        for key in keys:
            for ck in self.layer_keys(key):
                self.lmc.unpin(ck)

    def remove(self, keys: Sequence[Key]) -> int:
        removed = 0
        for key in keys:
            cks = self.layer_keys(key)
            removed += self.lmc.batched_remove(cks, force=True) == len(cks)
        return removed

    def expire_pins(self, keys: Sequence[Key]) -> None:
        monitor = PinMonitor.GetOrCreate()
        for key in keys:
            for ck in self.layer_keys(key):
                obj = self.lmc.hot_cache.get(ck)
                if obj is not None:
                    monitor._force_unpin_timeout_object(obj, 10.0**9)

    # ------------------------------------------------------------ counters, snapshot

    def _objects(self) -> dict[Key, Any]:
        """Each indexed chunk's first layer's object (its layers share their counters)."""
        hot = self.lmc.hot_cache
        out: dict[Key, Any] = {}
        for key in self._chunk_keys():
            first = hot.get(self.layer_keys(key)[0])
            out[key] = (
                first
                if first is not None
                else next(obj for ck, obj in hot.items() if self.key_of(ck) == key)
            )
        return out

    @property
    def num_evictable(self) -> int:
        return sum(1 for obj in self._objects().values() if obj.can_evict)

    @property
    def num_pending(self) -> int:
        return len(self.pending)

    def _free_slots(self) -> list[int]:
        manager = self.allocator.pin_allocator.address_manager
        pages: list[int] = []
        for block in manager._explicit_list:
            pages.extend(range(block.start // PAGE, (block.start + block.size) // PAGE))
        n = self.per_chunk
        return sorted({p // n for p in pages if p // n < self.num_blocks})

    def _index_state(self) -> object:
        order = tuple(self._chunk_keys())
        freq = getattr(self.lmc.cache_policy, "freq_to_keys", None)
        if freq is None:
            return order
        buckets = tuple(
            (int(f), tuple(dict.fromkeys(self.key_of(ck) for ck in keys)))
            for f, keys in freq.items()
        )
        return (order, buckets)

    def snapshot(self) -> ManagerSnapshot:
        """LMCache's state in this project's snapshot shape (see the module doc)."""
        blocks: set[BlockEntry] = set()
        pins: list[tuple[Key, int]] = []
        indexed = self._objects()
        for key, obj in indexed.items():
            ref = int(obj.meta.pin_count) + int(obj.meta.ref_count) - 1
            state = CpuState.READY if ref == 0 else CpuState.LOADING
            blocks.add(BlockEntry(key, state, ref, self.slot_of(obj)))
            if obj.meta.pin_count:
                pins.append((key, int(obj.meta.pin_count)))
        for key, objs in self.pending.items():
            blocks.add(BlockEntry(key, CpuState.PENDING, -1, self.slot_of(objs[0])))
        for key, chunks in self.held.items():
            for chunk in chunks:
                if indexed.get(key) is not chunk[0]:  # read, but no longer in the index
                    reads = int(chunk[0].meta.ref_count)
                    blocks.add(BlockEntry(key, CpuState.LOADING, reads, self.slot_of(chunk[0])))
        layers = self.lmc.keys_in_request[:: self.per_chunk]  # a chunk's layers, recorded together
        recorded = tuple(self.key_of(ck) for ck in layers)
        policy = (self._index_state(), tuple(sorted(pins, key=lambda kv: repr(kv[0]))), recorded)
        return ManagerSnapshot(
            num_blocks=self.num_blocks,
            blocks=frozenset(blocks),
            free_stack=tuple(self._free_slots()),
            high_water=self.num_blocks,
            num_evictable=self.num_evictable,
            num_pending=self.num_pending,
            pending_events=(),
            policy=OpaquePolicySnapshot(f"lmcache-{self.policy_name}", policy),
        )


def _declare(factory: Any, policy: str | None) -> Any:
    factory.evictable_contract = dict(LMCACHE_CONTRACT)
    if policy is not None:
        factory.evictable_policy = policy
    return factory


def backend(num_blocks: int, policy: str, enable_events: bool) -> LmcacheBackend:
    """LMCache's backend with the policy the engine names (lru, fifo, mru or lfu)."""
    return LmcacheBackend(num_blocks, policy, enable_events)


def lru_backend(num_blocks: int, policy: str, enable_events: bool) -> LmcacheBackend:
    """LMCache's backend with its LRU policy."""
    return LmcacheBackend(num_blocks, "lru", enable_events)


def fifo_backend(num_blocks: int, policy: str, enable_events: bool) -> LmcacheBackend:
    """LMCache's backend with its FIFO policy."""
    return LmcacheBackend(num_blocks, "fifo", enable_events)


def mru_backend(num_blocks: int, policy: str, enable_events: bool) -> LmcacheBackend:
    """LMCache's backend with its MRU policy."""
    return LmcacheBackend(num_blocks, "mru", enable_events)


def lfu_backend(num_blocks: int, policy: str, enable_events: bool) -> LmcacheBackend:
    """LMCache's backend with its LFU policy."""
    return LmcacheBackend(num_blocks, "lfu", enable_events)


def lru_layerwise_backend(num_blocks: int, policy: str, enable_events: bool) -> LmcacheBackend:
    """LMCache's layerwise backend (two layers per chunk) with its LRU policy."""
    return LmcacheBackend(num_blocks, "lru", enable_events, layers=2)


def lfu_layerwise_backend(num_blocks: int, policy: str, enable_events: bool) -> LmcacheBackend:
    """LMCache's layerwise backend (two layers per chunk) with its LFU policy."""
    return LmcacheBackend(num_blocks, "lfu", enable_events, layers=2)


_declare(backend, None)
_declare(lru_backend, "lru")
_declare(fifo_backend, "fifo")
_declare(mru_backend, "mru")
_declare(lfu_backend, "lfu")
_declare(lru_layerwise_backend, "lru")
_declare(lfu_layerwise_backend, "lfu")
