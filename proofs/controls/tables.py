"""Deliberately broken lifecycle tables: one realistic change to `CPU_MACHINE` each.

A mutant is built with `dataclasses.replace`, so it bypasses `lifecycle.validate`
(most would be rejected at import -- which is exactly why the proofs must catch them
on their own). The builders name the classes of change a table's author can make:
a rejection turned into a no-op (`rejection_to_noop`) or into a transition
(`rejection_to_row`), a tolerated no-op turned into a transition (`noop_to_row`), a
row dropped (`row_to_noop`), a wrong target (`retarget`), a wrong ref effect
(`reupdate`), and a dead row (`dead_row_table`). A dropped hook is a broken hook
derivation rather than a table (`proofs.z3.lifecycle.overriding`).

`ENABLEDNESS_CONTROLS` and `SAFETY_CONTROLS` are the negative controls of
`proofs.z3.enabledness`; `TABLE_MUTANTS` has one mutant per class, for the tests
that show which Z3 obligation catches each.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from evictable.model import lifecycle
from evictable.model.errors import BlockNotReadyError
from evictable.model.lifecycle import (
    CpuEvent,
    CpuState,
    Event,
    GpuEvent,
    GpuState,
    Hook,
    Machine,
    Phase,
    RefGuard,
    RefUpdate,
    Rejection,
    State,
    Transition,
    derive_hook,
)
from evictable.model.machine import (
    CLEAR,
    INC,
    KEEP,
    SET_IDLE,
    SET_ONE,
    SET_STORE,
    rejection_error,
)
from evictable.model.manager import ModelManager
from evictable.model.types import Key
from evictable.proofs.z3.encode import (
    REFERENCE_MACHINES,
    HookFn,
    transition_label,
)

__all__ = [
    "ENABLEDNESS_CONTROLS",
    "SAFETY_CONTROLS",
    "TABLE_MUTANTS",
    "MissesMarkEvictableOnLoadEnd",
    "dead_row_table",
    "gpu_dead_row_table",
    "noop_to_rejection",
    "noop_to_row",
    "rejection_to_noop",
    "rejection_to_row",
    "retarget",
    "reupdate",
    "row_to_noop",
    "row_to_rejection",
    "step_ignoring_guards",
]

A, P, R, L = CpuState.ABSENT, CpuState.PENDING, CpuState.READY, CpuState.LOADING
E = CpuEvent

Mutant = Callable[[Machine], tuple[Machine, str]]
"""A table mutant: the broken copy of a table and a one-line description."""


def _without_rejection(m: Machine, event: CpuEvent, state: CpuState) -> Machine:
    kept = tuple(r for r in m.rejections if not (r.event is event and r.state is state))
    if len(kept) == len(m.rejections):
        raise KeyError(f"{m.name}: {event.value} on {state.name} is not rejected")
    return dataclasses.replace(m, rejections=kept)


def _without_noop(m: Machine, event: CpuEvent, state: CpuState) -> Machine:
    kept = tuple(p for p in m.ignored if p != (state, event))
    if len(kept) == len(m.ignored):
        raise KeyError(f"{m.name}: {event.value} on {state.name} is not ignored")
    return dataclasses.replace(m, ignored=kept)


def _add_row(m: Machine, row: Transition) -> Machine:
    return dataclasses.replace(m, transitions=(*m.transitions, row))


def _row(m: Machine, event: CpuEvent, source: CpuState, target: CpuState) -> int:
    for i, t in enumerate(m.transitions):
        if t.event is event and t.source is source and t.target is target:
            return i
    raise KeyError(f"{m.name}: no row {event.value} {source.name}->{target.name}")


def rejection_to_noop(m: Machine, event: CpuEvent, state: CpuState) -> Machine:
    """The table tolerates `event` on `state` instead of rejecting it."""
    cut = _without_rejection(m, event, state)
    return dataclasses.replace(cut, ignored=(*cut.ignored, (state, event)))


def rejection_to_row(
    m: Machine, event: CpuEvent, state: CpuState, target: CpuState, update: RefUpdate
) -> Machine:
    """The table accepts `event` on `state` (a row to `target`) instead of rejecting it."""
    return _add_row(
        _without_rejection(m, event, state), Transition(event, state, target, RefGuard.ANY, update)
    )


def noop_to_row(
    m: Machine, event: CpuEvent, state: CpuState, target: CpuState, update: RefUpdate
) -> Machine:
    """A tolerated no-op becomes a row to `target`."""
    return _add_row(
        _without_noop(m, event, state), Transition(event, state, target, RefGuard.ANY, update)
    )


def noop_to_rejection(m: Machine, event: CpuEvent, state: CpuState) -> Machine:
    """A tolerated no-op becomes a rejection (`BlockNotReadyError`)."""
    cut = _without_noop(m, event, state)
    row = Rejection(event, state, BlockNotReadyError, "a control's refusal")
    return dataclasses.replace(cut, rejections=(*cut.rejections, row))


def row_to_rejection(m: Machine, event: CpuEvent, source: CpuState, target: CpuState) -> Machine:
    """A row is dropped and its (state, event) pair rejected (`BlockNotReadyError`)."""
    rows = list(m.transitions)
    del rows[_row(m, event, source, target)]
    row = Rejection(event, source, BlockNotReadyError, "a control's refusal")
    return dataclasses.replace(m, transitions=tuple(rows), rejections=(*m.rejections, row))


def row_to_noop(m: Machine, event: CpuEvent, source: CpuState, target: CpuState) -> Machine:
    """A row is dropped and its (state, event) pair tolerated as a no-op."""
    rows = list(m.transitions)
    del rows[_row(m, event, source, target)]
    return dataclasses.replace(m, transitions=tuple(rows), ignored=(*m.ignored, (source, event)))


def retarget(
    m: Machine, event: CpuEvent, source: CpuState, target: CpuState, new: CpuState
) -> Machine:
    """The row `event` `source`->`target` goes to `new` instead."""
    rows = list(m.transitions)
    i = _row(m, event, source, target)
    rows[i] = dataclasses.replace(rows[i], target=new)
    return dataclasses.replace(m, transitions=tuple(rows))


def reupdate(
    m: Machine, event: CpuEvent, source: CpuState, target: CpuState, update: RefUpdate
) -> Machine:
    """The row `event` `source`->`target` has the ref effect `update` instead."""
    rows = list(m.transitions)
    i = _row(m, event, source, target)
    rows[i] = dataclasses.replace(rows[i], update=update)
    return dataclasses.replace(m, transitions=tuple(rows))


def dead_row_table(m: Machine) -> Machine:
    """`evict` on LOADING is a row (LOADING -> ABSENT) instead of a rejection.

    The manager evicts only the policy's victims, which are listed, so the row can
    never fire: a dead row (and, were it fired, an eviction under a running load).
    """
    return rejection_to_row(m, E.EVICT, L, A, CLEAR)


def gpu_dead_row_table(m: Machine) -> Machine:
    """The GPU table with `allocate` on IN_USE a row (IN_USE -> IN_USE, ref + 1) instead
    of a rejection: the pool allocates only blocks it takes from the free queue, so the
    row can never fire."""
    kept = tuple(
        r for r in m.rejections if not (r.event is GpuEvent.ALLOCATE and r.state is GpuState.IN_USE)
    )
    row = Transition(GpuEvent.ALLOCATE, GpuState.IN_USE, GpuState.IN_USE, RefGuard.ANY, INC)
    return dataclasses.replace(m, transitions=(*m.transitions, row), rejections=kept)


def _mutant(build: Callable[[Machine], Machine], text: str) -> Mutant:
    return lambda m: (build(m), text)


ENABLEDNESS_CONTROLS: dict[CpuEvent, Mutant] = {
    E.STORE_BEGIN: _mutant(
        lambda m: noop_to_row(m, E.STORE_BEGIN, R, P, SET_STORE),
        "store_begin on READY restarting the store (a no-op turned into a transition)",
    ),
    E.STORE_COMMIT: _mutant(
        lambda m: noop_to_row(m, E.STORE_COMMIT, L, R, SET_IDLE),
        "store_commit on LOADING dropping its loads",
    ),
    E.STORE_ABORT: _mutant(
        lambda m: noop_to_row(m, E.STORE_ABORT, R, A, CLEAR),
        "store_abort on READY dropping an idle block",
    ),
    E.LOAD_BEGIN: _mutant(
        lambda m: rejection_to_noop(m, E.LOAD_BEGIN, P),
        "load_begin on PENDING tolerated as a no-op (a rejection turned into a no-op)",
    ),
    E.LOAD_END: _mutant(
        lambda m: rejection_to_row(m, E.LOAD_END, R, R, KEEP),
        "load_end on READY accepted (a rejection turned into a transition)",
    ),
    E.EVICT: _mutant(dead_row_table, "evict on LOADING accepted (LOADING -> ABSENT)"),
    E.TOUCH: _mutant(
        lambda m: row_to_noop(m, E.TOUCH, P, P),
        "touch on PENDING ignored, so the policy never sees the key",
    ),
    E.RESET: _mutant(
        lambda m: retarget(m, E.RESET, L, A, L), "reset keeping a LOADING block resident"
    ),
}
"""One mutant per event, for `enabledness.<event>`."""

SAFETY_CONTROLS: dict[str, tuple[Mutant, ...]] = {
    "loads_read_written_data": (  # a load from each state it excludes
        _mutant(
            lambda m: rejection_to_row(m, E.LOAD_BEGIN, A, L, SET_ONE),
            "load_begin on ABSENT reading data never written",
        ),
        _mutant(
            lambda m: rejection_to_row(m, E.LOAD_BEGIN, P, L, SET_ONE),
            "load_begin on PENDING reading data still being written",
        ),
    ),
    "evicts_only_idle": (  # an eviction from each state it excludes
        _mutant(lambda m: rejection_to_row(m, E.EVICT, A, A, CLEAR), "evict on ABSENT accepted"),
        _mutant(
            lambda m: rejection_to_row(m, E.EVICT, P, A, CLEAR),
            "evict on PENDING (under a running store)",
        ),
        _mutant(dead_row_table, "evict on LOADING (under a running load)"),
    ),
    "store_abort_changes_only_pending": (  # a change to each state it excludes
        _mutant(
            lambda m: noop_to_row(m, E.STORE_ABORT, A, P, SET_STORE),
            "store_abort on ABSENT starting a store",
        ),
        _mutant(
            lambda m: noop_to_row(m, E.STORE_ABORT, R, A, CLEAR),
            "store_abort on READY dropping an idle block",
        ),
        _mutant(
            lambda m: noop_to_row(m, E.STORE_ABORT, L, A, CLEAR),
            "store_abort on LOADING dropping a block under load",
        ),
    ),
    "reset_ends_absent": (  # a refusal, and a reset ending elsewhere from each state
        _mutant(lambda m: noop_to_rejection(m, E.RESET, A), "reset refused on ABSENT"),
        _mutant(
            lambda m: noop_to_row(m, E.RESET, A, P, SET_STORE), "reset on ABSENT starting a store"
        ),
        _mutant(lambda m: retarget(m, E.RESET, P, A, P), "reset keeping a PENDING block"),
        _mutant(lambda m: retarget(m, E.RESET, R, A, R), "reset keeping a READY block"),
        _mutant(lambda m: retarget(m, E.RESET, L, A, L), "reset keeping a LOADING block resident"),
    ),
    "touch_changes_nothing": (  # a refusal, a state change and a ref change per state
        _mutant(lambda m: row_to_rejection(m, E.TOUCH, A, A), "touch refused on ABSENT"),
        _mutant(lambda m: retarget(m, E.TOUCH, A, A, P), "touch making an ABSENT block PENDING"),
        _mutant(lambda m: retarget(m, E.TOUCH, P, P, R), "touch making a PENDING block READY"),
        _mutant(lambda m: retarget(m, E.TOUCH, R, R, A), "touch dropping a READY block"),
        _mutant(lambda m: retarget(m, E.TOUCH, L, L, R), "touch making a LOADING block READY"),
        _mutant(lambda m: reupdate(m, E.TOUCH, P, P, SET_IDLE), "touch setting a PENDING ref to 0"),
        _mutant(lambda m: reupdate(m, E.TOUCH, R, R, INC), "touch pinning a READY block"),
        _mutant(lambda m: reupdate(m, E.TOUCH, L, L, INC), "touch adding a load to LOADING"),
    ),
}
"""Per safety property, one mutant per way it can fail (each excluded state, each
conjunct), for `safety.<property>`: weakening the property in any one disjunct lets
one of them through."""

TABLE_MUTANTS: dict[str, Mutant] = {
    "rejection to no-op": ENABLEDNESS_CONTROLS[E.LOAD_BEGIN],
    "rejection to transition": SAFETY_CONTROLS["loads_read_written_data"][1],
    "dead row": _mutant(dead_row_table, "evict on LOADING, a row the manager never fires"),
    "wrong target": _mutant(
        lambda m: retarget(m, E.LOAD_END, L, R, L), "load_end LOADING->READY going to LOADING"
    ),
    "wrong ref effect": _mutant(
        lambda m: reupdate(m, E.LOAD_BEGIN, R, L, KEEP), "load_begin READY->LOADING keeping ref 0"
    ),
}
"""One table mutant per class of the issue's list (the dropped hook is a derivation:
see `proofs.z3.lifecycle.overriding`)."""


# ------------------------------------------------------------------ broken executions


def step_ignoring_guards(machine: Machine, phase: Phase, event: Event, item: Hashable) -> Phase:
    """`model.lifecycle.step` that forgets the ref guards: the first row of (state, event)
    fires whatever the ref count (so `load_end` on LOADING at ref 1 stays LOADING)."""
    for t in machine.transitions_from(phase.state, event):
        return Phase(t.target, t.update.apply(phase.ref))
    if machine.rejection(phase.state, event) is not None:
        raise rejection_error(machine, phase, event, item)
    return phase


class MissesMarkEvictableOnLoadEnd(ModelManager):
    """The model manager, except that the load end taking a key to READY never tells
    the policy (`mark_evictable`): the key is idle but never offered for eviction."""

    _event: CpuEvent | None = None

    def fire(self, key: Key, event: CpuEvent) -> Transition | None:
        self._event = event
        try:
            return super().fire(key, event)
        finally:
            self._event = None

    def call_hook(self, hook: Hook, key: Key) -> None:
        if hook is Hook.FLAG_ON and self._event is CpuEvent.LOAD_END:
            return  # BUG: mark_evictable dropped
        super().call_hook(hook, key)


def replace_row(machine: Machine, index: int, **changes: Any) -> Machine:
    """A copy of `machine` with row `index` changed (not validated: for controls)."""
    rows = list(machine.transitions)
    rows[index] = dataclasses.replace(rows[index], **changes)
    return dataclasses.replace(machine, transitions=tuple(rows))


def replace_state(machine: Machine, state: State, **changes: Any) -> Machine:
    """A copy of `machine` with one state's spec changed (not validated)."""
    specs = tuple(
        dataclasses.replace(s, **changes) if s.state is state else s for s in machine.states
    )
    return dataclasses.replace(machine, states=specs)


def overriding(machine: Machine, index: int, hook: Hook) -> HookFn:
    """A hook derivation that is `derive_hook` except on row `index` (a broken hook)."""
    row = machine.transitions[index]

    def broken(m: Machine, t: Transition) -> Hook:
        return hook if t is row else derive_hook(m, t)

    return broken


def retarget_to_other_flag(machine: Machine, index: int) -> Machine:
    """Row `index` sent to the first resident state whose flag differs from its target's."""
    t = machine.transitions[index]
    ref = REFERENCE_MACHINES[machine.name]
    want = not ref.spec(t.target).flag
    for s in ref.states:
        if s.resident and s.flag is want and s.state is not t.target:
            return replace_row(machine, index, target=s.state)
    raise lifecycle.TableError(f"{machine.name}: no state to retarget {transition_label(t)}")


def wrong_hook(machine: Machine, index: int) -> Hook:
    h = derive_hook(machine, machine.transitions[index])
    return {
        Hook.NONE: Hook.FLAG_ON,
        Hook.FLAG_ON: Hook.NONE,
        Hook.FLAG_OFF: Hook.NONE,
        Hook.DROP: Hook.FLAG_OFF,
    }[h]


VACUOUS_ROW: Mapping[str, tuple[Event, State, State, RefGuard]] = {
    "cpu": (CpuEvent.TOUCH, CpuState.READY, CpuState.READY, RefGuard.GE_TWO),
    "gpu": (GpuEvent.ALLOCATE, GpuState.FREE, GpuState.IN_USE, RefGuard.EQ_ONE),
}


FORGETFUL_ROW: Mapping[str, tuple[Event, State, State]] = {
    "cpu": (CpuEvent.LOAD_END, CpuState.LOADING, CpuState.LOADING),
    "gpu": (GpuEvent.FREE, GpuState.IN_USE, GpuState.IN_USE),
}


KEEP_REF = RefUpdate("keep")
