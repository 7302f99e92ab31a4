"""LMCache 0.5's CPU tier (`LocalCPUBackend`) behind this project's manager adapter protocol.

Each factory here is what `evictable check --profile lmcache-0.5` takes (docs/interop.md,
"LMCache 0.5", has the commands and the findings):

* `lru_backend`, `fifo_backend`, `mru_backend`, `lfu_backend` (and `backend`, taking
  the policy name): one real `lmcache.v1.storage_backend.local_cpu_backend.
  LocalCPUBackend` with that LMCache cache policy, over LMCache's own default
  allocator (`MixedMemoryAllocator`), one page per chunk;
* `lru_layerwise_backend`, `lfu_layerwise_backend`: the same backend in LMCache's
  layerwise mode, each chunk stored as two per-layer keys through its batched
  allocation (`batched_allocate`, which evicts whole chunks).

`evictable.lmcache` adds the factory of the backend with evictable's own policy.

Importing this package without LMCache installed raises one `ImportError` that says
what to build (`make interop-lmcache`); LMCache versions other than 0.5 are refused
the same way (the adapter reads a few of 0.5's internal fields, for snapshots).
"""

from __future__ import annotations

import os

try:
    os.environ.setdefault("LMCACHE_LOG_LEVEL", "ERROR")  # LMCache logs each eviction at INFO
    import lmcache as _lmcache
    import lmcache.v1.storage_backend.local_cpu_backend  # torch, numba and the backend load too
except ImportError as _exc:  # one clear error, not LMCache's (or torch's) traceback
    raise ImportError(
        "evictable.proofs.adapters.lmcache needs LMCache 0.5 and a CPU build of torch "
        f"({type(_exc).__name__}: {_exc}); `make interop-lmcache` builds "
        ".venv-interop-lmcache with them (docs/interop.md, 'LMCache 0.5')"
    ) from None

from evictable.model.lmcache05 import LMCACHE_VERSION

if not str(getattr(_lmcache, "__version__", "")).startswith(LMCACHE_VERSION + "."):
    raise ImportError(
        f"evictable.proofs.adapters.lmcache is written for LMCache {LMCACHE_VERSION}.x, "
        f"found {getattr(_lmcache, '__version__', '?')} (docs/interop.md, 'LMCache 0.5')"
    )

from evictable.proofs.adapters.lmcache.backend import (
    LMCACHE_CONTRACT,
    LmcacheBackend,
    backend,
    fifo_backend,
    lfu_backend,
    lfu_layerwise_backend,
    lru_backend,
    lru_layerwise_backend,
    mru_backend,
)

__all__ = [
    "LMCACHE_CONTRACT",
    "LmcacheBackend",
    "backend",
    "fifo_backend",
    "lfu_backend",
    "lfu_layerwise_backend",
    "lru_backend",
    "lru_layerwise_backend",
    "mru_backend",
]
