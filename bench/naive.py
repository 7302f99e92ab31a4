"""The naive LRU manager: the pre-optimisation design, kept as a benchmark baseline.

One `OrderedDict` holds *every* resident block (pending, idle and loading), in
recency order. Eviction walks it from the least-recent end and takes the first
blocks whose ref count is 0 -- so every pinned block in front of them is looked
at again on every eviction: O(resident blocks) in the worst case, where the
evictable-list design (`impl`) is O(victims + protected keys skipped).

Apart from that scan it follows docs/semantics.md, "LRU": a block moves to the most-recent
end when it becomes idle (store commit, last load end) or is touched while idle,
so its victims are the same as `impl`'s LRU; it checks its input with the shared
error types and validates before mutating. Written for the benchmark, not for use.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable, Sequence

from bench.skeleton import SlotStack
from evictable.impl.block import BlockStatus
from evictable.model.errors import (
    BlockNotFoundError,
    BlockNotReadyError,
    DuplicateKeysError,
    InvalidArgumentError,
    NotLoadingError,
)
from evictable.model.lifecycle import CpuState
from evictable.model.types import (
    BlockEntry,
    LookupResult,
    LruPolicySnapshot,
    ManagerSnapshot,
    OffloadingEvent,
    PrepareStoreOutput,
)

__all__ = ["NaiveLruManager"]

Key = Hashable


def _no_duplicates(keys: Sequence[Key]) -> None:
    if len(set(keys)) != len(keys):
        seen: set[Key] = set()
        dups = [k for k in keys if k in seen or seen.add(k)]  # type: ignore[func-returns-value]
        raise DuplicateKeysError(dict.fromkeys(dups))


class NaiveLruManager(SlotStack):
    """LRU over all blocks with a scan for ref_cnt 0 on eviction (the baseline).

    Complexity: eviction O(resident blocks) worst case; every other call O(len(keys)).
    """

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False) -> None:
        if type(num_blocks) is not int or num_blocks < 0:
            raise InvalidArgumentError(f"num_blocks must be a non-negative int: {num_blocks!r}")
        if policy != "lru":
            raise InvalidArgumentError(f"unknown policy {policy!r}; known: ['lru']")
        super().__init__(num_blocks)
        self.enable_events = enable_events
        self.blocks: OrderedDict[Key, BlockStatus] = OrderedDict()
        self.events: list[OffloadingEvent] = []

    def lookup(self, key: Key) -> LookupResult:
        block = self.blocks.get(key)
        if block is None:
            return LookupResult.MISS
        return LookupResult.HIT if block.ref_cnt >= 0 else LookupResult.HIT_PENDING

    def _scan_victims(self, need: int, protected: set[Key]) -> list[Key] | None:
        victims: list[Key] = []
        for key, block in self.blocks.items():  # the scan over every resident block
            if block.ref_cnt == 0 and key not in protected:
                victims.append(key)
                if len(victims) == need:
                    return victims
        return None

    def prepare_store(self, keys: Sequence[Key]) -> PrepareStoreOutput | None:
        _no_duplicates(keys)
        blocks = self.blocks
        to_store = [k for k in keys if k not in blocks]
        if not to_store:
            return PrepareStoreOutput([], [], [])
        need = len(to_store) - self.free_slots()
        victims: list[Key] = []
        if need > 0:
            found = self._scan_victims(need, set(keys))
            if found is None:
                return None
            victims = found
            for key in victims:
                self.free_stack.append(blocks.pop(key).block_id)
        slots = self.take_slots(len(to_store))
        blocks.update(zip(to_store, map(BlockStatus, slots), strict=True))
        if victims and self.enable_events:
            self.events.append(OffloadingEvent(tuple(victims), removed=True))
        return PrepareStoreOutput(to_store, slots, victims)

    def complete_store(self, keys: Sequence[Key], success: bool = True) -> list[Key]:
        _no_duplicates(keys)
        blocks = self.blocks
        done = [k for k in keys if (b := blocks.get(k)) is not None and b.ref_cnt == -1]
        for key in done:
            if success:
                blocks[key].ref_cnt = 0
                blocks.move_to_end(key)  # mark_evictable: most-recent end
            else:
                self.free_stack.append(blocks.pop(key).block_id)
        if success and done and self.enable_events:
            self.events.append(OffloadingEvent(tuple(done), removed=False))
        return done

    def prepare_load(self, keys: Sequence[Key]) -> list[int]:
        _no_duplicates(keys)
        blocks = self.blocks
        for key in keys:
            block = blocks.get(key)
            if block is None:
                raise BlockNotFoundError([key])
            if block.ref_cnt < 0:
                raise BlockNotReadyError([key])
        slots = []
        for key in keys:
            block = blocks[key]
            block.ref_cnt += 1
            slots.append(block.block_id)
        return slots

    def complete_load(self, keys: Sequence[Key]) -> None:
        _no_duplicates(keys)
        blocks = self.blocks
        for key in keys:
            block = blocks.get(key)
            if block is None:
                raise BlockNotFoundError([key])
            if block.ref_cnt <= 0:
                raise NotLoadingError([key])
        for key in keys:
            block = blocks[key]
            block.ref_cnt -= 1
            if block.ref_cnt == 0:
                blocks.move_to_end(key)  # mark_evictable: most-recent end

    def touch(self, keys: Sequence[Key]) -> None:
        blocks = self.blocks
        for key in reversed(keys):
            try:
                block = blocks.get(key)
            except TypeError:  # unhashable: a hint never raises
                continue
            if block is not None and block.ref_cnt == 0:
                blocks.move_to_end(key)

    def reset_cache(self) -> None:
        self.blocks.clear()
        self.free_stack.clear()
        self.high_water = 0

    def take_events(self) -> list[OffloadingEvent]:
        events, self.events = self.events, []
        return events

    @property
    def num_evictable(self) -> int:
        return sum(1 for b in self.blocks.values() if b.ref_cnt == 0)

    @property
    def num_pending(self) -> int:
        return sum(1 for b in self.blocks.values() if b.ref_cnt == -1)

    def snapshot(self) -> ManagerSnapshot:
        def state(ref: int) -> CpuState:
            if ref < 0:
                return CpuState.PENDING
            return CpuState.READY if ref == 0 else CpuState.LOADING

        return ManagerSnapshot(
            num_blocks=self.num_blocks,
            blocks=frozenset(
                BlockEntry(k, state(b.ref_cnt), b.ref_cnt, b.block_id)
                for k, b in self.blocks.items()
            ),
            free_stack=tuple(self.free_stack),
            high_water=self.high_water,
            num_evictable=self.num_evictable,
            num_pending=self.num_pending,
            pending_events=tuple(self.events),
            policy=LruPolicySnapshot(tuple(k for k, b in self.blocks.items() if b.ref_cnt == 0)),
        )
