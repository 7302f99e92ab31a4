"""The block lifecycles as data: the one source of truth.

This module declares two state machines as frozen data:

* `CPU_MACHINE` -- a CPU offload block (one per key): ABSENT, PENDING (store in
  flight, ref -1), READY (idle, ref 0, evictable), LOADING (n >= 1 loads in flight).
* `GPU_MACHINE` -- a GPU KV-cache block: FREE (in the free queue, ref 0), IN_USE
  (ref >= 1), and NULL (the null block, outside both).

Everything else is *derived* from these declarations: `step` (the executable
semantics of one event on one block, in `model.machine`), the hook calls
(`derive_hook`), the counter deltas, the Z3 encodings in `proofs/`, and the tables
and diagrams in `docs/spec.md`.
Do not restate a rule elsewhere; derive it from here.

Each machine is validated when this module is imported (`validate`): every state is
reachable from an initial state, no state is a trap (from every reachable state an
initial state is reachable again, except states declared `fixed`), and every
(state, event) pair is exactly one of: one or more guarded transitions, a named
rejection, or a tolerated no-op ("ignored").

Written for clarity; the fast path is `impl/`, which is checked against this.
"""

from __future__ import annotations

from evictable.model.errors import (
    BlockNotFoundError,
    BlockNotLinkedError,
    BlockNotReadyError,
    NotLoadingError,
    RefCountUnderflowError,
)
from evictable.model.machine import (
    CLEAR,
    DEC,
    INC,
    KEEP,
    SET_IDLE,
    SET_ONE,
    SET_STORE,
    Hook,
    Machine,
    Phase,
    RefGuard,
    RefUpdate,
    Rejection,
    StateSpec,
    TableError,
    Transition,
    counter_delta,
    derive_hook,
    rejection_error,
    step,
    validate,
)
from evictable.model.states import CpuEvent, CpuState, Event, GpuEvent, GpuState, State

__all__ = [
    "CPU_MACHINE",
    "GPU_MACHINE",
    "MACHINES",
    "CpuEvent",
    "CpuState",
    "Event",
    "GpuEvent",
    "GpuState",
    "Hook",
    "Machine",
    "Phase",
    "RefGuard",
    "RefUpdate",
    "Rejection",
    "State",
    "StateSpec",
    "TableError",
    "Transition",
    "counter_delta",
    "derive_hook",
    "rejection_error",
    "step",
    "validate",
]

# --------------------------------------------------------------------------
# The CPU offload block.
# --------------------------------------------------------------------------

_A, _P, _R, _L = CpuState.ABSENT, CpuState.PENDING, CpuState.READY, CpuState.LOADING
_E = CpuEvent

CPU_MACHINE = Machine(
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
        # touch is a recency hint, accepted in every state and changing no lifecycle
        # field: the manager hands the policy exactly the keys whose touch row fired
        # (LRU moves the evictable ones; ARC also moves pending and loading keys and
        # adapts on ghost hits, which are ABSENT keys).
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
        (_P, _E.STORE_BEGIN),  # already resident: prepare_store skips it
        (_R, _E.STORE_BEGIN),
        (_L, _E.STORE_BEGIN),
        (_A, _E.STORE_COMMIT),  # complete_store ignores keys that are not PENDING
        (_R, _E.STORE_COMMIT),
        (_L, _E.STORE_COMMIT),
        (_A, _E.STORE_ABORT),
        (_R, _E.STORE_ABORT),
        (_L, _E.STORE_ABORT),
        (_A, _E.RESET),  # reset_cache resets the resident keys; an absent key stays so
    ),
    counters={"num_evictable": _R, "num_pending": _P},
)

# --------------------------------------------------------------------------
# The GPU KV-cache block.
# --------------------------------------------------------------------------

_F, _U, _N = GpuState.FREE, GpuState.IN_USE, GpuState.NULL
_G = GpuEvent

GPU_MACHINE = Machine(
    name="gpu",
    flag_name="in free queue",
    hook_on="free_queue.append / prepend",
    hook_off="free_queue.remove / popleft",
    hook_drop="—",
    item_kind="block",
    states=(
        StateSpec(_F, "in the free queue, idle", resident=True, flag=True, ref_min=0, ref_max=0),
        StateSpec(_U, "held by n requests", resident=True, flag=False, ref_min=1, ref_max=None),
        StateSpec(
            _N,
            "the null block, outside both",
            resident=True,
            flag=False,
            ref_min=0,
            ref_max=0,
            fixed=True,
        ),
    ),
    events=tuple(GpuEvent),
    initial=(_F, _N),
    transitions=(
        Transition(_G.ALLOCATE, _F, _U, RefGuard.ANY, SET_ONE),
        Transition(_G.TOUCH, _F, _U, RefGuard.ANY, INC),
        Transition(_G.TOUCH, _U, _U, RefGuard.ANY, INC),
        Transition(_G.FREE, _U, _U, RefGuard.GE_TWO, DEC),
        Transition(_G.FREE, _U, _F, RefGuard.EQ_ONE, DEC),
    ),
    rejections=(
        Rejection(_G.ALLOCATE, _U, BlockNotLinkedError, "only free blocks are allocated"),
        Rejection(_G.ALLOCATE, _N, BlockNotLinkedError, "the null block is never allocated"),
        Rejection(_G.FREE, _F, RefCountUnderflowError, "freeing a block at ref 0"),
    ),
    ignored=(
        (_N, _G.TOUCH),  # the null block is shared and never counted
        (_N, _G.FREE),
    ),
    counters={"num_free_blocks": _F},
)


MACHINES: tuple[Machine, ...] = (CPU_MACHINE, GPU_MACHINE)

for _machine in MACHINES:
    validate(_machine)
