"""The vocabulary of a block state machine, and what is derived from one.

`model.lifecycle` declares the CPU and GPU machines as data in these terms; this
module holds the types (`StateSpec`, `Transition`, `Rejection`, `Machine`, `Phase`)
and the generic derivations every consumer uses: `step` (one event on one block),
`derive_hook` (the hook a transition owes, from its flag flip), `counter_delta`, and
`validate` (the load-time check of a declared table).

Written for clarity; the fast path is `impl/`, which is checked against this.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Literal, cast

from evictable.model.errors import LifecycleError, RefCountUnderflowError
from evictable.model.states import Event, State

__all__ = [
    "CLEAR",
    "DEC",
    "INC",
    "KEEP",
    "SET_IDLE",
    "SET_ONE",
    "SET_STORE",
    "Hook",
    "Machine",
    "Phase",
    "RefGuard",
    "RefUpdate",
    "Rejection",
    "StateSpec",
    "TableError",
    "Transition",
    "counter_delta",
    "derive_hook",
    "rejection_error",
    "step",
    "validate",
]


class RefGuard(enum.Enum):
    """A condition on the current ref count that selects among transitions."""

    ANY = "any"
    EQ_ONE = "n = 1"
    GE_TWO = "n >= 2"

    def holds(self, ref: int | None) -> bool:
        if self is RefGuard.ANY:
            return True
        if ref is None:
            return False
        return ref == 1 if self is RefGuard.EQ_ONE else ref >= 2


@dataclass(frozen=True)
class RefUpdate:
    """How a transition changes the ref count.

    `op` is "set" (ref := value), "add" (ref := ref + value), "keep", or "clear"
    (the block leaves residency and has no ref count).
    """

    op: Literal["set", "add", "keep", "clear"]
    value: int = 0

    def apply(self, ref: int | None) -> int | None:
        if self.op == "set":
            return self.value
        if self.op == "clear":
            return None
        if self.op == "keep":
            return ref
        if ref is None:
            raise TableError(f"'add' applied to a block without a ref count: {self}")
        return ref + self.value

    def describe(self, guard: RefGuard, fixed_ref: int | None = None) -> str:
        """Human text for the docs table, e.g. `0 → 1` or `:= −1`.

        `fixed_ref` is the source state's ref count when that state admits only one.
        """
        if self.op == "set":
            return f":= {self.value}".replace("-", "−")
        if self.op in ("clear", "keep"):
            return "—"
        sign = "+" if self.value >= 0 else "−"
        mag = abs(self.value)
        if fixed_ref is not None:
            return f"{fixed_ref} → {fixed_ref + self.value}"
        if guard is RefGuard.EQ_ONE:
            return f"1 → {1 + self.value}"
        if guard is RefGuard.GE_TWO:
            return f"n → n{sign}{mag} (n ≥ 2)"
        return f"n → n{sign}{mag}"


SET_STORE = RefUpdate("set", -1)
SET_IDLE = RefUpdate("set", 0)
SET_ONE = RefUpdate("set", 1)
INC = RefUpdate("add", 1)
DEC = RefUpdate("add", -1)
KEEP = RefUpdate("keep")
CLEAR = RefUpdate("clear")


class Hook(enum.Enum):
    """The bookkeeping call a transition owes, derived from its flag flip."""

    NONE = "—"
    FLAG_ON = "on"  # e.g. mark_evictable / append to the free queue
    FLAG_OFF = "off"  # e.g. mark_non_evictable / remove from the free queue
    DROP = "drop"  # flag true -> block no longer resident (leaves the list)


@dataclass(frozen=True)
class StateSpec:
    """One state: its ref-count range and its flag (evictable / in the free queue).

    `ref_min`/`ref_max` are None for a state without a ref count (not resident);
    `ref_max` None with `ref_min` set means unbounded above.
    """

    state: State
    meaning: str
    resident: bool
    flag: bool
    ref_min: int | None
    ref_max: int | None
    fixed: bool = False  # a state that by design never changes (the null block)

    def admits(self, ref: int | None) -> bool:
        if not self.resident:
            return ref is None
        if ref is None or self.ref_min is None:
            return False
        return ref >= self.ref_min and (self.ref_max is None or ref <= self.ref_max)

    @property
    def fixed_ref(self) -> int | None:
        """The one ref count this state admits, or None if it admits a range or none."""
        return self.ref_min if self.resident and self.ref_min == self.ref_max else None

    def ref_text(self) -> str:
        if not self.resident:
            return "—"
        if self.ref_min == self.ref_max:
            return str(self.ref_min).replace("-", "−")
        if self.ref_max is None:
            return f"n ≥ {self.ref_min}"
        return f"{self.ref_min}..{self.ref_max}"


@dataclass(frozen=True)
class Transition:
    event: Event
    source: State
    target: State
    guard: RefGuard
    update: RefUpdate


@dataclass(frozen=True)
class Rejection:
    event: Event
    state: State
    error: type[LifecycleError]
    reason: str


@dataclass(frozen=True)
class Machine:
    """A block state machine as data."""

    name: str
    flag_name: str
    hook_on: str
    hook_off: str
    hook_drop: str
    item_kind: Literal["key", "block"]
    states: tuple[StateSpec, ...]
    events: tuple[Event, ...]
    initial: tuple[State, ...]
    transitions: tuple[Transition, ...]
    rejections: tuple[Rejection, ...]
    ignored: tuple[tuple[State, Event], ...]
    counters: Mapping[str, State] = field(default_factory=dict)

    def spec(self, state: State) -> StateSpec:
        for s in self.states:
            if s.state is state:
                return s
        raise TableError(f"{self.name}: unknown state {state}")

    def transitions_from(self, state: State, event: Event) -> tuple[Transition, ...]:
        return tuple(t for t in self.transitions if t.source is state and t.event is event)

    def rejection(self, state: State, event: Event) -> Rejection | None:
        for r in self.rejections:
            if r.state is state and r.event is event:
                return r
        return None

    def is_ignored(self, state: State, event: Event) -> bool:
        return (state, event) in self.ignored

    def hook_name(self, hook: Hook) -> str:
        return {
            Hook.NONE: "—",
            Hook.FLAG_ON: self.hook_on,
            Hook.FLAG_OFF: self.hook_off,
            Hook.DROP: self.hook_drop,
        }[hook]


@dataclass(frozen=True)
class Phase:
    """One block's lifecycle position: its state and its ref count (None if absent)."""

    state: State
    ref: int | None


class TableError(Exception):
    """The declared table is inconsistent (raised at import by `validate`)."""


# --------------------------------------------------------------------------
# Derivations.
# --------------------------------------------------------------------------


def derive_hook(machine: Machine, t: Transition) -> Hook:
    """The hook a transition owes: the flag's flip, and nothing else.

    false -> true is FLAG_ON (`mark_evictable`), true -> false while staying resident
    is FLAG_OFF (`mark_non_evictable`), true -> not resident is DROP (the block
    leaves the list by eviction or reset, not by a hook).
    """
    src, dst = machine.spec(t.source), machine.spec(t.target)
    if not src.flag and dst.flag:
        return Hook.FLAG_ON
    if src.flag and not dst.flag:
        return Hook.FLAG_OFF if dst.resident else Hook.DROP
    return Hook.NONE


def counter_delta(machine: Machine, t: Transition) -> dict[str, int]:
    """How each declared counter changes on one transition of one block."""
    return {
        name: int(t.target is state) - int(t.source is state)
        for name, state in machine.counters.items()
    }


def rejection_error(machine: Machine, phase: Phase, event: Event, item: Hashable) -> LifecycleError:
    """The error the table's rejection of (`phase.state`, `event`) names, for `item`
    (a key or a block id): its message and its `event`, `state` and `reason`
    attributes come from the row (docs/semantics.md, "Errors").

    Raises `TableError` when the table does not reject that pair.
    """
    row = machine.rejection(phase.state, event)
    if row is None:
        raise TableError(f"{machine.name}: {event.value} is not rejected in {phase.state}")
    words = {"event": event.value, "state": phase.state.name, "reason": row.reason}
    if row.error is RefCountUnderflowError:
        if machine.item_kind == "key":
            return RefCountUnderflowError(keys=[item], **words)
        return RefCountUnderflowError(block_ids=[item], **words)  # type: ignore[list-item]
    make = cast(Callable[..., LifecycleError], row.error)
    return make([item], **words)


def step(machine: Machine, phase: Phase, event: Event, item: Hashable = None) -> Phase:
    """Apply one event to one block and return its new phase.

    Pre: `phase` is admitted by its state's spec.
    Post: the returned phase is admitted by its state's spec; an ignored pair
    returns `phase` unchanged; a rejected pair raises the table's named error,
    naming `item` (the key or block id).
    """
    spec = machine.spec(phase.state)
    if not spec.admits(phase.ref):
        raise TableError(f"{machine.name}: ref {phase.ref} not admitted by {phase.state}")
    for t in machine.transitions_from(phase.state, event):
        if t.guard.holds(phase.ref):
            return Phase(t.target, t.update.apply(phase.ref))
    if machine.rejection(phase.state, event) is not None:
        raise rejection_error(machine, phase, event, item)
    if machine.is_ignored(phase.state, event):
        return phase
    raise TableError(f"{machine.name}: no rule for {event} in {phase.state} (ref {phase.ref})")


def _sample_refs(spec: StateSpec) -> tuple[int | None, ...]:
    """Representative ref counts of a state: enough to exercise every guard."""
    if not spec.resident or spec.ref_min is None:
        return (None,)
    hi = spec.ref_max if spec.ref_max is not None else spec.ref_min + 2
    return tuple(range(spec.ref_min, hi + 1))


def validate(machine: Machine) -> None:
    """Check a machine's declaration; raise `TableError` on the first problem."""
    declared = [s.state for s in machine.states]
    if len(set(declared)) != len(declared):
        raise TableError(f"{machine.name}: a state is declared twice")
    for t in machine.transitions:
        for sample in _sample_refs(machine.spec(t.source)):
            if t.guard.holds(sample):
                after = t.update.apply(sample)
                if not machine.spec(t.target).admits(after):
                    raise TableError(
                        f"{machine.name}: {t.event.value} {t.source.name} -> "
                        f"{t.target.name} gives ref {after}, outside the target state"
                    )
    for spec in machine.states:
        for event in machine.events:
            moves = machine.transitions_from(spec.state, event)
            kinds = (
                int(bool(moves))
                + int(machine.rejection(spec.state, event) is not None)
                + int(machine.is_ignored(spec.state, event))
            )
            if kinds != 1:
                raise TableError(
                    f"{machine.name}: ({spec.state.name}, {event.value}) must be exactly one of "
                    f"transition / rejection / ignored, found {kinds}"
                )
            if moves:
                # Guards of one (state, event) must cover every admitted ref exactly once.
                for sample in _sample_refs(spec):
                    hits = sum(1 for t in moves if t.guard.holds(sample))
                    if hits != 1:
                        raise TableError(
                            f"{machine.name}: ({spec.state.name}, {event.value}) at ref "
                            f"{sample} matches {hits} transitions"
                        )
    succ: dict[State, set[State]] = {s: set() for s in declared}
    for t in machine.transitions:
        succ[t.source].add(t.target)
    reach = _closure(set(machine.initial), succ)
    unreachable = [s.name for s in declared if s not in reach]
    if unreachable:
        raise TableError(f"{machine.name}: unreachable states {unreachable}")
    initial = set(machine.initial)
    for spec in machine.states:
        if spec.fixed:
            continue
        leaves = succ[spec.state] - {spec.state}
        if not leaves or not (_closure({spec.state}, succ) & initial):
            raise TableError(f"{machine.name}: {spec.state.name} is a trap state")


def _closure(start: set[State], succ: Mapping[State, set[State]]) -> set[State]:
    seen = set(start)
    frontier = list(start)
    while frontier:
        s = frontier.pop()
        for n in succ[s]:
            if n not in seen:
                seen.add(n)
                frontier.append(n)
    return seen
