"""Findings: what a check found, one per class, each with its shortest trace, ranked.

The engines do not stop at the first divergence. Every failure has a class
(`compare.Kind`: atomicity, leaked pin, orphaned or doubly used slot, pinned or
protected block evicted, wrong lookup, accounting, error type, ...); a run keeps,
per class, the shortest failing trace it saw, shrinks it, and reports it once, as a
`Finding` with a runnable snippet: the imports (the factory, the key constructor of
the contract's key space), the construction, every call -- a call that raised on
either side wrapped in `suppress(Exception)` so the snippet runs to the end -- each
commented with both sides' answers, and the reason on the last line. With the
snippet comes the trace as data (`steps`, `base.trace.TraceStep`).

`rank` orders the classes by severity (`SEVERITY`: safety and data loss first, then
atomicity and leaked pins, then wrong behaviour, accounting, error types), the
shortest trace first within a class of equal severity, and folds a class into an
earlier one when it is a *consequence* of it on the same trace: its calls begin
with the earlier finding's whole trace (the same failing call made two findings,
say an error of the wrong type that also leaked a pin).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from evictable.proofs.base.compare import Kind
from evictable.proofs.base.contract import Contract
from evictable.proofs.base.expect import MESSAGE, assertion, imports_for
from evictable.proofs.base.trace import TraceStep

__all__ = [
    "SEVERITY",
    "Cause",
    "Finding",
    "Script",
    "checked_snippet",
    "factory_source",
    "findings_block",
    "group",
    "order",
    "outranks",
    "rank",
    "severity",
    "snippet",
    "steps_from_lines",
]

SEVERITY: tuple[tuple[str, tuple[Kind, ...]], ...] = (
    (
        "safety",
        (
            Kind.EVICTED_PINNED,
            Kind.SLOT,
            Kind.UNWRITTEN_LOAD,
            Kind.SCAN,
            Kind.EVICTED_WHILE_HIT,
            Kind.EVICTED_WHILE_PINNED,
            Kind.STALE_WRITE,
            Kind.DOUBLE_OWNER,
            Kind.OWNER_LOST,
            Kind.RESET_LEFT_WORK,
        ),
    ),
    (
        "atomicity",
        (
            Kind.LEAKED_PIN,
            Kind.ATOMICITY,
            Kind.CRASH,
            Kind.TIER_UNREPORTED,
            Kind.TIER_TWICE,
            Kind.TIER_UNKNOWN,
            Kind.TIER_RAISED,
        ),
    ),
    (
        "behaviour",
        (
            Kind.BLOCKED,
            Kind.HANG,
            Kind.NEVER_ANSWERS,
            Kind.PENDING_HIDDEN,
            Kind.FINALISED_TWICE,
            Kind.TIER_GARBAGE,
            Kind.TIER_UNSTABLE,
            Kind.TIER_EVENTS,
            Kind.WRONG_LOOKUP,
            Kind.STORE_VERDICT,
            Kind.RESULT,
            Kind.STATE,
            Kind.INVARIANT,
            Kind.REJECTED_GOOD_CALL,
            Kind.ACCEPTED_BAD_CALL,
            Kind.DIVERGENCE,
        ),
    ),
    ("accounting", (Kind.UNLISTED, Kind.ACCOUNTING)),
    ("error type", (Kind.ERROR,)),
    ("model", (Kind.MODEL_BUG,)),
)
"""Finding classes from the most severe down, in tiers: safety and data loss (a
pinned or protected block evicted, an orphaned or doubly used slot, a load of
unwritten data, a block the lazy scan never visits, and a tiering orchestrator's
chunk evicted while reported HIT or pinned, written stale, owned twice or by no one,
or left in flight by a reset); atomicity and leaked pins (a pin left by a call that
raised; a tier's job reported not exactly once, or its failure raised: each leaves
the orchestrator's pins or chunks behind); wrong behaviour (a call that never returns
-- blocked or spinning --, something that never answers, pending work hidden, a
request finalised not once, a tier's malformed answers, unstable lookups,
inconsistent events, wrong lookups, results or states, refused good calls, accepted
bad ones); accounting (an idle block missing from the evictable set, a counter off);
error type; and last a bug of the model itself (never the implementation's fault)."""

_ORDER: dict[Kind, tuple[int, int]] = {
    kind: (tier, i) for tier, (_, kinds) in enumerate(SEVERITY) for i, kind in enumerate(kinds)
}


def severity(kind: Kind) -> str:
    """The tier of `kind` (`SEVERITY`): "safety", "atomicity", "behaviour", ..."""
    return SEVERITY[_ORDER[kind][0]][0]


def outranks(a: Kind, b: Kind) -> bool:
    """Whether class `a` is more severe than class `b` (`SEVERITY`)."""
    return _ORDER[a] < _ORDER[b]


def order(kind: Kind) -> tuple[int, int]:
    """A sort key of classes, the most severe first (`SEVERITY`: tier, place in it)."""
    return _ORDER[kind]


@dataclass(frozen=True)
class Script:
    """A trace as calls that can be made again: the constructor's arguments and each
    call as (method, positional arguments, keyword arguments). Only a trace of plain
    manager calls has one (no fault injected, no copy, no bad constructor)."""

    num_blocks: int
    events: bool
    calls: tuple[tuple[str, tuple[Any, ...], tuple[tuple[str, Any], ...]], ...]


@dataclass(frozen=True)
class Cause:
    """Where a finding's trace first diverged, when that is not where its class
    shows: the first divergence's class and reason, and its call (1-based, the
    construction not counted)."""

    kind: Kind
    reason: str
    call: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "class": self.kind.name.lower(),
            "label": self.kind.value,
            "reason": self.reason,
            "call": self.call,
        }


@dataclass(frozen=True)
class Finding:
    """One class of finding: its shortest trace, and how often it was hit.

    `engine` says who found it ("conformance", "explorer", ...); `hits` counts the
    examples (or edges) that showed it; `calls` is the length of `snippet`'s trace.
    """

    kind: Kind
    engine: str
    reason: str
    trace: str
    snippet: str
    calls: int
    hits: int = 1
    steps: tuple[TraceStep, ...] = ()
    """The trace as data, one step per line of `trace` (empty when an engine gives
    text only)."""
    consequences: tuple[tuple[Kind, str], ...] = ()
    """Classes folded into this one by `rank`: (class, reason) of each."""
    script: Script | None = None
    """The trace as calls to make again (`lockstep.follow` drives it further)."""
    cause: Cause | None = None
    """The first divergence this finding's class is the consequence of, if any."""

    @property
    def severity(self) -> str:
        return severity(self.kind)

    def text(self, number: int | None = None) -> str:
        """The finding for a terminal: rank, class, reason, then the snippet, indented."""
        at = f"{number}. " if number is not None else ""
        head = (
            f"{at}[{self.kind.value}] ({self.severity}) found by the {self.engine} "
            f"({self.hits} hit(s)), {self.calls} call(s):"
        )
        cause = ""
        if self.cause is not None:
            c = self.cause
            cause = f"\n  first divergence, at call {c.call}: [{c.kind.value}] {c.reason}"
        also = "".join(
            f"\n  the same trace also shows [{k.value}] (a consequence): {r}"
            for k, r in self.consequences
        )
        body = "\n".join(f"    {line}" for line in self.snippet.splitlines())
        return f"{head}\n  {self.reason}{cause}{also}\n{body}"

    def calls_made(self) -> tuple[str, ...]:
        """The trace's calls as code, construction included (what `rank` compares)."""
        if self.steps:
            return tuple(step.call for step in self.steps)
        return tuple(line.split("  # ", 1)[0].strip() for line in self.trace.splitlines())

    def as_dict(self) -> dict[str, Any]:
        """The finding as report fields (`#/$defs/finding` of the report schema)."""
        return {
            "class": self.kind.name.lower(),
            "label": self.kind.value,
            "severity": self.severity,
            "engine": self.engine,
            "reason": self.reason,
            "calls": self.calls,
            "hits": self.hits,
            "trace": [step.as_dict() for step in self.steps] or steps_from_lines(self.trace),
            "snippet": self.snippet,
            "consequences": [
                {"class": k.name.lower(), "label": k.value, "reason": r}
                for k, r in self.consequences
            ],
            "cause": self.cause.as_dict() if self.cause is not None else None,
        }


def steps_from_lines(trace: str) -> list[dict[str, Any]]:
    """A text trace (`code  # note` per line) as steps with the call and its note only
    (for the engines that keep no structured trace)."""
    out: list[dict[str, Any]] = []
    for line in trace.splitlines():
        code, _, note = line.partition("  # ")
        code = code.strip()
        if not code:
            continue
        head = code.split("(", 1)[0]
        op = "construct" if "=" in head else head.rsplit(".", 1)[-1]
        step: dict[str, Any] = {
            "call": code,
            "op": op,
            "state_before": None,
            "state_after": None,
            "changes": [],
        }
        if note:
            step["note"] = note
        out.append(step)
    return out


def factory_source(factory: object) -> tuple[str, str]:
    """An import line and the callable's name, for a snippet that calls `factory`."""
    mod = getattr(factory, "__module__", None)
    name = getattr(factory, "__qualname__", None)
    if isinstance(mod, str) and isinstance(name, str) and mod != "__main__" and name.isidentifier():
        return f"from {mod} import {name}", name
    return "factory = ...  # the factory under test", "factory"


def snippet(
    factory: object,
    preamble: Sequence[str],
    lines: Iterable[tuple[str, str, bool]],
    reason: str,
    target: str = "factory",
    checks: Mapping[int, Sequence[str]] | None = None,
) -> str:
    """Runnable Python for a trace: `lines` are (code, note, raised); code naming
    `target` (the factory's placeholder) is rewritten to call the factory by name. A
    line made with a policy fault armed (`with PLAN.failing(...): m.call(...)`) runs
    with the same fault, so the snippet reproduces it.

    `checks` replaces the line of a given index with code that makes the call and
    asserts the model's answer there (`base.expect.assertion`); the snippet then
    defines `FINDING = reason` first, the message of every assertion, so that it
    raises `AssertionError(reason)` against the faulty subject and runs through
    against a correct one. Without checks its last line is the reason, as a comment."""
    imp, name = factory_source(factory)
    rows = list(lines)
    checks = dict(checks or {})
    checked = [line for i in sorted(checks) for line in checks[i]]
    every = [code for code, _, _ in rows] + checked
    faults = any("PLAN." in code or "fault_policy_name(" in code for code in every)
    extra = ["from evictable.proofs.base.faults import PLAN, fault_policy_name"] if faults else []
    extra += [f"import {mod}" for mod in ("copy", "pickle") if any(f"{mod}." in c for c in every)]
    extra += imports_for(checked)
    out = [imp, *preamble, *extra, "from contextlib import suppress"]
    if checks:
        out.append(f"{MESSAGE} = {reason!r}")

    def named(code: str) -> str:
        return code.replace(f"{target}(", f"{name}(", 1) if target in code else code

    for i, (code, note, raised) in enumerate(rows):
        code = named(code)
        if i in checks:
            made = [named(line) for line in checks[i]]
            at = next((j for j, line in enumerate(made) if code in line), 0)
            if note:  # the answers go on the line that makes the call
                made[at] = f"{made[at]}  # {note}"
            out += made
            continue
        if raised and code.startswith("with "):  # a call made with a fault armed
            stmt = f"with suppress(Exception), {code[5:]}"
        else:
            stmt = f"with suppress(Exception): {code}" if raised else code
        out.append(f"{stmt}  # {note}" if note else stmt)
    if not checks:
        out.append(f"# {reason}")
    return "\n".join(out)


def checked_snippet(
    factory: object,
    contract: Contract,
    lines: Sequence[tuple[str, str, bool]],
    steps: Sequence[TraceStep],
    kind: Kind,
    reason: str,
    points: Sequence[tuple[int, TraceStep, Kind, Contract]] = (),
) -> str:
    """`snippet` with the model's answer asserted at the last call (the finding's
    step, of class `kind` under `contract`; `steps` are the lines as data) and at
    each of `points` (line index, that step as data, its class and contract: the
    first divergence of a finding followed to its consequence). A line that cannot
    be asserted (a copy, a fault the model did not see) stays a plain call."""
    checks: dict[int, list[str]] = {}
    wanted = list(points)
    if steps and len(steps) == len(lines):
        wanted.append((len(lines) - 1, steps[-1], kind, contract))
    for index, step, k, c in wanted:
        if 0 <= index < len(lines):
            got = assertion(step, k, c)
            if got is not None:
                checks[index] = got
    return snippet(factory, contract.keys.preamble, lines, reason, checks=checks)


def group(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """One finding per class: the shortest (fewest calls), hits summed; ranked
    (`rank`)."""
    best: dict[Kind, Finding] = {}
    hits: dict[Kind, int] = {}
    for f in findings:
        hits[f.kind] = hits.get(f.kind, 0) + f.hits
        if f.kind not in best or f.calls < best[f.kind].calls:
            best[f.kind] = f
    return rank(replace(f, hits=hits[k]) for k, f in best.items())


def _prefix(short: Sequence[str], long: Sequence[str]) -> bool:
    return 0 < len(short) <= len(long) and tuple(long[: len(short)]) == tuple(short)


def rank(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """`findings` by severity (`SEVERITY`), the shortest trace first among equals; a
    finding whose calls begin with a more severe finding's whole trace is folded
    into it as a consequence (see the module docstring)."""
    ordered = sorted(findings, key=lambda f: (_ORDER[f.kind], f.calls))
    kept: list[Finding] = []
    for f in ordered:
        mine = f.calls_made()
        for i, earlier in enumerate(kept):
            if _ORDER[earlier.kind][0] <= _ORDER[f.kind][0] and _prefix(earlier.calls_made(), mine):
                kept[i] = replace(earlier, consequences=(*earlier.consequences, (f.kind, f.reason)))
                break
        else:
            kept.append(f)
    return tuple(kept)


def findings_block(findings: tuple[Finding, ...]) -> str:
    """The verdict line and one block per class of finding, most severe first."""
    if not findings:
        return "verdict: conforms (no finding)"
    classes = ", ".join(f.kind.value for f in findings)
    head = (
        f"verdict: REJECTED -- {len(findings)} class(es) of finding, most severe first: {classes}"
    )
    return "\n\n".join([head, *(f.text(i) for i, f in enumerate(findings, 1))])
