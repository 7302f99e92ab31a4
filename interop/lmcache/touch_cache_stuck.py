"""LMCache 0.5: once a looked-up key leaves the index, every later `touch_cache` raises.

Standalone (LMCache and torch only). A lookup with `pin=True` (`contains`,
`batched_contains`, `batched_async_contains`) records each hit key in
`keys_in_request`; `touch_cache` hands the recorded keys to the cache policy
(`update_on_hit`) and only then empties the record. If a recorded key left the index
in between (a forced `remove` from the controller, or an eviction once its pin was
released or its lease expired), LRU's `move_to_end` (MRU's, LFU's `key_to_freq[key]`)
raises `KeyError`, the record is never emptied, and every later `touch_cache` raises
the same error. `LMCacheEngine.lookup(pin=True)` calls `touch_cache` in its `finally`
clause, so from then on every pinned lookup of that engine raises (and the recorded
list keeps growing with every lookup's keys). FIFO (whose `update_on_hit` does
nothing) is not affected.

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

SHAPE = torch.Size([2, 1, 32, 64])  # one 4 KiB chunk in LMCache's KV_2LTD format
policy = sys.argv[1] if len(sys.argv) > 1 else "LRU"
config = LMCacheEngineConfig.from_defaults(local_cpu=True, cache_policy=policy)
PinMonitor.GetOrCreate(config)  # the engine creates it; a pin needs it
backend = LocalCPUBackend(config, memory_allocator=MixedMemoryAllocator(2 * 4096))


def key(i: int) -> CacheEngineKey:
    return CacheEngineKey("model", 1, 0, i, torch.uint8)


def store(i: int) -> None:  # what StorageManager.batched_put does
    obj = backend.allocate(SHAPE, torch.uint8, fmt=MemoryFormat.KV_2LTD, busy_loop=False)
    backend.batched_submit_put_task([key(i)], [obj])
    obj.ref_count_down()


store(0)
store(1)
print("pinned lookup hits", backend.batched_contains([key(0)], pin=True))
backend.remove(key(0), force=True)  # e.g. the controller removes it (pins released)
failures = 0
for attempt in range(3):
    backend.batched_contains([key(1)], pin=True)  # a later request's lookup
    try:
        backend.touch_cache()
    except KeyError as exc:
        failures += 1
        print(f"touch_cache #{attempt + 1} raised KeyError for key {exc.args[0].chunk_hash}")
print(f"recorded keys left: {[k.chunk_hash for k in backend.keys_in_request]}")
sys.exit(0 if failures == 3 else 1)
