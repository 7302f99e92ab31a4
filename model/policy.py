"""The interface between the model manager and a model eviction policy.

The model manager owns every block's state, ref count and slot; a policy owns only
recency order. The manager tells the policy about each lifecycle transition that
matters to it (derived from the table's hooks) and asks it for victims.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set
from typing import Protocol

from evictable.model.types import Key, PolicySnapshot

__all__ = ["ModelPolicy", "RefOf"]

RefOf = Callable[[Key], int | None]
"""The manager's view of one key's ref count (None when the key is ABSENT)."""


class ModelPolicy(Protocol):
    """What a reference policy does. Every method is total on its preconditions."""

    name: str

    def insert(self, key: Key) -> None:
        """A key became resident (PENDING, at `prepare_store`)."""

    def remove(self, key: Key) -> None:
        """A PENDING key left residency (failed store)."""

    def mark_evictable(self, key: Key) -> None:
        """The key's ref count reached 0 (store commit or last load end)."""

    def mark_non_evictable(self, key: Key) -> None:
        """The key's ref count went 0 -> 1 (first load begins)."""

    def touch(self, keys: Sequence[Key], ref_of: RefOf) -> None:
        """A recency hint for `keys` (any keys; never raises)."""

    def evict(self, n: int, protected: Set[Key], ref_of: RefOf) -> list[Key] | None:
        """Choose and remove `n` victims among idle unprotected keys, or None (no change)."""

    def clear(self) -> None:
        """Forget everything (reset)."""

    def snapshot(self) -> PolicySnapshot:
        """The observable state, identical in shape to the implementation's."""
