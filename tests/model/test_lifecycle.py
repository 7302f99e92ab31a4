"""Tests of `model.lifecycle`: table validation, `step` semantics, derived hooks and counters."""

from __future__ import annotations

import dataclasses

import pytest

from evictable.model.errors import (
    BlockNotFoundError,
    BlockNotReadyError,
    LifecycleError,
    NotLoadingError,
    RefCountUnderflowError,
)
from evictable.model.lifecycle import (
    CPU_MACHINE,
    GPU_MACHINE,
    CpuEvent,
    CpuState,
    GpuEvent,
    GpuState,
    Hook,
    Machine,
    Phase,
    RefGuard,
    RefUpdate,
    Rejection,
    TableError,
    Transition,
    counter_delta,
    derive_hook,
    step,
    validate,
)

A, P, R, L = CpuState.ABSENT, CpuState.PENDING, CpuState.READY, CpuState.LOADING
E = CpuEvent


def without(machine: Machine, *drop: Transition) -> tuple[Transition, ...]:
    return tuple(t for t in machine.transitions if t not in drop)


def transition(event: CpuEvent, source: CpuState, target: CpuState) -> Transition:
    (t,) = [
        t
        for t in CPU_MACHINE.transitions
        if t.event is event and t.source is source and t.target is target
    ]
    return t


# ---------------------------------------------------------------------- validation


@pytest.mark.parametrize("machine", [CPU_MACHINE, GPU_MACHINE], ids=lambda m: m.name)
def test_declared_tables_are_valid(machine: Machine) -> None:
    validate(machine)


def test_rejects_a_state_declared_twice() -> None:
    broken = dataclasses.replace(CPU_MACHINE, states=(*CPU_MACHINE.states, CPU_MACHINE.states[0]))
    with pytest.raises(TableError, match="declared twice"):
        validate(broken)


def test_rejects_a_transition_leaving_the_target_ref_range() -> None:
    commit = transition(E.STORE_COMMIT, P, R)
    bad = dataclasses.replace(commit, update=RefUpdate("set", 1))  # READY must have ref 0
    broken = dataclasses.replace(CPU_MACHINE, transitions=(*without(CPU_MACHINE, commit), bad))
    with pytest.raises(TableError, match="store_commit PENDING -> READY gives ref 1"):
        validate(broken)


def test_rejects_a_pair_that_is_both_rejected_and_ignored() -> None:
    broken = dataclasses.replace(CPU_MACHINE, ignored=(*CPU_MACHINE.ignored, (A, E.LOAD_BEGIN)))
    with pytest.raises(TableError, match=r"\(ABSENT, load_begin\) must be exactly one.*found 2"):
        validate(broken)


def test_rejects_a_pair_with_no_rule() -> None:
    broken = dataclasses.replace(
        CPU_MACHINE, ignored=tuple(p for p in CPU_MACHINE.ignored if p != (P, E.STORE_BEGIN))
    )
    with pytest.raises(TableError, match=r"\(PENDING, store_begin\) must be exactly one.*found 0"):
        validate(broken)


def test_rejects_overlapping_guards() -> None:
    end = transition(E.LOAD_END, L, L)
    loose = dataclasses.replace(end, guard=RefGuard.ANY)  # now also matches ref 1
    broken = dataclasses.replace(CPU_MACHINE, transitions=(*without(CPU_MACHINE, end), loose))
    with pytest.raises(TableError):
        validate(broken)


def test_rejects_a_gap_between_guards() -> None:
    last = transition(E.LOAD_END, L, R)
    broken = dataclasses.replace(
        CPU_MACHINE,
        transitions=without(CPU_MACHINE, last),
    )
    with pytest.raises(TableError, match=r"\(LOADING, load_end\) at ref 1 matches 0"):
        validate(broken)


def test_rejects_unreachable_states() -> None:
    begin = transition(E.STORE_BEGIN, A, P)
    broken = dataclasses.replace(
        CPU_MACHINE,
        transitions=without(CPU_MACHINE, begin),
        ignored=(*CPU_MACHINE.ignored, (A, E.STORE_BEGIN)),
    )
    with pytest.raises(TableError, match="unreachable states"):
        validate(broken)


def test_rejects_a_trap_state() -> None:
    # LOADING can no longer go anywhere but LOADING: no load end to READY, no reset.
    exits = (transition(E.LOAD_END, L, R), transition(E.RESET, L, A))
    end = transition(E.LOAD_END, L, L)
    broken = dataclasses.replace(
        CPU_MACHINE,
        transitions=(
            *without(CPU_MACHINE, *exits, end),
            dataclasses.replace(end, guard=RefGuard.ANY, update=RefUpdate("keep")),
        ),
        ignored=(*CPU_MACHINE.ignored, (L, E.RESET)),
    )
    with pytest.raises(TableError, match="LOADING is a trap state"):
        validate(broken)


# ---------------------------------------------------------------------- step


@pytest.mark.parametrize(
    ("before", "event", "after"),
    [
        (Phase(A, None), E.STORE_BEGIN, Phase(P, -1)),
        (Phase(P, -1), E.STORE_COMMIT, Phase(R, 0)),
        (Phase(P, -1), E.STORE_ABORT, Phase(A, None)),
        (Phase(R, 0), E.LOAD_BEGIN, Phase(L, 1)),
        (Phase(L, 2), E.LOAD_BEGIN, Phase(L, 3)),
        (Phase(L, 3), E.LOAD_END, Phase(L, 2)),
        (Phase(L, 1), E.LOAD_END, Phase(R, 0)),
        (Phase(R, 0), E.EVICT, Phase(A, None)),
        (Phase(R, 0), E.TOUCH, Phase(R, 0)),
        (Phase(L, 2), E.TOUCH, Phase(L, 2)),
        (Phase(A, None), E.TOUCH, Phase(A, None)),
        (Phase(L, 5), E.RESET, Phase(A, None)),
        (Phase(P, -1), E.RESET, Phase(A, None)),
    ],
)
def test_step_follows_the_table(before: Phase, event: CpuEvent, after: Phase) -> None:
    assert step(CPU_MACHINE, before, event, b"k") == after


@pytest.mark.parametrize(
    ("before", "event"),
    [
        (Phase(P, -1), E.STORE_BEGIN),
        (Phase(R, 0), E.STORE_COMMIT),
        (Phase(A, None), E.STORE_ABORT),
        (Phase(A, None), E.RESET),
    ],
)
def test_step_ignores_tolerated_pairs(before: Phase, event: CpuEvent) -> None:
    assert step(CPU_MACHINE, before, event, b"k") == before


@pytest.mark.parametrize(
    ("before", "event", "error"),
    [
        (Phase(A, None), E.LOAD_BEGIN, BlockNotFoundError),
        (Phase(P, -1), E.LOAD_BEGIN, BlockNotReadyError),
        (Phase(A, None), E.LOAD_END, BlockNotFoundError),
        (Phase(P, -1), E.LOAD_END, NotLoadingError),
        (Phase(R, 0), E.LOAD_END, NotLoadingError),
        (Phase(L, 1), E.EVICT, BlockNotReadyError),
    ],
)
def test_step_raises_the_named_rejection(
    before: Phase, event: CpuEvent, error: type[LifecycleError]
) -> None:
    with pytest.raises(error) as info:
        step(CPU_MACHINE, before, event, b"key")
    assert type(info.value) is error
    assert info.value.keys == (b"key",)
    assert "b'key'" in str(info.value)


def test_step_gpu_rejection_names_the_block_id() -> None:
    with pytest.raises(RefCountUnderflowError) as info:
        step(GPU_MACHINE, Phase(GpuState.FREE, 0), GpuEvent.FREE, 7)
    assert info.value.block_ids == (7,)


def test_rejects_a_phase_outside_its_state() -> None:
    with pytest.raises(TableError, match="not admitted"):
        step(CPU_MACHINE, Phase(R, 1), E.LOAD_BEGIN, b"k")
    with pytest.raises(TableError):
        step(CPU_MACHINE, Phase(A, 0), E.STORE_BEGIN, b"k")


def test_step_raises_table_error_for_an_undeclared_pair() -> None:
    broken = dataclasses.replace(
        CPU_MACHINE,
        rejections=tuple(
            r for r in CPU_MACHINE.rejections if (r.state, r.event) != (A, E.LOAD_BEGIN)
        ),
    )
    with pytest.raises(TableError, match="no rule"):
        step(broken, Phase(A, None), E.LOAD_BEGIN, b"k")


def test_rejection_records_are_frozen() -> None:
    rejection = CPU_MACHINE.rejection(A, E.LOAD_BEGIN)
    assert isinstance(rejection, Rejection)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rejection.reason = "x"  # type: ignore[misc]


# ---------------------------------------------------------------------- derivations

EXPECTED_CPU_HOOKS = {
    (E.STORE_BEGIN, A, P): Hook.NONE,
    (E.STORE_COMMIT, P, R): Hook.FLAG_ON,
    (E.STORE_ABORT, P, A): Hook.NONE,
    (E.LOAD_BEGIN, R, L): Hook.FLAG_OFF,
    (E.LOAD_BEGIN, L, L): Hook.NONE,
    (E.LOAD_END, L, L): Hook.NONE,
    (E.LOAD_END, L, R): Hook.FLAG_ON,
    (E.EVICT, R, A): Hook.DROP,
    (E.TOUCH, A, A): Hook.NONE,
    (E.TOUCH, P, P): Hook.NONE,
    (E.TOUCH, R, R): Hook.NONE,
    (E.TOUCH, L, L): Hook.NONE,
    (E.RESET, P, A): Hook.NONE,
    (E.RESET, R, A): Hook.DROP,
    (E.RESET, L, A): Hook.NONE,
}


def test_derived_cpu_hooks_are_the_expected_ones() -> None:
    derived = {
        (t.event, t.source, t.target): derive_hook(CPU_MACHINE, t) for t in CPU_MACHINE.transitions
    }
    assert derived == EXPECTED_CPU_HOOKS
    assert CPU_MACHINE.hook_name(Hook.FLAG_ON) == "mark_evictable"
    assert CPU_MACHINE.hook_name(Hook.FLAG_OFF) == "mark_non_evictable"


def test_derived_gpu_hooks_follow_free_queue_membership() -> None:
    derived = {
        (t.event, t.source, t.target, t.guard): derive_hook(GPU_MACHINE, t)
        for t in GPU_MACHINE.transitions
    }
    F, U = GpuState.FREE, GpuState.IN_USE
    assert derived[(GpuEvent.ALLOCATE, F, U, RefGuard.ANY)] is Hook.FLAG_OFF
    assert derived[(GpuEvent.TOUCH, F, U, RefGuard.ANY)] is Hook.FLAG_OFF
    assert derived[(GpuEvent.TOUCH, U, U, RefGuard.ANY)] is Hook.NONE
    assert derived[(GpuEvent.FREE, U, F, RefGuard.EQ_ONE)] is Hook.FLAG_ON
    assert derived[(GpuEvent.FREE, U, U, RefGuard.GE_TWO)] is Hook.NONE


def test_a_changed_flag_changes_the_derived_hook() -> None:
    states = tuple(
        dataclasses.replace(s, flag=False) if s.state is R else s for s in CPU_MACHINE.states
    )
    broken = dataclasses.replace(CPU_MACHINE, states=states)
    assert derive_hook(broken, transition(E.STORE_COMMIT, P, R)) is Hook.NONE


@pytest.mark.parametrize(
    ("event", "source", "target", "delta"),
    [
        (E.STORE_BEGIN, A, P, {"num_pending": 1, "num_evictable": 0}),
        (E.STORE_COMMIT, P, R, {"num_pending": -1, "num_evictable": 1}),
        (E.STORE_ABORT, P, A, {"num_pending": -1, "num_evictable": 0}),
        (E.LOAD_BEGIN, R, L, {"num_pending": 0, "num_evictable": -1}),
        (E.LOAD_END, L, R, {"num_pending": 0, "num_evictable": 1}),
        (E.EVICT, R, A, {"num_pending": 0, "num_evictable": -1}),
        (E.RESET, L, A, {"num_pending": 0, "num_evictable": 0}),
    ],
)
def test_counter_deltas(
    event: CpuEvent, source: CpuState, target: CpuState, delta: dict[str, int]
) -> None:
    assert counter_delta(CPU_MACHINE, transition(event, source, target)) == delta
