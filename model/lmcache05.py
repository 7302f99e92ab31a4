"""The `lmcache-0.5` profile: LMCache 0.5's CPU tier (`LocalCPUBackend`) as a specification.

LMCache keeps one memory object per chunk in an index (its `hot_cache`), in the order
its cache policy keeps, with two protection counters on the object: *lookup pins*
(taken by a lookup with `pin=True`, released by `unpin`, and force-released when the
pin's lease runs out) and *read references* (taken by a get, released by the reader).
A chunk is evictable exactly when both are zero (LMCache's `can_evict`). This module
states what LMCache 0.5 means, so that `evictable check --profile lmcache-0.5` holds
LMCache's real backend (and any policy plugged into it) to it exactly
(docs/semantics.md, "The LMCache 0.5 profile").

How the seed's vocabulary maps onto it (`Lmcache05Manager`):

* **Pending outside the index.** `prepare_store` allocates one page per absent key
  (PENDING, ref -1): the page is the writer's, and the key is not in the index, so
  `lookup` answers MISS (never HIT_PENDING) and a load of it is refused as absent.
  `complete_store` puts the written chunks into the index (READY) or frees their pages.
* **Two counters, one ref count.** A resident chunk's ref count is pins + reads;
  READY (ref 0) is exactly `can_evict`. The split is kept apart (`pins`, and the reads
  of each chunk) and is part of the snapshot.
* **Best-effort batches.** A store takes the lowest free page for each key in order,
  evicting one victim per page when none is free, and stops at the first key it
  cannot place: the keys before it stay stored (never None). No key is protected:
  a resident key of the batch may be evicted to place another.
* **Loads** (`prepare_load`: LMCache's batched get) take a read reference on every
  key, all or nothing; `complete_load` releases the oldest read reference a key has.
* **Lookups with a pin** (`lookup_pin`: LMCache's `batched_contains(keys, pin=True)`)
  pin the hit prefix and record it; `touch_cache` hands the recorded keys to the
  policy as hits, last recorded first, skipping keys that left the index, and forgets
  the record. `unpin` releases one pin of each key that has one (others: ignored).
* **Forced remove** (`remove`) takes keys out of the index whatever their counters:
  their pins are released; a chunk still read keeps its page until its last reader
  releases it (a *detached* chunk). `reset_cache` is LMCache's `clear`: every
  evictable chunk is removed; pinned, read and pending ones stay.
* **Pin leases** (`expire_pins`): a pin held longer than LMCache's `pin_timeout_sec`
  is force-released, every pin of the chunk at once.
* **Policies** (`POLICIES_05`): LRU (index order, a hit moves the key to the end,
  victims from the front), FIFO (hits change nothing), MRU (victims from the end), LFU
  (frequency buckets: a put enters bucket 1, a hit moves to the next; victims from the
  lowest bucket, oldest first).

`touch` is a no-op (LMCache has no recency hint by key: recency comes from lookups
with a pin, through `touch_cache`), and there are no offloading events.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from evictable.model.errors import BlockNotFoundError, NotLoadingError
from evictable.model.lifecycle import CpuEvent, CpuState, Hook
from evictable.model.manager import ModelManager
from evictable.model.types import (
    BlockEntry,
    Key,
    LookupResult,
    ManagerSnapshot,
    OffloadingEvent,
    OpaquePolicySnapshot,
    PrepareStoreOutput,
    SlotId,
)
from evictable.model.validate import (
    check_key,
    check_keys,
    check_keys_and_success,
    check_policy_name,
    touch_keys,
)

__all__ = [
    "LMCACHE_VERSION",
    "POLICIES_05",
    "Detached",
    "LmcFifo",
    "LmcLfu",
    "LmcLru",
    "LmcMru",
    "Lmcache05Manager",
]

LMCACHE_VERSION = "0.5"
"""The LMCache release this profile describes, and the one `evictable.lmcache` and the
LMCache adapters of `evictable check` follow."""


class LmcLru:
    """LMCache's LRU: the index in recency order; a hit moves a key to the end."""

    name = "lru"

    def __init__(self) -> None:
        self.order: dict[Key, None] = {}

    def put(self, key: Key) -> None:
        self.order[key] = None

    def hit(self, key: Key) -> None:
        self.order.pop(key)
        self.order[key] = None

    def forget(self, key: Key) -> None:
        self.order.pop(key, None)

    def candidates(self) -> list[Key]:
        """Every indexed key in the order the policy offers victims."""
        return list(self.order)

    def victim(self, evictable: Callable[[Key], bool]) -> Key | None:
        """The first evictable key the policy offers (None: none)."""
        return next((k for k in self.candidates() if evictable(k)), None)

    def state(self) -> Hashable:
        return tuple(self.order)


class LmcFifo(LmcLru):
    """LMCache's FIFO: the index in put order; hits change nothing."""

    name = "fifo"

    def hit(self, key: Key) -> None:
        """FIFO learns nothing from a hit."""


class LmcMru(LmcLru):
    """LMCache's MRU: the LRU's order, victims taken from the most recent end."""

    name = "mru"

    def candidates(self) -> list[Key]:
        return list(reversed(self.order))


class LmcLfu(LmcLru):
    """LMCache's LFU: frequency buckets, oldest first within a bucket."""

    name = "lfu"

    def __init__(self) -> None:
        super().__init__()
        self.freq: dict[Key, int] = {}
        self.buckets: dict[int, dict[Key, None]] = {}

    def put(self, key: Key) -> None:
        super().put(key)
        self.freq[key] = 1
        self.buckets.setdefault(1, {})[key] = None

    def _leave_bucket(self, key: Key) -> int:
        f = self.freq.pop(key)
        del self.buckets[f][key]
        if not self.buckets[f]:
            del self.buckets[f]
        return f

    def hit(self, key: Key) -> None:
        f = self._leave_bucket(key) + 1
        self.freq[key] = f
        self.buckets.setdefault(f, {})[key] = None

    def forget(self, key: Key) -> None:
        super().forget(key)
        if key in self.freq:
            self._leave_bucket(key)

    def candidates(self) -> list[Key]:
        return [k for f in sorted(self.buckets) for k in self.buckets[f]]

    def state(self) -> Hashable:
        buckets = tuple((f, tuple(self.buckets[f])) for f in sorted(self.buckets))
        return (tuple(self.order), buckets)


POLICIES_05: dict[str, Callable[[], LmcLru]] = {
    "lru": LmcLru,
    "fifo": LmcFifo,
    "mru": LmcMru,
    "lfu": LmcLfu,
}
"""LMCache 0.5's cache policies by this project's names (LMCache's: upper case)."""


@dataclass
class Detached:
    """A chunk removed from the index while read: its page is kept for its readers."""

    key: Key
    slot: SlotId
    reads: int


@dataclass
class _Reads:
    """Who holds read references: per key, the pages read, oldest first."""

    handles: dict[Key, list[SlotId]] = field(default_factory=dict)


_NOT_INDEXED = "not in LMCache's index"


class Lmcache05Manager(ModelManager):
    """LMCache 0.5's CPU tier as a specification (see the module docstring)."""

    profile = "lmcache-0.5"

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False) -> None:
        super().__init__(num_blocks, "lru", enable_events)
        check_policy_name(policy, POLICIES_05)
        self.index = POLICIES_05[policy]()
        self.policy_name = policy
        self.pins: dict[Key, int] = {}
        self.reads = _Reads()
        self.detached: list[Detached] = []
        self.recorded: list[Key] = []

    # ------------------------------------------------------------ queries

    def indexed(self, key: Key) -> bool:
        """Whether `key` is in LMCache's index (resident and written)."""
        r = self.blocks.get(key)
        return r is not None and r.phase.state is not CpuState.PENDING

    def pins_of(self, key: Key) -> int:
        return self.pins.get(key, 0)

    def reads_of(self, key: Key) -> int:
        r = self.blocks.get(key)
        if r is None or r.phase.ref is None or r.phase.state is CpuState.PENDING:
            return 0
        return r.phase.ref - self.pins_of(key)

    def evictable(self, key: Key) -> bool:
        """LMCache's `can_evict`: no pin and no reader."""
        r = self.blocks.get(key)
        return r is not None and r.phase.state is CpuState.READY

    def take_slot(self) -> SlotId:
        """The lowest free page (LMCache's allocator is first fit over sorted free space)."""
        if self.free_stack:
            low = min(self.free_stack)
            self.free_stack.remove(low)
            return low
        return super().take_slot()

    def call_hook(self, hook: Hook, key: Key) -> None:
        """No hooks: LMCache's policies read `can_evict` when they look for victims."""

    # ------------------------------------------------------------ internal steps

    def _evict_one(self) -> Key | None:
        """One victim leaves the index and frees its page (None: no evictable chunk)."""
        key = self.index.victim(self.evictable)
        if key is None:
            return None
        self.index.forget(key)
        self.fire(key, CpuEvent.EVICT)
        return key

    def _drop(self, key: Key) -> None:
        """Forced removal of an indexed key: pins released, the page freed or detached."""
        self.index.forget(key)
        reads = self.reads_of(key)
        self.pins.pop(key, None)
        r = self.blocks.pop(key)
        if reads:
            self.detached.append(Detached(key, r.slot, reads))
        else:
            self.free_stack.append(r.slot)

    def _pin(self, key: Key, delta: int) -> None:
        event = CpuEvent.LOAD_BEGIN if delta > 0 else CpuEvent.LOAD_END
        self.fire(key, event)
        self.pins[key] = self.pins_of(key) + delta
        if not self.pins[key]:
            del self.pins[key]

    # ------------------------------------------------------------ the API

    def lookup(self, key: Key) -> LookupResult:
        """HIT if `key` is in the index, else MISS (a pending chunk is not). No side effect."""
        check_key(key)
        return LookupResult.HIT if self.indexed(key) else LookupResult.MISS

    def prepare_store(self, keys: object) -> PrepareStoreOutput:
        """A page for each absent key in order, one eviction per page when none is free;
        stops at the first key that cannot be placed (best effort, never None)."""
        batch, _ = check_keys(keys)
        stored: list[Key] = []
        slots: list[int] = []
        victims: list[Key] = []
        for key in batch:
            if key in self.blocks:
                continue  # in the index, or pending: nothing to store
            if not self.free_slot_count():
                victim = self._evict_one()
                if victim is None:
                    break
                victims.append(victim)
            self.fire(key, CpuEvent.STORE_BEGIN)
            stored.append(key)
            slots.append(int(self.blocks[key].slot))
        return PrepareStoreOutput(keys_to_store=stored, slot_ids=slots, evicted_keys=victims)

    def complete_store(self, keys: object, success: bool = True) -> list[Key]:
        """Pending keys enter the index at the policy's end (success) or free their
        page; other keys are ignored. Returns the keys acted on."""
        batch, _ = check_keys_and_success(keys, success)
        event = CpuEvent.STORE_COMMIT if success else CpuEvent.STORE_ABORT
        acted = [k for k in batch if self.fires(k, event)]
        for key in acted:
            self.fire(key, event)
            if success:
                self.index.put(key)
        return acted

    def prepare_load(self, keys: object) -> list[int]:
        """A read reference on every key (all must be indexed; all or nothing)."""
        batch, _ = check_keys(keys)
        for key in batch:
            if not self.indexed(key):
                state = "PENDING" if key in self.blocks else "ABSENT"
                raise BlockNotFoundError(
                    [key], event="load_begin", state=state, reason=_NOT_INDEXED
                )
        for key in batch:
            self.fire(key, CpuEvent.LOAD_BEGIN)
            self.reads.handles.setdefault(key, []).append(self.blocks[key].slot)
        return [int(self.blocks[key].slot) for key in batch]

    def complete_load(self, keys: object) -> None:
        """Release the oldest read reference of every key (each must hold one)."""
        batch, _ = check_keys(keys)
        for key in batch:
            if not self.reads.handles.get(key):
                r = self.blocks.get(key)
                state = "ABSENT" if r is None else r.phase.state.name
                raise NotLoadingError([key], event="load_end", state=state, reason="no read held")
        for key in batch:
            handles = self.reads.handles[key]
            slot = handles.pop(0)
            if not handles:
                del self.reads.handles[key]
            self._release(key, slot)

    def _release(self, key: Key, slot: SlotId) -> None:
        r = self.blocks.get(key)
        if r is not None and r.slot == slot and r.phase.state is not CpuState.PENDING:
            self.fire(key, CpuEvent.LOAD_END)
            return
        for d in self.detached:
            if d.key == key and d.slot == slot:
                d.reads -= 1
                if not d.reads:
                    self.detached.remove(d)
                    self.free_stack.append(slot)
                return

    def touch(self, keys: object) -> None:
        """No effect: LMCache has no recency hint by key. Never raises."""
        touch_keys(keys)

    def reset_cache(self) -> None:
        """LMCache's `clear`: every evictable chunk leaves the index (in index order)."""
        for key in [k for k in self.index.order if self.evictable(k)]:
            self._drop(key)

    def take_events(self) -> list[OffloadingEvent]:
        """LMCache's CPU tier emits no offloading events."""
        return []

    # ------------------------------------------------------------ LMCache's own calls

    def lookup_pin(self, keys: object) -> int:
        """`batched_contains(keys, pin=True)`: pin and record the hit prefix; its length."""
        batch, _ = check_keys(keys)
        hits = 0
        for key in batch:
            if not self.indexed(key):
                break
            self._pin(key, +1)
            self.recorded.append(key)
            hits += 1
        return hits

    def touch_cache(self) -> None:
        """The recorded keys still indexed are hits, last recorded first; the record
        is forgotten."""
        for key in reversed(self.recorded):
            if self.indexed(key):
                self.index.hit(key)
        self.recorded.clear()

    def unpin(self, keys: object) -> None:
        """Release one pin of each key that has one; other keys are ignored."""
        batch, _ = check_keys(keys)
        for key in batch:
            if self.indexed(key) and self.pins_of(key):
                self._pin(key, -1)

    def remove(self, keys: object) -> int:
        """Forced remove: each indexed key leaves the index (pins released, a read
        chunk detached). Returns how many were removed."""
        batch, _ = check_keys(keys)
        removed = [k for k in batch if self.indexed(k)]
        for key in removed:
            self._drop(key)
        return len(removed)

    def expire_pins(self, keys: object) -> None:
        """Pin leases run out: every pin of each indexed key is released."""
        batch, _ = check_keys(keys)
        for key in batch:
            while self.indexed(key) and self.pins_of(key):
                self._pin(key, -1)

    # ------------------------------------------------------------ introspection

    def snapshot(self) -> ManagerSnapshot:
        """Pages of the index, pending and detached chunks; free pages ascending; the
        policy's state with the pins, reads and recorded lookups."""
        blocks = {
            BlockEntry(key, CpuState(r.phase.state.value), int(r.phase.ref or 0), r.slot)
            for key, r in self.blocks.items()
        }
        blocks |= {BlockEntry(d.key, CpuState.LOADING, d.reads, d.slot) for d in self.detached}
        state = (
            self.index.state(),
            tuple(sorted(self.pins.items(), key=lambda kv: repr(kv[0]))),
            tuple(self.recorded),
        )
        return ManagerSnapshot(
            num_blocks=self.num_blocks,
            blocks=frozenset(blocks),
            free_stack=(*sorted(self.free_stack), *range(self.high_water, self.num_blocks)),
            high_water=self.num_blocks,
            num_evictable=self.num_evictable,
            num_pending=self.num_pending,
            pending_events=(),
            policy=OpaquePolicySnapshot(f"lmcache-{self.policy_name}", state),
        )
