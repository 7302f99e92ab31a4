"""evictable inside vLLM 0.33: cache policies for vLLM's own CPU offloading manager.

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
  `evictable.errors.PolicyContractError` (evictable.vllm_checked).
* `CheckedOffloadingSpec` (vLLM's `spec_name` + `spec_module_path`) is vLLM's CPU
  spec whose manager is vLLM's own, mirrored call by call on the model's vLLM 0.33
  profile under the safety contract; the first divergence raises (or logs)
  `evictable.errors.MirrorDivergenceError` naming the call, the keys and both states.

* `EvictableTieringSpec` (vLLM's `spec_name` + `spec_module_path`, with vLLM's own
  `secondary_tiers` entries) is vLLM's tiering spec whose orchestrator is ours
  (`evictable.impl.tiering.TieringManager`) over vLLM's own secondary tiers
  (evictable.vllm_tiering, evictable.vllm_tiers).

The modules: this one is the public face (the names vLLM's factories look up);
`evictable.vllm_base` holds the import guard, the vLLM names they use and the views
(`ChunkView`, `GhostView`); `evictable.vllm_lru` and `evictable.vllm_arc` the two
policies; `evictable.vllm_checked` and `evictable.vllm_spec` the checking mode
(loaded from here on first use). Each imports `evictable.vllm_base` before anything
of vLLM, so without vLLM every one of them raises the same one `ImportError` that
names the extra to install (`pip install evictable[vllm]`).
"""

from __future__ import annotations

from typing import Any

from evictable.vllm_arc import EvictableARC
from evictable.vllm_base import VLLM_VERSION, ChunkView, GhostView
from evictable.vllm_lru import EvictableLRU

__all__ = [
    "VLLM_VERSION",
    "ChunkView",
    "EvictableARC",
    "EvictableLRU",
    "GhostView",
]


# The checking mode lives in evictable.vllm_checked (EvictableChecked) and
# evictable.vllm_spec (CheckedOffloadingSpec), our orchestrator in evictable.vllm_tiering
# (EvictableTieringSpec); each loads from here by name, as vLLM's factories look them
# up, without this module importing them.
_LAZY = {
    "EvictableChecked": "evictable.vllm_checked",
    "CheckedOffloadingSpec": "evictable.vllm_spec",
    "EvictableTieringSpec": "evictable.vllm_tiering",
    "EvictableTieringManager": "evictable.vllm_tiering",
}


def __getattr__(name: str) -> Any:
    """`EvictableChecked`, `EvictableChecked(<policy>[, raise|log])` (the checked policy
    that name asks for) and `CheckedOffloadingSpec`, loaded on first use."""
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name.startswith("EvictableChecked("):
        checked = importlib.import_module("evictable.vllm_checked")
        got = checked.checked_policy_class(name)
        if got is not None:
            return got
    raise AttributeError(f"module 'evictable.vllm' has no attribute {name!r}")
