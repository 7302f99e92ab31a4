"""The fair-cycle search on small graphs with a known lasso, and without one."""

from __future__ import annotations

from collections.abc import Hashable

import pytest

from evictable.proofs.explore.engine import Expansion, search
from evictable.proofs.explore.liveness import (
    EdgeProps,
    StateProps,
    find_lasso,
    strongly_connected,
)

Graph = dict[int, list[tuple[str, int]]]


class Subject:
    """A graph given as data: edges per state, props per state."""

    def __init__(self, graph: Graph, props: dict[int, StateProps]) -> None:
        self.graph, self.props = graph, props

    def root(self) -> tuple[Hashable, int]:
        return 0, 0

    def expand(self, state: int) -> Expansion[int, str]:
        out: Expansion[int, str] = Expansion(props=self.props.get(state, StateProps()))
        for label, target in self.graph.get(state, []):
            out.edges += 1
            out.successors.append((target, target, label))
        return out


def edge(label: str) -> EdgeProps:
    """`in:...` labels are inputs; `d:x` discharges obligation x."""
    done = frozenset(part[2:] for part in label.split("+") if part.startswith("d:"))
    return EdgeProps(done, label.startswith("in:"))


def lasso_of(graph: Graph, props: dict[int, StateProps]) -> object:
    result = search(Subject(graph, props), record_edges=True)
    return find_lasso(result, edge)


X = StateProps(pending=frozenset({"x"}))
CYCLE: Graph = {0: [("a", 1)], 1: [("b", 2)], 2: [("c", 1)]}


def test_finds_the_lasso_of_a_cycle_that_keeps_its_token() -> None:
    result = search(Subject(CYCLE, {1: X, 2: X}), record_edges=True)
    lasso = find_lasso(result, edge)
    assert lasso is not None and lasso.token == "x"
    assert lasso.stem == ("a",) and sorted(lasso.cycle) == ["b", "c"]
    assert len(result.edges) == 3


def test_no_lasso_when_the_token_goes_away_on_the_cycle() -> None:
    assert lasso_of(CYCLE, {1: X}) is None


def test_no_lasso_without_a_cycle() -> None:
    assert lasso_of({0: [("a", 1)], 1: [("b", 2)]}, {1: X, 2: X}) is None


def test_input_edges_are_never_part_of_a_cycle() -> None:
    graph: Graph = {0: [("a", 1)], 1: [("b", 2)], 2: [("in:c", 1)]}
    assert lasso_of(graph, {1: X, 2: X}) is None


def test_a_weak_obligation_enabled_throughout_must_be_discharged() -> None:
    w = StateProps(pending=frozenset({"x"}), weak=frozenset({"w"}))
    assert lasso_of(CYCLE, {1: w, 2: w}) is None
    fair: Graph = {0: [("a", 1)], 1: [("b", 2)], 2: [("c+d:w", 1)]}
    assert lasso_of(fair, {1: w, 2: w}) is not None
    assert lasso_of(CYCLE, {1: w, 2: X}) is not None  # disabled at 2: no demand


def test_a_strong_obligation_enabled_anywhere_must_be_discharged() -> None:
    s = StateProps(pending=frozenset({"x"}), strong=frozenset({"s"}))
    assert lasso_of(CYCLE, {1: s, 2: X}) is None
    # a self-loop at 2 avoids the state that enables s: a fair lasso after refinement
    loop: Graph = {0: [("a", 1)], 1: [("b", 2)], 2: [("c", 1), ("e", 2)]}
    lasso = lasso_of(loop, {1: s, 2: X})
    assert lasso is not None and lasso.cycle == ("e",)  # type: ignore[attr-defined]


def test_the_cycle_passes_every_discharging_edge_it_needs() -> None:
    w = StateProps(pending=frozenset({"x"}), weak=frozenset({"w", "v"}))
    graph: Graph = {0: [("a", 1)], 1: [("b+d:w", 2), ("f", 3)], 2: [("c", 1)], 3: [("g+d:v", 1)]}
    lasso = lasso_of(graph, {1: w, 2: w, 3: w})
    assert lasso is not None
    assert {"b+d:w", "g+d:v"} <= set(lasso.cycle)  # type: ignore[attr-defined]


def test_rejects_an_incomplete_search() -> None:
    result = search(Subject(CYCLE, {1: X, 2: X}), record_edges=True, max_states=1)
    with pytest.raises(ValueError, match="complete"):
        find_lasso(result, edge)


def test_strongly_connected_components() -> None:
    succ = {1: [2], 2: [1, 3], 3: [3], 4: []}
    comps = sorted(sorted(c) for c in strongly_connected(succ, lambda v: succ[v]))
    assert comps == [[1, 2], [3], [4]]
