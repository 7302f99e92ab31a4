"""`IdleOrder` (impl/policies/idle_order.py), the idle index of evictable's LMCache policy,
against a plain reference: the least recent idle entries, busy ones parked once."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from evictable.impl.policies.idle_order import IdleOrder
from evictable.impl.policies.rank_index import RankEntry

OPS = st.lists(
    st.tuples(st.sampled_from(("add", "hit", "busy", "idle", "drop", "search")), st.integers(0, 7)),
    max_size=60,
)


@settings(max_examples=200, deadline=None)
@given(OPS, st.integers(1, 4))
def test_candidates_are_the_least_recent_idle_entries(ops: list[tuple[str, int]], n: int) -> None:
    order = IdleOrder()
    entries: dict[int, RankEntry] = {}
    recency: list[int] = []  # the reference: least recent first
    busy: set[int] = set()

    def is_busy(entry: RankEntry) -> bool:
        return entry.key in busy

    for op, k in ops:
        if op == "add" and k not in entries:
            entries[k] = order.add(k, None)
            recency.append(k)
        elif k not in entries:
            continue
        elif op == "hit":
            order.hit(entries[k])
            recency.remove(k)
            recency.append(k)
        elif op == "busy":
            busy.add(k)
        elif op == "idle":
            busy.discard(k)
            order.mark_idle(entries[k])  # what a released pin tells the policy
        elif op == "drop":
            order.discard(entries.pop(k))
            recency.remove(k)
            busy.discard(k)
        else:
            got = [e.key for e in order.candidates(n, is_busy)]
            assert got == [key for key in recency if key not in busy][:n]
    assert len(order) == len(entries)


def test_a_busy_entry_is_visited_once_until_marked_idle() -> None:
    order = IdleOrder()
    entries = [order.add(i, None) for i in range(100)]
    visited: list[object] = []
    pinned = set(range(90))

    def busy(entry: RankEntry) -> bool:
        visited.append(entry.key)
        return entry.key in pinned

    assert order.first(busy) is entries[90]
    first = len(visited)
    for _ in range(10):
        assert order.first(busy) is entries[90]
    assert first >= 90 and len(visited) - first == 10  # one visit per search, no rescan
    pinned.discard(5)
    order.mark_idle(entries[5])
    assert order.first(busy) is entries[5]


def test_a_change_made_while_parking_is_not_lost() -> None:
    """The owner saw the entry still believed idle (no mark); parking asks once more."""
    order = IdleOrder()
    entry = order.add("a", None)
    answers = iter([True, False])  # busy when met, idle by the time it is parked
    assert order.first(lambda e: next(answers, False)) is entry
    assert not order.is_parked(entry)


def test_candidates_change_nothing_but_parking() -> None:
    order = IdleOrder()
    b = [order.add(k, None) for k in "abc"][1]
    assert [e.key for e in order.candidates(5)] == ["a", "b", "c"]
    assert [e.key for e in order.idle_entries()] == ["a", "b", "c"]
    order.discard(b)
    order.clear()
    assert len(order) == 0 and order.first() is None
