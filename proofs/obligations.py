"""Proof obligations as records, and the one runner that discharges them.

An `Obligation` has a stable dotted name (e.g. `cpu.consecution.load_end.LOADING->READY`),
a one-line statement, and a `check` callable returning an `Outcome`. Obligations
built on Z3 use `proofs.z3.solver`: a claim is *proved* when its negation is
unsatisfiable, and the model of a satisfiable negation is the counterexample. A
Z3 `unknown` is reported as `unknown`, which counts as a failure.

Every obligation may carry a `negative` control: the same check run against a
deliberately broken variant, which must come back `counterexample`. The runner
runs both and reports the control as its own record (`<name>~neg`), whose status
is `proved` exactly when the broken variant was caught.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Obligation",
    "Outcome",
    "Result",
    "Status",
    "format_result",
    "proved",
    "refuted",
    "run_all",
    "run_one",
]

DEFAULT_TIMEOUT_S = 30.0


class Status(enum.Enum):
    PROVED = "proved"
    COUNTEREXAMPLE = "counterexample"
    UNKNOWN = "unknown"
    ERROR = "error"


@dataclass(frozen=True)
class Outcome:
    """What a check found: a status and, for a counterexample, readable text."""

    status: Status
    counterexample: str = ""


def proved() -> Outcome:
    return Outcome(Status.PROVED)


def refuted(text: str) -> Outcome:
    return Outcome(Status.COUNTEREXAMPLE, text)


@dataclass(frozen=True)
class Obligation:
    """One claim to discharge.

    `check(timeout_s)` decides the claim; `negative(timeout_s)`, when given, decides
    the same claim for a deliberately broken variant and must find a counterexample.
    """

    name: str
    statement: str
    check: Callable[[float], Outcome]
    negative: Callable[[float], Outcome] | None = None
    negative_statement: str = ""
    tags: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Result:
    """A discharged obligation: the record every report is made of."""

    name: str
    status: Status
    seconds: float
    counterexample: str = ""
    statement: str = ""

    @property
    def ok(self) -> bool:
        return self.status is Status.PROVED

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status.value,
            "seconds": round(self.seconds, 4),
            "counterexample": self.counterexample,
            "statement": self.statement,
        }


def _timed(fn: Callable[[float], Outcome], timeout_s: float) -> tuple[Outcome, float]:
    start = time.perf_counter()
    try:
        outcome = fn(timeout_s)
    except Exception as exc:  # a crashing check is a failed check, reported as such
        outcome = Outcome(Status.ERROR, f"{type(exc).__name__}: {exc}")
    return outcome, time.perf_counter() - start


def run_one(ob: Obligation, timeout_s: float = DEFAULT_TIMEOUT_S) -> list[Result]:
    """Discharge one obligation and its negative control (if any)."""
    outcome, secs = _timed(ob.check, timeout_s)
    results = [Result(ob.name, outcome.status, secs, outcome.counterexample, ob.statement)]
    if ob.negative is not None:
        neg, nsecs = _timed(ob.negative, timeout_s)
        if neg.status is Status.COUNTEREXAMPLE:
            status, text = Status.PROVED, neg.counterexample
        elif neg.status is Status.PROVED:
            status, text = Status.COUNTEREXAMPLE, "negative control was not caught (vacuous?)"
        else:
            status, text = neg.status, neg.counterexample
        results.append(
            Result(f"{ob.name}~neg", status, nsecs, text, ob.negative_statement or
                   f"broken variant of {ob.name} is refuted")
        )
    return results


def run_all(
    obligations: Iterable[Obligation],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """Discharge every obligation in order; `on_result` sees each record as it lands."""
    out: list[Result] = []
    for ob in obligations:
        for r in run_one(ob, timeout_s):
            out.append(r)
            if on_result is not None:
                on_result(r)
    return out


def format_result(r: Result) -> str:
    """One fixed-format line: status, seconds, name (and the first counterexample line)."""
    line = f"{r.status.value:<14} {r.seconds:8.3f}s  {r.name}"
    if not r.ok and r.counterexample:
        line += "  | " + r.counterexample.splitlines()[0]
    return line


def iter_failures(results: Iterable[Result]) -> Iterator[Result]:
    return (r for r in results if not r.ok)
