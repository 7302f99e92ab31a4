"""evictable inside vLLM 0.33: cache policies for vLLM's CPU offloading manager, two
checking modes and our tiering orchestrator, each through vLLM's own plug-in points.

Enable one in vLLM with no fork, through vLLM's out-of-tree policy loader:

    kv_connector_extra_config={
        "eviction_policy": "EvictableARC",            # or "EvictableLRU"
        "cache_policy_module_path": "evictable.vllm",
    }

(vLLM 0.33's `CPUOffloadingSpec` reads the policy's name from `eviction_policy` and
hands it, with `cache_policy_module_path`, to
`CachePolicyFactory.get_cache_policy_cls`; docs/interop.md, "Inside vLLM".)

* `EvictableLRU` and `EvictableARC` are subclasses of vLLM's `CachePolicy` with
  vLLM 0.33's exact semantics -- request-scoped recency (`on_request_access`,
  `on_request_finished` with insertion-only and reused keys, `on_store_miss`,
  `ReqContext` key positions), every hook, `evict(n, protected)` atomic -- whose
  eviction costs O(victims) however many chunks are pinned: the idle chunks of
  each list are kept in an order structure of their own (`impl.policies.rank_index`
  for the LRU's ranks, `impl.policies.arc_index` for ARC's lists), so a pinned or
  pending chunk is never visited. They hold vLLM's `ChunkStatus` objects as vLLM's
  manager hands them over. ARC's `t1`, `t2`, `b1`, `b2` read as vLLM's ARC reads
  them (ordered, least recent first; `t1[key]` is the chunk) and `target_t1_size`
  is readable and settable.
* `EvictableChecked` (a checking mode for vLLM's CI; `eviction_policy` =
  `"EvictableChecked(<policy>[, raise|log])"`) wraps any cache policy and holds
  every hook call to the policy contract as it happens, raising (or logging)
  `evictable.errors.PolicyContractError` (evictable.vllm.checked).
* `CheckedOffloadingSpec` (vLLM's `spec_name` + `spec_module_path`) is vLLM's CPU
  spec whose manager is vLLM's own, mirrored call by call on the model's vLLM 0.33
  profile under the safety contract; the first divergence raises (or logs)
  `evictable.errors.MirrorDivergenceError` naming the call, the keys and both states.
  `MirroredManager` is that mirror around a vLLM manager built by hand (tests).
* `EvictableTieringSpec` (vLLM's `spec_name` + `spec_module_path`, with vLLM's own
  `secondary_tiers` entries) is vLLM's tiering spec whose orchestrator is ours
  (`evictable.impl.tiering.TieringManager`) over vLLM's own secondary tiers
  (evictable.vllm.tiering, evictable.vllm.tiers).

The package: this module is the public face (the names vLLM's factories look up);
`evictable.vllm.base` holds the import guard, the vLLM names the others use and the
views (`ChunkView`, `GhostView`); `evictable.vllm.lru` and `evictable.vllm.arc` the two
policies; `evictable.vllm.checked` (`EvictableChecked`) and `evictable.vllm.mirrored`
(`CheckedOffloadingSpec`, `MirroredManager`) the checking mode; `evictable.vllm.tiers`
(vLLM's secondary tiers behind our tier protocol) and `evictable.vllm.tiering`
(`EvictableTieringSpec`) our orchestrator. The last four load from here on first use.
Each module imports `evictable.vllm.base` before anything of vLLM, so without vLLM
every one of them raises the same one `ImportError` that names the extra to install
(`pip install evictable[vllm]`). Imports point one way: this face imports the
modules, none of them imports the face.
"""

from __future__ import annotations

from typing import Any

from evictable.vllm.arc import EvictableARC
from evictable.vllm.base import VLLM_VERSION, ChunkView, GhostView
from evictable.vllm.lru import EvictableLRU

__all__ = [
    "VLLM_VERSION",
    "ChunkView",
    "EvictableARC",
    "EvictableLRU",
    "GhostView",
]


def __getattr__(name: str) -> Any:
    """`EvictableChecked`, `EvictableChecked(<policy>[, raise|log])` (the checked policy
    that name asks for), `CheckedOffloadingSpec`, `MirroredManager`,
    `EvictableTieringSpec` and `EvictableTieringManager`, loaded on first use, as
    vLLM's factories look them up by name (`getattr` on this module)."""
    if name == "EvictableChecked":
        from evictable.vllm.checked import EvictableChecked

        return EvictableChecked
    if name.startswith("EvictableChecked("):
        from evictable.vllm.checked import checked_policy_class

        got = checked_policy_class(name)
        if got is not None:
            return got
    if name == "CheckedOffloadingSpec":
        from evictable.vllm.mirrored import CheckedOffloadingSpec

        return CheckedOffloadingSpec
    if name == "MirroredManager":
        from evictable.vllm.mirrored import MirroredManager

        return MirroredManager
    if name == "EvictableTieringSpec":
        from evictable.vllm.tiering import EvictableTieringSpec

        return EvictableTieringSpec
    if name == "EvictableTieringManager":
        from evictable.vllm.tiering import EvictableTieringManager

        return EvictableTieringManager
    raise AttributeError(f"module 'evictable.vllm' has no attribute {name!r}")
