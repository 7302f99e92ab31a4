"""A corrected test double of LMCache 0.5's CPU tier: each finding's suggested fix
(docs/interop.md, "LMCache 0.5"), as a subclass of `LocalCPUBackend` and a corrected
LFU, so that `evictable check` can show that nothing else is wrong.

* `batched_get_non_blocking` finds every key before it takes any read reference;
* `touch_cache` skips recorded keys that left the index and forgets the record even
  when the policy raises;
* LFU's `get_evict_candidates` changes nothing (the evicted key leaves LFU's tables
  when it leaves the hot cache: `remove` tells the policy on every removal).
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("lmcache")

from lmcache.v1.storage_backend.cache_policy import POLICY_MAPPING
from lmcache.v1.storage_backend.cache_policy.lfu import LFUCachePolicy
from lmcache.v1.storage_backend.local_cpu_backend import LocalCPUBackend

from evictable.proofs.adapters.lmcache import LMCACHE_CONTRACT, LmcacheBackend

FIXED_LFU = "LFU_CORRECTED"


class CorrectedLFU(LFUCachePolicy):  # type: ignore[misc]
    """LMCache's LFU whose victim search changes nothing."""

    def get_evict_candidates(self, cache_dict: Any, num_candidates: int = 1) -> list[Any]:
        out: list[Any] = []
        for fifo_keys in self.freq_to_keys.values():
            for key in fifo_keys:
                if cache_dict[key].can_evict:
                    out.append(key)
                    if len(out) == num_candidates:
                        return out
        return out


POLICY_MAPPING[FIXED_LFU] = CorrectedLFU


class CorrectedBackend(LocalCPUBackend):  # type: ignore[misc]
    """`LocalCPUBackend` with the three fixes (see the module docstring)."""

    async def batched_get_non_blocking(
        self, lookup_id: str, keys: list[Any], transfer_spec: Any = None
    ) -> list[Any]:
        with self.cpu_lock:
            objs = [self.hot_cache[key] for key in keys]  # KeyError before any change
            for obj in objs:
                obj.ref_count_up()
        return objs

    def touch_cache(self) -> None:
        state: dict[str, Any] = self.__dict__
        with self.cpu_lock:
            try:
                for key in reversed(state["keys_in_request"]):
                    if key in self.hot_cache:
                        self.cache_policy.update_on_hit(key, self.hot_cache)
            finally:
                state["keys_in_request"] = []

    def remove(self, key: Any, force: bool = True) -> bool:
        removed = bool(super().remove(key, force))
        if removed and not force:  # an eviction: the policy forgets the key too
            self.cache_policy.update_on_force_evict(key)
        return removed


def _declare(factory: Any, policy: str) -> Any:
    factory.evictable_contract = dict(LMCACHE_CONTRACT)
    factory.evictable_policy = policy
    return factory


def corrected_lru(num_blocks: int, policy: str, enable_events: bool) -> LmcacheBackend:
    return LmcacheBackend(num_blocks, "lru", enable_events, backend_class=CorrectedBackend)


def corrected_lfu_layerwise(num_blocks: int, policy: str, enable_events: bool) -> LmcacheBackend:
    return LmcacheBackend(
        num_blocks,
        "lfu",
        enable_events,
        layers=2,
        lmcache_policy=FIXED_LFU,
        backend_class=CorrectedBackend,
    )


_declare(corrected_lru, "lru")
_declare(corrected_lfu_layerwise, "lfu")
