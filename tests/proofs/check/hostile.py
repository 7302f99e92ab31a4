"""Managers that are hostile to a checker, each built on the docs' example
(`examples/third_party_lru.py`) with its bug fixed, then one fault of its own:

* `blocking` -- a store that needs room while a block is loading waits forever on a
  lock (a deadlock: nothing ever releases it);
* `spinning` -- the same store loops forever instead;
* `stuck_in_c` -- the same store waits on a mutex inside C code (Python cannot
  interrupt it: the checker must give up on it);
* `exits` -- the same store calls `sys.exit(3)`;
* `listed_while_loading` -- `prepare_load` leaves the block on its LRU list, and
  `num_evictable` counts that list: the counter is the first to show it (accounting),
  the eviction of the loading block follows;
* `listed_while_loading_counted_by_ref` -- the same fault, but `num_evictable` counts
  ref counts: the counter is right, only the eviction shows;
* `forgets_relist` -- `complete_load` forgets to put the block back on the list: an
  idle block that is never evicted again (a store then finds no room);
* `correct` -- the example with its bug fixed.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Collection, Hashable

from evictable.model.types import OffloadingEvent, PrepareStoreOutput
from examples.third_party_lru import DictLruManager

Key = Hashable

__all__ = [
    "Correct",
    "blocking",
    "correct",
    "exits",
    "forgets_relist",
    "listed_while_loading",
    "listed_while_loading_counted_by_ref",
    "spinning",
    "stuck_in_c",
]


class Correct(DictLruManager):
    """The docs' example with its bug fixed: only idle blocks are evicted."""

    def may_evict(self, block: object) -> bool:
        return getattr(block, "ref_cnt", -1) == 0


class _Trap(Correct):
    """A store that needs room while a block is loading falls into `trap()`."""

    def trap(self) -> None:
        raise NotImplementedError

    def prepare_store(self, keys: Collection[Key]) -> PrepareStoreOutput | None:
        keys = list(keys)
        new = [k for k in keys if k not in self.blocks]
        loading = any(b.ref_cnt > 0 for b in self.blocks.values())
        if loading and len(new) > len(self.free):
            self.trap()
        return super().prepare_store(keys)


_LOCK = threading.Lock()


class Blocking(_Trap):
    def trap(self) -> None:
        with _LOCK:  # a deadlock: the lock is taken again while held
            _LOCK.acquire()


class Spinning(_Trap):
    def trap(self) -> None:
        while True:
            pass


class StuckInC(_Trap):
    """Waits on a POSIX mutex taken twice, inside libc: Python never gets control."""

    def trap(self) -> None:
        libc = ctypes.CDLL(None)
        mutex = ctypes.create_string_buffer(64)  # PTHREAD_MUTEX_INITIALIZER: zeros
        libc.pthread_mutex_lock(mutex)
        libc.pthread_mutex_lock(mutex)


class Exits(_Trap):
    def trap(self) -> None:
        sys.exit(3)


class ListedWhileLoading(Correct):
    """An explicit evictable list (`lru`), and a `prepare_load` that leaves the block
    on it; `num_evictable` is the list's length."""

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False):
        super().__init__(num_blocks, policy, enable_events)
        self.lru: list[Key] = []

    @property
    def num_evictable(self) -> int:
        return len(self.lru)

    def prepare_store(self, keys: Collection[Key]) -> PrepareStoreOutput | None:
        keys = list(keys)
        if len(set(keys)) != len(keys):
            raise ValueError(f"duplicate keys in {keys!r}")
        new = [k for k in keys if k not in self.blocks]
        need = len(new) - len(self.free)
        victims = [k for k in self.lru if k not in keys][: max(need, 0)]
        if len(victims) < need:
            return None
        for key in victims:
            self.lru.remove(key)
            self.free.append(self.blocks.pop(key).slot)
        out = super().prepare_store(keys)
        if out is None:  # cannot happen: there is room now
            raise AssertionError("no room after eviction")
        if victims and self.events is not None:
            self.events.append(OffloadingEvent(keys=victims, removed=True))  # type: ignore[arg-type]
        return PrepareStoreOutput(out.keys_to_store, out.slot_ids, victims)

    def complete_store(self, keys: Collection[Key], success: bool = True) -> list[Key]:
        done = super().complete_store(keys, success)
        if success:
            self.lru += [k for k in done if k not in self.lru]
        return done

    def prepare_load(self, keys: Collection[Key]) -> list[int]:
        return super().prepare_load(keys)  # the fault: the blocks stay on self.lru

    def complete_load(self, keys: Collection[Key]) -> None:
        super().complete_load(keys)
        for key in keys:
            if self.blocks[key].ref_cnt == 0 and key not in self.lru:
                self.lru.append(key)

    def reset_cache(self) -> None:
        super().reset_cache()
        self.lru = []


class ListedWhileLoadingCountedByRef(ListedWhileLoading):
    @property
    def num_evictable(self) -> int:
        return sum(1 for b in self.blocks.values() if b.ref_cnt == 0)


class ForgetsRelist(Correct):
    """`complete_load` leaves the block off the evictable set for good."""

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False):
        super().__init__(num_blocks, policy, enable_events)
        self.unlisted: set[Key] = set()

    def may_evict(self, block: object) -> bool:
        return super().may_evict(block) and id(block) not in self.unlisted

    def complete_load(self, keys: Collection[Key]) -> None:
        super().complete_load(keys)
        self.unlisted |= {id(self.blocks[k]) for k in keys if self.blocks[k].ref_cnt == 0}

    @property
    def num_evictable(self) -> int:
        return sum(1 for b in self.blocks.values() if b.ref_cnt == 0 and id(b) not in self.unlisted)


def correct(num_blocks: int, policy: str, enable_events: bool) -> Correct:
    return Correct(num_blocks, policy, enable_events)


def blocking(num_blocks: int, policy: str, enable_events: bool) -> Blocking:
    return Blocking(num_blocks, policy, enable_events)


def spinning(num_blocks: int, policy: str, enable_events: bool) -> Spinning:
    return Spinning(num_blocks, policy, enable_events)


def stuck_in_c(num_blocks: int, policy: str, enable_events: bool) -> StuckInC:
    return StuckInC(num_blocks, policy, enable_events)


def exits(num_blocks: int, policy: str, enable_events: bool) -> Exits:
    return Exits(num_blocks, policy, enable_events)


def listed_while_loading(num_blocks: int, policy: str, enable_events: bool) -> ListedWhileLoading:
    return ListedWhileLoading(num_blocks, policy, enable_events)


def listed_while_loading_counted_by_ref(
    num_blocks: int, policy: str, enable_events: bool
) -> ListedWhileLoadingCountedByRef:
    return ListedWhileLoadingCountedByRef(num_blocks, policy, enable_events)


def forgets_relist(num_blocks: int, policy: str, enable_events: bool) -> ForgetsRelist:
    return ForgetsRelist(num_blocks, policy, enable_events)
