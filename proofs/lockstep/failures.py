"""A lock-step run's actions, failures and counts (`lockstep.manager.LockStep`).

* `Start`, `Step`, `Fault`, `Copy`, `Construct` -- the actions a `LockStep` applies;
* `TraceLine` -- one line of a trace (code, both sides' answers, whether it raised),
  and what it stands for as data (`RawStep`, turned into a `base.trace.TraceStep`
  only for the traces a report shows);
* `ConformanceFailure` -- a divergence: its class (`compare.Kind`), reason, trace and
  actions (and the further findings of the same last step);
* `RunStats` -- counts across the examples of one run, and the shortest failure of
  each class (`record`);
* `script_of` -- a trace of plain calls as a `base.findings.Script`, to make again.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evictable.proofs.base.compare import Kind, Reply
from evictable.proofs.base.findings import Script
from evictable.proofs.base.trace import TraceStep, encode_args, encode_state, outcome_of
from evictable.proofs.lockstep.inputs import Call

__all__ = [
    "Action",
    "ConformanceFailure",
    "Construct",
    "Copy",
    "Fault",
    "RawStep",
    "RunStats",
    "Start",
    "Step",
    "TraceLine",
    "script_of",
]


@dataclass(frozen=True)
class Start:
    """Build both sides: the model with the policy, the impl with `impl_policy`."""

    num_blocks: int
    events: bool
    faulty: bool


@dataclass(frozen=True)
class Step:
    """One manager call on both sides."""

    call: Call


@dataclass(frozen=True)
class Fault:
    """`call` on the impl with policy hook `hook` raising on its k-th call: at the
    hook's entry, or with `late` after its body ran (the policy already changed)."""

    call: Call
    hook: str
    k: int
    late: bool = False


@dataclass(frozen=True)
class Copy:
    """Continue the run on a copy of the implementation (`how`: one of
    `lockstep.copies.MODES`)."""

    how: str


@dataclass(frozen=True)
class Construct:
    """A constructor call that both the model class and the factory must reject."""

    num_blocks: object
    policy: str
    events: object


Action = Start | Step | Fault | Construct | Copy


@dataclass(frozen=True)
class RawStep:
    """What one line of a trace stands for, kept by reference (encoded only when a
    report shows the trace): the operation, its arguments, both sides' replies (the
    model's None when it was not stepped) and the implementation's observed state
    before and after (views, see `base.cpu_contract.observe`)."""

    op: str
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()
    impl: Reply | None = None
    model: Reply | None = None
    before: object = None
    after: object = None
    fault: tuple[tuple[str, Any], ...] | None = None
    expected: object = None
    """The model's observed state after the call (same shape as `after`)."""


@dataclass(frozen=True)
class TraceLine:
    """One line of a trace: the code (`m.prepare_store([...])`, `m = factory(...)`),
    both sides' answers, and whether a side raised (a snippet then guards the line);
    `raw`, what it stands for as data."""

    code: str
    note: str = ""
    raised: bool = False
    raw: RawStep | None = field(default=None, compare=False, repr=False)

    def text(self) -> str:
        return f"{self.code}  # {self.note}" if self.note else self.code

    def step(self) -> TraceStep:
        """The line as a structured step (`base.trace.TraceStep`)."""
        raw = self.raw
        if raw is None:
            head = self.code.split("(", 1)[0]
            op = "construct" if "=" in head else head.rsplit(".", 1)[-1]
            return TraceStep(self.code, op, note=self.note, raised=self.raised)
        if raw.op == "construct":
            names = ("num_blocks", "policy", "enable_events")
            args = {n: v for n, v in zip(names, raw.args, strict=False)}
            if not all(isinstance(v, int | str | bool) for v in args.values()):
                args = {n: repr(v) for n, v in args.items()}
        else:
            args = encode_args(raw.op, raw.args, dict(raw.kwargs))
        return TraceStep(
            self.code,
            raw.op,
            args,
            outcome_of(raw.op, raw.impl.raised, raw.impl.value) if raw.impl else None,
            outcome_of(raw.op, raw.model.raised, raw.model.value) if raw.model else None,
            encode_state(raw.before),
            encode_state(raw.after),
            self.note,
            self.raised,
            dict(raw.fault) if raw.fault is not None else None,
            encode_state(raw.expected),
        )


class ConformanceFailure(AssertionError):
    """The implementation diverged from the model; the message is the readable trace."""

    def __init__(
        self,
        reason: str,
        trace: Sequence[TraceLine | str],
        actions: Sequence[Action],
        kind: Kind = Kind.STATE,
        also: Sequence[tuple[Kind, str]] = (),
    ) -> None:
        self.reason = reason
        self.lines = tuple(t if isinstance(t, TraceLine) else TraceLine(t) for t in trace)
        self.trace = tuple(line.text() for line in self.lines)
        self.actions = tuple(actions)
        self.kind = kind
        self.also = tuple(also)
        """Other findings the same last step made (class, reason)."""
        super().__init__(self.text())

    def every(self) -> list[ConformanceFailure]:
        """This failure and one per further finding of its last step."""
        return [self] + [ConformanceFailure(r, self.lines, self.actions, k) for k, r in self.also]

    def as_kind(self, kind: Kind) -> ConformanceFailure | None:
        """This failure seen as its finding of class `kind`, if it has one."""
        return next((f for f in self.every() if f.kind is kind), None)

    @property
    def calls(self) -> int:
        """Actions in the trace, the initial construction aside."""
        return sum(1 for a in self.actions if not isinstance(a, Start))

    def text(self) -> str:
        return "\n".join([self.reason, "trace:", *(f"  {line}" for line in self.trace)])


@dataclass
class RunStats:
    """Counts kept across all examples of one run."""

    examples: int = 0
    steps: int = 0
    first_failure_example: int | None = None
    first_failure_step: int | None = None
    first_failure_total_steps: int | None = None
    started: float = field(default_factory=time.perf_counter)
    first_failure_s: float | None = None
    """Seconds from the start of the run to its first failure (a measurement, shown
    to a user: never part of a verdict)."""
    fault_examples: int = 0
    faults_fired: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    """What the model answered, by kind ("prepare_store:evicts", "prepare_load:
    BlockNotReadyError", "fault:insert", ...): evidence that the run was not vacuous."""
    findings: dict[Kind, ConformanceFailure] = field(default_factory=dict)
    """The shortest failure seen of each class (in order of discovery)."""
    hits: Counter[Kind] = field(default_factory=Counter)
    """In how many examples each class was found."""

    def failed(self, step_no: int) -> None:
        if self.first_failure_example is None:
            self.first_failure_example = self.examples
            self.first_failure_step = step_no
            self.first_failure_total_steps = self.steps
            self.first_failure_s = time.perf_counter() - self.started

    def record(self, failure: ConformanceFailure) -> None:
        """Keep `failure` if it is the first, or the shortest so far, of its class."""
        self.hits[failure.kind] += 1
        best = self.findings.get(failure.kind)
        if best is None or len(failure.actions) < len(best.actions):
            self.findings[failure.kind] = failure


def script_of(actions: Sequence[Action]) -> Script | None:
    """The script of a lock-step trace made of a start and plain calls (else None)."""
    if not actions or not isinstance(actions[0], Start) or actions[0].faulty:
        return None
    calls = []
    for action in actions[1:]:
        if not isinstance(action, Step) or not action.call.method:
            return None
        args, kwargs = action.call.build()
        calls.append((action.call.method, tuple(args), tuple(sorted(kwargs.items()))))
    return Script(actions[0].num_blocks, actions[0].events, tuple(calls))
