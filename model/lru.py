"""The reference LRU policy: one plain list of the evictable keys, least recent first.

Written for clarity; the fast path is `impl.policies.lru`, which is checked against
this. The list holds exactly the keys whose block is READY (resident, ref_cnt 0):
the manager calls `mark_evictable` when a key's ref count reaches 0 and
`mark_non_evictable` when it leaves 0, as derived from the lifecycle table. So
pending and loading keys are never in it, and eviction never looks at them.
"""

from __future__ import annotations

from collections.abc import Sequence, Set

from evictable.model.errors import InvalidArgumentError
from evictable.model.policy import RefOf
from evictable.model.types import Key, LruPolicySnapshot

__all__ = ["ModelLru"]


class ModelLru:
    """Evictable-list LRU; implements `model.policy.ModelPolicy`."""

    name = "lru"

    def __init__(self, capacity: int) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
            raise InvalidArgumentError(f"LRU capacity must be an int >= 0, got {capacity!r}")
        self.capacity = capacity
        self.evictable: list[Key] = []

    def insert(self, key: Key) -> None:
        """A key became resident (PENDING): not evictable yet, so nothing to record."""

    def remove(self, key: Key) -> None:
        """A PENDING key left (failed store): it was never in the list."""
        if key in self.evictable:
            raise InvalidArgumentError(f"LRU remove: key {key!r} is evictable, not pending")

    def mark_evictable(self, key: Key) -> None:
        """Ref count reached 0: the key joins the most-recent end."""
        if key in self.evictable:
            raise InvalidArgumentError(f"LRU mark_evictable: key {key!r} is already evictable")
        self.evictable.append(key)

    def mark_non_evictable(self, key: Key) -> None:
        """Ref count went 0 -> 1: the key leaves the list."""
        if key not in self.evictable:
            raise InvalidArgumentError(f"LRU mark_non_evictable: key {key!r} is not evictable")
        self.evictable.remove(key)

    def touch(self, keys: Sequence[Key], ref_of: RefOf) -> None:
        """Walk `keys` in reverse; each evictable one moves to the most-recent end.

        So the first key ends up most recent. Keys that are not evictable are ignored.
        """
        for key in reversed(keys):
            if key in self.evictable:
                self.evictable.remove(key)
                self.evictable.append(key)

    def evict(self, n: int, protected: Set[Key], ref_of: RefOf) -> list[Key] | None:
        """The `n` least-recent evictable keys not in `protected`, removed; else None.

        None leaves the list unchanged.
        """
        victims = [key for key in self.evictable if key not in protected][:n]
        if len(victims) < n:
            return None  # not enough evictable, unprotected keys
        for key in victims:
            self.evictable.remove(key)
        return victims

    def clear(self) -> None:
        """Forget every key (reset)."""
        self.evictable.clear()

    def snapshot(self) -> LruPolicySnapshot:
        """The evictable list, least recent first."""
        return LruPolicySnapshot(evictable=tuple(self.evictable))
