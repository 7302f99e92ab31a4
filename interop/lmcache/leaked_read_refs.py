"""LMCache 0.5: a batched get that fails half-way leaks the read references it took.

Standalone (LMCache and torch only). `LocalCPUBackend.batched_get_non_blocking` takes
a read reference (`ref_count_up`) on each key in turn and indexes the hot cache with
`hot_cache[key]`: a key that is not there raises `KeyError` after the earlier keys'
references were taken. The caller got no objects, so nothing will release them: the
chunk can never be evicted again.

Exit status 0: reproduced (the defect is there); 1: not reproduced. LMCache's own log
goes to stderr (`LMCACHE_LOG_LEVEL=ERROR` quiets it).
"""

import sys

import torch
from lmcache.utils import CacheEngineKey
from lmcache.v1.config import LMCacheEngineConfig
from lmcache.v1.memory_allocators.mixed_memory_allocator import MixedMemoryAllocator
from lmcache.v1.memory_management import MemoryFormat
from lmcache.v1.storage_backend.local_cpu_backend import LocalCPUBackend

SHAPE = torch.Size([2, 1, 32, 64])  # one 4 KiB chunk in LMCache's KV_2LTD format
config = LMCacheEngineConfig.from_defaults(local_cpu=True, cache_policy="LRU")
backend = LocalCPUBackend(config, memory_allocator=MixedMemoryAllocator(2 * 4096))


def key(i: int) -> CacheEngineKey:
    return CacheEngineKey("model", 1, 0, i, torch.uint8)


def store(i: int) -> None:  # what StorageManager.batched_put does
    obj = backend.allocate(SHAPE, torch.uint8, fmt=MemoryFormat.KV_2LTD, busy_loop=False)
    backend.batched_submit_put_task([key(i)], [obj])
    obj.ref_count_down()


def batched_get(keys: list[CacheEngineKey]) -> list:
    coro = backend.batched_get_non_blocking("lookup-1", keys)
    try:
        coro.send(None)  # it awaits nothing
    except StopIteration as done:
        return done.value
    raise RuntimeError("unexpected await")


store(0)
store(1)
try:
    batched_get([key(0), key(7)])  # key 7 was never stored
except KeyError as exc:
    print(f"batched_get_non_blocking raised KeyError for {exc.args[0].chunk_hash}")
obj = backend.hot_cache[key(0)]
print(f"key 0: ref_count={obj.get_ref_count()} (1 = the index's own), can_evict={obj.can_evict}")
# Key 1 is idle; key 0 is pinned by the leaked reference: only key 1 can ever be evicted.
store(2)
store(3)
left = [k.chunk_hash for k in backend.get_keys()]
print(f"after two more stores the index holds {left}: key 0 can no longer be evicted")
sys.exit(0 if obj.get_ref_count() == 2 and 0 in left and not obj.can_evict else 1)
