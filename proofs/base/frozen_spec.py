"""A frozen, versioned copy of the CPU lifecycle table: the specification the Z3
obligations judge by and their negative controls break.

`model/lifecycle.py` is the source of truth the model, the implementation's checks
and the docs derive from -- and it is what a proof checks. If the proofs also took
their *reference* (the invariant's state ranges and flags, the table every negative
control breaks) from that module, a mutated table would mutate the reference too: a
control that removes "load_begin on PENDING is rejected" raises `KeyError` on a table
that already lost that rejection, and a whole group of records becomes one collection
error instead of a counterexample per event.

So the reference is this literal copy, written out as data, with a version string.
`tests/proofs/base/test_frozen_spec.py` checks that it equals
`model.lifecycle.CPU_MACHINE`: a deliberate change of the table fails that test until
the copy is updated and `CPU_SPEC_VERSION` is raised, so the spec never drifts
silently; an accidental change (a mutant) is judged by the unchanged copy.
"""

from __future__ import annotations

from evictable.model.errors import BlockNotFoundError, BlockNotReadyError, NotLoadingError
from evictable.model.machine import (
    CLEAR,
    DEC,
    INC,
    KEEP,
    SET_IDLE,
    SET_STORE,
    Machine,
    RefGuard,
    Rejection,
    StateSpec,
    Transition,
)
from evictable.model.states import CpuEvent, CpuState

__all__ = ["CPU_SPEC", "CPU_SPEC_VERSION"]

CPU_SPEC_VERSION = "cpu-table-1"
"""Raised whenever the copy below changes (with `model/lifecycle.py`'s table)."""

_A, _P, _R, _L = CpuState.ABSENT, CpuState.PENDING, CpuState.READY, CpuState.LOADING
_E = CpuEvent

CPU_SPEC = Machine(
    name="cpu",
    flag_name="evictable",
    hook_on="mark_evictable",
    hook_off="mark_non_evictable",
    hook_drop="(leaves the list)",
    item_kind="key",
    states=(
        StateSpec(
            _A, "not resident (slot free)", resident=False, flag=False, ref_min=None, ref_max=None
        ),
        StateSpec(
            _P, "store in flight, not readable", resident=True, flag=False, ref_min=-1, ref_max=-1
        ),
        StateSpec(_R, "resident, idle", resident=True, flag=True, ref_min=0, ref_max=0),
        StateSpec(_L, "n loads in flight", resident=True, flag=False, ref_min=1, ref_max=None),
    ),
    events=tuple(CpuEvent),
    initial=(_A,),
    transitions=(
        Transition(_E.STORE_BEGIN, _A, _P, RefGuard.ANY, SET_STORE),
        Transition(_E.STORE_COMMIT, _P, _R, RefGuard.ANY, SET_IDLE),
        Transition(_E.STORE_ABORT, _P, _A, RefGuard.ANY, CLEAR),
        Transition(_E.LOAD_BEGIN, _R, _L, RefGuard.ANY, INC),
        Transition(_E.LOAD_BEGIN, _L, _L, RefGuard.ANY, INC),
        Transition(_E.LOAD_END, _L, _L, RefGuard.GE_TWO, DEC),
        Transition(_E.LOAD_END, _L, _R, RefGuard.EQ_ONE, DEC),
        Transition(_E.EVICT, _R, _A, RefGuard.ANY, CLEAR),
        Transition(_E.TOUCH, _A, _A, RefGuard.ANY, KEEP),
        Transition(_E.TOUCH, _P, _P, RefGuard.ANY, KEEP),
        Transition(_E.TOUCH, _R, _R, RefGuard.ANY, KEEP),
        Transition(_E.TOUCH, _L, _L, RefGuard.ANY, KEEP),
        Transition(_E.RESET, _P, _A, RefGuard.ANY, CLEAR),
        Transition(_E.RESET, _R, _A, RefGuard.ANY, CLEAR),
        Transition(_E.RESET, _L, _A, RefGuard.ANY, CLEAR),
    ),
    rejections=(
        Rejection(_E.LOAD_BEGIN, _A, BlockNotFoundError, "nothing to load"),
        Rejection(_E.LOAD_BEGIN, _P, BlockNotReadyError, "store still in flight"),
        Rejection(_E.LOAD_END, _A, BlockNotFoundError, "nothing was loading"),
        Rejection(_E.LOAD_END, _P, NotLoadingError, "no load in flight"),
        Rejection(_E.LOAD_END, _R, NotLoadingError, "no load in flight (ref would underflow)"),
        Rejection(_E.EVICT, _A, BlockNotFoundError, "nothing to evict"),
        Rejection(_E.EVICT, _P, BlockNotReadyError, "pinned by its store"),
        Rejection(_E.EVICT, _L, BlockNotReadyError, "pinned by its loads"),
    ),
    ignored=(
        (_P, _E.STORE_BEGIN),
        (_R, _E.STORE_BEGIN),
        (_L, _E.STORE_BEGIN),
        (_A, _E.STORE_COMMIT),
        (_R, _E.STORE_COMMIT),
        (_L, _E.STORE_COMMIT),
        (_A, _E.STORE_ABORT),
        (_R, _E.STORE_ABORT),
        (_L, _E.STORE_ABORT),
        (_A, _E.RESET),
    ),
    counters={"num_evictable": _R, "num_pending": _P},
)
"""The CPU table as `model/lifecycle.py` declares it at `CPU_SPEC_VERSION`."""
