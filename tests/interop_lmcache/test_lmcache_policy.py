"""evictable's policy inside LMCache 0.5: enabled by one config setting, LMCache's LRU
victims, and a victim search that visits each busy chunk at most once per busy period."""

from __future__ import annotations

import threading
from typing import Any

import pytest

pytest.importorskip("lmcache")

import torch
from lmcache.v1.config import LMCacheEngineConfig
from lmcache.v1.memory_allocators.mixed_memory_allocator import MixedMemoryAllocator
from lmcache.v1.memory_management import MemoryFormat
from lmcache.v1.pin_monitor import PinMonitor
from lmcache.v1.storage_backend.local_cpu_backend import LocalCPUBackend

import evictable.lmcache as face
from evictable.proofs.adapters.lmcache.backend import key_for

SHAPE = torch.Size([2, 1, 32, 64])  # one 4 KiB chunk in LMCache's KV_2LTD format


def _backend(policy: str, pages: int) -> Any:
    config = LMCacheEngineConfig.from_defaults(local_cpu=True, cache_policy=policy)
    PinMonitor.GetOrCreate(config)  # a pin needs it (LMCache's engine makes it)
    return LocalCPUBackend(config, memory_allocator=MixedMemoryAllocator(pages * 4096))


def _store(backend: Any, i: int) -> bool:
    obj = backend.allocate(SHAPE, torch.uint8, fmt=MemoryFormat.KV_2LTD, busy_loop=False)
    if obj is None:
        return False
    backend.batched_submit_put_task([key_for(i)], [obj])
    obj.ref_count_down()
    return True


def test_one_config_setting_selects_the_policy() -> None:
    backend = _backend(face.POLICY_NAME.lower(), 2)  # LMCache upper-cases the name
    assert isinstance(backend.cache_policy, face.EvictableLRUPolicy)
    assert backend.hot_cache is backend.cache_policy.cache


def test_same_victims_as_lmcaches_lru_with_reads_and_pins() -> None:
    ours, theirs = _backend("EVICTABLE", 6), _backend("LRU", 6)
    held: list[Any] = []
    for b in (ours, theirs):
        for i in range(6):
            _store(b, i)
        b.pin(key_for(0))
        held.append(b.get_blocking(key_for(2)))
        b.batched_contains([key_for(4), key_for(1)], pin=True)
        b.touch_cache()
        b.unpin(key_for(4))
        b.unpin(key_for(1))
        for i in range(6, 10):
            _store(b, i)
    assert [k.chunk_hash for k in ours.get_keys()] == [k.chunk_hash for k in theirs.get_keys()]


def test_a_busy_chunk_is_visited_once_per_busy_period() -> None:
    """After the first search met them, the pinned chunks are out of the idle index: no
    later search visits them (LMCache's LRU walks past all nine at every store)."""
    backend = _backend("EVICTABLE", 10)
    for i in range(10):
        _store(backend, i)
    for i in range(9):
        backend.pin(key_for(i))  # the nine oldest pinned
    order = backend.cache_policy.order
    assert len(order.idle) == 10  # believed idle until a search meets them
    assert _store(backend, 10)  # the first search meets the nine and parks them
    assert len(order.idle) == 1 and len(order) == 10
    for i in range(11, 31):
        assert _store(backend, i)
        assert len(order.idle) == 1  # only the newest chunk: nothing busy to walk past
    backend.unpin(key_for(3))  # idle again: back at its place, the least recent
    assert backend.cache_policy.get_evict_candidates(backend.hot_cache, 1) == [key_for(3)]


def test_a_release_on_another_thread_is_seen_by_the_next_search() -> None:
    backend = _backend("EVICTABLE", 2)
    _store(backend, 0)
    _store(backend, 1)
    readers = [backend.get_blocking(key_for(i)) for i in range(2)]
    assert not _store(backend, 2)  # both read: no victim (both parked)
    worker = threading.Thread(target=readers[1].ref_count_down)
    worker.start()
    worker.join()
    assert _store(backend, 2)  # chunk 1 was released elsewhere: it is the victim
    assert key_for(0) in backend.hot_cache and key_for(1) not in backend.hot_cache
