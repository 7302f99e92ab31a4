"""evictable inside LMCache 0.5: an LRU cache policy for LMCache's CPU tier whose victim
search never visits a pinned or read chunk, and the adapters that check LMCache.

Enable it in LMCache with one config setting, once this module is imported in the
process that builds the cache engine (importing it registers the policy under the name
`EVICTABLE` in LMCache's policy table, `POLICY_MAPPING`, which is how
`LocalCPUBackend` finds a policy by its `cache_policy` setting):

    import evictable.lmcache                 # registers "EVICTABLE"
    # LMCache config (YAML, or LMCACHE_CACHE_POLICY=EVICTABLE in the environment):
    cache_policy: EVICTABLE

(docs/interop.md, "LMCache 0.5: inside LMCache".)

* `EvictableLRUPolicy` (evictable.lmcache.policy): LMCache 0.5's LRU exactly -- puts
  and hits go to the most recent end, victims are the least recent chunks with no
  lookup pin and no reader -- with the chunks believed idle kept in an order structure
  of their own (`impl.policies.idle_order`): a busy chunk met by a victim search is
  parked until its counters change, so each is visited once per busy period and
  finding `n` victims costs O(n log N) amortised however many chunks are pinned or
  read. LMCache's own policies (LRU, FIFO, MRU, LFU) walk past every one of them at
  every eviction.
* `evictable_backend`, `evictable_layerwise_backend`: LMCache's real `LocalCPUBackend`
  with this policy, as factories for `evictable check --profile lmcache-0.5`; and
  LMCache's own policies' factories (`lru_backend`, `fifo_backend`, `mru_backend`,
  `lfu_backend`, `lru_layerwise_backend`, `lfu_layerwise_backend`), from
  `evictable.proofs.adapters.lmcache`.

Importing this module without LMCache installed raises one `ImportError` that says
what to build (`make interop-lmcache`).
"""

from __future__ import annotations

from typing import Any

from evictable.lmcache.policy import EvictableLRUPolicy
from evictable.proofs.adapters.lmcache import (  # LMCache 0.5 present, or one clear ImportError
    LMCACHE_CONTRACT,
    LmcacheBackend,
    fifo_backend,
    lfu_backend,
    lfu_layerwise_backend,
    lru_backend,
    lru_layerwise_backend,
    mru_backend,
)

__all__ = [
    "POLICY_NAME",
    "EvictableLRUPolicy",
    "evictable_backend",
    "evictable_layerwise_backend",
    "fifo_backend",
    "lfu_backend",
    "lfu_layerwise_backend",
    "lru_backend",
    "lru_layerwise_backend",
    "mru_backend",
    "register",
]

POLICY_NAME = "EVICTABLE"
"""The `cache_policy` setting that selects `EvictableLRUPolicy` (LMCache upper-cases it)."""


def register() -> None:
    """Put `EvictableLRUPolicy` into LMCache's policy table under `POLICY_NAME` (done
    when this module is imported; idempotent)."""
    from lmcache.v1.storage_backend.cache_policy import POLICY_MAPPING

    POLICY_MAPPING[POLICY_NAME] = EvictableLRUPolicy


register()


def evictable_backend(num_blocks: int, policy: str, enable_events: bool) -> LmcacheBackend:
    """LMCache's backend with `cache_policy: EVICTABLE` (held to LMCache's LRU)."""
    return LmcacheBackend(num_blocks, "lru", enable_events, lmcache_policy=POLICY_NAME)


def evictable_layerwise_backend(
    num_blocks: int, policy: str, enable_events: bool
) -> LmcacheBackend:
    """LMCache's layerwise backend (two layers per chunk) with `cache_policy: EVICTABLE`."""
    return LmcacheBackend(num_blocks, "lru", enable_events, layers=2, lmcache_policy=POLICY_NAME)


def _declare(factory: Any) -> None:
    factory.evictable_contract = dict(LMCACHE_CONTRACT)
    factory.evictable_policy = "lru"


_declare(evictable_backend)
_declare(evictable_layerwise_backend)
