"""Which rows of the lifecycle table the explorer executes, and every call's key events.

`RecordingModel` is the reference model (`model.manager.ModelManager`) noting what
it executes: each table row a key fires (`_fire`) and each rejection the table
raises (`_check`), into the module's `Recorder`. Nothing is inferred from
snapshots: a row counts when the model ran it.

* `coverage(bounds)` runs the explorer (`explore.engine.search` over the manager
  subject, the implementation stepped in lock-step on every edge, one worker so
  the records stay in this process) with the recording model, and returns the rows
  and rejections that fired. `rows.coverage` (below) fails unless every transition
  of the table fired and every rejection of an event the caller chooses keys for
  fired. `evict` is sent only to the policy's victims (listed keys, so READY keys:
  `manager.consecution.prepare_store` proves it), so its rejections must *never*
  fire; the obligation fails if one does.
* `edges(bounds, check)` walks every reachable state of the recording model alone
  (the same engine) and hands each call -- snapshot before, the key events the call
  made, snapshot after, its reply -- to `check`, which may report a failure; the
  refinement bridge of `proofs.z3.bridges` is such a check.

`DeadRowModel` runs a table with a dead row (`proofs.controls.tables.dead_row_table`):
the control of `rows.coverage`.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evictable.impl.manager import CPUOffloadingManager
from evictable.model.errors import LifecycleError
from evictable.model.lifecycle import CPU_MACHINE, CpuEvent, Machine, Transition
from evictable.model.manager import ModelManager
from evictable.model.types import Key, ManagerSnapshot
from evictable.proofs.controls.tables import dead_row_table
from evictable.proofs.explore.engine import Expansion, Found, search
from evictable.proofs.explore.manager_subject import Bounds, Context, ManagerSubject
from evictable.proofs.explore.ops import Op, invoke
from evictable.proofs.explore.state import encode
from evictable.proofs.explore.trace import Factory
from evictable.proofs.lockstep.compare import Reply
from evictable.proofs.obligations import Kind, Obligation, Outcome, Status, proved, refuted
from evictable.proofs.registry import Level

__all__ = [
    "BOUNDS",
    "POLICY_CHOSEN",
    "Call",
    "Coverage",
    "DeadRowModel",
    "KeyEvent",
    "Recorder",
    "RecordingModel",
    "Side",
    "coverage",
    "edges",
    "obligations",
]

POLICY_CHOSEN: tuple[CpuEvent, ...] = (CpuEvent.EVICT,)
"""Events the manager sends only to keys the policy chose (its victims), never to a
caller's key: their rejections are unreachable by design and must never fire."""

BOUNDS: dict[str, Bounds] = {
    level: Bounds(slots=1, keys=2, max_ref=2, batch=2) for level in ("quick", "default")
} | {"thorough": Bounds(slots=2, keys=3, max_ref=2, batch=2)}
"""Small worlds suffice: one slot forces evictions, ref 2 reaches load_end LOADING->LOADING."""


@dataclass(frozen=True)
class KeyEvent:
    """One key taking one event in a call: the row that fired (None: ignored)."""

    key: Key
    event: CpuEvent
    row: Transition | None


@dataclass
class Recorder:
    """What the recording model executed."""

    rows: set[Transition] = field(default_factory=set)
    refusals: set[tuple[CpuEvent, str]] = field(default_factory=set)
    log: list[KeyEvent] | None = None
    """The current call's key events, while one is being watched (`edges`)."""


RECORDER = Recorder()


class RecordingModel(ModelManager):
    """The reference model, noting every row it fires and every rejection it raises."""

    machine: ClassVar[Machine] = CPU_MACHINE

    def _fire(self, key: Key, event: CpuEvent) -> Transition | None:
        row = super()._fire(key, event)
        if row is not None:
            RECORDER.rows.add(row)
        if RECORDER.log is not None:
            RECORDER.log.append(KeyEvent(key, event, row))
        return row

    def _check(self, key: Key, event: CpuEvent) -> None:
        try:
            super()._check(key, event)
        except LifecycleError:
            RECORDER.refusals.add((event, self.phase(key).state.name))
            raise


class DeadRowModel(RecordingModel):
    """The recording model over a table where `evict` on LOADING is a (dead) row."""

    machine: ClassVar[Machine] = dead_row_table(CPU_MACHINE)


@dataclass(frozen=True)
class Coverage:
    """The rows and rejections one exploration fired, and its figures."""

    machine: Machine
    rows: frozenset[Transition]
    refusals: frozenset[tuple[CpuEvent, str]]
    states: int
    transitions: int
    complete: bool
    failure: str | None

    def missing(self) -> list[str]:
        """Transitions, and rejections of caller-chosen events, that never fired."""
        out = [
            f"row {t.event.value} {t.source.name}->{t.target.name}"
            for t in self.machine.transitions
            if t not in self.rows
        ]
        out += [
            f"rejection of {r.event.value} on {r.state.name}"
            for r in self.machine.rejections
            if r.event not in POLICY_CHOSEN and (r.event, r.state.name) not in self.refusals
        ]
        return out

    def forbidden(self) -> list[str]:
        """Rejections of policy-chosen events that fired (must be none)."""
        return [
            f"{e.value} on {s}" for e, s in sorted(self.refusals, key=str) if e in POLICY_CHOSEN
        ]


def coverage(
    bounds: Bounds, model: type[RecordingModel] = RecordingModel, deadline: float | None = None
) -> Coverage:
    """Explore `bounds` (lock-step with the implementation) recording the model's rows."""
    RECORDER.rows.clear()
    RECORDER.refusals.clear()
    subject = ManagerSubject(bounds, CPUOffloadingManager, True, model)
    run = search(subject, workers=1, deadline=deadline)
    failure = run.found.reason if run.found is not None else None
    return Coverage(
        model.machine,
        frozenset(RECORDER.rows),
        frozenset(RECORDER.refusals),
        run.states,
        run.transitions,
        run.complete,
        failure,
    )


# ------------------------------------------------------------------ every call's events


@dataclass(frozen=True)
class Side:
    """One manager's view of a call: its snapshot before and after, and its reply."""

    before: ManagerSnapshot
    after: ManagerSnapshot
    reply: Reply
    counters: tuple[int, int]
    """(num_evictable, num_pending) after the call, as the manager's properties say."""


@dataclass(frozen=True)
class Call:
    """One call on one reachable state: the model's side, the key events the model
    made, and (when an implementation is stepped beside it) the implementation's."""

    op: Op
    model: Side
    events: tuple[KeyEvent, ...]
    impl: Side | None = None


Check = Callable[[Call], str | None]
"""Judges one call: None, or why it is wrong."""


def _side(obj: Any, before: ManagerSnapshot, reply: Reply) -> Side:
    return Side(before, obj.snapshot(), reply, (obj.num_evictable, obj.num_pending))


class _Edges(Context):
    """The recording model (and optionally an implementation beside it) as a subject
    of the engine; the payload is the pair of objects."""

    def __init__(
        self, bounds: Bounds, model: type[RecordingModel], check: Check, factory: Factory | None
    ) -> None:
        super().__init__(bounds, factory or CPUOffloadingManager, True, model)
        self.check = check
        self.stepped = factory is not None

    def root(self) -> tuple[Hashable, Any]:
        b = self.bounds
        first = self.model(b.slots, b.policy, b.events > 0)
        impl = self.factory(b.slots, b.policy, b.events > 0) if self.stepped else None
        return encode(first.snapshot(), True)[0], (first, impl)

    def expand(self, payload: Any) -> Expansion[Any, int]:
        out: Expansion[Any, int] = Expansion()
        model, impl = payload
        before = model.snapshot()
        impl_before = impl.snapshot() if impl is not None else None
        blob = pickle.dumps(payload)
        for oi in self.ops_in(before):
            m, i = pickle.loads(blob)
            op = self.ops[oi]
            RECORDER.log = []
            try:
                reply = invoke(m, op)
            finally:
                events, RECORDER.log = tuple(RECORDER.log), None
            side = _side(m, before, reply)
            other = _side(i, impl_before, invoke(i, op)) if impl_before is not None else None
            out.edges += 1
            why = self.check(Call(op, side, events, other))
            if why is not None:
                out.found = Found(why, oi)
                return out
            if side.after != before:
                out.successors.append((encode(side.after, True)[0], (m, i), oi))
        return out


@dataclass(frozen=True)
class Walk:
    """Figures of one `edges` walk, and the shortest failing call if any."""

    states: int
    transitions: int
    complete: bool
    failure: str | None


def edges(
    bounds: Bounds,
    check: Check,
    model: type[RecordingModel] = RecordingModel,
    factory: Factory | None = None,
    deadline: float | None = None,
) -> Walk:
    """Every call on every reachable state of the model within `bounds`, judged by
    `check`; with a `factory`, an implementation is stepped beside the model (its
    states follow the model's: a check that lets them drift apart sees garbage)."""
    subject = _Edges(bounds, model, check, factory)
    run = search(subject, workers=1, deadline=deadline)
    failure = None
    if run.found is not None:
        calls = " ; ".join(str(subject.ops[i]) for i in run.path)
        failure = f"{run.found.reason}\nshortest trace: {calls}"
    return Walk(run.states, run.transitions, run.complete, failure)


# ------------------------------------------------------------------ the obligation


def check_coverage(bounds: Bounds, model: type[RecordingModel]) -> Outcome:
    """Every transition and every caller-reachable rejection fired; no evict rejection."""
    cov = coverage(bounds, model)
    figures = (
        f"{len(cov.rows)}/{len(cov.machine.transitions)} rows, "
        f"{len(cov.refusals)} rejections fired over {cov.states} states, "
        f"{cov.transitions} transitions"
    )
    if cov.failure is not None:
        return refuted(f"the exploration failed: {cov.failure}")
    if not cov.complete:
        return Outcome(Status.UNKNOWN, f"the exploration did not finish ({figures})")
    bad = [f"never fired: {m}" for m in cov.missing()]
    bad += [f"fired a rejection of a policy-chosen event: {f}" for f in cov.forbidden()]
    if bad:
        return refuted("; ".join(bad) + f" ({figures})")
    return proved(figures)


def obligations(level: Level) -> list[Obligation]:
    """`rows.coverage`: the explorer executes every row of the CPU table."""
    bounds = BOUNDS[level]
    return [
        Obligation(
            "rows.coverage",
            "the explorer fires every transition of the CPU table and every rejection of an "
            "event the caller chooses keys for (evict's, sent only to listed victims, never)",
            lambda _t: check_coverage(bounds, RecordingModel),
            lambda _t: check_coverage(bounds, DeadRowModel),
            "a table with a dead row (evict on LOADING a row) is refuted",
            tags=("explore",),
            kind=Kind.EXPLORED,
            bounds=bounds.describe(),
        )
    ]
