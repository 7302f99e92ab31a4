"""LMCache 0.5: LFU with layerwise storage forgets idle chunks, which are never evicted again.

Standalone (LMCache and torch only). `LocalCPUBackend.batched_allocate` (layerwise
mode) asks the policy for up to 64 candidates at once and evicts the first chunk whose
layers are all evictable, then stops. LFU's `get_evict_candidates` takes every
candidate it returns out of its frequency tables (`key_to_freq`, `freq_to_keys`) on the
assumption that all of them are evicted; the candidates `batched_allocate` did not
evict stay in the hot cache, unknown to LFU. LFU never offers them again: a full cache
of idle chunks refuses every store (`batched_allocate` returns None), and a lookup hit
on such a chunk makes `touch_cache` raise `KeyError`.

Exit status 0: reproduced (the defect is there); 1: not reproduced. LMCache's own log
goes to stderr (`LMCACHE_LOG_LEVEL=ERROR` quiets it).
"""

import sys

import torch
from lmcache.utils import CacheEngineKey
from lmcache.v1.config import LMCacheEngineConfig
from lmcache.v1.memory_allocators.mixed_memory_allocator import MixedMemoryAllocator
from lmcache.v1.memory_management import MemoryFormat
from lmcache.v1.pin_monitor import PinMonitor
from lmcache.v1.storage_backend.local_cpu_backend import LocalCPUBackend

LAYERS = 2
LAYER = torch.Size([32, 2, 64])  # one 4 KiB layer of a chunk, LMCache's KV_T2D format
config = LMCacheEngineConfig.from_defaults(local_cpu=True, cache_policy="LFU", use_layerwise=True)
PinMonitor.GetOrCreate(config)  # the engine creates it; a pin needs it
backend = LocalCPUBackend(config, memory_allocator=MixedMemoryAllocator(2 * LAYERS * 4096))


def chunk(i: int) -> list:
    return CacheEngineKey("model", 1, 0, i, torch.uint8).split_layers(LAYERS)


def store(i: int) -> bool:  # the layerwise store: all layers at once, then the writer lets go
    objs = backend.batched_allocate(
        LAYER, torch.uint8, LAYERS, fmt=MemoryFormat.KV_T2D, busy_loop=False
    )
    if objs is None:
        return False
    backend.batched_submit_put_task(chunk(i), objs)
    for obj in objs:
        obj.ref_count_down()
    return True


store(0)
store(1)  # the cache is full: two idle chunks
print("store of chunk 2:", store(2))  # evicts chunk 0; chunk 1's layers drop out of LFU
held = sorted({k.chunk_hash for k in backend.hot_cache})
idle = all(obj.can_evict for obj in backend.hot_cache.values())
known = sorted({k.chunk_hash for k in backend.cache_policy.key_to_freq})
print(f"index holds chunks {held}, all idle: {idle}; LFU knows chunks {known}")
readers = [backend.get_blocking(k) for k in chunk(2)]  # a reader holds chunk 2
refused = not store(3)
print(
    f"store of chunk 3 while chunk 2 is read: {not refused} (chunk 1 is idle, LFU never offers it)"
)
stuck = backend.hot_cache.get(chunk(1)[0]) is not None
try:
    backend.batched_contains(chunk(1), pin=True)
    backend.touch_cache()
    touched = True
except KeyError:
    touched = False
    print("touch_cache after a lookup hit on chunk 1 raised KeyError")
sys.exit(0 if stuck and refused and not touched and known == [2] else 1)
