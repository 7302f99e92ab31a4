"""Named invariants, one registry, used everywhere.

Two kinds:

* **Block invariants** (`BLOCK_INVARIANTS`) speak about one CPU block: its state,
  ref count and whether it sits in the evictable list. They are written once over
  a small `Logic` interface, so the same function is evaluated on Python values
  (here, on snapshots) and on Z3 terms (in `proofs/z3/lifecycle.py`). Together they
  are the inductive strengthening of "in the evictable list exactly when resident
  and ref_cnt == 0".
* **Snapshot invariants** (`SNAPSHOT_INVARIANTS`) speak about a whole manager
  snapshot: counters, the slot partition, the policy's lists.
* **Tiering invariants** (`model.tiering_invariants.TIERING_INVARIANTS`) speak about a
  tiering orchestrator's snapshot: owners and pins, holds, finalisation, pending work.

`check_snapshot(snap)` returns the names of the violated invariants; it is what the
Hypothesis machines, the explorer and `check_invariants()` in `impl` call.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from evictable.model.lifecycle import CPU_MACHINE, GPU_MACHINE, CpuState, Machine, State
from evictable.model.tiering_invariants import BETWEEN_STEPS, TIERING_INVARIANTS
from evictable.model.types import (
    ArcPolicySnapshot,
    BlockEntry,
    LruPolicySnapshot,
    ManagerSnapshot,
    evictable_view,
)

__all__ = [
    "BLOCK_INVARIANTS",
    "GPU_BLOCK_INVARIANTS",
    "INVARIANTS",
    "PY_LOGIC",
    "SNAPSHOT_INVARIANTS",
    "BlockView",
    "Logic",
    "block_views",
    "check_snapshot",
    "idle",
    "machine_block_invariants",
]

B = TypeVar("B")
I = TypeVar("I")  # noqa: E741


class Logic(Protocol):
    """Connectives over booleans and integers: Python values or Z3 terms."""

    def and_(self, *xs: Any) -> Any: ...
    def or_(self, *xs: Any) -> Any: ...
    def not_(self, x: Any) -> Any: ...
    def implies(self, a: Any, b: Any) -> Any: ...
    def iff(self, a: Any, b: Any) -> Any: ...
    def eq(self, a: Any, b: int) -> Any: ...
    def ge(self, a: Any, b: int) -> Any: ...
    def le(self, a: Any, b: int) -> Any: ...


class _PyLogic:
    def and_(self, *xs: bool) -> bool:
        return all(xs)

    def or_(self, *xs: bool) -> bool:
        return any(xs)

    def not_(self, x: bool) -> bool:
        return not x

    def implies(self, a: bool, b: bool) -> bool:
        return (not a) or b

    def iff(self, a: bool, b: bool) -> bool:
        return a == b

    def eq(self, a: int, b: int) -> bool:
        return a == b

    def ge(self, a: int, b: int) -> bool:
        return a >= b

    def le(self, a: int, b: int) -> bool:
        return a <= b


PY_LOGIC = _PyLogic()


@dataclass(frozen=True)
class BlockView(Generic[B, I]):
    """One block, as terms: `is_state(s)` is true iff the block is in state s."""

    is_state: Callable[[State], B]
    ref: I
    in_list: B


BlockInvariant = Callable[[Logic, BlockView[Any, Any]], Any]


def inv_state_admits_ref(lg: Logic, b: BlockView[Any, Any]) -> Any:
    """Each resident state's ref count lies in its declared range."""
    parts = []
    for spec in CPU_MACHINE.states:
        if not spec.resident or spec.ref_min is None:
            continue
        bound = lg.ge(b.ref, spec.ref_min)
        if spec.ref_max is not None:
            bound = lg.and_(bound, lg.le(b.ref, spec.ref_max))
        parts.append(lg.implies(b.is_state(spec.state), bound))
    return lg.and_(*parts)


def _resident(lg: Logic, b: BlockView[Any, Any]) -> Any:
    return lg.or_(*(b.is_state(s.state) for s in CPU_MACHINE.states if s.resident))


def inv_ref_at_least_minus_one(lg: Logic, b: BlockView[Any, Any]) -> Any:
    """A resident block's ref count is never below -1."""
    return lg.implies(_resident(lg, b), lg.ge(b.ref, -1))


def inv_pending_iff_store_ref(lg: Logic, b: BlockView[Any, Any]) -> Any:
    """A resident block is PENDING exactly when its ref count is -1."""
    return lg.implies(_resident(lg, b), lg.iff(b.is_state(CpuState.PENDING), lg.eq(b.ref, -1)))


def inv_evictable_iff_idle(lg: Logic, b: BlockView[Any, Any]) -> Any:
    """In the evictable list exactly when resident and ref_cnt == 0."""
    return lg.iff(b.in_list, lg.and_(_resident(lg, b), lg.eq(b.ref, 0)))


def inv_flag_matches_state(lg: Logic, b: BlockView[Any, Any]) -> Any:
    """In the evictable list exactly when the state's declared flag is set."""
    flagged = [b.is_state(s.state) for s in CPU_MACHINE.states if s.flag]
    return lg.iff(b.in_list, lg.or_(*flagged))


BLOCK_INVARIANTS: dict[str, BlockInvariant] = {
    "state_admits_ref": inv_state_admits_ref,
    "ref_at_least_minus_one": inv_ref_at_least_minus_one,
    "pending_iff_store_ref": inv_pending_iff_store_ref,
    "evictable_iff_idle": inv_evictable_iff_idle,
    "flag_matches_state": inv_flag_matches_state,
}


def _in_range(lg: Logic, b: BlockView[Any, Any], lo: int | None, hi: int | None) -> Any:
    bound = lg.ge(b.ref, lo if lo is not None else 0)
    return bound if hi is None else lg.and_(bound, lg.le(b.ref, hi))


def idle(lg: Logic, machine: Machine, b: BlockView[Any, Any]) -> Any:
    """The flag's meaning in ref-count terms: resident, not fixed, and the ref count in
    the range of a flagged state (CPU: resident and ref == 0; GPU: not the null block
    and ref == 0)."""
    live = lg.or_(*(b.is_state(s.state) for s in machine.states if s.resident and not s.fixed))
    ranges = lg.or_(
        *(
            _in_range(lg, b, s.ref_min, s.ref_max)
            for s in machine.states
            if s.flag and s.ref_min is not None
        )
    )
    return lg.and_(live, ranges)


def machine_block_invariants(machine: Machine) -> dict[str, BlockInvariant]:
    """The block invariants of any machine, derived generically from its state specs.

    `state_admits_ref`: each resident state's ref count lies in its declared range.
    `flag_matches_state`: the flag (list / queue membership) is the state's flag.
    `flag_iff_idle`: the flag is set exactly when the block is `idle` (for the GPU
    table: in the free queue exactly when ref_cnt == 0, the null block excepted).
    """
    specs = machine.states

    def admits(lg: Logic, b: BlockView[Any, Any]) -> Any:
        return lg.and_(
            *(
                lg.implies(b.is_state(s.state), _in_range(lg, b, s.ref_min, s.ref_max))
                for s in specs
                if s.resident and s.ref_min is not None
            )
        )

    def flag_matches(lg: Logic, b: BlockView[Any, Any]) -> Any:
        return lg.iff(b.in_list, lg.or_(*(b.is_state(s.state) for s in specs if s.flag)))

    def flag_iff_idle(lg: Logic, b: BlockView[Any, Any]) -> Any:
        return lg.iff(b.in_list, idle(lg, machine, b))

    return {
        "state_admits_ref": admits,
        "flag_matches_state": flag_matches,
        "flag_iff_idle": flag_iff_idle,
    }


GPU_BLOCK_INVARIANTS: dict[str, BlockInvariant] = machine_block_invariants(GPU_MACHINE)
"""The GPU block's inductive invariant: in the free queue ⇔ ref_cnt == 0 (null block aside)."""


def _state_test(actual: State) -> Callable[[State], bool]:
    return lambda s: s is actual


def _listed(in_list: AbstractSet[Hashable] | None, e: BlockEntry) -> bool:
    """`e` is in the policy's evictable view (READY where the policy reports none)."""
    return e.key in in_list if in_list is not None else e.state is CpuState.READY


def block_views(snap: ManagerSnapshot) -> list[BlockView[bool, int]]:
    """Python views of every resident block (the list membership from the policy's
    evictable view, `types.evictable_view`; READY where the policy reports none)."""
    in_list = evictable_view(snap.policy)
    return [
        BlockView(is_state=_state_test(e.state), ref=e.ref_cnt, in_list=_listed(in_list, e))
        for e in snap.blocks
    ]


# ---------------------------------------------------------------- snapshot level


def inv_counters_match(snap: ManagerSnapshot) -> bool:
    """Each declared counter equals the number of blocks in its state."""
    counts: Counter[State] = Counter(e.state for e in snap.blocks)
    values = {"num_evictable": snap.num_evictable, "num_pending": snap.num_pending}
    return all(values[name] == counts[st] for name, st in CPU_MACHINE.counters.items())


def inv_slot_partition(snap: ManagerSnapshot) -> bool:
    """Slots split into fresh [high_water, N), the free stack and owned, disjointly."""
    owned = [e.slot for e in snap.blocks]
    used = owned + list(snap.free_stack)
    return (
        0 <= snap.high_water <= snap.num_blocks
        and len(set(used)) == len(used)
        and sorted(used) == list(range(snap.high_water))
    )


def inv_capacity(snap: ManagerSnapshot) -> bool:
    """No more resident blocks than slots."""
    return len(snap.blocks) <= snap.num_blocks


def inv_lru_list_exact(snap: ManagerSnapshot) -> bool:
    """LRU: the evictable list holds each READY key exactly once, and nothing else."""
    if not isinstance(snap.policy, LruPolicySnapshot):
        return True
    order = snap.policy.evictable
    ready = {e.key for e in snap.blocks if e.state is CpuState.READY}
    return len(set(order)) == len(order) and set(order) == ready


def inv_arc_lists_disjoint(snap: ManagerSnapshot) -> bool:
    """ARC: T1, T2, B1, B2 pairwise disjoint and each without repeats."""
    if not isinstance(snap.policy, ArcPolicySnapshot):
        return True
    p = snap.policy
    allk = list(p.t1) + list(p.t2) + list(p.b1) + list(p.b2)
    return len(set(allk)) == len(allk)


def inv_arc_evictable_exact(snap: ManagerSnapshot) -> bool:
    """ARC: the idle view holds exactly the READY keys (when the policy reports it)."""
    if not isinstance(snap.policy, ArcPolicySnapshot) or snap.policy.evictable is None:
        return True
    ready = {e.key for e in snap.blocks if e.state is CpuState.READY}
    return snap.policy.evictable == ready


def inv_arc_residents_tracked(snap: ManagerSnapshot) -> bool:
    """ARC: T1 ∪ T2 is exactly the set of resident keys."""
    if not isinstance(snap.policy, ArcPolicySnapshot):
        return True
    return set(snap.policy.t1) | set(snap.policy.t2) == {e.key for e in snap.blocks}


def inv_arc_bounds(snap: ManagerSnapshot) -> bool:
    """ARC: each ghost list holds at most N keys and 0 <= target <= N."""
    if not isinstance(snap.policy, ArcPolicySnapshot):
        return True
    p, n = snap.policy, snap.num_blocks
    return len(p.b1) <= n and len(p.b2) <= n and 0 <= p.target <= n


_VERDICTS: dict[tuple[tuple[BlockInvariant, ...], State, int, bool], bool] = {}
"""Whether every block invariant holds of (state, ref, listed): the predicates read
nothing else of a block, so their verdict on a triple is evaluated once (per set of
predicates) and remembered."""


def _block_holds(invs: tuple[BlockInvariant, ...], e: BlockEntry, listed: bool) -> bool:
    """Every predicate of `invs` holds of `e` (the verdict remembered per triple)."""
    try:
        memo = (invs, e.state, e.ref_cnt, listed)
        got = _VERDICTS.get(memo)
    except TypeError:  # an unhashable ref count (a broken implementation's): judge it
        memo, got = None, None
    if got is None:
        view = BlockView(is_state=_state_test(e.state), ref=e.ref_cnt, in_list=listed)
        got = all(bool(inv(PY_LOGIC, view)) for inv in invs)
        plain = type(e.ref_cnt) is int and type(e.state) is CpuState
        if memo is not None and plain and len(_VERDICTS) < 4096:
            _VERDICTS[memo] = got
    return got


def inv_blocks_hold(snap: ManagerSnapshot) -> bool:
    """Every block invariant holds for every resident block."""
    in_list = evictable_view(snap.policy)
    invs = tuple(BLOCK_INVARIANTS.values())
    return all(_block_holds(invs, e, _listed(in_list, e)) for e in snap.blocks)


SNAPSHOT_INVARIANTS: dict[str, Callable[[ManagerSnapshot], bool]] = {
    "blocks_hold": inv_blocks_hold,
    "counters_match": inv_counters_match,
    "slot_partition": inv_slot_partition,
    "capacity": inv_capacity,
    "lru_list_exact": inv_lru_list_exact,
    "arc_lists_disjoint": inv_arc_lists_disjoint,
    "arc_residents_tracked": inv_arc_residents_tracked,
    "arc_evictable_exact": inv_arc_evictable_exact,
    "arc_bounds": inv_arc_bounds,
}

INVARIANTS: dict[str, Callable[..., Any]] = {
    **BLOCK_INVARIANTS,
    **SNAPSHOT_INVARIANTS,
    **TIERING_INVARIANTS,
    **BETWEEN_STEPS,
}
"""Every named invariant, block-level, snapshot-level and tiering (over a
`TieringSnapshot`, `model.tiering_invariants`), by name."""


def check_snapshot(snap: ManagerSnapshot) -> list[str]:
    """Names of the invariants `snap` violates; empty when all hold.

    For block invariants the name is reported once per offending block kind.
    """
    failed = [name for name, inv in SNAPSHOT_INVARIANTS.items() if not inv(snap)]
    if "blocks_hold" in failed:
        views = block_views(snap)
        failed.extend(
            name
            for name, inv in BLOCK_INVARIANTS.items()
            if not all(bool(inv(PY_LOGIC, v)) for v in views)
        )
    return failed


def names(items: Iterable[str]) -> str:
    return ", ".join(items)
