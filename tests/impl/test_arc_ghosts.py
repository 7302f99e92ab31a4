"""`GhostList` (ARC's B1/B2) behaves as a plain list of distinct keys, least recent
first: the model's `list` operations, checked against a list on any sequence."""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evictable.impl.policies.arc_ghosts import STALE_SLACK, GhostList
from evictable.model.errors import InvariantViolationError


def test_trim_drops_the_least_recent_members() -> None:
    g = GhostList()
    g.extend(["a", "b", "c", "d"])
    g.trim(2)
    assert list(g) == ["c", "d"] and len(g) == 2
    g.check("g")


def test_a_removed_or_moved_key_leaves_a_stale_occurrence_that_trims_skip() -> None:
    g = GhostList()
    g.extend(["a", "b", "c"])
    g.move_to_end("a")  # a: stale at the front, live at the end
    g.discard_all(["b"])  # b: stale
    assert list(g) == ["c", "a"] and g.stale == {"a": 1, "b": 1}
    g.trim(1)
    assert list(g) == ["a"] and g.stale == {}
    g.check("g")


def test_a_key_removed_then_added_again_is_live_at_the_end() -> None:
    g = GhostList()
    g.extend(["a", "b"])
    g.discard_all(["a"])
    g.extend(["a"])
    assert list(g) == ["b", "a"]
    g.trim(1)
    assert list(g) == ["a"]
    g.check("g")


def test_stale_occurrences_stay_bounded() -> None:
    g = GhostList()
    g.extend(["a", "b"])
    for _ in range(1_000):
        g.move_to_end("a")
        assert len(g.order) <= 2 * len(g) + STALE_SLACK + 1
    assert list(g) == ["b", "a"]
    g.check("g")


@pytest.mark.parametrize("copier", [copy.deepcopy, lambda g: pickle.loads(pickle.dumps(g))])
def test_copies_keep_the_order_without_stale_occurrences(copier: object) -> None:
    g = GhostList()
    g.extend(["a", "b", "c"])
    g.move_to_end("a")
    clone = copier(g)  # type: ignore[operator]
    assert list(clone) == ["b", "c", "a"] and clone.stale == {}
    clone.trim(1)
    assert list(g) == ["b", "c", "a"]


def test_check_reports_a_missing_occurrence() -> None:
    g = GhostList()
    g.extend(["a", "b"])
    g.order.popleft()
    with pytest.raises(InvariantViolationError, match="b1"):
        g.check("b1")


_OPS = st.lists(
    st.tuples(st.sampled_from(("add", "remove", "move", "trim")), st.integers(0, 5)), max_size=60
)


@given(_OPS)
def test_matches_a_plain_list(ops: list[tuple[str, int]]) -> None:
    g, model = GhostList(), list[int]()
    for op, k in ops:
        if op == "add" and k not in model:
            g.extend([k])
            model.append(k)
        elif op == "remove":
            g.discard_all([k])
            if k in model:
                model.remove(k)
        elif op == "move" and k in model:
            g.move_to_end(k)
            model.remove(k)
            model.append(k)
        elif op == "trim":
            g.trim(k)
            del model[: max(0, len(model) - k)]
        assert list(g) == model and len(g) == len(model)
        assert all((key in g) == (key in model) for key in range(6))
        g.check("g")
