"""The per-key status record of the CPU offloading manager."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from evictable.impl._compat import mypyc_attr
from evictable.model.types import Key

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


@mypyc_attr(allow_interpreted_subclasses=True)
class BlockStatus:
    """One resident CPU block: its ref count, its slot id, its key, its list links.

    >>> block = BlockStatus(3, b"a")  # a new record: its store is in flight
    >>> block.ref_cnt, block.is_ready
    (-1, False)
    >>> block.ref_cnt = 0  # stored, idle
    >>> block.is_ready
    True

    `ref_cnt` is -1 while the store is in flight, 0 when idle (evictable), n >= 1
    while n loads read from it. `block_id` is the CPU slot index. `key` is the key
    the record belongs to, set by whoever files it under that key (the manager's
    LRU fast path, `LRUCachePolicy.insert`); None until then. `prev` / `next` are
    the record's neighbours in the LRU policy's intrusive evictable list
    (`impl.policies.lru`, where the list and its sentinel are described), both None
    while the record is not listed.

    Copies (pickle, `copy.deepcopy`) never carry the links: the list that owns them
    relinks its records when it is itself copied, so copying a long list never
    recurses through it.
    Complexity: O(1) memory (five slots, no `__dict__`).
    """

    __slots__ = ("block_id", "key", "next", "prev", "ref_cnt")

    def __init__(self, block_id: int, key: Key | None = None) -> None:
        self.ref_cnt = -1
        self.block_id = block_id
        self.key = key
        self.prev: BlockStatus | None = None
        self.next: BlockStatus | None = None

    @property
    def is_ready(self) -> bool:
        """True once the store has committed (ref_cnt >= 0)."""
        return self.ref_cnt >= 0

    def __reduce__(self) -> tuple[object, tuple[int, Key | None, int]]:
        """Pickle as (slot, key, ref count): links are restored by their list."""
        return _restore, (self.block_id, self.key, self.ref_cnt)

    def __deepcopy__(self, memo: dict[int, object]) -> BlockStatus:
        """The record itself inside `sharing_records()`, else an unlinked copy."""
        if _SHARING.get():
            return self
        clone = _restore(self.block_id, self.key, self.ref_cnt)
        memo[id(self)] = clone
        return clone

    def __repr__(self) -> str:
        return f"BlockStatus(block_id={self.block_id}, ref_cnt={self.ref_cnt}, key={self.key!r})"


def _restore(block_id: int, key: Key | None, ref_cnt: int) -> BlockStatus:
    block = BlockStatus(block_id, key)
    block.ref_cnt = ref_cnt
    return block
