"""The bare skeleton: a dict and an OrderedDict, no validation, no events, no policy.

This is the speed floor the manager is compared with: the least work a Python
evictable-list LRU can do for the benchmark trace. It trusts its input (no
duplicate check, no state check, no atomicity), has no policy object and no
hooks. `impl` is measured against it in the same run; the gap is the price of
the checks, the events and the pluggable policy.
Complexity: O(len(keys)) per call, eviction O(victims + protected keys skipped).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Hashable, Sequence

from evictable.model.types import PrepareStoreOutput

__all__ = ["DictFloorManager", "SkeletonManager", "SlotStack", "SplitSkeletonManager"]

Key = Hashable


class SlotStack:
    """Slot ids handed out as the manager does: never-used ids ascending from the
    high-water mark, then freed ids from `free_stack`, last freed first.

    The state every baseline shares. Complexity: O(count) per `take_slots`.
    """

    def __init__(self, num_blocks: int) -> None:
        self.num_blocks = num_blocks
        self.free_stack: list[int] = []
        self.high_water = 0

    def free_slots(self) -> int:
        """Slots not held by any key."""
        return len(self.free_stack) + self.num_blocks - self.high_water

    def take_slots(self, count: int) -> list[int]:
        """`count` slot ids (pre: `count <= free_slots()`)."""
        slots = []
        for _ in range(count):
            if self.high_water < self.num_blocks:
                slot = self.high_water
                self.high_water += 1
            else:
                slot = self.free_stack.pop()
            slots.append(slot)
        return slots


class SkeletonManager(SlotStack):
    """Key -> [ref_cnt, slot] in a dict, idle keys in an OrderedDict (least recent first)."""

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False) -> None:
        super().__init__(num_blocks)
        self.blocks: dict[Key, list[int]] = {}
        self.evictable: OrderedDict[Key, None] = OrderedDict()

    def prepare_store(self, keys: Sequence[Key]) -> PrepareStoreOutput | None:
        blocks = self.blocks
        to_store = [k for k in keys if k not in blocks]
        need = len(to_store) - self.free_slots()
        victims: list[Key] = []
        if need > 0:
            evictable = self.evictable
            protected = set(keys)
            for key in evictable:
                if key not in protected:
                    victims.append(key)
                    if len(victims) == need:
                        break
            else:
                return None
            free = self.free_stack
            for key in victims:
                del evictable[key]
                free.append(blocks.pop(key)[1])
        slots = self.take_slots(len(to_store))
        blocks.update((key, [-1, slot]) for key, slot in zip(to_store, slots, strict=True))
        return PrepareStoreOutput(to_store, slots, victims)

    def complete_store(self, keys: Sequence[Key], success: bool = True) -> list[Key]:
        blocks = self.blocks
        for key in keys:
            blocks[key][0] = 0
        self.evictable.update(dict.fromkeys(keys))
        return list(keys)

    def prepare_load(self, keys: Sequence[Key]) -> list[int]:
        blocks = self.blocks
        evictable = self.evictable
        slots = []
        for key in keys:
            block = blocks[key]
            if block[0] == 0:
                del evictable[key]
            block[0] += 1
            slots.append(block[1])
        return slots

    def complete_load(self, keys: Sequence[Key]) -> None:
        blocks = self.blocks
        evictable = self.evictable
        for key in keys:
            block = blocks[key]
            block[0] -= 1
            if block[0] == 0:
                evictable[key] = None


class SplitSkeletonManager(SlotStack):
    """The skeleton with one structure per block: idle keys only in the OrderedDict.

    Busy blocks (pending, loading) sit in a dict, idle ones only in the OrderedDict
    (least recent first), so an eviction touches one hash table per victim instead
    of two; a new key is looked up in both. Same trust, same absence of checks as
    `SkeletonManager`; it measures what that layout would buy.
    Complexity: O(len(keys)) per call, eviction O(victims + protected keys skipped).
    """

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False) -> None:
        super().__init__(num_blocks)
        self.busy: dict[Key, list[int]] = {}
        self.evictable: OrderedDict[Key, list[int]] = OrderedDict()

    def prepare_store(self, keys: Sequence[Key]) -> PrepareStoreOutput | None:
        busy, evictable = self.busy, self.evictable
        to_store = [k for k in keys if k not in busy and k not in evictable]
        need = len(to_store) - self.free_slots()
        victims: list[Key] = []
        if need > 0:
            protected = set(keys)
            for key in evictable:
                if key not in protected:
                    victims.append(key)
                    if len(victims) == need:
                        break
            else:
                return None
            free = self.free_stack
            for key in victims:
                free.append(evictable.pop(key)[1])
        slots = self.take_slots(len(to_store))
        busy.update((key, [-1, slot]) for key, slot in zip(to_store, slots, strict=True))
        return PrepareStoreOutput(to_store, slots, victims)

    def complete_store(self, keys: Sequence[Key], success: bool = True) -> list[Key]:
        busy, evictable = self.busy, self.evictable
        for key in keys:
            block = busy.pop(key)
            block[0] = 0
            evictable[key] = block
        return list(keys)

    def prepare_load(self, keys: Sequence[Key]) -> list[int]:
        busy, evictable = self.busy, self.evictable
        slots = []
        for key in keys:
            block = evictable.pop(key, None)
            if block is None:
                block = busy[key]
            else:
                busy[key] = block
            block[0] += 1
            slots.append(block[1])
        return slots

    def complete_load(self, keys: Sequence[Key]) -> None:
        busy, evictable = self.busy, self.evictable
        for key in keys:
            block = busy[key]
            block[0] -= 1
            if block[0] == 0:
                del busy[key]
                evictable[key] = block


class DictFloorManager(SlotStack):
    """The memory floor: only the hash-table work the trace forces on any manager.

    Whatever its layout, a manager that finds blocks by key must, per stored key,
    look the key up (absent), delete one victim's key and insert the new one, and
    per loaded key look it up. This does exactly that, in one dict of key -> slot,
    with victims taken oldest first from a deque (sequential, no hash table) and no
    ref counts, no evictable list, no checks: it is not a manager, only the cost
    under every manager. Its slowdown from 1K to 1M blocks is what cache misses on
    a large hash table cost by themselves.
    Complexity: O(len(keys)) per call.
    """

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False) -> None:
        super().__init__(num_blocks)
        self.index: dict[Key, int] = {}
        self.order: deque[Key] = deque()

    def prepare_store(self, keys: Sequence[Key]) -> PrepareStoreOutput | None:
        index = self.index
        to_store = [k for k in keys if k not in index]
        need = len(to_store) - self.free_slots()
        victims: list[Key] = []
        if need > 0:
            order, free = self.order, self.free_stack
            for _ in range(need):
                key = order.popleft()
                free.append(index.pop(key))
                victims.append(key)
        slots = self.take_slots(len(to_store))
        index.update(zip(to_store, slots, strict=True))
        self.order.extend(to_store)
        return PrepareStoreOutput(to_store, slots, victims)

    def _look_up(self, keys: Sequence[Key]) -> list[int]:
        index = self.index
        return [index[key] for key in keys]

    def complete_store(self, keys: Sequence[Key], success: bool = True) -> list[Key]:
        self._look_up(keys)
        return list(keys)

    def prepare_load(self, keys: Sequence[Key]) -> list[int]:
        return self._look_up(keys)

    def complete_load(self, keys: Sequence[Key]) -> None:
        self._look_up(keys)
