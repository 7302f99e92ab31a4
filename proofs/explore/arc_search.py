"""Breadth-first exploration of every reachable ARC model state, for small bounds.

The explored system is one `model.arc.ModelArc` (or a deliberately broken subclass,
for negative controls) together with the ref counts the manager would own, driven by
every policy-level event the manager can cause:

* `insert k` (store begins, ref -1) for an absent key while a slot is free;
* `commit k` (ref -1 -> 0, `mark_evictable`) and `abort k` (`remove`);
* `load k` (ref 0 -> 1, `mark_non_evictable`) and `unload k` (1 -> 0, `mark_evictable`);
  ref counts above 1 behave like 1 for the policy, so loads are bounded at 1;
* `touch [k]` for every key of the universe (a multi-key touch is the single-key
  touches in reverse order, so single keys reach every state);
* `evict(n, protected)` for every n in 1..N and every protected subset of the idle
  residents (protecting a key that is absent or pinned cannot change the answer of a
  policy that evicts only idle keys; a variant that ignores ref counts is still caught
  with the empty protected set);
* `clear`.

States are (policy snapshot, ref counts) and are deduplicated, so the search is
exhaustive: every reachable state and every edge out of it is checked. A check that
fails yields the shortest event trace to the violation.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import cast

from evictable.model.arc import ModelArc
from evictable.model.types import ArcPolicySnapshot, Key
from evictable.proofs.base.records import DeadlineExceeded
from evictable.proofs.explore.engine import Expansion, Found, search

__all__ = ["ArcSubject", "Edge", "ExploreReport", "World", "explore"]


@dataclass(frozen=True)
class World:
    """One explored state: the policy's lists and target, and each resident's ref count."""

    policy: ArcPolicySnapshot
    refs: tuple[tuple[int, int], ...]  # (key, ref), sorted by key

    def ref_of(self, key: Key) -> int | None:
        for k, r in self.refs:
            if k == key:
                return r
        return None


@dataclass(frozen=True)
class Edge:
    """One event from `pre` to `post`; for `evict`, its arguments and answer."""

    label: str
    pre: World
    post: World
    n: int = 0
    protected: frozenset[int] = frozenset()
    victims: tuple[Key, ...] | None = None
    is_evict: bool = False


StateCheck = Callable[[World, int], str | None]
"""(state, N) -> None when the property holds, else a one-line reason."""
EdgeCheck = Callable[[Edge, int], str | None]


@dataclass(frozen=True)
class ExploreReport:
    """What one exploration saw, and the shortest trace to the first violation if any."""

    states: int
    edges: int
    depth: int
    seconds: float
    violation: str | None = None
    trace: tuple[str, ...] = ()

    def counterexample(self) -> str:
        steps = " ; ".join(self.trace) if self.trace else "(initial state)"
        return f"{self.violation} after: {steps}"


def _restore(cls: type[ModelArc], capacity: int, w: World) -> ModelArc:
    """A policy object in state `w` (the model's lists are plain public attributes)."""
    arc = cls(capacity)
    arc.t1, arc.t2 = list(w.policy.t1), list(w.policy.t2)
    arc.b1, arc.b2 = list(w.policy.b1), list(w.policy.b2)
    arc.target = w.policy.target
    arc.idle = set(w.policy.evictable or ())
    return arc


def _world(arc: ModelArc, refs: dict[Key, int]) -> World:
    return World(arc.snapshot(), tuple(sorted((cast(int, k), r) for k, r in refs.items())))


def _apply(arc: ModelArc, refs: dict[Key, int], event: str, key: int) -> None:
    """One non-evict event, as the manager would drive the policy."""
    if event == "insert":
        refs[key] = -1
        arc.insert(key)
    elif event == "commit":
        refs[key] = 0
        arc.mark_evictable(key)
    elif event == "abort":
        del refs[key]
        arc.remove(key)
    elif event == "load":
        refs[key] = 1
        arc.mark_non_evictable(key)
    elif event == "unload":
        refs[key] = 0
        arc.mark_evictable(key)
    elif event == "touch":
        arc.touch([key], refs.get)
    elif event == "clear":
        refs.clear()
        arc.clear()
    else:
        raise ValueError(f"unknown event {event!r}")


def _enabled(w: World, capacity: int, keys: tuple[int, ...]) -> Iterator[tuple[str, int]]:
    """The non-evict events enabled in `w`, each with its key."""
    resident = dict(w.refs)
    for k in keys:
        ref = resident.get(k)
        if ref is None and len(resident) < capacity:
            yield "insert", k
        if ref == -1:
            yield "commit", k
            yield "abort", k
        if ref == 0:
            yield "load", k
        if ref == 1:
            yield "unload", k
        yield "touch", k
    yield "clear", -1


def _successors(
    cls: type[ModelArc], capacity: int, keys: tuple[int, ...], w: World
) -> Iterator[Edge]:
    refs0: dict[Key, int] = dict(w.refs)
    for event, k in _enabled(w, capacity, keys):
        arc, refs = _restore(cls, capacity, w), dict(refs0)
        _apply(arc, refs, event, k)
        yield Edge(event if k < 0 else f"{event} {k}", w, _world(arc, refs))
    idle = [k for k, r in w.refs if r == 0]
    subsets = [
        frozenset(c) for size in range(len(idle) + 1) for c in itertools.combinations(idle, size)
    ]
    for n in range(1, capacity + 1):
        for prot in subsets:
            arc, refs = _restore(cls, capacity, w), dict(refs0)
            victims = arc.evict(n, prot, refs.get)
            for v in victims or ():
                refs.pop(v, None)
            shown = "{" + ", ".join(map(str, sorted(prot))) + "}"
            yield Edge(
                f"evict({n}, protected={shown}) -> {victims}",
                w,
                _world(arc, refs),
                n=n,
                protected=prot,
                victims=None if victims is None else tuple(victims),
                is_evict=True,
            )


class ArcSubject:
    """The ARC model (or a broken variant) as a subject of `explore.engine.search`."""

    def __init__(
        self,
        cls: type[ModelArc],
        capacity: int,
        keys: tuple[int, ...],
        state_check: StateCheck | None,
        edge_check: EdgeCheck | None,
    ) -> None:
        self.cls, self.capacity, self.keys = cls, capacity, keys
        self.state_check, self.edge_check = state_check, edge_check

    def root(self) -> tuple[World, World]:
        init = World(self.cls(self.capacity).snapshot(), ())
        return init, init

    def expand(self, w: World) -> Expansion[World, str]:
        out: Expansion[World, str] = Expansion()
        if self.state_check is not None and (why := self.state_check(w, self.capacity)):
            out.found = Found(why)
            return out
        for e in _successors(self.cls, self.capacity, self.keys, w):
            out.edges += 1
            if self.edge_check is not None and (why := self.edge_check(e, self.capacity)):
                out.found = Found(why, e.label)
                return out
            out.successors.append((e.post, e.post, e.label))
        return out


def explore(
    capacity: int,
    num_keys: int,
    state_check: StateCheck | None = None,
    edge_check: EdgeCheck | None = None,
    cls: type[ModelArc] = ModelArc,
    max_states: int = 2_000_000,
) -> ExploreReport:
    """Visit every reachable state of `cls` with N = `capacity` and keys `0..num_keys-1`.

    Stops at the first violation of `state_check` / `edge_check`, with a shortest
    trace. With `num_keys >= N + 2` (or >= 4 when N >= 3) all four lists can be
    non-empty at once.

    Raises `RuntimeError` when more than `max_states` states are reachable (the bound
    is too large to be exhaustive).
    """
    subject = ArcSubject(cls, capacity, tuple(range(num_keys)), state_check, edge_check)
    run = search(subject, max_states=max_states)
    if run.timed_out:
        raise DeadlineExceeded(f"ARC exploration at N={capacity}: {run.states} states so far")
    if not run.complete:
        raise RuntimeError(f"more than {max_states} reachable states at N={capacity}")
    violation = run.found.reason if run.found is not None else None
    return ExploreReport(run.states, run.transitions, run.depth, run.seconds, violation, run.path)
