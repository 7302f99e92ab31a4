"""A deliberately non-atomic manager: the worked example of docs/conformance.md.

`NonAtomicManager.prepare_load` pins its keys one at a time through the correct
single-key call (after validating the argument's shape and duplicates), the way a
hand-written loop over vLLM's `prepare_load` would. A
batch whose second key is absent therefore raises `BlockNotFoundError` only after
the first key has been pinned, and that pin leaks (DESIGN.md §4 requires
all-or-nothing). `evictable check evictable.proofs.controls.nonatomic:make` must reject it.
"""

from __future__ import annotations

from collections.abc import Sequence

from evictable.impl.manager import CPUOffloadingManager
from evictable.model.types import Key
from evictable.model.validate import check_keys

__all__ = ["NonAtomicManager", "make"]


class NonAtomicManager(CPUOffloadingManager):
    """`CPUOffloadingManager` with a key-by-key (non-atomic) `prepare_load`."""

    def prepare_load(self, keys: Sequence[Key]) -> list[int]:
        batch, _ = check_keys(keys)  # argument shape and duplicates are checked up front
        slots: list[int] = []
        for key in batch:
            slots.extend(super().prepare_load([key]))
        return slots


def make(num_blocks: int, policy: str, enable_events: bool) -> NonAtomicManager:
    """The adapter factory `evictable check` calls."""
    return NonAtomicManager(num_blocks, policy, enable_events)
