"""ARC scenarios with exact expected lists and targets, run on the model ARC and on
`ARCCachePolicy` alike (docs/semantics.md, "ARC"), plus a differential property test and
checks specific to the fast index (no pinned entry is visited on eviction)."""

from __future__ import annotations

import heapq
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import evictable.impl.policies.arc as arc_module
from evictable.impl.block import BlockStatus
from evictable.impl.policies.arc import ARCCachePolicy
from evictable.impl.policies.factory import create_policy, known_policies
from evictable.model.arc import ModelArc
from evictable.model.errors import InvalidArgumentError, InvariantViolationError
from tests.arc_harness import KINDS, ArcHarness, Kind

both = pytest.mark.parametrize("kind", KINDS)
"""Scenarios run on the model and on the implementation."""


# ---------------------------------------------------------------- insert / remove


@both
def test_insert_goes_to_t1_most_recent_end(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    h.store("a", "b")
    assert h.lists() == (["a", "b"], [], [], [])
    assert h.target == 0.0


@both
def test_remove_of_a_pending_key_leaves_no_ghost(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    h.store("a", "b")
    h.abort("a")
    assert h.lists() == (["b"], [], [], [])


@both
def test_insert_of_a_ghost_key_leaves_the_ghost_list(kind: Kind) -> None:
    h = ArcHarness(kind, 2)
    h.ready("a", "b")
    assert h.evict(1) == ["a"]
    assert h.lists() == (["b"], [], ["a"], [])
    h.store("a")
    assert h.lists() == (["b", "a"], [], [], [])


# ---------------------------------------------------------------- touch


@both
def test_touch_promotes_a_ready_t1_key_to_t2(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    h.ready("a", "b")
    h.touch("a")
    assert h.lists() == (["b"], ["a"], [], [])


@both
def test_touch_moves_a_pending_t1_key_to_t1_most_recent_end(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    h.store("a", "b")
    h.touch("a")
    assert h.lists() == (["b", "a"], [], [], [])


@both
def test_touch_promotes_a_loading_t1_key_to_t2(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    h.ready("a", "b")
    h.load("a")
    h.touch("a")
    assert h.lists() == (["b"], ["a"], [], [])


@both
def test_touch_walks_keys_in_reverse(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    h.ready("a", "b", "c")
    h.touch("a", "b")
    assert h.lists() == (["c"], ["b", "a"], [], [])


@both
def test_touch_moves_a_t2_key_to_t2_most_recent_end(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    h.ready("a", "b")
    h.touch("a")
    h.touch("b")
    assert h.lists() == ([], ["a", "b"], [], [])
    h.touch("a")
    assert h.lists() == ([], ["b", "a"], [], [])


@both
def test_touch_ignores_unknown_and_unhashable_keys(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    h.ready("a", "b")
    before = h.snap()
    h.touch("zz", ["unhashable"], None)  # type: ignore[arg-type]
    assert h.snap() == before


@both
def test_b1_hit_grows_target_by_ratio_capped_at_n(kind: Kind) -> None:
    h = ArcHarness(kind, 4)
    h.ready("a", "b", "c")
    h.touch("b")
    h.touch("c")
    assert h.evict(3) == ["a", "b", "c"]  # a from T1, then T1 empty -> b, c from T2
    assert h.lists() == ([], [], ["a"], ["b", "c"])
    h.touch("a")
    assert h.target == 2.0  # 0 + max(1, 2/1)
    h.touch("a")
    assert h.target == 4.0  # 2 + 2, = N
    h.touch("a")
    assert h.target == 4.0  # capped at N


@both
def test_b2_hit_shrinks_target_by_ratio_floored_at_zero(kind: Kind) -> None:
    h = ArcHarness(kind, 4)
    h.ready("a", "b", "c", "d")
    h.touch("d")
    assert h.evict(4) == ["a", "b", "c", "d"]
    assert h.lists() == ([], [], ["a", "b", "c"], ["d"])
    h.touch("a", "b", "c")  # reverse: c, b, a; each + max(1, 1/3)
    assert h.target == 3.0
    assert h.lists() == ([], [], ["c", "b", "a"], ["d"])
    h.touch("c")
    assert h.target == 4.0
    h.touch("d")
    assert h.target == 1.0  # 4 - max(1, 3/1)
    h.touch("d")
    assert h.target == 0.0  # 1 - 3, floored


@both
def test_ghost_hit_with_fractional_ratio(kind: Kind) -> None:
    h = ArcHarness(kind, 6)
    h.ready("a", "b", "c", "d", "e")
    h.touch("d", "e")
    assert h.evict(5) == ["a", "b", "c", "e", "d"]
    assert h.lists() == ([], [], ["a", "b", "c"], ["e", "d"])
    h.touch("e")
    assert h.target == 0.0  # 0 - max(1, 3/2) floored
    h.touch("a", "b")
    assert h.target == 2.0  # two hits, each max(1, 2/3) = 1
    h.touch("e")
    assert h.target == 0.5  # 2 - 3/2


# ---------------------------------------------------------------- eviction


@both
def test_evict_takes_t1_least_recent_first(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    h.ready("a", "b", "c")
    assert h.evict(1) == ["a"]
    assert h.lists() == (["b", "c"], [], ["a"], [])


@both
def test_evict_skips_pinned_and_pending_entries(kind: Kind) -> None:
    h = ArcHarness(kind, 4)
    h.store("a")
    h.ready("b", "c", "d")
    h.load("b")
    assert h.evict(1) == ["c"]
    assert h.evict(1) == ["d"]
    before = h.snap()
    assert h.evict(1) is None  # a pending, b loading
    assert h.snap() == before


@both
def test_evict_skips_protected_keys(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    h.ready("a", "b")
    assert h.evict(1, protected={"a"}) == ["b"]
    assert h.lists() == (["a"], [], ["b"], [])


def _target_two(h: ArcHarness) -> None:
    """Leave an empty cache with B1 = [a, b] and target 2.0."""
    h.ready("a", "b")
    assert h.evict(2) == ["a", "b"]
    h.touch("a")
    h.touch("b")
    assert h.target == 2.0
    assert h.lists() == ([], [], ["a", "b"], [])


@both
def test_evict_takes_t2_when_t1_is_below_target(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    _target_two(h)
    h.ready("c", "d")
    h.touch("d")
    assert h.lists() == (["c"], ["d"], ["a", "b"], [])
    assert h.evict(1) == ["d"]  # |T1| = 1 < int(2.0)
    assert h.lists() == (["c"], [], ["a", "b"], ["d"])


@both
def test_evict_falls_back_to_t1_when_t2_has_no_idle_entry(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    _target_two(h)
    h.ready("c", "d")
    h.touch("d")
    h.load("d")
    assert h.evict(1) == ["c"]  # T2 only pinned -> T1 fallback
    assert h.lists() == ([], ["d"], ["a", "b", "c"], [])


@both
def test_evict_counts_pinned_t1_entries_and_decrements_per_t1_victim(kind: Kind) -> None:
    h = ArcHarness(kind, 4)
    _target_two(h)
    h.store("p")
    h.ready("x", "y", "z")
    h.touch("z")
    assert h.lists() == (["p", "x", "y"], ["z"], ["a", "b"], [])
    # t1 = 3 >= 2 -> x (t1 = 2); 2 >= 2 -> y (t1 = 1); 1 < 2 -> z from T2.
    assert h.evict(3) == ["x", "y", "z"]
    assert h.lists() == (["p"], [], ["a", "b", "x", "y"], ["z"])


@both
def test_ghost_lists_are_trimmed_from_the_least_recent_end(kind: Kind) -> None:
    h = ArcHarness(kind, 2)
    h.ready("a", "b")
    assert h.evict(2) == ["a", "b"]
    h.ready("c", "d")
    assert h.evict(1) == ["c"]
    assert h.lists() == (["d"], [], ["b", "c"], [])


@both
def test_failed_evict_changes_nothing(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    h.ready("a", "b")
    h.store("c")
    h.touch("b")
    before = h.snap()
    assert h.evict(3) is None
    assert h.evict(2, protected={"a"}) is None
    assert h.snap() == before
    assert h.evict(2) == ["a", "b"]


@both
def test_evict_zero_is_empty(kind: Kind) -> None:
    h = ArcHarness(kind, 1)
    assert h.evict(0) == []


@both
def test_load_end_keeps_the_entry_in_place(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    h.ready("a", "b", "c")
    h.load("a")
    assert h.evict(1) == ["b"]
    h.unload("a")
    assert h.lists() == (["a", "c"], [], ["b"], [])
    assert h.evict(1) == ["a"]


@both
def test_clear_forgets_lists_and_target(kind: Kind) -> None:
    h = ArcHarness(kind, 3)
    _target_two(h)
    h.ready("c")
    h.clear()
    assert h.lists() == ([], [], [], [])
    assert h.target == 0.0


# ---------------------------------------------------------------- bad input


def _policy(kind: Kind, capacity: Any) -> ModelArc | ARCCachePolicy:
    return ModelArc(capacity) if kind == "model" else ARCCachePolicy(capacity)


@both
@pytest.mark.parametrize("capacity", [-1, True, 2.0, "3", None])
def test_rejects_bad_capacity(kind: Kind, capacity: object) -> None:
    with pytest.raises(InvalidArgumentError):
        _policy(kind, capacity)


@both
def test_rejects_insert_of_a_resident_key(kind: Kind) -> None:
    h = ArcHarness(kind, 2)
    h.ready("a")
    before = h.snap()
    with pytest.raises(InvalidArgumentError):
        h.store("a")
    assert h.snap() == before


@both
def test_rejects_remove_of_an_absent_key(kind: Kind) -> None:
    policy = _policy(kind, 2)
    with pytest.raises(InvalidArgumentError):
        policy.remove("nope")
    assert policy.snapshot() == _policy(kind, 2).snapshot()


@both
@pytest.mark.parametrize("n", [-1, True, 1.5])
def test_rejects_bad_evict_count(kind: Kind, n: Any) -> None:
    h = ArcHarness(kind, 2)
    h.ready("a")
    before = h.snap()
    with pytest.raises(InvalidArgumentError):
        h.evict(n)
    assert h.snap() == before


# ---------------------------------------------------------------- model vs impl


_OPS = st.lists(
    st.tuples(
        st.sampled_from(("store", "commit", "abort", "load", "unload", "touch", "evict", "clear")),
        st.lists(st.integers(0, 7), max_size=4),
        st.integers(0, 3),
    ),
    max_size=60,
)


@given(capacity=st.integers(0, 5), ops=_OPS)
def test_impl_matches_model_on_any_sequence(capacity: int, ops: list[Any]) -> None:
    m, i = ArcHarness("model", capacity), ArcHarness("impl", capacity)
    for op, picks, n in ops:
        keys = list(dict.fromkeys(picks))
        if op == "store":
            keys = [k for k in keys if m.ref_of(k) is None][: capacity - len(m.blocks)]
        elif op in ("commit", "abort"):
            keys = [k for k in keys if m.ref_of(k) == -1]
        elif op == "load":
            keys = [k for k in keys if (m.ref_of(k) or -1) >= 0]
        elif op == "unload":
            keys = [k for k in keys if (m.ref_of(k) or 0) >= 1]
        if op == "evict":
            assert m.evict(n, picks[:1]) == i.evict(n, picks[:1])
        elif op == "clear":
            m.clear()
            i.clear()
        else:
            getattr(m, op)(*keys)
            getattr(i, op)(*keys)
        assert m.snap() == i.snap()
        assert {k: b.ref_cnt for k, b in m.blocks.items()} == {
            k: b.ref_cnt for k, b in i.blocks.items()
        }


# ---------------------------------------------------------------- the fast index


def test_factory_builds_arc() -> None:
    assert "arc" in known_policies()
    policy = create_policy("arc", 4)
    assert isinstance(policy, ARCCachePolicy)
    assert policy.name == "arc"


def test_evict_never_scans_pinned_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = ARCCachePolicy(10_003)
    for i in range(10_003):
        block = BlockStatus(i)
        policy.insert(i, block)
        block.ref_cnt = 0
        policy.mark_evictable(i)
        if i < 10_000:  # the 10_000 least recent entries get pinned
            block.ref_cnt = 1
            policy.mark_non_evictable(i)
    popped: list[object] = []
    real_pop = heapq.heappop

    class CountingHeapq:
        heappush = staticmethod(heapq.heappush)
        heapify = staticmethod(heapq.heapify)

        @staticmethod
        def heappop(heap: list[Any]) -> Any:
            entry = real_pop(heap)
            popped.append(entry)
            return entry

    index = policy._elig1
    garbage = len(index.heap) - len(index.live)
    # Stale entries left by the 10_000 mark_non_evictable calls were compacted away
    # down to O(live) ones; each may be popped (and dropped) once, never rescanned.
    assert garbage <= 2 * len(index.live) + arc_module._COMPACT_SLACK
    monkeypatch.setattr(arc_module, "heapq", CountingHeapq)
    victims = policy.evict(3, frozenset())
    assert victims is not None
    assert [k for k, _ in victims] == [10_000, 10_001, 10_002]
    assert len(popped) <= 3 + garbage
    policy.check_invariants()


def test_idle_index_garbage_stays_bounded() -> None:
    policy = ARCCachePolicy(4)
    block = BlockStatus(0)
    policy.insert("a", block)
    block.ref_cnt = 0
    policy.mark_evictable("a")
    for _ in range(1_000):
        block.ref_cnt = 1
        policy.mark_non_evictable("a")
        block.ref_cnt = 0
        policy.mark_evictable("a")
        policy.check_invariants()
    assert len(policy._elig1.heap) <= 2 * 1 + arc_module._COMPACT_SLACK + 1


def test_check_invariants_reports_a_corrupted_index() -> None:
    policy = ARCCachePolicy(4)
    block = BlockStatus(0)
    policy.insert("a", block)
    block.ref_cnt = 0  # the manager forgot mark_evictable
    with pytest.raises(InvariantViolationError, match="eligible index"):
        policy.check_invariants()
