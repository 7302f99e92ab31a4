"""Proof obligations as records, and the one runner that discharges them.

An `Obligation` has a stable dotted name (e.g. `cpu.consecution.load_end.LOADING->READY`),
a one-line statement, a **kind** -- what sort of evidence discharging it gives --
its **bounds** (the sizes it covers, the examples it runs) and a `check` callable
returning an `Outcome`:

* `Kind.UNBOUNDED` -- proved for all sizes (Z3 over unbounded sorts or reals);
* `Kind.BOUNDED` -- proved by Z3 up to the stated bound;
* `Kind.EXPLORED` -- every reachable state at the stated bounds was visited;
* `Kind.TESTED` -- random testing (examples x steps, seed): evidence, not a proof.

Only the first two are ever printed as proofs; a claim of the other kinds that
holds is printed as `explored` or `passed`.

Every obligation may carry a `negative` control: the same check run against a
deliberately broken variant (`proofs.controls`, or a broken encoding), which must
come back with a counterexample. The runner runs both and reports the control as
its own record (`<name>~neg`): `refuted` when the broken variant was caught, a
failure (`not refuted`) when it was not -- a check that cannot tell a broken
variant from the real thing is vacuous.

**Bounded by work, never by the clock.** Every check is bounded by the work it may
do, stated in its bounds: states and depth for the explorer, examples x steps and a
seed for the conformance runs, a resource limit (`rlimit`) per Z3 query. The same
check gives the same verdict on a busy machine and on an idle one. The wall clock is
only a **hang backstop** (`backstop_s`, generous: `HANG_BACKSTOP_S` by default, about
twenty times the slowest check on an idle machine): the runner publishes it as the
check's deadline (`deadline()`), the engines stop at it (`check_deadline`,
`DeadlineExceeded`), and a check stopped there is `unknown` with the text
"hang backstop after N s" and the work done so far -- never a finding, and never
a pass. A check that merely runs long is not judged by its time.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "HANG_BACKSTOP_S",
    "DeadlineExceeded",
    "Kind",
    "Obligation",
    "Outcome",
    "Result",
    "Status",
    "aimed",
    "check_deadline",
    "deadline",
    "every_refuted",
    "format_result",
    "proved",
    "refuted",
    "remaining",
    "run_all",
    "run_claim",
    "run_control",
    "run_one",
    "targeted",
    "targets",
]

HANG_BACKSTOP_S = 900.0
"""The default hang backstop of one check, in seconds: far beyond the slowest check's
time on a loaded 2-core machine, so that only a check that hangs meets it."""


class Kind(enum.Enum):
    """What discharging an obligation establishes."""

    UNBOUNDED = "unbounded"  # proved for all sizes
    BOUNDED = "bounded"  # proved up to the stated bound
    EXPLORED = "explored"  # every reachable state at the stated bounds visited
    TESTED = "tested"  # random testing: examples x steps, seed


class Status(enum.Enum):
    """How a check (or a negative control) came out."""

    PROVED = "holds"  # the claim holds (for the obligation's kind and bounds)
    COUNTEREXAMPLE = "counterexample"
    UNKNOWN = "unknown"  # undecided: Z3 unknown, a bound reached, the budget spent
    ERROR = "error"  # the check could not be run
    REFUTED = "refuted"  # a negative control: the broken variant was caught
    NOT_REFUTED = "not refuted"  # a negative control that was not caught: vacuous
    VACUOUS = "vacuous"  # the query's assumptions are unsatisfiable: it proves nothing


@dataclass(frozen=True)
class Outcome:
    """What a check found: a status, readable text for a counterexample, and `detail`
    (the figures the run reached: states and transitions, examples and steps)."""

    status: Status
    counterexample: str = ""
    detail: str = ""
    violated: tuple[str, ...] = ()
    """For a counterexample: the claims it violates, as named by the check (a Z3 query
    names them, prefixed by the part of a lemma they belong to: `targeted` reads them)."""


def proved(detail: str = "") -> Outcome:
    return Outcome(Status.PROVED, detail=detail)


def refuted(text: str, violated: Sequence[str] = ()) -> Outcome:
    return Outcome(Status.COUNTEREXAMPLE, text, violated=tuple(violated))


_TARGETS: ContextVar[tuple[str, ...]] = ContextVar("evictable_control_targets", default=())


def targets() -> tuple[str, ...]:
    """The claims the running negative control is built to break (`targeted`): a
    query that names some of them asks for a counterexample to those only."""
    return _TARGETS.get()


def aimed(claims: Mapping[str, Any]) -> Mapping[str, Any]:
    """`claims` narrowed to the running control's targets (`targets`), when it names
    any of them; all of them otherwise."""
    wanted = _TARGETS.get()
    if not wanted:
        return claims
    narrowed = {n: c for n, c in claims.items() if any(n == t or n.startswith(t) for t in wanted)}
    return narrowed or claims


def targeted(
    check: Callable[[float], Outcome], claims: Sequence[str]
) -> Callable[[float], Outcome]:
    """A negative control that counts only when it breaks the claim it was built to
    break: the counterexample must violate one of `claims` (a name, or the prefix of
    one, e.g. a lemma's part: "fold lemma, step/"). While it runs, a query that names
    some of `claims` asks for a counterexample to those only (`aimed`), so which claim
    a model happens to violate first does not decide it; a counterexample on other
    claims is reported as not caught (the record's own claim did not refute it)."""

    def run(backstop_s: float) -> Outcome:
        token = _TARGETS.set(tuple(claims))
        try:
            out = check(backstop_s)
        finally:
            _TARGETS.reset(token)
        if out.status is not Status.COUNTEREXAMPLE:
            return out
        if any(v == c or v.startswith(c) for v in out.violated for c in claims):
            return out
        return Outcome(
            Status.PROVED,
            detail=(
                f"refuted on {', '.join(out.violated) or 'an unnamed claim'}, not on the "
                f"claim it breaks ({', '.join(claims)})"
            ),
        )

    return run


@dataclass(frozen=True)
class Obligation:
    """One claim to discharge.

    `check(backstop_s)` decides the claim; `negative(backstop_s)`, when given, decides
    the same claim for a deliberately broken variant and must find a counterexample.
    `backstop_s` is the check's hang backstop (also published as `deadline()`): a
    check is bounded by the work its bounds state, never by time.
    """

    name: str
    statement: str
    check: Callable[[float], Outcome]
    negative: Callable[[float], Outcome] | None = None
    negative_statement: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)
    kind: Kind = field(kw_only=True)
    bounds: str = field(default="", kw_only=True)
    """The sizes covered, e.g. "N=8 blocks" or "200 examples x 50 steps, seed 0"
    ("" for an unbounded proof)."""
    negative_bounds: str | None = field(default=None, kw_only=True)
    """The negative control's sizes, when they differ from the claim's."""
    batch: str = field(default="", kw_only=True)
    """Obligations with the same non-empty `batch` run one after another in one
    process, so that they share what they cache (one exploration read by several
    records); the runner keeps them together."""
    assumptions: tuple[str, ...] = field(default=(), kw_only=True)
    """The facts the claim rests on and does not prove (each also in docs/proofs.md):
    `evictable verify` prints them with the record."""


_VERDICT: dict[Kind, str] = {
    Kind.UNBOUNDED: "proved",
    Kind.BOUNDED: "proved",
    Kind.EXPLORED: "explored",
    Kind.TESTED: "passed",
}


@dataclass(frozen=True)
class Result:
    """A discharged obligation (or negative control): the record every report is made of."""

    name: str
    kind: Kind
    bounds: str
    status: Status
    seconds: float
    counterexample: str = ""
    statement: str = ""
    detail: str = ""
    backstop_s: float = HANG_BACKSTOP_S
    control_of: str | None = None
    """For a negative control: the name of the obligation it controls."""
    assumptions: tuple[str, ...] = ()
    """The facts the claim rests on and does not prove (`Obligation.assumptions`)."""

    @property
    def ok(self) -> bool:
        return self.status in (Status.PROVED, Status.REFUTED)

    @property
    def verdict(self) -> str:
        """The word a report prints: `proved` only for the two kinds of proof."""
        if self.status is Status.PROVED:
            return _VERDICT[self.kind]
        return str(self.status.value)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind.value,
            "bounds": self.bounds,
            "status": self.status.value,
            "verdict": self.verdict,
            "ok": self.ok,
            "seconds": round(self.seconds, 4),
            "backstop_s": self.backstop_s,
            "control_of": self.control_of,
            "assumptions": list(self.assumptions),
            "statement": self.statement,
            "detail": self.detail,
            "counterexample": self.counterexample,
        }


# ------------------------------------------------------------------ the hang backstop

_DEADLINE: ContextVar[float | None] = ContextVar("evictable_obligation_deadline", default=None)


class DeadlineExceeded(Exception):
    """Raised by an engine that reaches the running check's hang backstop."""


def deadline() -> float | None:
    """The running check's deadline (a `time.monotonic()` value), or None outside one."""
    return _DEADLINE.get()


def remaining(default: float) -> float:
    """Seconds left before the deadline (at least 0.001), or `default` without one."""
    end = _DEADLINE.get()
    if end is None:
        return default
    return max(0.001, end - time.monotonic())


def check_deadline(what: str) -> None:
    """Raise `DeadlineExceeded` if the running check's hang backstop has passed; `what`
    says how far the work got."""
    end = _DEADLINE.get()
    if end is not None and time.monotonic() > end:
        raise DeadlineExceeded(what)


def backstop_text(backstop_s: float, work: str) -> str:
    """The text of a check stopped by the hang backstop: which limit, and the work done."""
    return (
        f"unknown: hang backstop after {backstop_s:g} s (the wall clock, not a finding); "
        f"work done: {work or 'not reported'}"
    )


def _timed(fn: Callable[[float], Outcome], backstop_s: float) -> tuple[Outcome, float]:
    start = time.perf_counter()
    token = _DEADLINE.set(time.monotonic() + backstop_s)
    try:
        outcome = fn(backstop_s)
    except DeadlineExceeded as exc:
        outcome = Outcome(Status.UNKNOWN, backstop_text(backstop_s, str(exc)))
    except Exception as exc:  # a crashing check is a failed check, reported as such
        outcome = Outcome(Status.ERROR, f"{type(exc).__name__}: {exc}")
    finally:
        _DEADLINE.reset(token)
    return outcome, time.perf_counter() - start


def every_refuted(
    controls: Sequence[tuple[str, Callable[[float], Outcome]]], backstop_s: float
) -> Outcome:
    """Several broken variants as one negative control: a counterexample (the control
    is refuted) only when every variant gives one -- the texts, one line each; else the
    first variant that did not, by name, with its own status (so a control of a
    weakened claim comes back `holds`, i.e. not refuted)."""
    found = []
    for what, check in controls:
        out = check(backstop_s)
        if out.status is not Status.COUNTEREXAMPLE:
            said = out.counterexample or out.detail
            detail = f"{what} was not caught{f': {said}' if said else ''}"
            return Outcome(out.status, out.counterexample, detail)
        found.append(f"{what}: {out.counterexample}")
    return refuted("\n".join(found))


def run_claim(ob: Obligation, backstop_s: float = HANG_BACKSTOP_S) -> Result:
    """Discharge the obligation's claim: its record."""
    outcome, secs = _timed(ob.check, backstop_s)
    return Result(
        ob.name,
        ob.kind,
        ob.bounds,
        outcome.status,
        secs,
        outcome.counterexample,
        ob.statement,
        outcome.detail,
        backstop_s,
        assumptions=ob.assumptions,
    )


def run_control(ob: Obligation, backstop_s: float = HANG_BACKSTOP_S) -> Result:
    """Run the obligation's negative control (it must have one): its record, `refuted`
    when the broken variant was caught, `not refuted` when it was not."""
    if ob.negative is None:
        raise ValueError(f"{ob.name} has no negative control")
    neg, nsecs = _timed(ob.negative, backstop_s)
    if neg.status is Status.COUNTEREXAMPLE:
        status, text = Status.REFUTED, neg.counterexample
    elif neg.status is Status.PROVED:
        status, text = Status.NOT_REFUTED, "the broken variant was not caught (vacuous?)"
    else:
        status, text = neg.status, neg.counterexample
    return Result(
        f"{ob.name}~neg",
        ob.kind,
        ob.bounds if ob.negative_bounds is None else ob.negative_bounds,
        status,
        nsecs,
        text,
        ob.negative_statement or f"a broken variant of {ob.name} is refuted",
        neg.detail,
        backstop_s,
        control_of=ob.name,
    )


def run_one(ob: Obligation, backstop_s: float = HANG_BACKSTOP_S) -> list[Result]:
    """Discharge one obligation and its negative control (if any)."""
    out = [run_claim(ob, backstop_s)]
    if ob.negative is not None:
        out.append(run_control(ob, backstop_s))
    return out


def run_all(
    obligations: Iterable[Obligation],
    backstop_s: float = HANG_BACKSTOP_S,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Discharge every obligation in order, in this process; `on_result` sees each
    record as it lands (`base.parallel.run_parallel` runs them in worker processes)."""
    out: list[Result] = []
    for ob in obligations:
        for r in run_one(ob, backstop_s):
            out.append(r)
            if on_result is not None:
                on_result(r)
    return out


def format_result(r: Result) -> str:
    """One fixed-format line: verdict, kind, seconds, name, bounds (and, for a failure,
    the first counterexample line)."""
    line = f"{r.verdict:<14} {r.kind.value:<9} {r.seconds:8.3f}s  {r.name}"
    if r.bounds:
        line += f"  [{r.bounds}]"
    if not r.ok and r.counterexample:
        line += "  | " + r.counterexample.splitlines()[0]
    return line


def iter_failures(results: Iterable[Result]) -> Iterator[Result]:
    return (r for r in results if not r.ok)
