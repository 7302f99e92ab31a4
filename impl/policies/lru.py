"""The evictable-list LRU policy: eviction never visits a pinned or pending block.

The policy owns two structures:

* `blocks`: every resident key -> its `BlockStatus` (a dict);
* the **evictable list**: exactly the records whose ref count is 0, least recent
  first, as an intrusive doubly linked list threaded through the records' own
  `prev` / `next` slots.

**The sentinel.** The list is a ring closed by one sentinel record, `ring` (a
`BlockStatus` with slot -1 and no key, never in `blocks`): `ring.next` is the least
recent listed record, `ring.prev` the most recent, and an empty list is the
sentinel linked to itself. With the sentinel every link and unlink is the same
four assignments, with no case for the ends of the list. A record is listed
exactly when its `prev` is not None; unlinking sets both links back to None.

`mark_evictable` links at the most-recent end, `mark_non_evictable` unlinks, so the
list never holds a block with a store or a load in flight and `evict` costs
O(victims + protected keys skipped), however many blocks are pinned. One hash
table per block (not a dict plus an `OrderedDict`) is what keeps a large cache
fast: an eviction touches the victim's record and one dict entry, nothing else.

The manager's batches (`impl.policies.base`): this class offers its `blocks` dict as
the manager's key table (`shared_table`), and implements `stored`, `aborted`,
`became_evictable` and `became_pinned` as one dict update or one `link_last` /
`unlink` over the batch's records, with no per-key method call -- the same effect as
calling `insert`, `remove`, `mark_evictable` and `mark_non_evictable` key by key.
A subclass gets the per-key calls (so a subclass's override of a per-key method is
always honoured). Code other than the manager should treat both structures as
read-only and read the list through `listed()`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Set

from evictable.impl._compat import mypyc_attr
from evictable.impl.block import BlockStatus
from evictable.impl.policies.base import CachePolicy, own_abc_caches
from evictable.model.errors import InvalidArgumentError, InvariantViolationError
from evictable.model.types import Key, LruPolicySnapshot
from evictable.model.validate import touch_keys

__all__ = ["LRUCachePolicy", "link_last", "unlink"]

_BATCH_METHODS = ("stored", "aborted", "became_evictable", "became_pinned")
"""The batch methods this class implements without per-key calls (see the module doc)."""


def _new_ring() -> BlockStatus:
    """An empty evictable list: a sentinel record linked to itself."""
    ring = BlockStatus(-1)
    ring.prev = ring.next = ring
    return ring


def link_last(ring: BlockStatus, records: Iterable[BlockStatus]) -> None:
    """Append unlisted records at the most-recent end, in order.

    One call per batch: the manager's fast path uses it too. Complexity: O(records).
    """
    for block in records:
        # Links typed as records (not Optional): native field access when compiled.
        last: BlockStatus = ring.prev  # type: ignore[assignment]
        block.prev = last
        block.next = ring
        last.next = block
        ring.prev = block


def unlink(blocks: Iterable[BlockStatus]) -> None:
    """Take listed records out of the list (links back to None). Complexity: O(blocks)."""
    for block in blocks:
        before: BlockStatus = block.prev  # type: ignore[assignment]
        after: BlockStatus = block.next  # type: ignore[assignment]
        before.next = after
        after.prev = before
        block.prev = block.next = None


def _broken_list(before: BlockStatus, block: BlockStatus | None, budget: int) -> Exception:
    """The error a bounded walk raises at the first sign of a broken list."""
    if block is None:
        detail = f"the list ends in a dangling link after {before!r}"
    elif not budget:
        detail = "the walk passed every resident record without closing the ring (a cycle)"
    else:
        detail = f"{block!r} does not link back to {before!r}"
    return InvariantViolationError(["lru_list_exact"], detail)


@mypyc_attr(allow_interpreted_subclasses=True)
class LRUCachePolicy(CachePolicy):
    """Least-recently-used eviction over a dedicated list of the idle (ref 0) blocks.

    >>> from evictable.impl.block import BlockStatus
    >>> lru = LRUCachePolicy(4)
    >>> for slot, key in enumerate([b"a", b"b"]):
    ...     lru.insert(key, BlockStatus(slot))  # PENDING: not listed yet
    ...     lru.get(key).ref_cnt = 0
    ...     lru.mark_evictable(key)  # idle: joins the most-recent end
    >>> lru.touch([b"a"])  # a becomes the most recent
    >>> [key for key, _ in lru.evict(1, protected=set())]
    [b'b']
    >>> lru.snapshot()
    LruPolicySnapshot(evictable=(b'a',))
    """

    __slots__ = ("blocks", "ring")

    name = "lru"

    releases_evicted_records = True

    def __init__(self, cache_capacity: object) -> None:
        """Pre: `cache_capacity` an int >= 0, not a bool (else `InvalidArgumentError`)."""
        if (
            isinstance(cache_capacity, bool)
            or not isinstance(cache_capacity, int)
            or cache_capacity < 0
        ):
            raise InvalidArgumentError(f"LRU capacity must be an int >= 0, got {cache_capacity!r}")
        super().__init__(cache_capacity)
        self.blocks: dict[Key, BlockStatus] = {}
        self.ring = _new_ring()

    def get(self, key: Key) -> BlockStatus | None:
        """The key's block, or None. No recency change. Complexity: O(1)."""
        return self.blocks.get(key)

    def __init_subclass__(cls, **kwargs: object) -> None:
        """A subclass gets the per-key batch methods of `CachePolicy` (unless it
        defines its own), so that its overrides of the per-key methods are called."""
        super().__init_subclass__(**kwargs)
        for name in _BATCH_METHODS:
            if name not in vars(cls):
                setattr(cls, name, getattr(CachePolicy, name))

    def shared_table(self) -> dict[Key, BlockStatus]:
        """`blocks`: the manager reads it as its key table. Complexity: O(1)."""
        return self.blocks

    def stored(self, keys: Sequence[Key], blocks: Sequence[BlockStatus]) -> None:
        """File new PENDING records (not listed). Complexity: O(len(keys))."""
        if len(keys) != len(blocks):
            self.blocks.update(zip(keys, blocks, strict=True))  # raises, as it always did
            return
        table = self.blocks
        for key, block in zip(keys, blocks):  # noqa: B905 - lengths checked; native loop
            table[key] = block

    def aborted(self, blocks: Sequence[BlockStatus]) -> None:
        """Drop failed stores (PENDING, so not listed). Complexity: O(len(blocks))."""
        table = self.blocks
        for block in blocks:
            del table[block.key]

    def became_evictable(self, blocks: Sequence[BlockStatus]) -> None:
        """Link the records at the most-recent end, in key order. Complexity: O(len)."""
        link_last(self.ring, blocks)

    def became_pinned(self, blocks: Sequence[BlockStatus]) -> None:
        """Take the records out of the evictable list: `unlink`. Complexity: O(len)."""
        unlink(blocks)

    def listed(self) -> Iterator[BlockStatus]:
        """The evictable records, least recent first.

        Bounded observation: the walk takes at most one step per resident record and
        checks every back link, so a broken list (a cycle, a link that does not point
        back, a dangling link) raises `InvariantViolationError` ("lru_list_exact")
        instead of walking forever. Every walk of the list (`snapshot`, `checkpoint`,
        copies, `clear`) goes through here.
        Complexity: O(1) per record.
        """
        ring = self.ring
        before: BlockStatus = ring
        block = ring.next
        budget = len(self.blocks)
        while block is not ring:
            if block is None or block.prev is not before or not budget:
                raise _broken_list(before, block, budget)
            budget -= 1
            yield block
            before = block
            block = block.next

    def insert(self, key: Key, block: BlockStatus) -> None:
        """Add a new PENDING key (not evictable yet); the record is filed under `key`.

        Pre: key absent and the record unlisted (else `InvalidArgumentError`, nothing
        changes). Complexity: O(1).
        """
        if key in self.blocks:
            raise InvalidArgumentError(f"LRU insert: key {key!r} is already resident")
        if block.prev is not None:
            raise InvalidArgumentError(f"LRU insert: the record for {key!r} is already listed")
        block.key = key
        self.blocks[key] = block

    def remove(self, key: Key) -> None:
        """Drop a PENDING key (failed store).

        Pre: key resident and not evictable (else `InvalidArgumentError`, no change).
        Complexity: O(1).
        """
        block = self.blocks.get(key)
        if block is None:
            raise InvalidArgumentError(f"LRU remove: key {key!r} is not resident")
        if block.prev is not None:
            raise InvalidArgumentError(f"LRU remove: key {key!r} is evictable, not pending")
        del self.blocks[key]

    def mark_evictable(self, key: Key) -> None:
        """The key's ref count just became 0: link it at the most-recent end.

        Pre: key resident with ref_cnt 0 and not yet evictable (else
        `InvalidArgumentError`, no change). Complexity: O(1).
        """
        block = self.blocks.get(key)
        if block is None or block.ref_cnt != 0:
            raise InvalidArgumentError(f"LRU mark_evictable: key {key!r} is not at ref 0")
        if block.prev is not None:
            raise InvalidArgumentError(f"LRU mark_evictable: key {key!r} is already evictable")
        link_last(self.ring, (block,))

    def mark_non_evictable(self, key: Key) -> None:
        """The key's ref count just left 0: take it out of the list.

        Pre: key evictable (else `InvalidArgumentError`, no change). Complexity: O(1).
        """
        block = self.blocks.get(key)
        if block is None or block.prev is None:
            raise InvalidArgumentError(f"LRU mark_non_evictable: key {key!r} is not evictable")
        unlink((block,))

    def touch(self, keys: Iterable[Key]) -> None:
        """Walk `keys` in reverse; each evictable key moves to the most-recent end.

        So the first key ends up most recent; other keys are ignored. Never raises
        (unhashable keys and malformed batches are ignored).
        Complexity: O(len(keys)).
        """
        seq: Sequence[Key] = keys if type(keys) is list or type(keys) is tuple else touch_keys(keys)
        try:
            self._move_to_end(seq)
        except TypeError:
            # An unhashable key: redo the walk over the hashable ones. Each moved key's
            # final place depends only on its last move, so the partial walk is harmless.
            self._move_to_end(touch_keys(seq))

    def _move_to_end(self, keys: Sequence[Key]) -> None:
        get, ring = self.blocks.get, self.ring
        for key in reversed(keys):
            block = get(key)
            if block is not None and block.prev is not None and block is not ring.prev:
                unlink((block,))
                link_last(ring, (block,))

    def evict(self, n: object, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:
        """Remove and return the `n` least-recent evictable keys not in `protected`.

        Returns None, with no change, when fewer than `n` such keys exist.
        Pre: n is an int >= 0 (else `InvalidArgumentError`).
        Complexity: O(n + protected keys skipped); pinned and pending blocks are never
        visited.
        """
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise InvalidArgumentError(f"LRU evict: n must be an int >= 0, got {n!r}")
        ring = self.ring
        chosen: list[BlockStatus] = []
        block: BlockStatus = ring.next  # type: ignore[assignment]
        remaining = n
        skips = len(protected)  # a well-formed list meets each protected key at most once
        while remaining:
            if block is ring:
                return None  # walked the whole list (fewer than n + skipped entries)
            if block.key not in protected:
                chosen.append(block)
                remaining -= 1
            elif not skips:
                raise InvariantViolationError(
                    ["lru_list_exact"], "evict met a protected key twice: the list has a cycle"
                )
            else:
                skips -= 1
            block = block.next  # type: ignore[assignment]
        blocks = self.blocks
        victims: list[tuple[Key, BlockStatus]] = []
        for block in chosen:
            before: BlockStatus = block.prev  # type: ignore[assignment]
            after: BlockStatus = block.next  # type: ignore[assignment]
            before.next = after
            after.prev = before
            block.prev = block.next = None
            key = block.key
            del blocks[key]
            victims.append((key, block))
        return victims

    def clear(self) -> None:
        """Forget every key (in place: the manager's fast path holds `blocks` and `ring`).

        Listed records are unlinked one by one, so no discarded record keeps another
        alive through a link. Complexity: O(n).
        """
        self._relink(())
        self.blocks.clear()

    def checkpoint(self) -> object:
        """A copy of `blocks` and the listed records in order (records shared).

        Complexity: O(n).
        """
        return dict(self.blocks), list(self.listed())

    def rollback(self, saved: object) -> None:
        """Restore `blocks` and the list in place from a `checkpoint`. Complexity: O(n)."""
        if not isinstance(saved, tuple) or len(saved) != 2:
            raise InvalidArgumentError("LRU rollback: not a token from checkpoint()")
        blocks, order = saved
        self._relink(order)
        self.blocks.clear()
        self.blocks.update(blocks)

    def _relink(self, order: Iterable[BlockStatus]) -> None:
        """Make `order` the list: everything listed now is unlinked first."""
        for block in list(self.listed()):
            block.prev = block.next = None
        ring = self.ring
        ring.prev = ring.next = ring
        link_last(ring, order)

    def __getstate__(self) -> tuple[int, dict[Key, BlockStatus], BlockStatus, list[Key]]:
        """Copies carry the list as keys in order (records carry no links)."""
        return self.cache_capacity, self.blocks, self.ring, [b.key for b in self.listed()]

    def __setstate__(
        self, state: tuple[int, dict[Key, BlockStatus], BlockStatus, list[Key]]
    ) -> None:
        capacity, blocks, ring, order = state
        self.cache_capacity = capacity
        self.blocks = blocks
        ring.prev = ring.next = ring
        self.ring = ring
        self._relink(blocks[key] for key in order)

    def snapshot(self) -> LruPolicySnapshot:
        """The evictable list, least recent first. Complexity: O(n)."""
        return LruPolicySnapshot(evictable=tuple(block.key for block in self.listed()))

    def check_invariants(self) -> None:
        """The list is a well-formed ring of exactly the resident ref-0 records.

        Checks the links both ways, that every listed record is the resident record
        of its key with ref 0, that no record is listed twice (the walk is bounded by
        the number of resident blocks) and that every ref-0 record is listed.
        Raises `InvariantViolationError` naming the violated invariant.
        Complexity: O(n).
        """
        ring, blocks = self.ring, self.blocks
        if ring.key is not None or ring.block_id != -1 or ring.ref_cnt != -1:
            raise InvariantViolationError(["lru_list_exact"], "the sentinel was modified")
        count = 0
        block = ring
        while True:
            after = block.next
            if after is None or after.prev is not block:
                raise InvariantViolationError(["lru_list_exact"], f"broken link after {block!r}")
            if after is ring:
                break
            count += 1
            if count > len(blocks):
                raise InvariantViolationError(["lru_list_exact"], "the list has a cycle")
            if blocks.get(after.key) is not after:
                raise InvariantViolationError(
                    ["lru_list_exact"], f"listed key {after.key!r} is not the resident record"
                )
            if after.ref_cnt != 0:
                raise InvariantViolationError(
                    ["evictable_iff_idle"], f"listed key {after.key!r} has ref {after.ref_cnt}"
                )
            block = after
        idle = 0
        for key, block in blocks.items():
            if block.key != key:
                raise InvariantViolationError(
                    ["lru_list_exact"], f"record under {key!r} is filed as {block.key!r}"
                )
            if block.ref_cnt == 0:
                idle += 1
            elif block.prev is not None or block.next is not None:
                raise InvariantViolationError(
                    ["evictable_iff_idle"], f"key {key!r} at ref {block.ref_cnt} has links"
                )
        if idle != count:
            raise InvariantViolationError(
                ["evictable_iff_idle"], f"{idle} blocks at ref 0 but {count} in the evictable list"
            )


own_abc_caches(LRUCachePolicy)
