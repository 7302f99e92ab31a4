"""Policies that share no key table: the manager's generic path under the engines.

The built-in policies offer their dict to the manager (`CachePolicy.shared_table`),
so with them the manager never keeps a key table of its own, and the path every
third-party policy takes -- the manager's own table, updated and rolled back beside
the policy -- would go unchecked. This module gives the engines two such policies,
held to the model exactly as the built-in ones are:

* `own_table_name(policy)` registers (once) `"<policy>+own"`: a subclass of the
  implementation's class for `policy` (which may itself be a fault-injecting
  variant, `base.faults`) whose `shared_table()` is None;
* `PlainLru` (`"lru-plain"`): an LRU written on `CachePolicy`'s defaults only -- the
  per-key batch methods, the deep-copy `checkpoint` (`impl.block.sharing_records`),
  the attribute `rollback` -- with no table to share.

`OwnTableManager` and `PlainPolicyManager` are adapter factories (as
`CPUOffloadingManager` is) that build the manager with those variants of whatever
policy an engine asks for, so the explorer, the fault alphabet, the conformance
engine and the long run take them unchanged: the model runs the policy's name, the
manager its variant.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from typing import Any

from evictable.impl.block import BlockStatus
from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.policies.base import CachePolicy
from evictable.impl.policies.factory import create_policy, known_policies, register_policy
from evictable.model.errors import InvalidArgumentError
from evictable.model.types import Key, LruPolicySnapshot
from evictable.proofs.base.faults import SUFFIX, fault_policy_name

__all__ = [
    "PLAIN",
    "OwnTableManager",
    "PlainLru",
    "PlainPolicyManager",
    "own_table_name",
    "plain_name",
]

OWN = "+own"
PLAIN = "lru-plain"


_NOT_INHERITED = tuple(
    name
    for name, offset in (
        ("__dict__", CachePolicy.__dictoffset__),
        ("__weakref__", CachePolicy.__weakrefoffset__),
    )
    if not offset
)


def _no_table(self: CachePolicy) -> dict[Key, BlockStatus] | None:
    """None: the manager keeps its own key table."""
    return None


def own_table_name(policy: str) -> str:
    """The registered name of `policy`'s variant without a shared table.

    Pre: `policy` is a known implementation policy (else `InvalidArgumentError`).
    """
    name = policy + OWN
    if name in known_policies():
        return name
    base = type(create_policy(policy, 1))
    cls_name = f"{base.__name__}OwnTable_{policy.replace('-', '_').replace('+', '_')}"
    namespace: dict[str, Any] = {
        "shared_table": _no_table,
        "__doc__": f"{base.__name__} that does not share its key table with the manager.",
        "__module__": __name__,
        "__qualname__": cls_name,
    }
    cls = type(cls_name, (base,), namespace)
    globals()[cls_name] = cls  # picklable by reference, like any module-level class
    register_policy(name, cls)
    return name


class PlainLru(CachePolicy):
    """The LRU on `CachePolicy`'s defaults: a dict of records and a dict of the
    evictable keys in recency order (least recent first). No shared table, no batch
    overrides, the default `checkpoint` / `rollback`.

    Complexity: O(1) per hook but `evict` (O(evictable keys)); `touch` O(len(keys)).
    """

    # `__weakref__` and `__dict__` first: the default checkpoint must skip them and still
    # save `order` (a slot) and `records` (in the instance dict). A compiled base class
    # (mypyc) has both already, and a class may not declare them again.
    __slots__ = (*_NOT_INHERITED, "order")

    name = "lru-plain"

    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.records: dict[Key, BlockStatus] = {}
        self.order: dict[Key, None] = {}

    def get(self, key: Key) -> BlockStatus | None:
        return self.records.get(key)

    def insert(self, key: Key, block: BlockStatus) -> None:
        if key in self.records:
            raise InvalidArgumentError(f"plain LRU insert: key {key!r} is already resident")
        self.records[key] = block

    def remove(self, key: Key) -> None:
        if key not in self.records or key in self.order:
            raise InvalidArgumentError(f"plain LRU remove: key {key!r} is not pending")
        del self.records[key]

    def mark_evictable(self, key: Key) -> None:
        if not self.records[key].is_ready:  # the hook's precondition, read off the record
            raise InvalidArgumentError(f"plain LRU mark_evictable: {key!r} is not ready")
        self.order[key] = None

    def mark_non_evictable(self, key: Key) -> None:
        self.order.pop(key, None)

    def touch(self, keys: Iterable[Key]) -> None:
        # Relies on the manager to hand a non-built-in policy hashable keys only.
        for key in reversed(list(keys)):
            if key in self.order:
                del self.order[key]
                self.order[key] = None

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:
        chosen = [key for key in self.order if key not in protected][:n]
        if len(chosen) < n:
            return None
        out = []
        for key in chosen:
            del self.order[key]
            out.append((key, self.records.pop(key)))
        return out

    def clear(self) -> None:
        self.records.clear()
        self.order.clear()

    def snapshot(self) -> LruPolicySnapshot:
        return LruPolicySnapshot(evictable=tuple(self.order))


def plain_name(policy: str) -> str:
    """The plain variant's registered name for `policy` (`"lru"` or its fault variant)."""
    if PLAIN not in known_policies():
        register_policy(PLAIN, PlainLru)
    if policy.endswith(SUFFIX):
        name = fault_policy_name(PLAIN)
        if name is None:
            raise InvalidArgumentError(f"no fault-injecting variant of {PLAIN!r}")
        return name
    if policy != "lru":
        raise InvalidArgumentError(f"the plain policy is an LRU, not {policy!r}")
    return PLAIN


def OwnTableManager(num_blocks: int, policy: str = "lru", enable_events: bool = False) -> Any:
    """`CPUOffloadingManager` with `policy`'s variant that shares no table."""
    return CPUOffloadingManager(num_blocks, own_table_name(policy), enable_events)


def PlainPolicyManager(num_blocks: int, policy: str = "lru", enable_events: bool = False) -> Any:
    """`CPUOffloadingManager` with `PlainLru` (or its fault-injecting variant)."""
    return CPUOffloadingManager(num_blocks, plain_name(policy), enable_events)


# ------------------------------------------------------------------ obligations
