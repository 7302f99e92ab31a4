"""The primary tier of a tiering orchestrator: CPU chunks with owners.

Each resident key has a lifecycle position (`model.lifecycle.Phase`, changed only by
`model.lifecycle.step` on `CPU_MACHINE`), a slot, its pending owners (PENDING) and its
pin owners (LOADING), as `model.tiering_tables.CHUNK_RULES` says. Slots are the CPU
manager's: never-used ids ascending from the high-water mark, then freed ids from a LIFO
stack. Eviction takes idle chunks least recently idle first (the evictable list: a chunk
joins its most-recent end when it becomes idle), never a protected key.

Every change appends its record to the orchestrator's operation log (`Micro` entries:
EVICT, PIN, COMPLETE). With `strict_owners` (the `spec` profile) a completion by anyone
but the chunk's pending owner is ignored; without it (vLLM 0.33, which keeps no owners)
it completes any PENDING chunk, and the log says who completed whose chunk.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from evictable.model.lifecycle import CPU_MACHINE, CpuEvent, CpuState, Phase, step
from evictable.model.tiering_types import (
    ChunkEntry,
    Micro,
    MicroKind,
    PendingOwner,
    PinOwner,
    PrimarySnapshot,
    owner_order,
)
from evictable.model.types import Key

__all__ = ["Chunk", "Primary"]


def _cpu(phase: Phase) -> CpuState:
    """A primary chunk's state (the CPU table's)."""
    state = phase.state
    if not isinstance(state, CpuState):
        raise TypeError(f"not a CPU state: {state}")
    return state


@dataclass
class Chunk:
    """One resident chunk (mutable; `Primary` owns it)."""

    phase: Phase
    slot: int
    owners: list[PendingOwner] = field(default_factory=list)
    pins: list[PinOwner] = field(default_factory=list)


class Primary:
    """The primary tier: `num_slots` chunks (see the module doc)."""

    def __init__(self, num_slots: int, log: list[Micro], strict_owners: bool) -> None:
        self.num_slots = num_slots
        self.log = log
        self.strict_owners = strict_owners
        self.chunks: dict[Key, Chunk] = {}
        self.evictable: list[Key] = []
        self.free_stack: list[int] = []
        self.high_water = 0

    # ---------------------------------------------------------------- queries

    def state(self, key: Key) -> CpuState:
        chunk = self.chunks.get(key)
        return CpuState.ABSENT if chunk is None else _cpu(chunk.phase)

    def slot(self, key: Key) -> int | None:
        chunk = self.chunks.get(key)
        return None if chunk is None else chunk.slot

    def free_slots(self) -> int:
        return self.num_slots - self.high_water + len(self.free_stack)

    def victims(self, need: int, protected: Iterable[Key]) -> list[Key] | None:
        """The `need` least recently idle unprotected chunks, or None if too few."""
        if need <= 0:
            return []
        keep = set(protected)
        out = [k for k in self.evictable if k not in keep][:need]
        return out if len(out) == need else None

    # -------------------------------------------------------------- changes

    def allocate(
        self, keys: Sequence[Key], owner: PendingOwner, protected: Iterable[Key]
    ) -> tuple[list[Key], list[int], list[Key]] | None:
        """Make the ABSENT keys of `keys` PENDING under `owner`, evicting idle chunks
        outside `protected` (and `keys`) if needed: (stored keys, their slots, evicted
        keys), or None (nothing changed) when there is no room."""
        todo = [k for k in keys if self.state(k) is CpuState.ABSENT]
        if not todo:
            return [], [], []
        chosen = self.victims(len(todo) - self.free_slots(), [*keys, *protected])
        if chosen is None:
            return None
        for key in chosen:
            self.evict(key)
        slots = []
        for key in todo:
            slot = self._take_slot()
            phase = step(CPU_MACHINE, Phase(CpuState.ABSENT, None), CpuEvent.STORE_BEGIN, key)
            self.chunks[key] = Chunk(phase, slot, [owner])
            slots.append(slot)
        return todo, slots, chosen

    def evict(self, key: Key) -> None:
        """Evict one idle chunk (the CPU table refuses anything else)."""
        chunk = self.chunks[key]
        before = _cpu(chunk.phase)
        step(CPU_MACHINE, chunk.phase, CpuEvent.EVICT, key)
        self.log.append(Micro(MicroKind.EVICT, key=key, state=before))
        self._drop(key)

    def hand_over(self, key: Key, old: PendingOwner, new: PendingOwner) -> bool:
        """A PENDING chunk changes pending owner (a staged promotion is submitted);
        False (nothing changed) when the chunk is not PENDING."""
        chunk = self.chunks.get(key)
        if chunk is None or chunk.phase.state is not CpuState.PENDING:
            return False
        if old in chunk.owners:
            chunk.owners.remove(old)
        chunk.owners.append(new)
        chunk.owners.sort(key=owner_order)
        return True

    def complete(self, key: Key, by: PendingOwner, success: bool) -> bool:
        """`by` completes `key`: PENDING -> READY (success) or ABSENT; whether it acted.
        A key that is not PENDING is ignored, and so (with `strict_owners`) is one that
        `by` does not own."""
        chunk = self.chunks.get(key)
        if chunk is None or chunk.phase.state is not CpuState.PENDING:
            return False
        if self.strict_owners and by not in chunk.owners:
            return False
        self.log.append(Micro(MicroKind.COMPLETE, key=key, owner=by, owners=tuple(chunk.owners)))
        if success:
            chunk.phase = step(CPU_MACHINE, chunk.phase, CpuEvent.STORE_COMMIT, key)
            chunk.owners = []
            self.evictable.append(key)
        else:
            step(CPU_MACHINE, chunk.phase, CpuEvent.STORE_ABORT, key)
            self._drop(key)
        return True

    def pin(self, key: Key, owner: PinOwner) -> None:
        """One more pin of `key` by `owner` (the key must be READY or LOADING)."""
        chunk = self.chunks[key]
        was_idle = chunk.phase.state is CpuState.READY
        chunk.phase = step(CPU_MACHINE, chunk.phase, CpuEvent.LOAD_BEGIN, key)
        chunk.pins.append(owner)
        chunk.pins.sort(key=owner_order)
        if was_idle:
            self.evictable.remove(key)
        self.log.append(Micro(MicroKind.PIN, key=key, owner=owner))

    def unpin(self, key: Key, owner: PinOwner | None) -> None:
        """Release one pin of `key` (`owner`'s, or an anonymous one when None)."""
        chunk = self.chunks[key]
        chunk.phase = step(CPU_MACHINE, chunk.phase, CpuEvent.LOAD_END, key)
        if owner is not None and owner in chunk.pins:
            chunk.pins.remove(owner)
        elif chunk.pins:
            chunk.pins.pop()
        if chunk.phase.state is CpuState.READY:
            self.evictable.append(key)

    def reset(self) -> None:
        """Every chunk ABSENT, every slot fresh again."""
        for key, chunk in list(self.chunks.items()):
            step(CPU_MACHINE, chunk.phase, CpuEvent.RESET, key)
        self.chunks.clear()
        self.evictable.clear()
        self.free_stack.clear()
        self.high_water = 0

    def _take_slot(self) -> int:
        if self.high_water < self.num_slots:
            self.high_water += 1
            return self.high_water - 1
        return self.free_stack.pop()

    def _drop(self, key: Key) -> None:
        chunk = self.chunks.pop(key)
        if key in self.evictable:
            self.evictable.remove(key)
        self.free_stack.append(chunk.slot)

    # ----------------------------------------------------- snapshot, restore

    def snapshot(self) -> PrimarySnapshot:
        return PrimarySnapshot(
            num_slots=self.num_slots,
            chunks=frozenset(
                ChunkEntry(
                    key=k,
                    state=_cpu(c.phase),
                    slot=c.slot,
                    ref_cnt=c.phase.ref if c.phase.ref is not None else 0,
                    owners=tuple(c.owners),
                    pins=tuple(c.pins),
                )
                for k, c in self.chunks.items()
            ),
            free_stack=tuple(self.free_stack),
            high_water=self.high_water,
            evictable=tuple(self.evictable),
        )

    def restore(self, snap: PrimarySnapshot) -> None:
        """Take the state `snap` describes (a snapshot of a `Primary`)."""
        self.num_slots = snap.num_slots
        self.chunks = {
            c.key: Chunk(Phase(c.state, c.ref_cnt), c.slot, list(c.owners), list(c.pins))
            for c in sorted(snap.chunks, key=lambda c: c.slot)
        }
        self.evictable = list(snap.evictable or ())
        self.free_stack = list(snap.free_stack)
        self.high_water = snap.high_water
