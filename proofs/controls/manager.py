"""Deliberately broken CPU offloading managers, each with one realistic mistake.

Each broken manager is the implementation itself with one edit (`controls.mutant`):
the class `CPUOffloadingManager` compiled again from `impl/manager.py` with the
mistake written in (marked `# BUG`), so its observable behaviour is exactly the
buggy manager's, and a change of `impl/` that an edit no longer fits fails at
import. A mistake outside the manager (a slot allocator that reuses slots oldest
first) is a broken collaborator handed to the copy.

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

from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.slots import SlotAllocator
from evictable.model.errors import DuplicateKeysError, NotLoadingError
from evictable.model.lifecycle import CpuState
from evictable.model.types import Key
from evictable.model.validate import check_keys
from evictable.proofs.base.protocol import Factory
from evictable.proofs.controls.bug import SeededBug
from evictable.proofs.controls.mutant import Edit, lines, mutant

__all__ = [
    "MANAGER_BUGS",
    "DuplicatesOrphanSlot",
    "KeyByKey",
    "key_by_key",
    "non_atomic_complete_load",
    "non_atomic_prepare_load",
]

MANAGER = "evictable.impl.manager"
CLASS = "CPUOffloadingManager"


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


MissedMarkEvictableOnLoadEnd = mutant(
    MANAGER,
    CLASS,
    Edit(
        f"{CLASS}.complete_load",
        lines("""
            if flipped:
                if self._guarded:
                    self._guarded_flips(self._unpin, flipped, batch, -1)
                else:
                    self._unpin(flipped)
                self._num_evictable += len(flipped)
        """),
        lines("""
            if flipped:  # BUG: the policy is never told (mark_evictable)
                self._num_evictable += len(flipped)
        """),
    ),
    name="MissedMarkEvictableOnLoadEnd",
    doc="""`complete_load` takes a block to ref 0 but never puts it back in the evictable
    list: the counter says it is evictable, the list never offers it (stuck forever).""",
)


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


FifoSlotReuse = mutant(
    MANAGER,
    CLASS,
    Edit(
        f"{CLASS}.__init__",
        lines("self._slots = SlotAllocator(capacity)"),
        lines("self._slots = FifoSlots(capacity)  # BUG: a queue of freed slots, not a stack"),
    ),
    name="FifoSlotReuse",
    doc="Freed slots are reused oldest-first (a queue) instead of LIFO (a stack).",
    namespace={"FifoSlots": _FifoSlots},
)

CounterDriftOnEviction = mutant(
    MANAGER,
    CLASS,
    Edit(
        f"{CLASS}.prepare_store",
        lines("self._num_evictable -= len(victims)"),
        lines("# BUG: num_evictable is not decremented by the victims"),
    ),
    name="CounterDriftOnEviction",
    doc="Eviction forgets to decrement `num_evictable` (the counter drifts upwards).",
)

FailedStoreKeepsSlot = mutant(
    MANAGER,
    CLASS,
    Edit(
        f"{CLASS}.complete_store",
        lines("slots.release([block.block_id for block in records])", 12),
        lines("# BUG: the slots never reach the free stack", 12),
    ),
    name="FailedStoreKeepsSlot",
    doc="`complete_store(success=False)` drops the key but never frees its slot (leak).",
)

NoPolicyRollbackOnFault = mutant(
    MANAGER,
    CLASS,
    Edit(
        f"{CLASS}.__init__",
        lines("self._unpin = chosen.became_evictable"),
        lines("""
            self._unpin = chosen.became_evictable
            self._guarded = False  # BUG: no policy checkpoint, so no rollback
        """),
    ),
    name="NoPolicyRollbackOnFault",
    doc="""Trusts the policy never to raise: when a policy hook fails half-way through a
    batch, the manager restores its own bookkeeping but not the policy's.""",
)

DuplicatesOrphanSlot = mutant(
    MANAGER,
    CLASS,
    Edit(
        f"{CLASS}.prepare_store",
        lines("batch, protected = check_keys(keys)"),
        lines("""
            try:
                batch, protected = check_keys(keys)
                repeats = 0
            except DuplicateKeysError:  # BUG: a repeated key is not refused
                every = list(keys)
                batch = list(dict.fromkeys(every))
                protected = set(batch)
                repeats = len(every) - len(batch)
        """),
    ),
    Edit(
        f"{CLASS}.prepare_store",
        lines("return PrepareStoreOutput(to_store, ids, evicted)"),
        lines("""
            if repeats and slots.free_count() >= repeats:
                extra = slots.take(repeats)  # BUG: slots no key will ever own
                stored = [*to_store, *to_store[: len(extra)]]
                return PrepareStoreOutput(stored, [*ids, *extra], evicted)
            return PrepareStoreOutput(to_store, ids, evicted)
        """),
    ),
    name="DuplicatesOrphanSlot",
    doc="""`prepare_store` accepts a batch with a repeated key and hands out one slot per
    occurrence: the key is stored once, the repeat's slot is owned by no key and never
    handed out again until `reset_cache` (vLLM 0.33's `prepare_store` does this).""",
    namespace={"DuplicateKeysError": DuplicateKeysError},
)

CommitActsOnLoading = mutant(
    MANAGER,
    CLASS,
    Edit(
        f"{CLASS}.complete_store",
        lines("acted: list[Key] = []"),
        lines("""
            for key in batch:  # BUG: a LOADING key is taken for a store in flight
                block = get(key)
                if block is not None and block.ref_cnt > 0:
                    block.ref_cnt = -1
                    self._num_pending += 1
            acted: list[Key] = []
        """),
    ),
    name="CommitActsOnLoading",
    doc="""`complete_store` acts on every resident key that is not READY -- LOADING ones
    too (the test is `ref_cnt != 0`, not `ref_cnt < 0`): committing a key that loads
    read drops their pins and reports it as stored.""",
)

ResetTrustsPolicy = mutant(
    MANAGER,
    CLASS,
    Edit(
        f"{CLASS}.reset_cache",
        lines("""
            saved = self._checkpoint()
            try:
                self._policy.clear()
            except BaseException:
                self._rollback(saved)
                raise
        """),
        lines("self._policy.clear()  # BUG: no checkpoint, no rollback"),
    ),
    name="ResetTrustsPolicy",
    doc="""`reset_cache` clears the policy without a checkpoint: a policy whose `clear`
    fails half-way is left emptied while the manager keeps every block.""",
)

TouchTrustsPolicy = mutant(
    MANAGER,
    CLASS,
    Edit(
        f"{CLASS}.touch",
        lines("""
            saved = self._checkpoint()
            try:
                self._policy.touch(seq)
            except BaseException:
                self._rollback(saved)
                raise
        """),
        lines("self._policy.touch(seq)  # BUG: no checkpoint, no rollback"),
    ),
    name="TouchTrustsPolicy",
    doc="""`touch` hands the keys to the policy without a checkpoint (a touch is only a
    hint): a policy that fails after reordering leaves the new order behind.""",
)

CopySharesSlots = mutant(
    MANAGER,
    CLASS,
    Edit(
        CLASS,
        lines("def snapshot(self) -> ManagerSnapshot:", 4),
        lines(
            """
            def __deepcopy__(self, memo: dict[int, object]) -> CPUOffloadingManager:
                clone = copy.copy(self)
                clone._policy = copy.deepcopy(self._policy, memo)
                table = clone._policy.shared_table()
                clone._blocks = table if table is not None else copy.deepcopy(self._blocks, memo)
                clone._events = None if self._events is None else list(self._events)
                clone._pin = clone._policy.became_pinned
                clone._unpin = clone._policy.became_evictable
                return clone  # BUG: clone._slots is self._slots

            def snapshot(self) -> ManagerSnapshot:
            """,
            4,
        ),
    ),
    name="CopySharesSlots",
    doc="""A hand-written `__deepcopy__` copies the key table, the policy and the events
    but shares the slot allocator: a store in the copy takes its slots from the
    original.""",
    namespace={"copy": copy},
)


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
