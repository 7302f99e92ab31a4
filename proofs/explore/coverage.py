"""Which rows of the lifecycle table the explorer executes, and every call's key events.

`RecordingModel` is the reference model (`model.manager.ModelManager`) noting what
it executes: each table row a key fires (`fire`) and each rejection the table
raises (`check_event`), into the module's `Recorder`. Nothing is inferred from
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
  refinement bridge of `proofs.refine.bridges` is such a check.

`DeadRowModel` runs a table with a dead row (`proofs.controls.tables.dead_row_table`):
the control of `rows.coverage`.

`rows.coverage.gpu` does the same for the GPU table over every reachable state of a
small `model.block_pool.ModelBlockPool` (the same engine): each call's blocks are
read before and after, and the row each block took is the one the table names for
its event, state and ref count (the pool steps through the module-level `fire`,
which a subclass cannot observe, so here the rows are read off the phases the call
left rather than recorded). Allocation takes only free blocks from the queue, so
`allocate`'s rejections must never fire; the control is a table where allocating an
in-use block is a (dead) row.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from evictable.impl.manager import CPUOffloadingManager
from evictable.model.block_pool import ModelBlockPool
from evictable.model.errors import LifecycleError
from evictable.model.lifecycle import (
    CPU_MACHINE,
    GPU_MACHINE,
    CpuEvent,
    GpuEvent,
    Machine,
    Phase,
    Transition,
)
from evictable.model.manager import ModelManager
from evictable.model.types import BlockId, Key, ManagerSnapshot
from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.compare import Reply
from evictable.proofs.base.guard import step_guard
from evictable.proofs.base.protocol import Factory
from evictable.proofs.base.records import HANG_BACKSTOP_S, Outcome, Status, proved, refuted
from evictable.proofs.explore.engine import Expansion, Found, search
from evictable.proofs.explore.manager_subject import Context, ManagerSubject
from evictable.proofs.explore.ops import Op, invoke
from evictable.proofs.explore.state import encode

__all__ = [
    "POLICY_CHOSEN",
    "Call",
    "Coverage",
    "KeyEvent",
    "Recorder",
    "RecordingModel",
    "Side",
    "coverage",
    "edges",
    "gpu_coverage",
]

POLICY_CHOSEN: tuple[CpuEvent, ...] = (CpuEvent.EVICT,)
"""Events the manager sends only to keys the policy chose (its victims), never to a
caller's key: their rejections are unreachable by design and must never fire."""


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

    def fire(self, key: Key, event: CpuEvent) -> Transition | None:
        row = super().fire(key, event)
        if row is not None:
            RECORDER.rows.add(row)
        if RECORDER.log is not None:
            RECORDER.log.append(KeyEvent(key, event, row))
        return row

    def check_event(self, key: Key, event: CpuEvent) -> None:
        try:
            super().check_event(key, event)
        except LifecycleError:
            RECORDER.refusals.add((event, self.phase(key).state.name))
            raise


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
    subject = ManagerSubject(bounds, CPUOffloadingManager, True, model=model)
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
        super().__init__(bounds, factory or CPUOffloadingManager, True, model=model)
        self.check = check
        self.stepped = factory is not None

    def root(self) -> tuple[Hashable, Any]:
        b = self.bounds
        first = self.new_model()
        impl = self.factory(b.slots, b.policy, b.events > 0) if self.stepped else None
        return encode(first.snapshot(), True)[0], (first, impl)

    @property
    def expansion_bound_s(self) -> float:
        """The engine's bound on one whole expansion: a backstop only. Every call of
        the code runs under its own per-step bound; the checks are the suite's own
        work (Z3 under its rlimit), bounded by work, not by this clock."""
        return HANG_BACKSTOP_S

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
            self.in_flight = oi
            try:
                with step_guard():
                    reply = invoke(m, op)
            finally:
                events, RECORDER.log = tuple(RECORDER.log), None
            other = None
            if impl_before is not None:
                with step_guard():
                    i_reply = invoke(i, op)
                try:
                    other = _side(i, impl_before, i_reply)
                except Exception as exc:  # a broken snapshot is a finding, not a crash
                    out.found = Found(
                        f"after {op}, the implementation's snapshot() raised "
                        f"{type(exc).__name__}: {exc}",
                        oi,
                    )
                    return out
            self.in_flight = None
            side = _side(m, before, reply)
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


# ------------------------------------------------------------------ the GPU table


GPU_POLICY_CHOSEN: tuple[GpuEvent, ...] = (GpuEvent.ALLOCATE,)
"""`get_new_blocks` allocates only blocks it takes from the free queue."""


GPU_MAX_REF = 2


@dataclass(frozen=True)
class GpuCoverage:
    machine: Machine
    rows: frozenset[Transition]
    refusals: frozenset[tuple[GpuEvent, str]]
    states: int
    transitions: int
    complete: bool


class _PoolSubject:
    """Every reachable state of a small model block pool; records the rows fired."""

    def __init__(self, blocks: int, machine: Machine) -> None:
        self.blocks = blocks
        self.machine = machine
        self.rows: set[Transition] = set()
        self.refusals: set[tuple[GpuEvent, str]] = set()
        ids = [BlockId(i) for i in range(blocks)]
        self.calls: list[tuple[str, Any, GpuEvent]] = [
            ("get_new_blocks", n, GpuEvent.ALLOCATE) for n in range(1, blocks)
        ]
        for b in ids:
            self.calls += [("touch", [b], GpuEvent.TOUCH), ("free_blocks", [b], GpuEvent.FREE)]

    @staticmethod
    def _key(pool: ModelBlockPool) -> Hashable:
        """The state without the queue's link generations (they only ever grow)."""
        snap = pool.snapshot()
        return snap.ref_cnts, snap.free_queue.order, snap.block_hashes

    def root(self) -> tuple[Hashable, Any]:
        pool = ModelBlockPool(self.blocks)
        return self._key(pool), pool

    def _row(self, event: GpuEvent, pre: Phase, post: Phase) -> Transition | None:
        for t in self.machine.transitions_from(pre.state, event):
            if t.guard.holds(pre.ref) and t.target is post.state:
                return t
        return None

    def expand(self, pool: Any) -> Expansion[Any, str]:
        out: Expansion[Any, str] = Expansion()
        blob = pickle.dumps(pool)
        for method, arg, event in self.calls:
            if method == "touch" and max(pool.phase[b].ref or 0 for b in arg) >= GPU_MAX_REF:
                continue
            copy = pickle.loads(blob)
            before = dict(copy.phase)
            out.edges += 1
            try:
                result = getattr(copy, method)(arg)
            except LifecycleError as err:
                if err.event is not None and err.state is not None:
                    self.refusals.add((GpuEvent(err.event), err.state))
                continue
            moved = result if method == "get_new_blocks" else arg
            for b in moved:
                row = self._row(event, before[b], copy.phase[b])
                if row is not None:
                    self.rows.add(row)
            out.successors.append((self._key(copy), copy, f"{method}({arg!r})"))
        return out


def gpu_coverage(blocks: int, machine: Machine = GPU_MACHINE) -> GpuCoverage:
    """Explore every reachable pool of `blocks` blocks, recording the GPU rows fired."""
    subject = _PoolSubject(blocks, machine)
    run = search(subject, workers=1)
    return GpuCoverage(
        machine,
        frozenset(subject.rows),
        frozenset(subject.refusals),
        run.states,
        run.transitions,
        run.complete,
    )


def check_gpu_coverage(blocks: int, machine: Machine = GPU_MACHINE) -> Outcome:
    """Every GPU transition and the reachable rejections fired; no allocate rejection."""
    cov = gpu_coverage(blocks, machine)
    figures = (
        f"{len(cov.rows)}/{len(machine.transitions)} rows, {len(cov.refusals)} rejections "
        f"fired over {cov.states} states, {cov.transitions} transitions"
    )
    if not cov.complete:
        return Outcome(Status.UNKNOWN, f"the exploration did not finish ({figures})")
    bad = [
        f"never fired: row {t.event.value} {t.source.name}->{t.target.name}"
        for t in machine.transitions
        if t not in cov.rows
    ]
    bad += [
        f"never fired: rejection of {r.event.value} on {r.state.name}"
        for r in machine.rejections
        if r.event not in GPU_POLICY_CHOSEN and (r.event, r.state.name) not in cov.refusals
    ]
    bad += [
        f"fired a rejection of {e.value} on {s}" for e, s in cov.refusals if e in GPU_POLICY_CHOSEN
    ]
    return refuted("; ".join(bad) + f" ({figures})") if bad else proved(figures)


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
