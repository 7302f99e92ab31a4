"""vLLM 0.33's KV-cache offloading classes behind this project's adapter protocols.

Each factory here is what `evictable check` takes (docs/interop.md has the commands
and the verdicts):

* `lru_manager`, `arc_manager` (and `manager`, taking the policy name): vLLM's
  `vllm.v1.kv_offload.cpu.manager.CPUOffloadingManager`;
* `free_queue`: `vllm.v1.core.kv_cache_utils.FreeKVCacheBlockQueue`
  (`evictable check --target free-queue`);
* `block_pool`: `vllm.v1.core.block_pool.BlockPool` (`--target block-pool`);
* `example_tiering`, `fs_tiering`, `peer_tiering`, `p2p_tiering`, `harness_tiering`:
  vLLM's `vllm.v1.kv_offload.tiering.manager.TieringOffloadingManager` built by its
  own `TieringOffloadingSpec` with its example tier, its fs tier, its p2p server role
  behind a tier of ours, its real p2p tier (transports stubbed) or tiers of ours whose
  every move is an engine's event (`VllmTiering`, the tiering adapter protocol);
* `ours_example_tiering`, `ours_fs_tiering`, `ours_peer_tiering`, `ours_p2p_tiering`,
  `ours_harness_tiering`: our orchestrator as `evictable.vllm.EvictableTieringSpec`
  builds it, over the same tiers (`OursOverVllm`, `tiering_ours`);
* `lazy_scanner`: the lazy offload walk of
  `vllm.v1.simple_kv_offload.manager.SimpleCPUOffloadScheduler`
  (`_prepare_lazy_store_specs`) over a real vLLM `BlockPool` made by `block_pool`
  (`--target lazy ...:lazy_scanner --pool ...:block_pool`).

Keys are vLLM's own format: `K(i)` is `make_offload_key(i.to_bytes(32, "big"), i % 2)`
(a 32-byte block hash and a 4-byte big-endian group index), a `bytes` value that
prints as `K(i)` so traces stay readable and snippets runnable (`VLLM_KEYS`).

Importing this package without vLLM installed raises one `ImportError` that says
what to install; vLLM versions other than 0.33 are refused the same way (the
adapters read a few of 0.33's internal fields, for snapshots).
"""

from __future__ import annotations

try:
    import vllm as _vllm
    import vllm.v1.kv_offload.base  # torch and the offload code load too
except ImportError as _exc:  # one clear error, not vLLM's (or torch's) traceback
    raise ImportError(
        "evictable.proofs.adapters.vllm needs vLLM 0.33.0 and torch "
        f"({type(_exc).__name__}: {_exc}); `make interop` builds .venv-interop with "
        "them (docs/interop.md)"
    ) from None

from evictable.model.vllm033 import VLLM_VERSION

if not str(getattr(_vllm, "__version__", "")).startswith(VLLM_VERSION):
    raise ImportError(
        f"evictable.proofs.adapters.vllm is written for vLLM {VLLM_VERSION}.x, "
        f"found {getattr(_vllm, '__version__', '?')} (docs/interop.md)"
    )

from evictable.proofs.adapters.vllm.gpu import block_pool, free_queue
from evictable.proofs.adapters.vllm.keys import VLLM_KEYS, K, OffloadKey
from evictable.proofs.adapters.vllm.lazy import lazy_scanner
from evictable.proofs.adapters.vllm.manager import (
    VllmManager,
    arc_manager,
    evictable_arc_manager,
    evictable_lru_manager,
    lru_manager,
    manager,
)
from evictable.proofs.adapters.vllm.tiering import VllmTiering
from evictable.proofs.adapters.vllm.tiering_factories import (
    example_tiering,
    fs_tiering,
    harness_tiering,
    p2p_tiering,
    peer_tiering,
)
from evictable.proofs.adapters.vllm.tiering_ours import (
    OursOverVllm,
    ours_example_tiering,
    ours_fs_tiering,
    ours_harness_tiering,
    ours_p2p_tiering,
    ours_peer_tiering,
)

__all__ = [
    "VLLM_KEYS",
    "K",
    "OffloadKey",
    "OursOverVllm",
    "VllmManager",
    "VllmTiering",
    "arc_manager",
    "block_pool",
    "evictable_arc_manager",
    "evictable_lru_manager",
    "example_tiering",
    "free_queue",
    "fs_tiering",
    "harness_tiering",
    "lazy_scanner",
    "lru_manager",
    "manager",
    "ours_example_tiering",
    "ours_fs_tiering",
    "ours_harness_tiering",
    "ours_p2p_tiering",
    "ours_peer_tiering",
    "p2p_tiering",
    "peer_tiering",
]
