"""Liveness over an explored graph: a fair-cycle search that reports lassos.

The breadth-first engine (`explore.engine.search` with `record_edges`) hands over every
state (with the subject's `StateProps`) and every edge. A *lasso* is a path from the
root to a state (the stem) and a cycle back to that state on which something that should
eventually go away -- a *pending token*: a request still waiting for an answer, a staged
promotion, a job not processed -- stays present in every state, while every fairness
obligation is honoured:

* a **weakly fair** obligation (a tier job in flight finishes; the engine, busy, steps)
  that is enabled in every state of the cycle is discharged by some edge of it;
* a **strongly fair** obligation (a poll round; the scheduler scans a waiting request)
  that is enabled in some state of the cycle is discharged by some edge of it;
* no edge of the cycle is an *input* (a new request, store, peer request, reset, fault).

`find_lasso` decides, for each pending token, whether the states holding it contain a
fair cycle: the strongly connected components of that subgraph (input edges removed),
refined as in the Emerson-Lei algorithm (a strong obligation enabled in a component but
never discharged there removes the states that enable it, and the rest is searched
again; a weak one enabled everywhere and never discharged rules the component out). A
fair component yields a lasso whose cycle passes through one discharging edge (or one
disabling state) per obligation. The search is exhaustive over the graph it is given:
with an incomplete exploration it says so instead of deciding.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from evictable.proofs.explore.engine import Result

__all__ = ["EdgeProps", "Lasso", "StateProps", "find_lasso", "strongly_connected"]

L = TypeVar("L")


@dataclass(frozen=True)
class StateProps:
    """What the liveness search knows of one state."""

    pending: frozenset[Hashable] = frozenset()
    """Tokens that must eventually go away (a waiting request, a staged promotion, ...)."""
    weak: frozenset[Hashable] = frozenset()
    """Weakly fair obligations enabled here."""
    strong: frozenset[Hashable] = frozenset()
    """Strongly fair obligations enabled here."""


@dataclass(frozen=True)
class EdgeProps:
    """What the liveness search knows of one edge's label."""

    discharges: frozenset[Hashable] = frozenset()
    input: bool = False
    """New input (excluded from cycles)."""


@dataclass(frozen=True)
class Lasso(Generic[L]):
    """A fair cycle reachable from the root on which `token` never goes away."""

    token: Hashable
    stem: tuple[L, ...]
    cycle: tuple[L, ...]
    states: tuple[int, ...]
    """The ids of the cycle's states, the first one first."""


def strongly_connected(
    nodes: Iterable[int], succ: Callable[[int], Iterable[int]]
) -> list[list[int]]:
    """The strongly connected components of the graph over `nodes` (edges leaving the
    set ignored), by Tarjan's algorithm without recursion."""
    members = set(nodes)
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for root in sorted(members):
        if root in index:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        work: list[tuple[int, Iterator[int]]] = [
            (root, iter([v for v in succ(root) if v in members]))
        ]
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter([x for x in succ(w) if x in members])))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out


class _Graph(Generic[L]):
    def __init__(self, result: Result[L], edge_props: Callable[[L], EdgeProps]) -> None:
        self.props: list[StateProps] = [
            p if isinstance(p, StateProps) else StateProps() for p in result.props
        ]
        self.out: dict[int, list[tuple[L, int, EdgeProps]]] = {}
        cache: dict[object, EdgeProps] = {}
        for src, label, dst in result.edges:
            ep = cache.get(label)
            if ep is None:
                ep = edge_props(label)
                cache[label] = ep
            if not ep.input:
                self.out.setdefault(src, []).append((label, dst, ep))

    def succ(self, v: int) -> list[int]:
        return [dst for _, dst, _ in self.out.get(v, ())]

    def inner(self, comp: set[int]) -> list[tuple[int, L, int, EdgeProps]]:
        return [(v, lab, w, ep) for v in comp for lab, w, ep in self.out.get(v, ()) if w in comp]

    def fair_component(self, nodes: set[int]) -> set[int] | None:
        """A component of `nodes` that holds a fair cycle (Emerson-Lei refinement)."""
        todo = [nodes]
        while todo:
            part = todo.pop()
            for comp_list in strongly_connected(part, self.succ):
                comp = set(comp_list)
                edges = self.inner(comp)
                if not edges:
                    continue  # a single state without a self-loop
                done: set[Hashable] = set()
                for _, _, _, ep in edges:
                    done |= ep.discharges
                strong: set[Hashable] = set()
                for v in comp:
                    strong |= self.props[v].strong
                starved = strong - done
                if starved:
                    rest = {v for v in comp if not (self.props[v].strong & starved)}
                    if rest:
                        todo.append(rest)
                    continue
                weak = set.intersection(*(set(self.props[v].weak) for v in comp))
                if weak - done:
                    continue
                return comp
        return None

    def tour(self, comp: set[int], entry: int) -> tuple[list[L], list[int]]:
        """A cycle from `entry` through `comp` that discharges (or passes a state that
        disables) every obligation enabled in it."""
        edges = self.inner(comp)
        waypoints: list[tuple[int, L | None, int]] = []
        wanted: set[Hashable] = set()
        for v in comp:
            wanted |= self.props[v].strong | self.props[v].weak
        for o in sorted(wanted, key=repr):
            edge = next(((v, lab, w) for v, lab, w, ep in edges if o in ep.discharges), None)
            if edge is not None:
                waypoints.append(edge)
                continue
            off = next((v for v in sorted(comp) if o not in self.props[v].weak), None)
            if off is not None:
                waypoints.append((off, None, off))
        if not waypoints:
            first = edges[0]
            waypoints.append((first[0], first[1], first[2]))
        labels: list[L] = []
        states: list[int] = [entry]
        here = entry
        for src, step, dst in waypoints:
            path_labels, path_states = self.path(comp, here, src)
            labels += path_labels
            states += path_states
            if step is not None:
                labels.append(step)
                states.append(dst)
            here = dst if step is not None else src
        back_labels, back_states = self.path(comp, here, entry)
        labels += back_labels
        states += back_states
        if not labels:  # entry alone: take its self-loop
            first = next(e for e in edges if e[0] == entry)
            back_labels, back_states = self.path(comp, first[2], entry)
            labels = [first[1], *back_labels]
            states = [entry, first[2], *back_states]
            if first[2] == entry:
                states = [entry, entry]
        return labels, states[:-1]

    def path(self, comp: set[int], src: int, dst: int) -> tuple[list[L], list[int]]:
        """A shortest path inside `comp` (labels, and the states after each)."""
        if src == dst:
            return [], []
        prev: dict[int, tuple[int, L]] = {}
        queue = deque([src])
        seen = {src}
        while queue:
            v = queue.popleft()
            for lab, w, _ in self.out.get(v, ()):
                if w in comp and w not in seen:
                    seen.add(w)
                    prev[w] = (v, lab)
                    if w == dst:
                        queue.clear()
                        break
                    queue.append(w)
        labels: list[L] = []
        states: list[int] = []
        node = dst
        while node != src:
            p, lab = prev[node]
            labels.append(lab)
            states.append(node)
            node = p
        return labels[::-1], states[::-1]


def find_lasso(
    result: Result[L],
    edge_props: Callable[[L], EdgeProps],
    tokens: Iterable[Hashable] | None = None,
) -> Lasso[L] | None:
    """The first pending token (in `repr` order, or the order of `tokens`) that stays
    present on a fair cycle, as a lasso; None when there is none.

    Pre: `result` was searched with `record_edges` and is complete (else ValueError)."""
    if not result.complete or result.found is not None:
        raise ValueError("a liveness verdict needs a complete search without safety failures")
    graph = _Graph(result, edge_props)
    present: dict[Hashable, set[int]] = {}
    for v, p in enumerate(graph.props):
        for token in p.pending:
            present.setdefault(token, set()).add(v)
    order = list(tokens) if tokens is not None else sorted(present, key=repr)
    for token in order:
        comp = graph.fair_component(present.get(token, set()))
        if comp is None:
            continue
        entry = min(comp, key=lambda v: (_depth(result, v), v))
        labels, states = graph.tour(comp, entry)
        return Lasso(token, _stem(result, entry), tuple(labels), tuple(states))
    return None


def _depth(result: Result[L], v: int) -> int:
    n = 0
    while v > 0:
        v = result.parents[v][0]
        n += 1
    return n


def _stem(result: Result[L], v: int) -> tuple[L, ...]:
    labels: list[L] = []
    while v > 0:
        pid, label = result.parents[v]
        if label is not None:
            labels.append(label)
        v = pid
    return tuple(reversed(labels))
