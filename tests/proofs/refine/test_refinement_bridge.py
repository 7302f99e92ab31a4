"""Refinement bridge, at random over longer runs: the Z3 transition relation holds on the
model's concrete steps.

The proofs in `proofs/z3/lifecycle.py` are about `T(pre, event, post)` as encoded in
`proofs/z3/encode.py`. Here the executable model produces concrete steps -- `step` on
one block of either table, and whole `ModelManager` operations observed through
snapshots -- and each (pre, event, post) is evaluated in Z3 (`bridges.Oracle`): it
must satisfy T, and a perturbed post (other state, other ref, flipped list
membership) must not. A rejected step must be one T calls rejected. `evictable
verify` runs the exhaustive form at small bounds (`bridge.block.*`, `refine.manager.*`,
which takes each key's event from what the model executed).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import z3
from hypothesis import given
from hypothesis import strategies as st

from evictable.model.errors import DuplicateKeysError, LifecycleError
from evictable.model.lifecycle import (
    CPU_MACHINE,
    GPU_MACHINE,
    CpuEvent,
    CpuState,
    Event,
    Machine,
    Phase,
    State,
    step,
)
from evictable.model.manager import ModelManager
from evictable.model.types import LruPolicySnapshot, ManagerSnapshot
from evictable.proofs.refine.bridges import Oracle
from evictable.proofs.z3.encode import concrete_terms, rejects_term, state_sort, step_term

_ORACLES = {m.name: Oracle(m) for m in (CPU_MACHINE, GPU_MACHINE)}


def _holds(term: Any) -> bool:
    """Decide a closed Z3 formula (concrete values only)."""
    value = z3.simplify(term)
    if z3.is_true(value):
        return True
    if z3.is_false(value):
        return False
    s = z3.Solver()
    s.add(term)
    return bool(s.check() == z3.sat)


def _check_step(
    m: Machine, pre: Phase, pre_in: bool, event: Event | None, post: Phase, post_in: bool
) -> None:
    """(pre, event, post) satisfies T; each perturbed post does not (`bridges.Oracle`)."""
    why = _ORACLES[m.name].step_fails(pre, pre_in, event, post, post_in)
    assert why is None, why


# ------------------------------------------------------------------ one block, both tables


def _events(m: Machine) -> st.SearchStrategy[list[Event]]:
    return st.lists(st.sampled_from(m.events), max_size=25)


def _run_block(m: Machine, start: Phase, events: list[Event]) -> None:
    ss = state_sort(m)
    phase = start
    for event in events:
        flag = m.spec(phase.state).flag
        try:
            after = step(m, phase, event, "k")
        except LifecycleError:
            assert _holds(rejects_term(m, event, concrete_terms(ss, phase, flag))), (phase, event)
            continue
        assert not _holds(rejects_term(m, event, concrete_terms(ss, phase, flag)))
        _check_step(m, phase, flag, event, after, m.spec(after.state).flag)
        phase = after


@given(_events(CPU_MACHINE))
def test_cpu_steps_satisfy_the_transition_relation(events: list[Event]) -> None:
    _run_block(CPU_MACHINE, Phase(CpuState.ABSENT, None), events)


@given(st.sampled_from(GPU_MACHINE.initial), _events(GPU_MACHINE))
def test_gpu_steps_satisfy_the_transition_relation(start: Any, events: list[Event]) -> None:
    _run_block(GPU_MACHINE, Phase(start, GPU_MACHINE.spec(start).ref_min), events)


def test_rejects_a_perturbed_successor_of_load_end() -> None:
    pre = Phase(CpuState.LOADING, 1)
    post = step(CPU_MACHINE, pre, CpuEvent.LOAD_END)
    _check_step(CPU_MACHINE, pre, False, CpuEvent.LOAD_END, post, True)
    # The successor without the mark_evictable effect is not a T-successor.
    ss = state_sort(CPU_MACHINE)
    term = step_term(
        CPU_MACHINE,
        CpuEvent.LOAD_END,
        concrete_terms(ss, pre, False),
        concrete_terms(ss, post, False),
    )
    assert not _holds(term)


# ------------------------------------------------------------------ whole manager operations

KEYS = tuple(range(4))
OPS = (
    "prepare_store",
    "complete_store",
    "prepare_load",
    "complete_load",
    "touch",
    "reset_cache",
    "duplicate",
)
WANTS: dict[str, tuple[CpuState, ...]] = {
    "prepare_store": (CpuState.ABSENT,),
    "complete_store": (CpuState.PENDING,),
    "prepare_load": (CpuState.READY, CpuState.LOADING),
    "complete_load": (CpuState.LOADING,),
    "touch": (CpuState.READY,),
}


def _block(snap: ManagerSnapshot, key: Hashable) -> tuple[Phase, bool]:
    assert isinstance(snap.policy, LruPolicySnapshot)
    for e in snap.blocks:
        if e.key == key:
            return Phase(e.state, e.ref_cnt), key in snap.policy.evictable
    return Phase(CpuState.ABSENT, None), key in snap.policy.evictable


NEXT: dict[State, tuple[str, ...]] = {
    CpuState.ABSENT: ("prepare_store",),
    CpuState.PENDING: ("complete_store",),
    CpuState.READY: ("prepare_load", "touch"),
    CpuState.LOADING: ("complete_load", "prepare_load"),
}


def _draw_op(data: st.DataObject, snap: ManagerSnapshot) -> tuple[Any, ...]:
    """Mostly an operation that moves the first drawn key along its lifecycle (with
    other keys in a state where it acts); sometimes any operation on any keys."""
    keys = data.draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=3, unique=True))
    if data.draw(st.integers(0, 4)) < 4:
        name = data.draw(st.sampled_from(NEXT[_block(snap, keys[0])[0].state]))
        keys = [k for k in keys if _block(snap, k)[0].state in WANTS[name]]
        success = data.draw(st.integers(0, 3)) > 0
    else:
        name = data.draw(st.sampled_from(OPS))
        success = data.draw(st.booleans())
    if name == "reset_cache":
        return (name,)
    if name == "duplicate":
        return (name, keys[0])
    return (name, keys, success) if name == "complete_store" else (name, keys)


def _apply(mgr: ModelManager, op: tuple[Any, ...]) -> dict[Hashable, CpuEvent]:
    """Run one operation; return the event each involved key underwent."""
    name = op[0]
    if name == "prepare_store":
        out = mgr.prepare_store(list(op[1]))
        if out is None:
            return {}
        events = {k: CpuEvent.STORE_BEGIN for k in op[1]}
        events.update({k: CpuEvent.EVICT for k in out.evicted_keys})
        return events
    if name == "complete_store":
        mgr.complete_store(list(op[1]), success=op[2])
        event = CpuEvent.STORE_COMMIT if op[2] else CpuEvent.STORE_ABORT
        return {k: event for k in op[1]}
    if name == "prepare_load":
        mgr.prepare_load(list(op[1]))
        return {k: CpuEvent.LOAD_BEGIN for k in op[1]}
    if name == "complete_load":
        mgr.complete_load(list(op[1]))
        return {k: CpuEvent.LOAD_END for k in op[1]}
    if name == "duplicate":
        mgr.complete_load([op[1], op[1]])
        raise AssertionError("duplicate keys were accepted")
    if name == "touch":
        mgr.touch(list(op[1]))
        return {k: CpuEvent.TOUCH for k in op[1]}
    mgr.reset_cache()
    return {k: CpuEvent.RESET for k in KEYS}


@given(st.integers(min_value=1, max_value=3), st.data())
def test_manager_operations_satisfy_the_transition_relation(
    num_blocks: int, data: st.DataObject
) -> None:
    mgr = ModelManager(num_blocks, policy="lru")
    ss = state_sort(CPU_MACHINE)
    for _ in range(25):
        before = mgr.snapshot()
        op = _draw_op(data, before)
        try:
            events = _apply(mgr, op)
        except LifecycleError as err:
            assert mgr.snapshot() == before
            if not isinstance(err, DuplicateKeysError):
                culprit = err.keys[0]
                pre, pre_in = _block(before, culprit)
                event = {"prepare_load": CpuEvent.LOAD_BEGIN, "complete_load": CpuEvent.LOAD_END}[
                    op[0]
                ]
                assert _holds(rejects_term(CPU_MACHINE, event, concrete_terms(ss, pre, pre_in)))
            continue
        after = mgr.snapshot()
        for key in KEYS:
            pre, pre_in = _block(before, key)
            post, post_in = _block(after, key)
            _check_step(CPU_MACHINE, pre, pre_in, events.get(key), post, post_in)
