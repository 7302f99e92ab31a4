"""The reference CPU offloading manager: docs/semantics.md, "The CPU manager", as code.

Written for clarity; the fast path is `impl.manager.CPUOffloadingManager`, which is
checked against this one step by step (same results, same errors, same snapshots).

Each key has a lifecycle position (`Phase`: state and ref count, from
`model.lifecycle`) and, while resident, a slot. Every per-key change is one call of
`model.lifecycle.step` on `CPU_MACHINE`; which events a key accepts, which error a
refused event raises and which policy hook a change owes (`derive_hook`) all come
from the table. Nothing here restates a lifecycle rule.

All-or-nothing: each public method validates its whole input first (argument shape,
then duplicates, then the per-key table checks in input order) and only then
mutates. The model's policies are total on their preconditions, so once validation
passes a call cannot fail half way. (The policy's victims are not checked against the
table: a policy offers listed keys only, and listed keys are READY -- the Z3
obligation `manager.consecution.prepare_store` proves the table accepts their
eviction.)

Slots: a key entering residency takes a never-used ("fresh") slot, ascending from the
high-water mark, else the most recently freed one (a LIFO stack); a key leaving
residency pushes its slot onto that stack.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from evictable.model.arc import ModelArc
from evictable.model.errors import InvariantViolationError
from evictable.model.lifecycle import (
    CPU_MACHINE,
    CpuEvent,
    CpuState,
    Hook,
    Machine,
    Phase,
    Transition,
    derive_hook,
    step,
)
from evictable.model.lru import ModelLru
from evictable.model.policy import ModelPolicy
from evictable.model.types import (
    BlockEntry,
    Key,
    LookupResult,
    ManagerSnapshot,
    OffloadingEvent,
    PrepareStoreOutput,
    SlotId,
)
from evictable.model.validate import (
    check_enable_events,
    check_key,
    check_keys,
    check_keys_and_success,
    check_num_blocks,
    check_policy_name,
    touch_keys,
)

__all__ = ["MODEL_POLICIES", "ModelManager", "Resident"]

MODEL_POLICIES: dict[str, Callable[[int], ModelPolicy]] = {
    "lru": ModelLru,
    "arc": ModelArc,
}
"""Reference policies by name; each is built with the manager's `num_blocks`."""

ABSENT = Phase(CpuState.ABSENT, None)


@dataclass(frozen=True)
class Resident:
    """A resident key's lifecycle position and its slot."""

    phase: Phase
    slot: SlotId


def fired_transition(
    phase: Phase, event: CpuEvent, machine: Machine = CPU_MACHINE
) -> Transition | None:
    """The table row `event` fires from `phase`; None if the pair is ignored or rejected."""
    for transition in machine.transitions_from(phase.state, event):
        if transition.guard.holds(phase.ref):
            return transition
    return None


def is_resident(phase: Phase, machine: Machine = CPU_MACHINE) -> bool:
    """Whether the table declares the phase's state resident (holding a slot)."""
    return machine.spec(phase.state).resident


class ModelManager:
    """Reference CPU offloading manager (docs/semantics.md, "The CPU manager").

    `machine` is the lifecycle table the manager executes (`CPU_MACHINE`); a subclass
    may name another (the deliberately broken tables of `proofs.controls.tables`).
    """

    machine: ClassVar[Machine] = CPU_MACHINE

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False) -> None:
        self.num_blocks = check_num_blocks(num_blocks)
        check_policy_name(policy, MODEL_POLICIES)
        self.enable_events = check_enable_events(enable_events)
        self.policy: ModelPolicy = MODEL_POLICIES[policy](self.num_blocks)
        self.blocks: dict[Key, Resident] = {}
        self.free_stack: list[SlotId] = []
        self.high_water = 0
        self.events: list[OffloadingEvent] = []

    # ------------------------------------------------------------------ queries

    def phase(self, key: Key) -> Phase:
        """The key's lifecycle position (ABSENT with no ref count if not resident)."""
        resident = self.blocks.get(key)
        return resident.phase if resident is not None else ABSENT

    def ref_of(self, key: Key) -> int | None:
        """The key's ref count, None when ABSENT (what a policy may ask)."""
        return self.phase(key).ref

    def _count(self, counter: str) -> int:
        """A counter declared by the table: the number of keys in its state."""
        state = self.machine.counters[counter]
        return sum(1 for r in self.blocks.values() if r.phase.state is state)

    @property
    def num_evictable(self) -> int:
        """Number of READY blocks."""
        return self._count("num_evictable")

    @property
    def num_pending(self) -> int:
        """Number of PENDING blocks."""
        return self._count("num_pending")

    def free_slot_count(self) -> int:
        """Slots a new key could take: the fresh ones plus the freed ones."""
        return (self.num_blocks - self.high_water) + len(self.free_stack)

    # ------------------------------------------------------------------ one key, one event

    def take_slot(self) -> SlotId:
        """A fresh slot (ascending from the high-water mark), else the last freed one."""
        if self.high_water < self.num_blocks:
            self.high_water += 1
            return SlotId(self.high_water - 1)
        if not self.free_stack:
            # Callers check free_slot_count() first; reaching this is a manager bug.
            raise InvariantViolationError(["slot_partition"], "no free slot to take")
        return self.free_stack.pop()

    def fires(self, key: Key, event: CpuEvent) -> bool:
        """Whether `event` fires a table row for `key` (not ignored, not rejected)."""
        return fired_transition(self.phase(key), event, self.machine) is not None

    def check_event(self, key: Key, event: CpuEvent) -> None:
        """Raise the table's named error if it refuses `event` for `key`; change nothing."""
        step(self.machine, self.phase(key), event, key)

    def fire(self, key: Key, event: CpuEvent) -> Transition | None:
        """Apply one table event to one key; return the row that fired (None: ignored).

        The table decides the new phase (or raises its named error, or ignores the
        event); entering residency takes a slot, leaving it frees the slot; the hook
        the transition owes (`derive_hook`) goes to the policy.
        """
        machine = self.machine
        before = self.blocks.get(key)
        phase = before.phase if before is not None else ABSENT
        transition = fired_transition(phase, event, machine)
        after = step(machine, phase, event, key)
        if is_resident(after, machine):
            slot = before.slot if before is not None else self.take_slot()
            self.blocks[key] = Resident(after, slot)
        elif before is not None:
            del self.blocks[key]
            self.free_stack.append(before.slot)
        if transition is not None:
            self.call_hook(derive_hook(machine, transition), key)
        return transition

    def call_hook(self, hook: Hook, key: Key) -> None:
        """Tell the policy about an evictable flip: on -> mark_evictable, off -> the other."""
        if hook is Hook.FLAG_ON:
            self.policy.mark_evictable(key)
        elif hook is Hook.FLAG_OFF:
            self.policy.mark_non_evictable(key)

    def _emit(self, keys: list[Key], removed: bool) -> None:
        """Buffer one event for `keys` (when events are on and there is a key)."""
        if self.enable_events and keys:
            self.events.append(OffloadingEvent(keys=tuple(keys), removed=removed))

    # ------------------------------------------------------------------ the API

    def lookup(self, key: Key) -> LookupResult:
        """MISS (absent), HIT_PENDING (resident, not loadable yet) or HIT. No side effect."""
        check_key(key)
        phase = self.phase(key)
        if not is_resident(phase, self.machine):
            return LookupResult.MISS
        if not self.fires(key, CpuEvent.LOAD_BEGIN):
            return LookupResult.HIT_PENDING
        return LookupResult.HIT

    def prepare_store(self, keys: object) -> PrepareStoreOutput | None:
        """Make room for the absent keys and mark them PENDING; None if no room can be made."""
        batch, protected = check_keys(keys)
        for key in batch:
            self.check_event(key, CpuEvent.STORE_BEGIN)
        to_store = [k for k in batch if self.fires(k, CpuEvent.STORE_BEGIN)]
        if not to_store:
            return PrepareStoreOutput([], [], [])  # nothing to store, even with no free space
        need = len(to_store) - self.free_slot_count()
        victims: list[Key] = []
        if need > 0:
            chosen = self.policy.evict(need, protected, self.ref_of)
            if chosen is None:
                return None  # the policy cannot supply enough victims: nothing changes
            victims = chosen
        for key in victims:
            self.fire(key, CpuEvent.EVICT)
        for key in to_store:
            self.fire(key, CpuEvent.STORE_BEGIN)
            self.policy.insert(key)
        self._emit(victims, removed=True)
        slots = [int(self.blocks[key].slot) for key in to_store]
        return PrepareStoreOutput(keys_to_store=to_store, slot_ids=slots, evicted_keys=victims)

    def complete_store(self, keys: object, success: bool = True) -> list[Key]:
        """PENDING keys commit (READY) or abort (ABSENT); other keys are ignored."""
        batch, _ = check_keys_and_success(keys, success)
        event = CpuEvent.STORE_COMMIT if success else CpuEvent.STORE_ABORT
        for key in batch:
            self.check_event(key, event)
        acted = [k for k in batch if self.fires(k, event)]
        for key in acted:
            self.fire(key, event)
            if not success:
                self.policy.remove(key)
        if success:
            self._emit(acted, removed=False)
        return acted

    def prepare_load(self, keys: object) -> list[int]:
        """Pin every key for one more load; return their slots in key order."""
        batch, _ = check_keys(keys)
        for key in batch:
            self.check_event(key, CpuEvent.LOAD_BEGIN)  # must be loadable
        for key in batch:
            self.fire(key, CpuEvent.LOAD_BEGIN)
        return [int(self.blocks[key].slot) for key in batch]

    def complete_load(self, keys: object) -> None:
        """Unpin every key once; a key reaching ref 0 becomes evictable."""
        batch, _ = check_keys(keys)
        for key in batch:
            self.check_event(key, CpuEvent.LOAD_END)  # must be loading
        for key in batch:
            self.fire(key, CpuEvent.LOAD_END)

    def touch(self, keys: object) -> None:
        """A recency hint; never raises on any input.

        Each key takes the table's touch row (a lifecycle no-op in every state), and the
        policy is asked to move exactly the keys whose row fired, in input order
        (duplicates kept): LRU moves the evictable ones, ARC the rules of its own.
        """
        batch = touch_keys(keys)
        for key in batch:
            self.check_event(key, CpuEvent.TOUCH)  # the table refuses no touch
        moved = [key for key in batch if self.fire(key, CpuEvent.TOUCH) is not None]
        self.policy.touch(moved, self.ref_of)

    def reset_cache(self) -> None:
        """Every block ABSENT, all slots fresh, policy cleared; buffered events stay."""
        for key in self.blocks:
            self.check_event(key, CpuEvent.RESET)
        for key in list(self.blocks):
            self.fire(key, CpuEvent.RESET)
        self.free_stack.clear()
        self.high_water = 0
        self.policy.clear()

    def take_events(self) -> list[OffloadingEvent]:
        """The buffered events, oldest first; the buffer is emptied."""
        events = list(self.events)
        self.events.clear()
        return events

    def snapshot(self) -> ManagerSnapshot:
        """Everything observable, as a frozen value comparable with the implementation's."""
        return ManagerSnapshot(
            num_blocks=self.num_blocks,
            blocks=frozenset(
                BlockEntry(key, _cpu_state(r.phase), _ref(r.phase), r.slot)
                for key, r in self.blocks.items()
            ),
            free_stack=tuple(self.free_stack),
            high_water=self.high_water,
            num_evictable=self.num_evictable,
            num_pending=self.num_pending,
            pending_events=tuple(self.events),
            policy=self.policy.snapshot(),
        )


def _cpu_state(phase: Phase) -> CpuState:
    if not isinstance(phase.state, CpuState):
        raise InvariantViolationError(["state_admits_ref"], f"{phase} is not a CPU state")
    return phase.state


def _ref(phase: Phase) -> int:
    if phase.ref is None:
        raise InvariantViolationError(["state_admits_ref"], f"resident {phase} without ref")
    return phase.ref
