"""Deliberately broken SGLang tree cores: the negative controls of the SGLang suite.

SGLang's host tier shows no finding under the `sglang-0.5` profile, so these show that
the same check, on the same adapter, would see a defect of the host-leaf rule. Each
is SGLang's own `UnifiedTreeCore` with one rule changed, registered with SGLang's
tree-core registry and built by the unchanged adapter (`SglangHostTier`):

* `ignores_locks`: a host leaf need not be unlocked (`_is_host_leaf` skips the lock
  checks), so a key whose host copy a load is reading can be evicted;
* `keeps_stale_leaves`: a node stays in `evictable_host_leaves` when a lock makes it
  stop being a host leaf (`_update_evictable_leaf_sets` only ever adds), the kind of
  missed update the seed's evictable list must never make.
"""

from __future__ import annotations

import importlib
from typing import Any

from evictable.proofs.adapters.sglang import SglangHostTier  # (stubs torchvision first)

_registry = importlib.import_module("sglang.srt.mem_cache.unified_cache.tree_core_registry")
UnifiedTreeCore: Any = importlib.import_module(
    "sglang.srt.mem_cache.unified_cache.unified_tree_core"
).UnifiedTreeCore

__all__ = ["ignores_locks", "keeps_stale_leaves"]


class _IgnoresLocks(UnifiedTreeCore):  # type: ignore[misc]
    def _is_host_leaf(self, node: Any) -> bool:
        return (
            node is not self.root_node
            and node.evicted
            and node.backuped
            and len(node.children) == 0
        )


class _KeepsStaleLeaves(UnifiedTreeCore):  # type: ignore[misc]
    def _update_evictable_leaf_sets(self, node: Any) -> None:
        if self._is_device_leaf(node):
            self.evictable_device_leaves.add(node)
        else:
            self.evictable_device_leaves.discard(node)
        if self._is_host_leaf(node):
            self.evictable_host_leaves.add(node)


def _register(name: str, cls: type) -> str:
    if _registry.get_tree_core_factory(name) is None:
        _registry.register_tree_core_backend(name, lambda params, comps: cls(params, comps))
    return name


class _IgnoresLocksTier(SglangHostTier):
    tree_core_backend = _register("evictable-test-ignores-locks", _IgnoresLocks)


class _KeepsStaleLeavesTier(SglangHostTier):
    tree_core_backend = _register("evictable-test-stale-leaves", _KeepsStaleLeaves)


def ignores_locks(num_blocks: int, policy: str, enable_events: bool) -> SglangHostTier:
    return _IgnoresLocksTier(num_blocks, "lru", enable_events)


def keeps_stale_leaves(num_blocks: int, policy: str, enable_events: bool) -> SglangHostTier:
    return _KeepsStaleLeavesTier(num_blocks, "lru", enable_events)


for _factory in (ignores_locks, keeps_stale_leaves):
    _factory.evictable_contract = {  # type: ignore[attr-defined]
        "errors": "any",
        "invalid": False,
        "duplicates": False,
        "malformed": False,
        "profile": "sglang-0.5",
    }
