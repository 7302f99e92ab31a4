"""The vocabulary of a phase table: a lifecycle without ref counts, as data.

`model.tiering_tables` declares the tiering orchestrator's phase tables in these terms
(a tier's copy, a job, a request, a probe, a peer's lookup): states with their meaning,
events, moves (a case tells apart several moves of one state and event), rejections
with the error they raise, and tolerated no-ops. `step_phase` is the one way the model
changes a phase; `validate_phases` checks a declared table when it is imported (every
state reachable, no trap state, every (state, event) pair exactly one of a move, a
rejection or a no-op). The same checks as `model.machine.validate` makes of a block
machine, for tables whose states carry no ref count.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar, cast

from evictable.model.errors import (
    DuplicateRequestError,
    InvariantViolationError,
    LifecycleError,
    RequestFinishedError,
    UnknownJobError,
    UnknownRequestError,
)
from evictable.model.lifecycle import TableError

__all__ = ["Move", "Noop", "PhaseTable", "Refusal", "step_phase", "validate_phases"]

# ----------------------------------------------------------------- phase tables


@dataclass(frozen=True)
class Move:
    """A transition; `case` tells apart several moves of one (state, event)."""

    event: enum.Enum
    source: enum.Enum
    target: enum.Enum
    case: str = ""


@dataclass(frozen=True)
class Refusal:
    """A rejected (state, event) pair and the error it raises."""

    event: enum.Enum
    state: enum.Enum
    error: type[LifecycleError]
    reason: str


@dataclass(frozen=True)
class Noop:
    """A (state, event) pair that is a tolerated no-op."""

    event: enum.Enum
    state: enum.Enum
    reason: str


@dataclass(frozen=True)
class PhaseTable:
    """A lifecycle without ref counts, as data."""

    name: str
    states: tuple[enum.Enum, ...]
    meanings: Mapping[enum.Enum, str]
    events: tuple[enum.Enum, ...]
    initial: tuple[enum.Enum, ...]
    moves: tuple[Move, ...]
    refusals: tuple[Refusal, ...] = ()
    noops: tuple[Noop, ...] = ()
    final: tuple[enum.Enum, ...] = ()
    """States a thing stays in for good (exempt from the no-trap rule)."""

    def moves_from(self, state: enum.Enum, event: enum.Enum) -> tuple[Move, ...]:
        return tuple(m for m in self.moves if m.source is state and m.event is event)

    def refusal(self, state: enum.Enum, event: enum.Enum) -> Refusal | None:
        return next((r for r in self.refusals if r.state is state and r.event is event), None)

    def noop(self, state: enum.Enum, event: enum.Enum) -> Noop | None:
        return next((n for n in self.noops if n.state is state and n.event is event), None)


E = TypeVar("E", bound=enum.Enum)


def step_phase(
    table: PhaseTable, state: E, event: enum.Enum, case: str = "", item: object = None
) -> E:
    """The state after `event` in `state` (the move of `case`, or the only move); a no-op
    returns `state`; a refusal raises the table's error naming `item`.

    Raises `TableError` when the table has no such rule (a bug of the caller)."""
    moves = table.moves_from(state, event)
    if moves:
        for m in moves:
            if m.case == case or (len(moves) == 1 and not case):
                return cast(E, m.target)
        raise TableError(f"{table.name}: no case {case!r} of {event} in {state}")
    refusal = table.refusal(state, event)
    if refusal is not None:
        raise _refusal_error(refusal, item)
    if table.noop(state, event) is not None:
        return state
    raise TableError(f"{table.name}: no rule for {event} in {state}")


def _refusal_error(r: Refusal, item: object) -> LifecycleError:
    detail = f"{r.event.value} refused in {r.state.name}: {r.reason}"
    if r.error is UnknownJobError:
        return UnknownJobError(item, detail)
    if r.error is UnknownRequestError:
        return UnknownRequestError(str(item), detail)
    if r.error is RequestFinishedError:
        return RequestFinishedError(str(item), detail)
    if r.error is DuplicateRequestError:
        return DuplicateRequestError(str(item), detail)
    return InvariantViolationError([table_name_of(r)], f"{detail} ({item!r})")


def table_name_of(r: Refusal) -> str:
    """The invariant a refusal of an internal event stands for."""
    return f"{r.event.value}_in_{r.state.name.lower()}"


# -------------------------------------------------------------------- validation


def validate_phases(table: PhaseTable) -> None:
    """Check a phase table; raise `TableError` on the first problem."""
    if len(set(table.states)) != len(table.states):
        raise TableError(f"{table.name}: a state is declared twice")
    for state in table.states:
        if state not in table.meanings:
            raise TableError(f"{table.name}: {state.name} has no meaning")
        for event in table.events:
            moves = table.moves_from(state, event)
            kinds = (
                int(bool(moves))
                + int(table.refusal(state, event) is not None)
                + int(table.noop(state, event) is not None)
            )
            if kinds != 1:
                raise TableError(
                    f"{table.name}: ({state.name}, {event.value}) must be exactly one of "
                    f"transition / rejection / no-op, found {kinds}"
                )
            cases = [m.case for m in moves]
            if len(moves) > 1 and (len(set(cases)) != len(cases) or "" in cases):
                raise TableError(
                    f"{table.name}: ({state.name}, {event.value}) has moves without distinct cases"
                )
    succ: dict[enum.Enum, set[enum.Enum]] = {s: set() for s in table.states}
    for m in table.moves:
        if m.source not in succ or m.target not in succ:
            raise TableError(f"{table.name}: a move names an undeclared state: {m}")
        succ[m.source].add(m.target)
    reach = _closure(set(table.initial), succ)
    unreachable = [s.name for s in table.states if s not in reach]
    if unreachable:
        raise TableError(f"{table.name}: unreachable states {unreachable}")
    home = set(table.initial) | set(table.final)
    for state in table.states:
        if state in table.final:
            continue
        if not (_closure({state}, succ) & home) or not (succ[state] - {state}):
            raise TableError(f"{table.name}: {state.name} is a trap state")


def _closure(start: set[enum.Enum], succ: Mapping[enum.Enum, set[enum.Enum]]) -> set[enum.Enum]:
    seen = set(start)
    frontier = list(start)
    while frontier:
        for n in succ[frontier.pop()]:
            if n not in seen:
                seen.add(n)
                frontier.append(n)
    return seen
