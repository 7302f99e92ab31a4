"""Deliberately broken CPU offloading managers, each with one realistic mistake.

Where the mistake is a missing statement, the variant either re-states the method
without that statement or undoes the statement's effect right after `super()`, so
its observable behaviour is exactly the buggy manager's.

`key_by_key(factory, method)` is the one non-atomic variant of any adapter: the
method handles its keys one call per key, so a refused key leaves the keys before it
changed (what a loop over vLLM's manager with an assert inside does). The seeded
bugs, the explorer's and the conformance engine's negative controls and the worked
example of docs/conformance.md all use it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from evictable.impl.manager import CPUOffloadingManager, refusal
from evictable.impl.slots import SlotAllocator
from evictable.model.errors import DuplicateKeysError, NotLoadingError
from evictable.model.lifecycle import CpuEvent, CpuState
from evictable.model.types import Key, PrepareStoreOutput
from evictable.model.validate import check_keys, check_keys_and_success, touch_keys
from evictable.proofs.base.protocol import Factory
from evictable.proofs.controls.bug import SeededBug

__all__ = [
    "MANAGER_BUGS",
    "DuplicatesOrphanSlot",
    "KeyByKey",
    "key_by_key",
    "non_atomic_complete_load",
    "non_atomic_prepare_load",
]


class KeyByKey:
    """An adapter whose `method` takes its keys one call at a time (broken on purpose).

    The argument's shape and duplicates are still checked up front, so the only
    deviation is atomicity: a batch whose second key is refused raises after the
    first key was already handled, and that change stays.
    """

    def __init__(self, inner: Any, method: str) -> None:
        self._inner = inner
        self._method = method

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not on the wrapper itself (e.g. while unpickling)
            raise AttributeError(name)
        if name == self._method:
            return self._one_by_one
        return getattr(self._inner, name)

    def _one_by_one(self, keys: Sequence[Key]) -> Any:
        batch, _ = check_keys(keys)
        call = getattr(self._inner, self._method)
        if not batch:
            return call([])
        results = [call([key]) for key in batch]
        if all(r is None for r in results):
            return None
        return [x for r in results for x in r]


def key_by_key(factory: Factory, method: str) -> Factory:
    """`factory`, broken: its adapters' `method` is no longer all-or-nothing."""

    def broken(num_blocks: int, policy: str, enable_events: bool) -> KeyByKey:
        return KeyByKey(factory(num_blocks, policy, enable_events), method)

    broken.__qualname__ = broken.__name__ = f"key_by_key_{method}"
    return broken


def non_atomic_prepare_load(num_blocks: int, policy: str, enable_events: bool) -> KeyByKey:
    """The implementation with a key-by-key `prepare_load`: a refused key leaves the
    keys before it pinned (vLLM's assert-in-the-loop leak)."""
    return KeyByKey(CPUOffloadingManager(num_blocks, policy, enable_events), "prepare_load")


def non_atomic_complete_load(num_blocks: int, policy: str, enable_events: bool) -> KeyByKey:
    """The implementation with a key-by-key `complete_load`: a refused key leaves the
    keys before it released."""
    return KeyByKey(CPUOffloadingManager(num_blocks, policy, enable_events), "complete_load")


class MissedMarkEvictableOnLoadEnd(CPUOffloadingManager):
    """`complete_load` takes a block to ref 0 but never puts it back in the evictable
    list: the counter says it is evictable, the list never offers it (stuck forever)."""

    def complete_load(self, keys: Sequence[Key]) -> None:
        batch, _ = check_keys(keys)
        for key in batch:
            block = self._blocks.get(key)
            if block is None or block.ref_cnt <= 0:
                raise refusal(key, block, CpuEvent.LOAD_END)
        for key in batch:
            block = self._blocks[key]
            block.ref_cnt -= 1
            if block.ref_cnt == 0:
                self._num_evictable += 1  # BUG: the policy is never told (mark_evictable)


class _FifoSlots(SlotAllocator):
    def take(self, count: int, released: Iterable[int] = ()) -> list[int]:
        self.freed.extend(released)
        fresh = min(count, self.capacity - self.high_water)
        slots = list(range(self.high_water, self.high_water + fresh))
        self.high_water += fresh
        rest = count - fresh
        slots += self.freed[:rest]  # BUG: takes from the bottom of the free stack
        del self.freed[:rest]
        return slots


class FifoSlotReuse(CPUOffloadingManager):
    """Freed slots are reused oldest-first (a queue) instead of LIFO (a stack)."""

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False) -> None:
        super().__init__(num_blocks, policy, enable_events)
        self._slots = _FifoSlots(self._num_blocks)


class CounterDriftOnEviction(CPUOffloadingManager):
    """Eviction forgets to decrement `num_evictable` (the counter drifts upwards)."""

    def prepare_store(self, keys: Sequence[Key]) -> PrepareStoreOutput | None:
        out = super().prepare_store(keys)
        if out is not None:
            self._num_evictable += len(out.evicted_keys)  # BUG: undoes the decrement
        return out


class FailedStoreKeepsSlot(CPUOffloadingManager):
    """`complete_store(success=False)` drops the key but never frees its slot (leak)."""

    def complete_store(self, keys: Sequence[Key], success: bool = True) -> list[Key]:
        acted = super().complete_store(keys, success)
        if not success and acted:
            del self._slots.freed[-len(acted) :]  # BUG: the slots never reach the stack
        return acted


class NoPolicyRollbackOnFault(CPUOffloadingManager):
    """Trusts the policy never to raise: when a policy hook fails half-way through a
    batch, the manager restores its own bookkeeping but not the policy's."""

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False) -> None:
        super().__init__(num_blocks, policy, enable_events)
        self._guarded = False  # BUG: no policy checkpoint, so no rollback


class DuplicatesOrphanSlot(CPUOffloadingManager):
    """`prepare_store` accepts a batch with a repeated key and hands out one slot per
    occurrence: the key is stored once, the repeat's slot is owned by no key and never
    handed out again until `reset_cache` (vLLM 0.33's `prepare_store` does this)."""

    def prepare_store(self, keys: Sequence[Key]) -> PrepareStoreOutput | None:
        try:
            return super().prepare_store(keys)
        except DuplicateKeysError:
            pass  # BUG: a repeated key is not refused
        batch = list(keys)
        firsts = list(dict.fromkeys(batch))
        repeats = batch[: len(batch) - len(firsts)]
        out = super().prepare_store(firsts)
        if out is None or not repeats or not out.keys_to_store:
            return out
        if self._slots.free_count() < len(repeats):
            return out
        extra = self._slots.take(len(repeats))  # BUG: slots no key will ever own
        stored = [*out.keys_to_store, *out.keys_to_store[: len(extra)]]
        return PrepareStoreOutput(stored, [*out.slot_ids, *extra], out.evicted_keys)


class CommitActsOnLoading(CPUOffloadingManager):
    """`complete_store` acts on every resident key that is not READY -- LOADING ones
    too (the test is `ref_cnt != 0`, not `ref_cnt < 0`): committing a key that loads
    read drops their pins and reports it as stored."""

    def complete_store(self, keys: Sequence[Key], success: bool = True) -> list[Key]:
        batch, _ = check_keys_and_success(keys, success)
        loading = [b for k in batch if (b := self._blocks.get(k)) is not None and b.ref_cnt > 0]
        for block in loading:
            block.ref_cnt = -1  # BUG: treated as a store in flight
        self._num_pending += len(loading)
        return super().complete_store(keys, success)


class ResetTrustsPolicy(CPUOffloadingManager):
    """`reset_cache` clears the policy without a checkpoint: a policy whose `clear`
    fails half-way is left emptied while the manager keeps every block."""

    def reset_cache(self) -> None:
        self._policy.clear()  # BUG: no checkpoint, no rollback
        if self._own_table:
            self._blocks.clear()
        self._slots.reset()
        self._num_evictable = 0
        self._num_pending = 0


class TouchTrustsPolicy(CPUOffloadingManager):
    """`touch` hands the keys to the policy without a checkpoint (a touch is only a
    hint): a policy that fails after reordering leaves the new order behind."""

    def touch(self, keys: Sequence[Key]) -> None:
        self._policy.touch(touch_keys(keys))  # BUG: no checkpoint, no rollback


class CopySharesSlots(CPUOffloadingManager):
    """A hand-written `__deepcopy__` copies the key table, the policy and the events
    but shares the slot allocator: a store in the copy takes its slots from the
    original."""

    def __deepcopy__(self, memo: dict[int, object]) -> CopySharesSlots:
        clone = copy.copy(self)
        clone._policy = copy.deepcopy(self._policy, memo)
        table = clone._policy.shared_table()
        clone._blocks = table if table is not None else copy.deepcopy(self._blocks, memo)
        clone._events = None if self._events is None else list(self._events)
        clone._pin, clone._unpin = clone._policy.became_pinned, clone._policy.became_evictable
        return clone  # BUG: clone._slots is self._slots


class RefusalSaysReady(CPUOffloadingManager):
    """`complete_load` refuses a PENDING key with the right error and key but names
    the wrong state (READY): an error whose attributes lie."""

    def complete_load(self, keys: Sequence[Key]) -> None:
        try:
            super().complete_load(keys)
        except NotLoadingError as err:
            if err.state != CpuState.PENDING.value:
                raise
            raise NotLoadingError(
                err.keys, event=err.event, state="READY", reason=err.reason
            ) from None


def _bug(
    name: str, cls: Callable[..., Any], faults: bool = False, klass: str = "baseline"
) -> SeededBug:
    return SeededBug(name, cls.__doc__ or "", cls, faults=faults, klass=klass)


MANAGER_BUGS: tuple[SeededBug, ...] = (
    _bug("missed_mark_evictable_on_load_end", MissedMarkEvictableOnLoadEnd),
    _bug("non_atomic_prepare_load", non_atomic_prepare_load),
    _bug("non_atomic_complete_load", non_atomic_complete_load),
    _bug("fifo_slot_reuse", FifoSlotReuse),
    _bug("counter_drift_on_eviction", CounterDriftOnEviction),
    _bug("failed_store_keeps_slot", FailedStoreKeepsSlot),
    _bug("no_policy_rollback_on_fault", NoPolicyRollbackOnFault, faults=True),
    _bug("duplicates_orphan_slot", DuplicatesOrphanSlot),
    _bug("commit_acts_on_loading", CommitActsOnLoading, klass="alphabet"),
    _bug("copy_shares_slots", CopySharesSlots, klass="alphabet"),
    _bug("reset_trusts_policy", ResetTrustsPolicy, faults=True, klass="faults"),
    _bug("touch_trusts_policy", TouchTrustsPolicy, faults=True, klass="faults"),
    _bug("refusal_says_ready", RefusalSaysReady, klass="errors"),
)
"""The manager's seeded bugs, in the order the suite reports them."""
