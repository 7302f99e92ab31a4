"""The adapter protocol: what the engines call on a CPU manager under test, and how
they build one.

`evictable.impl.manager.CPUOffloadingManager` and `evictable.model.manager.ModelManager`
satisfy it as they are; a third-party manager satisfies it directly or through an
adapter (docs/conformance.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from evictable.model.types import (
    Key,
    LookupResult,
    ManagerSnapshot,
    OffloadingEvent,
    PrepareStoreOutput,
)

__all__ = ["ADAPTER_API", "BLACK_BOX_API", "Factory", "ManagerAdapter"]


@runtime_checkable
class ManagerAdapter(Protocol):
    """What the engines call on an implementation (docs/semantics.md, "The CPU manager").

    An optional `check_invariants() -> None` (raising on inconsistency) is called
    after every step when present.
    """

    @property
    def num_evictable(self) -> int: ...
    @property
    def num_pending(self) -> int: ...
    def lookup(self, key: Key) -> LookupResult: ...
    def prepare_store(self, keys: Sequence[Key]) -> PrepareStoreOutput | None: ...
    def complete_store(self, keys: Sequence[Key], success: bool = True) -> list[Key]: ...
    def prepare_load(self, keys: Sequence[Key]) -> list[int]: ...
    def complete_load(self, keys: Sequence[Key]) -> None: ...
    def touch(self, keys: Sequence[Key]) -> None: ...
    def reset_cache(self) -> None: ...
    def take_events(self) -> list[OffloadingEvent]: ...
    def snapshot(self) -> ManagerSnapshot: ...


Factory = Callable[[int, str, bool], Any]
"""`(num_blocks, policy, enable_events) -> adapter`: how every engine builds the
manager under test (a `ManagerAdapter`, or under a black-box contract any object
with `BLACK_BOX_API`)."""

BLACK_BOX_API: tuple[str, ...] = (
    "lookup",
    "prepare_store",
    "complete_store",
    "prepare_load",
    "complete_load",
    "touch",
    "reset_cache",
    "take_events",
)
"""Attribute names every adapter must have, black box included."""

ADAPTER_API: tuple[str, ...] = (*BLACK_BOX_API, "snapshot", "num_evictable", "num_pending")
"""Attribute names an adapter checked with snapshots must have."""
