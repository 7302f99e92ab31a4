"""A CPU offloading manager written by someone else: a dict and an OrderedDict.

This is what a serving-engine team might write from docs/semantics.md alone, without
any of this project's code but its result types: one `OrderedDict` of blocks in
recency order (least recent first) and a list of free slots. It raises plain
`KeyError` / `ValueError` (not this project's typed errors), hands out slots in its
own order, has no `snapshot()`, and reports events with the keys in a list.

It has one subtle bug, the kind the engines exist to find: when it makes room, it
takes as a victim any block that is *ready* -- `ref_cnt >= 0` -- where only an idle
one (`ref_cnt == 0`) may go. A block that is being loaded (pinned, `ref_cnt >= 1`)
can be evicted while a load reads from it.

`evictable check examples.third_party_lru:make_manager --preset third-party`
reports that first (docs/conformance.md, "Checking a manager you did not write").
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Hashable

from evictable.model.types import LookupResult, OffloadingEvent, PrepareStoreOutput

__all__ = ["DictLruManager", "make_manager"]

Key = Hashable


class _Block:
    __slots__ = ("ref_cnt", "slot")

    def __init__(self, slot: int) -> None:
        self.ref_cnt = -1  # store in flight
        self.slot = slot


class DictLruManager:
    """An LRU offloading manager over a dict of blocks in recency order."""

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False) -> None:
        if policy != "lru":
            raise ValueError(f"only 'lru' is supported, not {policy!r}")
        self.num_blocks = num_blocks
        self.blocks: OrderedDict[Key, _Block] = OrderedDict()  # least recent first
        self.free = list(range(num_blocks))
        self.events: list[OffloadingEvent] | None = [] if enable_events else None

    # ---------------------------------------------------------------- queries

    def lookup(self, key: Key) -> LookupResult:
        block = self.blocks.get(key)
        if block is None:
            return LookupResult.MISS
        return LookupResult.HIT_PENDING if block.ref_cnt < 0 else LookupResult.HIT

    @property
    def num_evictable(self) -> int:
        return sum(1 for b in self.blocks.values() if b.ref_cnt == 0)

    @property
    def num_pending(self) -> int:
        return sum(1 for b in self.blocks.values() if b.ref_cnt < 0)

    # ---------------------------------------------------------------- stores

    def may_evict(self, block: _Block) -> bool:
        """Whether making room may take `block`."""
        return block.ref_cnt >= 0  # the bug: a block being loaded is taken too (should be == 0)

    def prepare_store(self, keys: Collection[Key]) -> PrepareStoreOutput | None:
        keys = list(keys)
        if len(set(keys)) != len(keys):
            raise ValueError(f"duplicate keys in {keys!r}")
        new = [k for k in keys if k not in self.blocks]
        need = len(new) - len(self.free)
        victims: list[Key] = []
        if need > 0:
            for key, block in self.blocks.items():
                if len(victims) == need:
                    break
                if key not in keys and self.may_evict(block):
                    victims.append(key)
            if len(victims) < need:
                return None
        for key in victims:
            self.free.append(self.blocks.pop(key).slot)
        slots = [self.free.pop(0) for _ in new]
        for key, slot in zip(new, slots, strict=True):
            self.blocks[key] = _Block(slot)
        if victims and self.events is not None:
            self.events.append(OffloadingEvent(keys=victims, removed=True))  # type: ignore[arg-type]
        return PrepareStoreOutput(new, slots, victims)

    def complete_store(self, keys: Collection[Key], success: bool = True) -> list[Key]:
        done = [k for k in keys if k in self.blocks and self.blocks[k].ref_cnt < 0]
        for key in done:
            if success:
                self.blocks[key].ref_cnt = 0
                self.blocks.move_to_end(key)
            else:
                self.free.append(self.blocks.pop(key).slot)
        if success and done and self.events is not None:
            self.events.append(OffloadingEvent(keys=list(done), removed=False))  # type: ignore[arg-type]
        return done

    # ---------------------------------------------------------------- loads

    def prepare_load(self, keys: Collection[Key]) -> list[int]:
        keys = list(keys)
        if len(set(keys)) != len(keys):
            raise ValueError(f"duplicate keys in {keys!r}")
        for key in keys:
            if key not in self.blocks:
                raise KeyError(key)
            if self.blocks[key].ref_cnt < 0:
                raise ValueError(f"{key!r} is still being stored")
        for key in keys:
            self.blocks[key].ref_cnt += 1
        return [self.blocks[k].slot for k in keys]

    def complete_load(self, keys: Collection[Key]) -> None:
        keys = list(keys)
        if len(set(keys)) != len(keys):
            raise ValueError(f"duplicate keys in {keys!r}")
        for key in keys:
            if key not in self.blocks:
                raise KeyError(key)
            if self.blocks[key].ref_cnt < 1:
                raise ValueError(f"{key!r} is not being loaded")
        for key in keys:
            block = self.blocks[key]
            block.ref_cnt -= 1
            if block.ref_cnt == 0:
                self.blocks.move_to_end(key)

    # ---------------------------------------------------------------- the rest

    def touch(self, keys: Collection[Key]) -> None:
        for key in reversed(list(keys)):
            block = self.blocks.get(key)
            if block is not None and block.ref_cnt == 0:
                self.blocks.move_to_end(key)

    def reset_cache(self) -> None:
        self.blocks.clear()
        self.free = list(range(self.num_blocks))

    def take_events(self) -> list[OffloadingEvent]:
        if self.events is None:
            return []
        out, self.events = self.events, []
        return out


def make_manager(num_blocks: int, policy: str, enable_events: bool) -> DictLruManager:
    """The factory `evictable check` calls."""
    return DictLruManager(num_blocks, policy, enable_events)
