"""The per-key status record of the CPU offloading manager."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["BlockStatus", "sharing_records"]

_SHARING: ContextVar[bool] = ContextVar("evictable_sharing_block_records", default=False)


@contextmanager
def sharing_records() -> Iterator[None]:
    """Within this block, a deep copy keeps `BlockStatus` records shared, not copied.

    A policy checkpoint (`CachePolicy.checkpoint`) copies the policy's containers but
    must keep referring to the very records the manager holds; everywhere else a deep
    copy (of a whole manager, say) copies the records too, so the copy is independent.
    """
    token = _SHARING.set(True)
    try:
        yield
    finally:
        _SHARING.reset(token)


class BlockStatus:
    """One resident CPU block: its ref count and its slot id.

    `ref_cnt` is -1 while the store is in flight, 0 when idle (evictable), n >= 1
    while n loads read from it. `block_id` is the CPU slot index.
    Complexity: O(1) memory (two slots, no `__dict__`).
    """

    __slots__ = ("block_id", "ref_cnt")

    def __init__(self, block_id: int) -> None:
        self.ref_cnt = -1
        self.block_id = block_id

    @property
    def is_ready(self) -> bool:
        """True once the store has committed (ref_cnt >= 0)."""
        return self.ref_cnt >= 0

    def __deepcopy__(self, memo: dict[int, object]) -> BlockStatus:
        """The record itself inside `sharing_records()`, else an independent copy."""
        if _SHARING.get():
            return self
        clone = BlockStatus(self.block_id)
        clone.ref_cnt = self.ref_cnt
        memo[id(self)] = clone
        return clone

    def __repr__(self) -> str:
        return f"BlockStatus(block_id={self.block_id}, ref_cnt={self.ref_cnt})"
