"""The one breadth-first search engine, parametrised by the subject it explores.

A *subject* (the CPU manager, the ARC policy, the lazy offload scanner, ...) knows
its states and its alphabet; the engine knows nothing of either. It asks the
subject for the initial state, then expands states level by level:
`subject.expand(payload)` checks one state and every edge out of it and returns
an `Expansion`: how many edges it tried, the successors it reached (each with a
hashable key, the payload the subject needs to expand it later, and the label of
the edge), or the failure it found.

A payload is whatever lets the subject rebuild or hold the state: the state
object itself, or the path of labels that reaches it (the manager replays paths,
so that any implementation can be stepped beside the model). States are
deduplicated by key; parent pointers give a shortest path of labels to every
visited state. Each expansion runs under the per-step CPU-time bound
(`base.guard`): a state whose check or edges hang is reported as a failure.
Because the search goes level by level and stops at the first level with a
failure, the failure it reports is a shortest one.

With `record_edges`, the engine also keeps every edge it saw (`Result.edges`: source id,
label, target id, including edges to states seen before) and each expanded state's
`Expansion.props` (`Result.props`, by state id): the graph a second pass reads (the
fair-cycle search of `explore.liveness`). A subject that filters successors it has
already sent must not do so then.

The engine stops early, with `complete=False`, when it has seen `max_states`
distinct states or when `deadline` (a `time.monotonic()` value) has passed: a
bounded search that did not finish is not an exhaustive one. With `workers > 1`
the frontier of each level is expanded in a pool of forked processes that inherit
the subject; payloads and expansions must then pickle.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from evictable.proofs.base.guard import StepTimeout, step_guard
from evictable.proofs.base.records import deadline as current_deadline
from evictable.proofs.base.watch import detail, paused_watcher

__all__ = ["Expansion", "Found", "Result", "Subject", "search"]

P = TypeVar("P")
L = TypeVar("L")


@dataclass(frozen=True)
class Found(Generic[L]):
    """A failure: its reason, and where. `prefix` replaces the state's own path when
    the subject found a shorter or more precise one (None: the state's path); `last`
    is the failing edge (None: the state itself fails)."""

    reason: str
    last: L | None = None
    prefix: tuple[L, ...] | None = None
    hang: str = ""
    """"spinning" or "blocked" when the failing edge did not return (`base.guard`)."""


@dataclass
class Expansion(Generic[P, L]):
    """What the subject found at one state."""

    edges: int = 0
    successors: list[tuple[Hashable, P, L]] = field(default_factory=list)
    found: Found[L] | None = None
    pruned: int = 0
    """Successors checked but deliberately not expanded (outside a bound)."""
    notes: Counter[str] = field(default_factory=Counter)
    """What the subject counted while expanding (summed into `Result.notes`)."""
    props: object = None
    """What a second pass needs to know of this state (kept only with `record_edges`)."""


class Subject(Protocol[P, L]):
    """What the engine explores."""

    def root(self) -> tuple[Hashable, P]:
        """The initial state's key and payload."""

    def expand(self, payload: P) -> Expansion[P, L]:
        """Check the state `payload` stands for and every edge out of it.

        A subject may also define `weight(payload) -> int`, see `Result.weight`, and
        keep in `in_flight` the label of the edge it is making (None between edges),
        so that an edge that hangs is reported as the failing edge."""


@dataclass(frozen=True)
class Result(Generic[L]):
    """One search: its figures, its verdict, and the parent pointers."""

    states: int
    transitions: int
    depth: int
    seconds: float
    pruned: int
    complete: bool
    timed_out: bool
    found: Found[L] | None
    path: tuple[L, ...]
    """The labels from the initial state to the failure (with `found.last` last)."""
    weight: int
    """The visited states' total `subject.weight(payload)` (a subject whose states
    stand for several concrete states, under a symmetry, says how many; default 1)."""
    parents: tuple[tuple[int, L | None], ...] = field(repr=False, compare=False)
    """Per visited state, in discovery order: (parent id, label); the root's is (-1, None)."""
    notes: Counter[str] = field(default_factory=Counter, compare=False)
    """The subject's counts over every expansion (evidence the search was not vacuous)."""
    edges: tuple[tuple[int, L, int], ...] = field(default=(), repr=False, compare=False)
    """With `record_edges`: every edge seen (source id, label, target id)."""
    props: tuple[object, ...] = field(default=(), repr=False, compare=False)
    """With `record_edges`: each state's `Expansion.props`, by state id (None: not
    expanded)."""

    @property
    def ok(self) -> bool:
        return self.found is None and self.complete

    @property
    def states_per_s(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    def paths(self) -> list[tuple[L, ...]]:
        """A shortest path of labels to every visited state, in discovery order."""
        out: list[tuple[L, ...]] = []
        for pid, label in self.parents:
            out.append(() if pid < 0 else (*out[pid], label))  # type: ignore[arg-type]
        return out


_SUBJECT: Any = None


def _init(subject: Any) -> None:
    global _SUBJECT
    _SUBJECT = subject


def _expand_one(payload: Any) -> Expansion[Any, Any]:
    """Expand one state under the per-step CPU-time bound (`base.guard`): a state
    whose check or edges do not finish in time is a failure, never a hang. The
    subject's `in_flight` label (when it keeps one) names the edge that hung."""
    try:
        with step_guard(getattr(_SUBJECT, "expansion_bound_s", None)):
            return _SUBJECT.expand(payload)  # type: ignore[no-any-return]
    except StepTimeout as timeout:
        label = getattr(_SUBJECT, "in_flight", None)
        if label is None:
            return Expansion(found=Found(f"checking the state {timeout}", hang=timeout.kind))
        what = f"the call {timeout.what} " if timeout.what else "the call "
        return Expansion(found=Found(f"{what}{timeout}", label, hang=timeout.kind))


def _expand_chunk(items: Sequence[tuple[int, Any]]) -> list[tuple[int, Expansion[Any, Any]]]:
    """Expand states in order, up to the first that fails."""
    out = []
    for sid, payload in items:
        exp = _expand_one(payload)
        out.append((sid, exp))
        if exp.found is not None:
            break
    return out


def _chunks(items: list[Any], workers: int) -> list[list[Any]]:
    size = max(1, min(400, len(items) // (workers * 6) or 1))
    return [items[i : i + size] for i in range(0, len(items), size)]


def _path(parents: list[tuple[int, Any]], sid: int) -> tuple[Any, ...]:
    labels: list[Any] = []
    while sid > 0:
        pid, label = parents[sid]
        labels.append(label)
        sid = pid
    return tuple(reversed(labels))


def search(
    subject: Subject[P, L],
    *,
    workers: int = 1,
    max_states: int = 2_000_000,
    deadline: float | None = None,
    record_edges: bool = False,
) -> Result[L]:
    """Explore every state of `subject` reachable from its root; see the module doc.

    Without a `deadline`, the running obligation's (`obligations.deadline()`) applies.
    """
    if deadline is None:
        deadline = current_deadline()
    start = time.perf_counter()
    root_key, root_payload = subject.root()
    seen: dict[Hashable, int] = {root_key: 0}
    parents: list[tuple[int, Any]] = [(-1, None)]
    frontier: list[tuple[int, P]] = [(0, root_payload)]
    transitions = pruned = depth = 0
    weigh = getattr(subject, "weight", None) or (lambda _payload: 1)
    weight = weigh(root_payload)
    found: tuple[int, Found[L]] | None = None
    notes: Counter[str] = Counter()
    edges: list[tuple[int, L, int]] = []
    props: list[object] = [None]
    complete = True
    timed_out = False
    pool = None
    if workers > 1:
        with paused_watcher():  # no thread may run while the workers are forked
            pool = multiprocessing.get_context("fork").Pool(workers, _init, (subject,))
    else:
        _init(subject)
    try:
        while frontier and found is None:
            if pool is not None:
                results: Iterable[list[tuple[int, Expansion[P, L]]]] = pool.imap(
                    _expand_chunk, _chunks(frontier, workers)
                )
            else:
                results = map(_expand_chunk, _chunks(frontier, 1))
            expansions: Iterator[tuple[int, Expansion[P, L]]] = (
                e for chunk in results for e in chunk
            )
            nxt: list[tuple[int, P]] = []
            for sid, exp in expansions:
                transitions += exp.edges
                pruned += exp.pruned
                notes.update(exp.notes)
                if exp.found is not None:
                    if found is None or _length(parents, sid, exp.found) < _length(
                        parents, found[0], found[1]
                    ):
                        found = (sid, exp.found)
                    continue
                if record_edges:
                    props[sid] = exp.props
                for key, payload, label in exp.successors:
                    if key not in seen:
                        seen[key] = len(parents)
                        parents.append((sid, label))
                        nxt.append((len(parents) - 1, payload))
                        weight += weigh(payload)
                        if record_edges:
                            props.append(None)
                    if record_edges:
                        edges.append((sid, label, seen[key]))
                if deadline is not None and time.monotonic() > deadline:
                    timed_out = True
                    break
            if found is None and nxt and not timed_out:
                depth += 1
                detail(f"depth {depth}, {len(seen)} states")
            if timed_out or len(seen) > max_states:
                complete = False
                break
            frontier = nxt
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
    path: tuple[L, ...] = ()
    failure: Found[L] | None = None
    if found is not None:
        sid, failure = found
        path = failure.prefix if failure.prefix is not None else _path(parents, sid)
        if failure.last is not None:
            path = (*path, failure.last)
    return Result(
        len(seen),
        transitions,
        depth,
        time.perf_counter() - start,
        pruned,
        complete,
        timed_out,
        failure,
        path,
        weight,
        tuple(parents),
        notes,
        tuple(edges),
        tuple(props),
    )


def _length(parents: list[tuple[int, Any]], sid: int, found: Found[Any]) -> int:
    """Labels in a failing trace: the path, plus the failing edge if there is one."""
    base = len(found.prefix) if found.prefix is not None else len(_path(parents, sid))
    return base + (found.last is not None)
