"""The evictable-list LRU policy: eviction never visits a pinned or pending block.

The policy owns two structures:

* `blocks`: every resident key -> its `BlockStatus` (a dict);
* `evictable`: exactly the keys whose ref count is 0, least recent first (an
  `OrderedDict` key -> `BlockStatus`).

`mark_evictable` appends at the most-recent end, `mark_non_evictable` removes, so the
list never holds a block with a store or a load in flight and `evict` costs
O(victims + protected keys skipped), however many blocks are pinned.

Fast-path protocol: `impl.manager.CPUOffloadingManager` recognises an instance of
exactly this class and updates `blocks` and `evictable` itself (C-level dict
operations, no per-key method call), with the same effect as calling `insert`,
`remove`, `mark_evictable` and `mark_non_evictable`. Subclasses (e.g. with extra
behaviour in a hook) go through the methods. Code other than the manager should treat
both structures as read-only.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence, Set

from impl.block import BlockStatus
from impl.policies.base import CachePolicy
from model.errors import InvalidArgumentError, InvariantViolationError
from model.types import Key, LruPolicySnapshot
from model.validate import touch_keys

__all__ = ["LRUCachePolicy"]


class LRUCachePolicy(CachePolicy):
    """Least-recently-used eviction over a dedicated list of the idle (ref 0) blocks."""

    __slots__ = ("blocks", "evictable")

    name = "lru"

    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.blocks: dict[Key, BlockStatus] = {}
        self.evictable: OrderedDict[Key, BlockStatus] = OrderedDict()

    def get(self, key: Key) -> BlockStatus | None:
        """The key's block, or None. No recency change. Complexity: O(1)."""
        return self.blocks.get(key)

    def insert(self, key: Key, block: BlockStatus) -> None:
        """Add a new PENDING key (not evictable yet).

        Pre: key absent (else `InvalidArgumentError`, nothing changes).
        Complexity: O(1).
        """
        if key in self.blocks:
            raise InvalidArgumentError(f"LRU insert: key {key!r} is already resident")
        self.blocks[key] = block

    def remove(self, key: Key) -> None:
        """Drop a PENDING key (failed store).

        Pre: key resident and not evictable (else `InvalidArgumentError`, no change).
        Complexity: O(1).
        """
        if key not in self.blocks:
            raise InvalidArgumentError(f"LRU remove: key {key!r} is not resident")
        if key in self.evictable:
            raise InvalidArgumentError(f"LRU remove: key {key!r} is evictable, not pending")
        del self.blocks[key]

    def mark_evictable(self, key: Key) -> None:
        """The key's ref count just became 0: append it at the most-recent end.

        Pre: key resident with ref_cnt 0 and not yet evictable (else
        `InvalidArgumentError`, no change). Complexity: O(1).
        """
        block = self.blocks.get(key)
        if block is None or block.ref_cnt != 0:
            raise InvalidArgumentError(f"LRU mark_evictable: key {key!r} is not at ref 0")
        if key in self.evictable:
            raise InvalidArgumentError(f"LRU mark_evictable: key {key!r} is already evictable")
        self.evictable[key] = block

    def mark_non_evictable(self, key: Key) -> None:
        """The key's ref count just left 0: take it out of the list.

        Pre: key evictable (else `InvalidArgumentError`, no change). Complexity: O(1).
        """
        if self.evictable.pop(key, None) is None:
            raise InvalidArgumentError(f"LRU mark_non_evictable: key {key!r} is not evictable")

    def touch(self, keys: Iterable[Key]) -> None:
        """Walk `keys` in reverse; each evictable key moves to the most-recent end.

        So the first key ends up most recent; other keys are ignored. Never raises
        (unhashable keys and malformed batches are ignored).
        Complexity: O(len(keys)).
        """
        evictable = self.evictable
        move = evictable.move_to_end
        seq: Sequence[Key] = keys if type(keys) is list or type(keys) is tuple \
            else touch_keys(keys)
        try:
            for key in reversed(seq):
                if key in evictable:
                    move(key)
        except TypeError:
            # An unhashable key: redo the walk over the hashable ones. Each moved key's
            # final place depends only on its last move, so the partial walk is harmless.
            for key in reversed(touch_keys(seq)):
                if key in evictable:
                    move(key)

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:
        """Remove and return the `n` least-recent evictable keys not in `protected`.

        Returns None, with no change, when fewer than `n` such keys exist.
        Pre: n is an int >= 0 (else `InvalidArgumentError`).
        Complexity: O(n + protected keys skipped); pinned and pending blocks are never
        visited.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidArgumentError(f"LRU evict: n must be an int >= 0, got {n!r}")
        evictable = self.evictable
        if n > len(evictable):
            return None
        # Pop from the least-recent end (one C call per entry); protected entries are
        # set aside and put back at the front, in order, afterwards.
        popitem = evictable.popitem
        is_protected = protected.__contains__
        victims: list[tuple[Key, BlockStatus]] = []
        skipped: list[tuple[int, tuple[Key, BlockStatus]]] = []  # (victims before it, entry)
        while len(victims) < n:
            if not evictable:
                # Fewer than n unprotected entries (so len(evictable) < n + skipped: this
                # walk was O(n + protected) too): put everything back, in order.
                _put_back_front(evictable, _interleave(victims, skipped))
                return None
            item = popitem(last=False)
            if is_protected(item[0]):
                skipped.append((len(victims), item))
            else:
                victims.append(item)
        if skipped:
            _put_back_front(evictable, [item for _, item in skipped])
        blocks = self.blocks
        for key, _ in victims:
            del blocks[key]
        return victims

    def clear(self) -> None:
        """Forget every key (in place: the manager's fast path holds both structures)."""
        self.blocks.clear()
        self.evictable.clear()

    def checkpoint(self) -> object:
        """Copies of both structures (records shared). Complexity: O(n)."""
        return dict(self.blocks), OrderedDict(self.evictable)

    def rollback(self, saved: object) -> None:
        """Restore both structures in place from a `checkpoint`. Complexity: O(n)."""
        if not isinstance(saved, tuple) or len(saved) != 2:
            raise InvalidArgumentError("LRU rollback: not a token from checkpoint()")
        blocks, evictable = saved
        self.blocks.clear()
        self.blocks.update(blocks)
        self.evictable.clear()
        self.evictable.update(evictable)

    def snapshot(self) -> LruPolicySnapshot:
        """The evictable list, least recent first. Complexity: O(n)."""
        return LruPolicySnapshot(evictable=tuple(self.evictable))

    def check_invariants(self) -> None:
        """The list holds exactly the resident ref-0 blocks, as the very same records.

        Raises `InvariantViolationError` naming the violated invariant.
        Complexity: O(n).
        """
        blocks = self.blocks
        for key, block in self.evictable.items():
            if blocks.get(key) is not block:
                raise InvariantViolationError(
                    ["lru_list_exact"], f"evictable key {key!r} is not the resident record"
                )
            if block.ref_cnt != 0:
                raise InvariantViolationError(
                    ["evictable_iff_idle"], f"evictable key {key!r} has ref {block.ref_cnt}"
                )
        idle = sum(1 for block in blocks.values() if block.ref_cnt == 0)
        if idle != len(self.evictable):
            raise InvariantViolationError(
                ["evictable_iff_idle"],
                f"{idle} blocks at ref 0 but {len(self.evictable)} in the evictable list",
            )


def _put_back_front(
    evictable: OrderedDict[Key, BlockStatus], items: list[tuple[Key, BlockStatus]]
) -> None:
    """Re-insert popped entries at the least-recent end, keeping their order."""
    move = evictable.move_to_end
    for key, block in reversed(items):
        evictable[key] = block
        move(key, last=False)


def _interleave(
    victims: list[tuple[Key, BlockStatus]], skipped: list[tuple[int, tuple[Key, BlockStatus]]]
) -> list[tuple[Key, BlockStatus]]:
    """Popped entries in pop order, from the victims and the (position, entry) skips."""
    out: list[tuple[Key, BlockStatus]] = []
    done = 0
    for position, item in skipped:
        out.extend(victims[done:position])
        done = position
        out.append(item)
    out.extend(victims[done:])
    return out
