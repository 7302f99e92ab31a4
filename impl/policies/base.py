"""The eviction-policy interface of the CPU offloading manager.

A policy owns the key -> `BlockStatus` mapping and the recency order. The manager
owns ref counts and slots and tells the policy, through `mark_evictable` /
`mark_non_evictable`, exactly when a block's ref count enters or leaves 0 (the
hooks derived from the lifecycle table). Policies that keep a dedicated list of
evictable blocks (the fast LRU, ARC) use those hooks; others may ignore them.
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Set
from typing import ClassVar, cast

from evictable.impl.block import BlockStatus, sharing_records
from evictable.model.types import Key, PolicySnapshot

__all__ = ["CachePolicy"]


class CachePolicy(ABC):
    """Base class of every eviction policy; resolved by name through the factory."""

    __slots__ = ("cache_capacity",)

    name: ClassVar[str] = "abstract"

    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity

    @abstractmethod
    def get(self, key: Key) -> BlockStatus | None:
        """The key's block, or None. No recency change. Complexity: O(1)."""

    @abstractmethod
    def insert(self, key: Key, block: BlockStatus) -> None:
        """Add a new (PENDING, ref -1) key. Pre: key absent. Complexity: O(1)."""

    @abstractmethod
    def remove(self, key: Key) -> None:
        """Drop a key (failed store). Pre: key present. Complexity: O(1)."""

    @abstractmethod
    def touch(self, keys: Iterable[Key]) -> None:
        """Recency hint; must accept any keys and never raise. Complexity: O(len(keys))."""

    @abstractmethod
    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:
        """Remove and return `n` idle (ref 0) unprotected blocks, or None with no change."""

    @abstractmethod
    def clear(self) -> None:
        """Forget every key and all adaptive state."""

    def mark_evictable(self, key: Key) -> None:  # noqa: B027 - optional hook
        """The key's ref count just became 0. Default: nothing."""

    def mark_non_evictable(self, key: Key) -> None:  # noqa: B027 - optional hook
        """The key's ref count just went 0 -> 1. Default: nothing."""

    def checkpoint(self) -> object:
        """Capture the policy's state so that `rollback` can restore it exactly.

        The manager calls this before a call that may invoke several policy methods
        (for any policy that is not one of the built-in classes), and
        `rollback(saved)` if one of them raises, so that a hook failing half-way
        through a batch leaves the policy as it was (all-or-nothing). The manager
        restores the ref counts of its `BlockStatus` records itself.
        Default: one deep copy of every attribute, with `BlockStatus` records kept
        shared (they are identities, see `impl.block.sharing_records`).
        Complexity: O(n); override with an undo journal to make it O(1).
        """
        with sharing_records():
            return copy.deepcopy({name: getattr(self, name) for name in _state_names(self)})

    def rollback(self, saved: object) -> None:
        """Restore the state captured by `checkpoint` (each token is used at most once)."""
        for name, value in cast(dict[str, object], saved).items():
            setattr(self, name, value)

    @abstractmethod
    def snapshot(self) -> PolicySnapshot:
        """The observable policy state (see `model.types`)."""

    def check_invariants(self) -> None:  # noqa: B027 - optional
        """Raise `AssertionError`-free `RuntimeError` on internal inconsistency. Default: none."""


def _state_names(policy: CachePolicy) -> Iterator[str]:
    """The names of a policy's set attributes: its `__slots__` (every class) and `__dict__`."""
    seen: set[str] = set()
    for cls in type(policy).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__") or name in seen:
                continue
            seen.add(name)
            if hasattr(policy, name):
                yield name
    for name in getattr(policy, "__dict__", {}):
        if name not in seen:
            seen.add(name)
            yield name
