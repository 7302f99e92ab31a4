"""State, slot bookkeeping and the generic (any-policy) path of the CPU offloading manager.

`impl.manager.CPUOffloadingManager` subclasses `ManagerCore`; this module holds what
its fast path does not need: the per-key policy calls made for every policy other
than exactly `LRUCachePolicy`, with their undo on failure (DESIGN.md §4,
all-or-nothing), plus the helpers both paths share.

Undo on the generic path: the manager restores its own state from values saved at
the start of the call (O(batch)) and the policy from `CachePolicy.checkpoint()`,
taken just before the first policy call for every policy that is not exactly a
built-in class, then re-raises the original exception.
"""

from __future__ import annotations

from collections.abc import Sequence, Set

from evictable.impl.block import BlockStatus
from evictable.impl.policies.base import CachePolicy
from evictable.model.errors import InvariantViolationError, LifecycleError
from evictable.model.lifecycle import CPU_MACHINE, CpuEvent, CpuState, Phase, step
from evictable.model.types import Key, OffloadingEvent, PrepareStoreOutput

__all__ = ["ManagerCore", "refusal", "state_of_ref"]

_ABSENT = Phase(CpuState.ABSENT, None)


def state_of_ref(ref: int) -> CpuState:
    """The resident state whose declared ref range admits `ref` (from the table)."""
    for spec in CPU_MACHINE.states:
        if spec.resident and spec.admits(ref):
            return spec.state  # type: ignore[return-value]
    raise InvariantViolationError(["state_admits_ref"], f"no state admits ref {ref}")


def refusal(key: Key, block: BlockStatus | None, event: CpuEvent) -> LifecycleError:
    """The table's error for `event` on `key` (the caller found the pair refused)."""
    phase = _ABSENT if block is None else Phase(state_of_ref(block.ref_cnt), block.ref_cnt)
    try:
        step(CPU_MACHINE, phase, event, key)
    except LifecycleError as error:
        return error
    return InvariantViolationError(["state_admits_ref"], f"{event.value} of {key!r} at {phase}")

class ManagerCore:
    """The manager's state; slot allocation; the generic path.

    State: `_blocks` (key -> `BlockStatus`; on the fast path the very dict of the
    LRU policy), `_lru` (on the fast path the sentinel of the LRU policy's evictable
    list, `LRUCachePolicy.ring`, else None), `_free` (freed slot ids, reused LIFO),
    `_high_water` (ids at or above it were never used), the two counters, `_events`
    (None when events are off), `_guarded` (checkpoint the policy before calling it).
    """

    __slots__ = (
        "_blocks",
        "_events",
        "_free",
        "_guarded",
        "_high_water",
        "_lru",
        "_num_blocks",
        "_num_evictable",
        "_num_pending",
        "_policy",
    )

    _blocks: dict[Key, BlockStatus]
    _events: list[OffloadingEvent] | None
    _free: list[int]
    _guarded: bool
    _high_water: int
    _lru: BlockStatus | None
    _num_blocks: int
    _num_evictable: int
    _num_pending: int
    _policy: CachePolicy

    def _take_slots(self, count: int) -> list[int]:
        """`count` slot ids: fresh ones ascending, then freed ones popped LIFO.

        Pre: enough slots are free. Complexity: O(count).
        """
        high = self._high_water
        fresh = self._num_blocks - high
        if count <= fresh:
            self._high_water = high + count
            return list(range(high, high + count))
        slots = list(range(high, high + fresh))
        self._high_water = high + fresh
        rest = count - fresh
        free = self._free
        if rest > len(free):
            raise InvariantViolationError(["slot_partition"], "not enough free slots")
        reused = free[-rest:]
        del free[-rest:]
        reused.reverse()
        slots += reused
        return slots

    def _prepare_store_generic(
        self, to_store: list[Key], protected: Set[Key]
    ) -> PrepareStoreOutput | None:
        """`prepare_store` through the policy's methods, undone if one raises."""
        policy, blocks, free = self._policy, self._blocks, self._free
        count = len(to_store)
        need = count - (self._num_blocks - self._high_water) - len(free)
        saved = policy.checkpoint() if self._guarded else None
        high, evictable, pending = self._high_water, self._num_evictable, self._num_pending
        low = max(0, len(free) - count)  # the free stack below `low` is never touched
        free_tail = free[low:]
        num_events = len(self._events) if self._events is not None else 0
        victims: list[tuple[Key, BlockStatus]] = []
        try:
            if need > 0:
                chosen = policy.evict(need, protected)
                if chosen is None:
                    return None
                victims = self._accept_victims(chosen, need, protected)
                for key, block in victims:
                    del blocks[key]
                    free.append(block.block_id)
                self._num_evictable -= need
                if self._events is not None:
                    self._events.append(OffloadingEvent(tuple(k for k, _ in victims), True))
            slots = self._take_slots(count)
            for key, slot in zip(to_store, slots, strict=True):
                block = BlockStatus(slot, key)
                blocks[key] = block
                policy.insert(key, block)
            self._num_pending += count
        except BaseException:
            for key in to_store:
                blocks.pop(key, None)
            blocks.update(victims)
            del free[low:]
            free.extend(free_tail)
            self._high_water, self._num_evictable, self._num_pending = high, evictable, pending
            if self._events is not None:
                del self._events[num_events:]
            if saved is not None:
                policy.rollback(saved)
            raise
        return PrepareStoreOutput(to_store, slots, [key for key, _ in victims])

    def _accept_victims(
        self, chosen: object, need: int, protected: Set[Key]
    ) -> list[tuple[Key, BlockStatus]]:
        """The policy's victims, checked: `need` distinct idle unprotected resident keys.

        Raises `InvariantViolationError` ("policy_evict_contract") otherwise.
        """
        if not isinstance(chosen, list) or len(chosen) != need:
            raise InvariantViolationError(
                ["policy_evict_contract"], f"asked for {need} victims, got {chosen!r}"
            )
        victims: list[tuple[Key, BlockStatus]] = []
        seen: set[Key] = set()
        for item in chosen:
            ok = isinstance(item, tuple) and len(item) == 2
            if ok:
                key, block = item
                ok = (
                    isinstance(block, BlockStatus)
                    and key not in seen
                    and key not in protected
                    and self._blocks.get(key) is block
                    and block.ref_cnt == 0
                )
            if not ok:
                raise InvariantViolationError(
                    ["policy_evict_contract"],
                    f"victim {item!r} is not an idle, unprotected resident block",
                )
            seen.add(key)
            victims.append((key, block))
        return victims

    def _complete_store_generic(self, batch: Sequence[Key], success: bool) -> list[Key]:
        """`complete_store` through the policy's methods, undone if one raises."""
        policy, blocks, free = self._policy, self._blocks, self._free
        acted: list[tuple[Key, BlockStatus]] = []
        for key in batch:
            block = blocks.get(key)
            if block is not None and block.ref_cnt < 0:
                acted.append((key, block))
        if not acted:
            return []
        saved = policy.checkpoint() if self._guarded else None
        num_free = len(free)
        try:
            if success:
                for key, block in acted:
                    block.ref_cnt = 0
                    policy.mark_evictable(key)
            else:
                for key, block in acted:
                    del blocks[key]
                    free.append(block.block_id)
                    policy.remove(key)
        except BaseException:
            for key, block in acted:
                block.ref_cnt = -1
                blocks[key] = block
            del free[num_free:]
            if saved is not None:
                policy.rollback(saved)
            raise
        keys = [key for key, _ in acted]
        self._num_pending -= len(keys)
        if success:
            self._num_evictable += len(keys)
            if self._events is not None:
                self._events.append(OffloadingEvent(tuple(keys), False))
        return keys

    def _checked_plan(
        self, batch: Sequence[Key], event: CpuEvent, floor: int
    ) -> list[tuple[Key, BlockStatus]]:
        """Each key's block; the first key without one or with ref_cnt < floor is refused."""
        get = self._blocks.get
        plan: list[tuple[Key, BlockStatus]] = []
        for key in batch:
            block = get(key)
            if block is None or block.ref_cnt < floor:
                raise refusal(key, block, event)
            plan.append((key, block))
        return plan

    def _prepare_load_generic(self, batch: Sequence[Key]) -> list[int]:
        """`prepare_load` through the policy's hooks, undone if one raises."""
        plan = self._checked_plan(batch, CpuEvent.LOAD_BEGIN, 0)
        return self._shift_refs(plan, +1)

    def _complete_load_generic(self, batch: Sequence[Key]) -> None:
        """`complete_load` through the policy's hooks, undone if one raises."""
        plan = self._checked_plan(batch, CpuEvent.LOAD_END, 1)
        self._shift_refs(plan, -1)

    def _shift_refs(self, plan: list[tuple[Key, BlockStatus]], delta: int) -> list[int]:
        """Add `delta` to each planned block's ref count, in key order, calling the hook
        owed when a ref leaves 0 (`mark_non_evictable`) or reaches it (`mark_evictable`).

        If a hook raises, every ref count and the policy go back to where they were.
        Returns the slot ids in key order.
        """
        policy = self._policy
        hook = policy.mark_non_evictable if delta > 0 else policy.mark_evictable
        before = [block.ref_cnt for _, block in plan]
        saved: object = None
        flips = 0
        try:
            for key, block in plan:
                ref = block.ref_cnt
                block.ref_cnt = ref + delta
                if not ref or not ref + delta:
                    if saved is None and self._guarded:
                        saved = policy.checkpoint()
                    flips += 1
                    hook(key)
        except BaseException:
            for (_, block), ref in zip(plan, before, strict=True):
                block.ref_cnt = ref
            if saved is not None:
                policy.rollback(saved)
            raise
        self._num_evictable += -flips if delta > 0 else flips
        return [block.block_id for _, block in plan]
