"""The implementation to import: fast, strict, all-or-nothing (docs/semantics.md).

    from evictable.impl import CPUOffloadingManager
    mgr = CPUOffloadingManager(num_blocks=65536, policy="arc")

* `CPUOffloadingManager` -- the CPU offloading manager (ref counts, slots, eviction
  through a policy; every call validates all of its input before it changes
  anything);
* `CachePolicy` and the built-in `LRUCachePolicy` (the evictable-list LRU) and
  `ARCCachePolicy` (ARC whose eviction never scans pinned blocks); `create_policy`,
  `register_policy`, `known_policies`, `policy_scope`, `PolicyRegistry` (policies by
  name);
* `FreeKVCacheBlockQueue`, `KVCacheBlock`, `Cursor` -- the strict intrusive free queue;
* `BlockPool` -- the GPU block pool with its null block and prefix cache;
* `LazyOffloadScanner` -- the lazy offload scan with a validated cursor;
* `COMPILED` -- True when the modules of this package are the mypyc-compiled build
  (`make compiled`, or `EVICTABLE_COMPILE=1 pip install .`), False when they are
  pure Python (docs/performance.md, "The compiled build"). The source is the same.

Importing it loads neither z3 nor hypothesis. The typed errors are in
`evictable.errors`.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evictable.impl.block_pool import BlockPool
    from evictable.impl.free_queue import Cursor, FreeKVCacheBlockQueue, KVCacheBlock
    from evictable.impl.lazy_offload import LazyOffloadScanner
    from evictable.impl.manager import CPUOffloadingManager
    from evictable.impl.policies.arc import ARCCachePolicy
    from evictable.impl.policies.base import CachePolicy
    from evictable.impl.policies.factory import (
        PolicyRegistry,
        create_policy,
        known_policies,
        policy_scope,
        register_policy,
    )
    from evictable.impl.policies.lru import LRUCachePolicy

    COMPILED: bool

_HOME: dict[str, str] = {
    "BlockPool": "evictable.impl.block_pool",
    "Cursor": "evictable.impl.free_queue",
    "FreeKVCacheBlockQueue": "evictable.impl.free_queue",
    "KVCacheBlock": "evictable.impl.free_queue",
    "LazyOffloadScanner": "evictable.impl.lazy_offload",
    "CPUOffloadingManager": "evictable.impl.manager",
    "ARCCachePolicy": "evictable.impl.policies.arc",
    "CachePolicy": "evictable.impl.policies.base",
    "LRUCachePolicy": "evictable.impl.policies.lru",
    "PolicyRegistry": "evictable.impl.policies.factory",
    "create_policy": "evictable.impl.policies.factory",
    "policy_scope": "evictable.impl.policies.factory",
    "known_policies": "evictable.impl.policies.factory",
    "register_policy": "evictable.impl.policies.factory",
}
"""Where each name lives; imported on first use, so importing this package costs
nothing (the `TYPE_CHECKING` imports above say the same for type checkers)."""

__all__ = [
    "COMPILED",
    "ARCCachePolicy",
    "BlockPool",
    "CPUOffloadingManager",
    "CachePolicy",
    "Cursor",
    "FreeKVCacheBlockQueue",
    "KVCacheBlock",
    "LRUCachePolicy",
    "LazyOffloadScanner",
    "PolicyRegistry",
    "create_policy",
    "known_policies",
    "policy_scope",
    "register_policy",
]


_FLAGS = ("COMPILED",)
"""Public names computed here rather than imported from a home module."""


def _compiled() -> bool:
    """True when `evictable.impl.manager` is (or would be) loaded from a C extension.

    Complexity: O(1) (a module spec lookup; nothing is imported but the parent).
    """
    spec = importlib.util.find_spec("evictable.impl.manager")
    return spec is not None and isinstance(spec.loader, importlib.machinery.ExtensionFileLoader)


def __getattr__(name: str) -> Any:
    if name == "COMPILED":
        value: Any = _compiled()
        globals()[name] = value
        return value
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'evictable.impl' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next access is a plain lookup
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME, "COMPILED"})
