"""Seeded bugs in the manager: subclasses of `CPUOffloadingManager` with one mistake each.

Where the mistake is a missing statement, the subclass either re-states the method
without that statement or undoes the statement's effect right after `super()` --
the observable behaviour is exactly the buggy manager's.
"""

from __future__ import annotations

from collections.abc import Sequence

from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.manager_core import refusal
from evictable.model.lifecycle import CpuEvent
from evictable.model.types import Key, PrepareStoreOutput
from evictable.model.validate import check_keys
from evictable.proofs.controls.bug import SeededBug

__all__ = ["MANAGER_BUGS"]


class MissedMarkEvictableOnLoadEnd(CPUOffloadingManager):
    """`complete_load` takes a block to ref 0 but never puts it back in the evictable
    list: the counter says it is evictable, the list never offers it (stuck forever)."""

    def complete_load(self, keys: Sequence[Key]) -> None:
        batch, _ = check_keys(keys)
        blocks = self._blocks
        for key in batch:
            block = blocks.get(key)
            if block is None or block.ref_cnt <= 0:
                raise refusal(key, block, CpuEvent.LOAD_END)
        for key in batch:
            block = blocks[key]
            block.ref_cnt -= 1
            if block.ref_cnt == 0:
                self._num_evictable += 1  # BUG: no mark_evictable / append to the list


class NonAtomicPrepareLoad(CPUOffloadingManager):
    """`prepare_load` pins keys one by one and checks each as it goes: a refused key
    leaves the keys before it pinned (vLLM's assert-in-the-loop leak)."""

    def prepare_load(self, keys: Sequence[Key]) -> list[int]:
        batch, _ = check_keys(keys)
        lru = self._lru
        if lru is None:
            return super().prepare_load(keys)
        slots: list[int] = []
        for key in batch:
            block = self._blocks.get(key)
            if block is None or block.ref_cnt < 0:
                raise refusal(key, block, CpuEvent.LOAD_BEGIN)  # BUG: earlier pins stay
            if block.ref_cnt == 0:
                del lru[key]
                self._num_evictable -= 1
            block.ref_cnt += 1
            slots.append(block.block_id)
        return slots


class FifoSlotReuse(CPUOffloadingManager):
    """Freed slots are reused oldest-first (a queue) instead of LIFO (a stack)."""

    def _take_slots(self, count: int) -> list[int]:
        fresh = min(count, self._num_blocks - self._high_water)
        slots = list(range(self._high_water, self._high_water + fresh))
        self._high_water += fresh
        rest = count - fresh
        slots += self._free[:rest]  # BUG: pops from the bottom of the free stack
        del self._free[:rest]
        return slots


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
            del self._free[-len(acted):]  # BUG: the slots never reach the free stack
        return acted


class NoPolicyRollbackOnFault(CPUOffloadingManager):
    """Trusts the policy never to raise: when a policy hook fails half-way through a
    batch, the manager restores its own bookkeeping but not the policy's."""

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False
                 ) -> None:
        super().__init__(num_blocks, policy, enable_events)
        self._guarded = False  # BUG: no policy checkpoint, so no rollback


MANAGER_BUGS: tuple[SeededBug, ...] = (
    SeededBug("missed_mark_evictable_on_load_end", MissedMarkEvictableOnLoadEnd.__doc__ or "",
              MissedMarkEvictableOnLoadEnd),
    SeededBug("non_atomic_prepare_load", NonAtomicPrepareLoad.__doc__ or "",
              NonAtomicPrepareLoad),
    SeededBug("fifo_slot_reuse", FifoSlotReuse.__doc__ or "", FifoSlotReuse),
    SeededBug("counter_drift_on_eviction", CounterDriftOnEviction.__doc__ or "",
              CounterDriftOnEviction),
    SeededBug("failed_store_keeps_slot", FailedStoreKeepsSlot.__doc__ or "",
              FailedStoreKeepsSlot),
    SeededBug("no_policy_rollback_on_fault", NoPolicyRollbackOnFault.__doc__ or "",
              NoPolicyRollbackOnFault, faults=True),
)
