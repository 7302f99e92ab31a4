"""The per-key status record of the CPU offloading manager."""

from __future__ import annotations

__all__ = ["BlockStatus"]


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
        """A status record is an identity shared by a manager and its policy: a deep copy
        of a policy's state (`CachePolicy.checkpoint`) keeps referring to the same records.
        """
        return self

    def __repr__(self) -> str:
        return f"BlockStatus(block_id={self.block_id}, ref_cnt={self.ref_cnt})"
