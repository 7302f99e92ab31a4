"""A lock-step run's actions, failures and counts (`lockstep.manager.LockStep`).

* `Start`, `Step`, `Fault`, `Copy`, `Construct` -- the actions a `LockStep` applies;
* `TraceLine` -- one line of a trace (code, both sides' answers, whether it raised);
* `ConformanceFailure` -- a divergence: its class (`compare.Kind`), reason, trace and
  actions (and the further findings of the same last step);
* `RunStats` -- counts across the examples of one run, and the shortest failure of
  each class (`record`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from evictable.proofs.base.compare import Kind
from evictable.proofs.lockstep.inputs import Call

__all__ = [
    "Action",
    "ConformanceFailure",
    "Construct",
    "Copy",
    "Fault",
    "RunStats",
    "Start",
    "Step",
    "TraceLine",
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
class TraceLine:
    """One line of a trace: the code (`m.prepare_store([...])`, `m = factory(...)`),
    both sides' answers, and whether a side raised (a snippet then guards the line)."""

    code: str
    note: str = ""
    raised: bool = False

    def text(self) -> str:
        return f"{self.code}  # {self.note}" if self.note else self.code


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

    def record(self, failure: ConformanceFailure) -> None:
        """Keep `failure` if it is the first, or the shortest so far, of its class."""
        self.hits[failure.kind] += 1
        best = self.findings.get(failure.kind)
        if best is None or len(failure.actions) < len(best.actions):
            self.findings[failure.kind] = failure
