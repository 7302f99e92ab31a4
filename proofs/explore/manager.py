"""Exhaustive breadth-first exploration of the CPU offloading manager (docs/conformance.md).

For small bounds (slots, keys, maximum ref count, batch size, policy, pending
events) the explorer visits every reachable state of the reference model
`model.manager.ModelManager` under the whole operation alphabet of
`evictable.proofs.explore.ops` (valid calls and bad inputs alike), and:

* checks every named invariant (`model.invariants.check_snapshot`) in every state,
  and the implementation's own `check_invariants()` when it has one;
* steps an implementation (any factory of the conformance adapter protocol; by
  default `impl.manager.CPUOffloadingManager`) in lock-step on every edge and
  compares results, errors (type and `identity()`), and snapshots; on an error it
  checks that neither side changed (all-or-nothing).

Transitions are always made by the real `ModelManager`: the explorer keeps no rule
of its own. States are deduplicated by their snapshot encoding
(`evictable.proofs.explore.state`), canonical under key renaming unless `canonical=False`.

**Cost.** Each state is built once, by replaying its (shortest) path from the
root on a fresh model and a fresh implementation, in the worker that expands it
(`evictable.proofs.explore.manager_subject`); its edges run on cheap working copies, made only after
state-changing edges. The frontier of each BFS level is split over a process pool
(fork); each worker filters successors through its own visited set and the parent
process deduplicates globally and keeps the parent pointers from which shortest
traces are rebuilt.
Because the search is breadth-first and stops at the first level with a failure,
the reported trace is a shortest one.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.compare import Kind as FindingKind
from evictable.proofs.base.contract import DEFAULT, Contract
from evictable.proofs.base.faults import HOOKS
from evictable.proofs.base.findings import Script, checked_snippet
from evictable.proofs.base.guard import StepTimeout, guard_session, step_guard
from evictable.proofs.base.protocol import Factory
from evictable.proofs.base.trace import TraceStep
from evictable.proofs.explore.engine import Result, search
from evictable.proofs.explore.manager_subject import ManagerSubject
from evictable.proofs.explore.ops import Op

__all__ = [
    "Bounds",
    "Exploration",
    "Failure",
    "Figures",
    "exploration_fields",
    "explore",
]

DEFAULT_MAX_STATES = 3_000_000


@dataclass(frozen=True)
class Figures:
    states: int
    transitions: int
    max_depth: int
    seconds: float
    pruned: int
    complete: bool
    concrete: int
    """States before the quotient by key renaming: a canonical state mentioning m of
    the K keys stands for K!/(K-m)! renamed states (keys it mentions are told
    apart by slot or list position, so no renaming other than the identity fixes
    it). Equals `states` without canonicalisation."""
    max_states: int = DEFAULT_MAX_STATES
    """The state limit the run had (a work bound)."""
    timed_out: bool = False
    """The run stopped at the hang backstop (the wall clock), not at its state limit."""

    @property
    def stopped_by(self) -> str:
        """Which limit ended an incomplete run ("" for a complete one)."""
        if self.complete:
            return ""
        if self.timed_out:
            return "the hang backstop (the wall clock, not a finding)"
        return f"the state limit ({self.max_states:,} states)"

    @property
    def states_per_s(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    def line(self) -> str:
        done = "" if self.complete else f" (INCOMPLETE: stopped by {self.stopped_by})"
        covers = (
            f" (covering {self.concrete} before symmetry)" if self.concrete != self.states else ""
        )
        return (
            f"{self.states} states{covers}, {self.transitions} transitions, "
            f"depth {self.max_depth}, {self.seconds:.2f}s, "
            f"{self.states_per_s:,.0f} states/s{done}"
        )


@dataclass(frozen=True)
class Failure:
    """A shortest failing run: `path` from the initial state, then `op` (None when
    the state reached by `path` itself violates an invariant)."""

    reason: str
    path: tuple[Op, ...]
    op: Op | None
    snippet: str
    kind: FindingKind = FindingKind.STATE
    """The finding's class (`base.compare.Kind`)."""
    steps: tuple[TraceStep, ...] = ()
    """The trace as data (`base.trace.TraceStep`), construction first."""
    script: Script | None = None
    """The trace as calls to make again (`base.findings.Script`)."""

    def text(self) -> str:
        n = len(self.path) + (self.op is not None)
        return f"{self.reason}\nshortest trace ({n} calls):\n{self.snippet}"


@dataclass(frozen=True)
class Exploration:
    bounds: Bounds
    canonical: bool
    workers: int
    figures: Figures
    failure: Failure | None
    parents: tuple[tuple[int, int], ...] = field(default=(), compare=False, repr=False)
    """Per visited state, in discovery (breadth-first) order: (parent id, op index);
    the initial state is (-1, -1)."""
    unfaulted: tuple[str, ...] = ()
    """With `Bounds.faults`: the policy hooks no fault was ever injected into (the
    fault alphabet was vacuous for them, so the run proves nothing about them)."""

    def paths(self) -> list[tuple[int, ...]]:
        """A shortest path of op indexes (into `Alphabet.ops`) to every visited state,
        in discovery order: the first is the initial state's, ()."""
        out: list[tuple[int, ...]] = []
        for pid, oi in self.parents:
            out.append(() if pid < 0 else (*out[pid], oi))
        return out

    @property
    def ok(self) -> bool:
        return self.failure is None and self.figures.complete and not self.unfaulted

    def summary(self) -> str:
        sym = "canonical" if self.canonical else "no canonicalisation"
        head = f"explore {self.bounds.describe()} ({sym}, {self.workers} workers): "
        verdict = "OK" if self.ok else "FAILED" if self.failure else "INCOMPLETE"
        if self.unfaulted and self.failure is None and self.figures.complete:
            verdict = f"VACUOUS: no fault ever injected into {', '.join(self.unfaulted)}"
        out = head + self.figures.line() + f" -> {verdict}"
        if self.failure is not None:
            out += "\n" + self.failure.text()
        return out


def exploration_fields(run: Exploration) -> dict[str, Any]:
    """An exploration as report fields (`#/$defs/exploration` of the schema)."""
    b, f = run.bounds, run.figures
    failure = None
    if run.failure is not None:
        failure = {
            "reason": run.failure.reason,
            "calls": len(run.failure.path) + (run.failure.op is not None),
            "snippet": run.failure.snippet,
            "trace": [step.as_dict() for step in run.failure.steps],
        }
    return {
        "bounds": {
            "policy": b.policy,
            "slots": b.slots,
            "keys": b.keys,
            "max_ref": b.max_ref,
            "batch": b.batch,
            "events": b.events,
        },
        "canonical": run.canonical,
        "workers": run.workers,
        "figures": {
            "states": f.states,
            "transitions": f.transitions,
            "depth": f.max_depth,
            "seconds": round(f.seconds, 4),
            "complete": f.complete,
            "pruned": f.pruned,
            "concrete": f.concrete,
        },
        "verdict": "ok" if run.ok else "failed" if run.failure else "incomplete",
        "failure": failure,
    }


# ------------------------------------------------------------------ parent side


def default_factory() -> Factory:
    """The project's implementation, `impl.manager.CPUOffloadingManager`."""
    from evictable.impl.manager import CPUOffloadingManager

    return CPUOffloadingManager


def default_workers() -> int:
    """The explorer's worker processes when none are asked for: 2, or what
    `EVICTABLE_EXPLORER_WORKERS` says (a parallel `evictable verify` sets 1 in its
    workers: the cores are already busy with other obligations)."""
    try:
        value = int(os.environ.get("EVICTABLE_EXPLORER_WORKERS", "2"))
    except ValueError:
        return 2
    return max(1, value)


def explore(
    bounds: Bounds,
    factory: Factory | None = None,
    *,
    workers: int | None = None,
    canonical: bool = True,
    max_states: int = DEFAULT_MAX_STATES,
    deadline: float | None = None,
    contract: Contract = DEFAULT,
    masked: frozenset[FindingKind] = frozenset(),
) -> Exploration:
    """Explore every state reachable within `bounds`; see the module docstring.

    `workers`: forked processes expanding each level (None: `default_workers()`).

    `deadline` (a `time.monotonic()` value): stop there, incomplete. `contract`: what
    the implementation is held to (`base.contract`); `masked`: finding classes
    already reported, whose edges are not followed (so that a rerun finds the next
    class, again with a shortest trace)."""
    bounds.check()
    workers = default_workers() if workers is None else workers
    fac = factory if factory is not None else default_factory()
    subject = ManagerSubject(bounds, fac, canonical, contract, masked)
    with guard_session():  # each worker's own, once forked
        run = search(subject, workers=workers, max_states=max_states, deadline=deadline)
    figures = Figures(
        run.states,
        run.transitions,
        run.depth,
        run.seconds,
        run.pruned,
        run.complete,
        run.weight,
        max_states,
        run.timed_out,
    )
    failure = _failure(subject, run) if run.found is not None else None
    parents = tuple((pid, -1 if label is None else label) for pid, label in run.parents)
    unfaulted: tuple[str, ...] = ()
    if bounds.faults and failure is None:
        unfaulted = tuple(h for h in HOOKS if not run.notes[f"fault:{h}"])
    return Exploration(bounds, canonical, workers, figures, failure, parents, unfaulted)


def _hung_lines(
    ctx: ManagerSubject, labels: Sequence[int], op: Op | None, timeout: object
) -> tuple[list[tuple[str, str, bool]], list[TraceStep]]:
    """The trace up to the call that did not return, that call marked as such."""
    steps: list[TraceStep] = []
    try:
        with step_guard():
            lines, steps = ctx.trace(labels, None)
    except Exception as exc:
        lines = [(f"# replaying the trace raised {type(exc).__name__}: {exc}", "", False)]
    if op is not None:
        lines.append((f"m.{op.text}", f"impl {timeout}", True))
        steps.append(TraceStep(f"m.{op.text}", op.method, note=f"impl {timeout}", raised=True))
    return lines, steps


def _failure(ctx: ManagerSubject, run: Result[int]) -> Failure:
    found = run.found
    if found is None:
        raise ValueError("no failure to render")
    labels = run.path[:-1] if found.last is not None else run.path
    path = tuple(ctx.ops[i] for i in labels)
    op = ctx.ops[found.last] if found.last is not None else None
    steps: list[TraceStep] = []
    hangs = {"blocked": FindingKind.BLOCKED, "spinning": FindingKind.HANG}
    try:
        if found.hang:  # the edge did not return: it is not made again
            at = found.reason.find("did not return")
            lines, steps = _hung_lines(ctx, labels, op, found.reason[max(at, 0) :])
            kind = hangs.get(found.hang, FindingKind.HANG)
        else:
            with step_guard():
                lines, steps = ctx.trace(labels, found.last)
                kind = ctx.classify(labels, found.last)
    except StepTimeout as timeout:  # a replay that hangs where the search did not
        lines, steps = _hung_lines(ctx, labels, op, timeout)
        kind = hangs.get(timeout.kind, FindingKind.HANG)
    except Exception as exc:  # the factory itself failed: the reason says so
        lines, kind = (
            [(f"# replaying the trace raised {type(exc).__name__}: {exc}", "", False)],
            FindingKind.STATE,
        )
    text = checked_snippet(ctx.factory, ctx.contract, lines, steps, kind, found.reason)
    made = [*path, op] if op is not None else list(path)
    calls = tuple((o.method, *_built(o)) for o in made)
    b = ctx.bounds
    return Failure(
        found.reason, path, op, text, kind, tuple(steps), Script(b.slots, b.events > 0, calls)
    )


def _built(op: Op) -> tuple[tuple[Any, ...], tuple[tuple[str, Any], ...]]:
    args, kwargs = op.build()
    return tuple(args), tuple(sorted(kwargs.items()))


# ------------------------------------------------------------------ obligations

CONTROL_BOUNDS = Bounds(slots=2, keys=2, max_ref=1, batch=2)
"""Small bounds for the negative controls: a seeded bug must be found with them."""
