"""Negative controls for the explorer: deliberately broken implementations.

`UnpinOneByOne` wraps a correct manager and makes `complete_load` non-atomic: it
releases the keys one call at a time, so a batch whose second key is not loading
leaves the first one released (DESIGN.md §4 demands all-or-nothing). The explorer
must reject it with a shortest trace; an explorer that does not is vacuous.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evictable.model.types import Key
from evictable.model.validate import check_keys

__all__ = ["UnpinOneByOne", "control_factory"]


class UnpinOneByOne:
    """A manager whose `complete_load` releases key by key (broken on purpose)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def complete_load(self, keys: Sequence[Key]) -> None:
        batch, _ = check_keys(keys)  # shape and duplicates are still checked up front
        for key in batch:
            self._inner.complete_load([key])

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not found on the wrapper itself (e.g. while unpickling)
            raise AttributeError(name)
        return getattr(self._inner, name)


def control_factory(num_blocks: int, policy: str, enable_events: bool) -> UnpinOneByOne:
    """The project's implementation, broken by `UnpinOneByOne`."""
    from evictable.proofs.explore.manager import default_factory

    return UnpinOneByOne(default_factory()(num_blocks, policy, enable_events))
