"""A separate enabledness and safety spec of the CPU block, and Z3 proofs that the
table meets it.

The transition table (`model/lifecycle.py`) says what happens; this module says,
in its own words and without reading the table, what *must* happen -- the habit of
checking a specification against properties stated elsewhere. For every (state,
event) pair, `SPEC` names the one allowed class: a move (and to which states), a
rejection (and with which error), or a tolerated no-op. Beside it, five safety
properties (`SAFETY`): loads begin only from READY or LOADING (no read of data that
was never written), eviction only from READY at ref 0, `store_abort` changes only a
PENDING block, `reset` always ends ABSENT and never refuses, `touch` never refuses
and changes neither state nor ref count.

Obligations (unbounded: the ref count is an unbounded integer, every admitted value):

* `enabledness.<event>` -- for every state and every ref count the state admits (the
  reference specs' ranges), the table's class for `event` is the spec's, with the
  spec's error, and each move lands in an allowed state. A rejection the table turns
  into a no-op or into a transition fails here.
* `safety.<property>` -- the table's step relation for the property's event has the
  property.

Each has a negative control made of table mutants from `proofs.controls.tables`,
built from the frozen copy of the table (`proofs.base.frozen_spec`); a safety
property has one mutant per way it can fail -- per state it excludes and per
conjunct -- so a property weakened in any one disjunct lets a mutant through and
its control is no longer refuted.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import z3

from evictable.model.errors import (
    BlockNotFoundError,
    BlockNotReadyError,
    LifecycleError,
    NotLoadingError,
)
from evictable.model.lifecycle import CpuEvent, CpuState, Machine, State
from evictable.proofs.base.records import Outcome
from evictable.proofs.z3.encode import REFERENCE_MACHINES, state_sort
from evictable.proofs.z3.solver import z3_valid

__all__ = [
    "SAFETY",
    "SPEC",
    "Class",
    "Expect",
    "check_event",
    "check_safety",
]

Term = Any
A, P, R, L = CpuState.ABSENT, CpuState.PENDING, CpuState.READY, CpuState.LOADING
E = CpuEvent


class Class(enum.Enum):
    MOVES = "moves"
    REJECTS = "rejects"
    IGNORES = "ignores"


RefCond = Callable[[Term], Term]
"""A condition on a block's ref count, as a Z3 term (the spec's own words, not the
table's guards)."""


def _any_ref(ref: Term) -> Term:
    return z3.BoolVal(True)


@dataclass(frozen=True)
class Target:
    """A state a move may land in, and at which ref counts of the source."""

    state: CpuState
    when: RefCond = _any_ref
    text: str = ""

    def describe(self) -> str:
        return f"{self.state.name}{f' ({self.text})' if self.text else ''}"


@dataclass(frozen=True)
class Expect:
    """The one allowed class of a (state, event) pair; a move's allowed targets may
    depend on the ref count (`Target.when`)."""

    cls: Class
    targets: tuple[Target, ...] = ()
    error: type[LifecycleError] | None = None

    @property
    def to(self) -> frozenset[CpuState]:
        return frozenset(t.state for t in self.targets)

    def text(self) -> str:
        if self.cls is Class.MOVES:
            return f"moves to {' or '.join(t.describe() for t in self.targets)}"
        if self.cls is Class.REJECTS and self.error is not None:
            return f"rejects with {self.error.__name__}"
        return "is a tolerated no-op"


def _moves(*to: CpuState | Target) -> Expect:
    return Expect(Class.MOVES, tuple(t if isinstance(t, Target) else Target(t) for t in to))


def _rejects(error: type[LifecycleError]) -> Expect:
    return Expect(Class.REJECTS, error=error)


_NOOP = Expect(Class.IGNORES)

SPEC: dict[tuple[CpuState, CpuEvent], Expect] = {
    # Only an absent key starts a store; prepare_store skips keys already resident.
    (A, E.STORE_BEGIN): _moves(P),
    (P, E.STORE_BEGIN): _NOOP,
    (R, E.STORE_BEGIN): _NOOP,
    (L, E.STORE_BEGIN): _NOOP,
    # A store completes only while in flight; complete_store tolerates other keys.
    (P, E.STORE_COMMIT): _moves(R),
    (A, E.STORE_COMMIT): _NOOP,
    (R, E.STORE_COMMIT): _NOOP,
    (L, E.STORE_COMMIT): _NOOP,
    (P, E.STORE_ABORT): _moves(A),
    (A, E.STORE_ABORT): _NOOP,
    (R, E.STORE_ABORT): _NOOP,
    (L, E.STORE_ABORT): _NOOP,
    # A load reads written data only: from an idle or already loading block.
    (A, E.LOAD_BEGIN): _rejects(BlockNotFoundError),
    (P, E.LOAD_BEGIN): _rejects(BlockNotReadyError),
    (R, E.LOAD_BEGIN): _moves(L),
    (L, E.LOAD_BEGIN): _moves(L),
    # A load ends only while one is in flight; the last one (and only it) makes the
    # block idle: to READY exactly at ref 1, staying LOADING exactly at ref >= 2.
    (A, E.LOAD_END): _rejects(BlockNotFoundError),
    (P, E.LOAD_END): _rejects(NotLoadingError),
    (R, E.LOAD_END): _rejects(NotLoadingError),
    (L, E.LOAD_END): _moves(
        Target(L, lambda ref: ref >= 2, "only at ref >= 2"),
        Target(R, lambda ref: ref == 1, "only at ref 1"),
    ),
    # Only an idle block is evicted.
    (A, E.EVICT): _rejects(BlockNotFoundError),
    (P, E.EVICT): _rejects(BlockNotReadyError),
    (R, E.EVICT): _moves(A),
    (L, E.EVICT): _rejects(BlockNotReadyError),
    # A recency hint reaches the policy for every key and changes no lifecycle field.
    (A, E.TOUCH): _moves(A),
    (P, E.TOUCH): _moves(P),
    (R, E.TOUCH): _moves(R),
    (L, E.TOUCH): _moves(L),
    # Reset empties the cache; an absent key has nothing to reset.
    (A, E.RESET): _NOOP,
    (P, E.RESET): _moves(A),
    (R, E.RESET): _moves(A),
    (L, E.RESET): _moves(A),
}
"""The allowed class of every (state, event) pair, stated without the table."""


# ------------------------------------------------------------------ the table's outcome


@dataclass(frozen=True)
class _Outcome:
    """What the table does with `event` on a block (state, ref), as Z3 terms."""

    moves: list[tuple[State, Term, Term]]  # (target, fires, the post ref's constraint)
    rejects: dict[type[LifecycleError], Term]
    ignored: Term

    @property
    def moved(self) -> Term:
        return z3.Or(*[f for _, f, _ in self.moves], False)

    @property
    def refused(self) -> Term:
        return z3.Or(*self.rejects.values(), False)


def _outcome(machine: Machine, event: CpuEvent, state: Term, ref: Term, post_ref: Term) -> _Outcome:
    ss = state_sort(machine)
    moves: list[tuple[State, Term, Term]] = []
    earlier: Term = z3.BoolVal(False)
    for t in machine.transitions:
        if t.event is not event:
            continue
        guard = t.guard.holds(ref)
        here = z3.And(state == ss.consts[t.source], z3.BoolVal(guard) if guard is True else guard)
        after = t.update.apply(ref)
        ref_after = z3.BoolVal(True) if after is None else post_ref == after
        moves.append((t.target, z3.And(here, z3.Not(earlier)), ref_after))
        earlier = z3.Or(earlier, here)
    rejects: dict[type[LifecycleError], Term] = {}
    for r in machine.rejections:
        if r.event is event:
            rejects[r.error] = z3.Or(rejects.get(r.error, False), state == ss.consts[r.state])
    ignored = z3.Or(*[state == ss.consts[s] for s, e in machine.ignored if e is event], False)
    return _Outcome(moves, rejects, ignored)


def _admitted(state: Term, ref: Term) -> Term:
    """The block's ref count lies in its state's range (reference specs)."""
    ref_machine = REFERENCE_MACHINES["cpu"]
    ss = state_sort(ref_machine)
    parts = []
    for s in ref_machine.states:
        bound: list[Term] = []
        if s.resident and s.ref_min is not None:
            bound.append(ref >= s.ref_min)
            if s.ref_max is not None:
                bound.append(ref <= s.ref_max)
        parts.append(z3.Implies(state == ss.consts[s.state], z3.And(*bound, True)))
    return z3.And(*parts)


def _allowed(want: Expect, target: State, ref: Term) -> Term:
    """The spec allows a move to `target` from a block at `ref`."""
    return z3.Or(*[t.when(ref) for t in want.targets if t.state is target], False)


def _expected(out: _Outcome, want: Expect, ref: Term) -> Term:
    if want.cls is Class.MOVES:
        lands = [z3.Implies(f, _allowed(want, target, ref)) for target, f, _ in out.moves]
        return z3.And(out.moved, *lands, z3.Not(out.refused), z3.Not(out.ignored))
    if want.cls is Class.REJECTS:
        right = out.rejects.get(want.error, z3.BoolVal(False)) if want.error else False
        others = [c for err, c in out.rejects.items() if err is not want.error]
        return z3.And(right, z3.Not(out.moved), z3.Not(out.ignored), z3.Not(z3.Or(*others, False)))
    return z3.And(out.ignored, z3.Not(out.moved), z3.Not(out.refused))


def _describe_table(machine: Machine, event: CpuEvent, out: _Outcome, model: Any) -> str:
    def holds(t: Term) -> bool:
        return bool(z3.is_true(model.eval(t, model_completion=True)))

    fired = [target.name for target, f, _ in out.moves if holds(f)]
    refused = [err.__name__ for err, c in out.rejects.items() if holds(c)]
    parts = [f"moves to {'/'.join(fired)}"] if fired else []
    parts += [f"rejects with {e}" for e in refused]
    if holds(out.ignored):
        parts.append("ignores it")
    return " and ".join(parts) or "has no rule"


def check_event(machine: Machine, event: CpuEvent, backstop_s: float) -> Outcome:
    """For every state and admitted ref, the table's class for `event` is the spec's."""
    ss = state_sort(machine)
    state, ref, post_ref = z3.Const("state", ss.sort), z3.Int("ref"), z3.Int("post.ref")
    out = _outcome(machine, event, state, ref, post_ref)
    claims = [
        z3.Implies(state == ss.consts[s], _expected(out, SPEC[(s, event)], ref))
        for s in (A, P, R, L)
    ]

    def describe(model: Any) -> str:
        s = ss.decode(model.eval(state, model_completion=True))
        r = model.eval(ref, model_completion=True)
        want = SPEC[(s, event)]  # type: ignore[index]
        return (
            f"{event.value} on {s.name} (ref {r}): the spec says it {want.text()}, the table "
            f"{_describe_table(machine, event, out, model)}; violated: enabledness"
        )

    return z3_valid(z3.And(*claims), backstop_s, describe, [_admitted(state, ref)])


# ------------------------------------------------------------------ safety


@dataclass(frozen=True)
class View:
    """One step of one block as terms: before, after, and what the table did."""

    state: Term
    ref: Term
    post_state: Term
    post_ref: Term
    out: _Outcome
    consts: dict[Any, Term]

    def pre(self, s: CpuState) -> Term:
        return self.state == self.consts[s]

    def post(self, s: CpuState) -> Term:
        return self.post_state == self.consts[s]

    @property
    def changed(self) -> Term:
        return z3.Or(self.post_state != self.state, self.post_ref != self.ref)


@dataclass(frozen=True)
class Safety:
    """A safety property of one event's step."""

    event: CpuEvent
    statement: str
    holds: Callable[[View], Term]


SAFETY: dict[str, Safety] = {
    "loads_read_written_data": Safety(
        E.LOAD_BEGIN,
        "a load begins only from READY or LOADING",
        lambda v: z3.Implies(v.out.moved, z3.Or(v.pre(R), v.pre(L))),
    ),
    "evicts_only_idle": Safety(
        E.EVICT,
        "only a READY block (ref 0, the one count READY admits) is evicted",
        lambda v: z3.Implies(v.out.moved, v.pre(R)),
    ),
    "store_abort_changes_only_pending": Safety(
        E.STORE_ABORT,
        "store_abort changes only a PENDING block",
        lambda v: z3.Implies(z3.And(v.out.moved, v.changed), v.pre(P)),
    ),
    "reset_ends_absent": Safety(
        E.RESET,
        "reset never refuses and always ends ABSENT",
        lambda v: z3.And(z3.Not(v.out.refused), v.post(A)),
    ),
    "touch_changes_nothing": Safety(
        E.TOUCH,
        "touch never refuses and changes neither state nor ref",
        lambda v: z3.And(
            z3.Not(v.out.refused),
            v.post_state == v.state,
            z3.Or(v.pre(A), v.post_ref == v.ref),
        ),
    ),
}
"""Safety properties of single steps, stated without the table."""


def check_safety(machine: Machine, name: str, backstop_s: float) -> Outcome:
    """The table's step relation for the property's event has the property."""
    prop = SAFETY[name]
    ss = state_sort(machine)
    state, ref = z3.Const("state", ss.sort), z3.Int("ref")
    post_state, post_ref = z3.Const("post.state", ss.sort), z3.Int("post.ref")
    out = _outcome(machine, prop.event, state, ref, post_ref)
    step = z3.And(
        *[z3.Implies(f, z3.And(post_state == ss.consts[t], r)) for t, f, r in out.moves],
        z3.Implies(z3.Not(out.moved), z3.And(post_state == state, post_ref == ref)),
    )

    view = View(state, ref, post_state, post_ref, out, dict(ss.consts))

    def describe(model: Any) -> str:
        s = ss.decode(model.eval(state, model_completion=True))
        t = ss.decode(model.eval(post_state, model_completion=True))
        return (
            f"{prop.event.value} on {s.name} (ref {model.eval(ref, model_completion=True)}): "
            f"the table {_describe_table(machine, prop.event, out, model)} (-> {t.name}); "
            f"violated: {name}"
        )

    return z3_valid(prop.holds(view), backstop_s, describe, [_admitted(state, ref), step])


# ------------------------------------------------------------------ obligations
