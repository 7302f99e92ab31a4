"""ARC scenarios with exact expected lists and targets, run on the model ARC and on
`ARCCachePolicy` alike (docs/semantics.md, "ARC"), plus a differential property test and
checks specific to the fast index (no pinned entry is visited on eviction)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import evictable.impl.policies.arc_index as arc_index
from evictable.impl.block import BlockStatus
from evictable.impl.policies.arc import ARCCachePolicy, ArcRecord
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
    assert policy.record_class is ArcRecord


def _filled(n: int, pinned: int) -> tuple[ARCCachePolicy, list[ArcRecord]]:
    """n ready entries in T1 (keys 0..n-1), the `pinned` least recent ones loading."""
    policy = ARCCachePolicy(n)
    records = [ArcRecord(i) for i in range(n)]
    for i, record in enumerate(records):
        policy.insert(i, record)
        record.ref_cnt = 0
        policy.mark_evictable(i)
    for record in records[:pinned]:
        record.ref_cnt = 1
        policy.mark_non_evictable(record.key)
    return policy, records


class _CountingPops:
    """Counts the heap entries an eviction pops (`arc_index.heappop`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.popped: list[Any] = []
        real = arc_index.heappop  # type: ignore[attr-defined]

        def counting(heap: list[Any]) -> Any:
            entry = real(heap)
            self.popped.append(entry)
            return entry

        monkeypatch.setattr(arc_index, "heappop", counting)


def test_evict_never_visits_pinned_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    policy, _ = _filled(10_003, 10_000)
    assert [r.key for r in policy._idle1.listed()] == [10_000, 10_001, 10_002]
    pops = _CountingPops(monkeypatch)
    victims = policy.evict(3, frozenset())
    assert victims is not None and [k for k, _ in victims] == [10_000, 10_001, 10_002]
    assert pops.popped == []
    policy.check_invariants()


def _load_and_release(policy: ARCCachePolicy, records: list[ArcRecord]) -> None:
    """Pin every record, then release them in the given order."""
    for record in records:
        record.ref_cnt = 1
        policy.mark_non_evictable(record.key)
    for record in records:
        record.ref_cnt = 0
        policy.mark_evictable(record.key)


def test_loads_ending_in_list_order_go_to_the_late_ring() -> None:
    policy, records = _filled(6, 0)
    _load_and_release(policy, records[1:3])
    assert [r.key for r in policy._idle1.listed()] == [0, 3, 4, 5, 1, 2]  # ring, late ring
    assert policy._idle1.heap == []
    policy.check_invariants()
    victims = policy.evict(4, frozenset({3}))
    assert victims is not None and [k for k, _ in victims] == [0, 1, 2, 4]
    assert policy.snapshot().t1 == (3, 5)
    policy.check_invariants()


def test_loads_ending_out_of_order_go_to_the_heap() -> None:
    policy, records = _filled(6, 0)
    _load_and_release(policy, [records[3], records[1], records[2]])
    assert [r.key for r in policy._idle1.listed()] == [0, 4, 5, 3]
    assert sorted(int(r.key) for _, r in policy._idle1.heap) == [1, 2]  # type: ignore[call-overload]
    policy.check_invariants()
    victims = policy.evict(5, frozenset({4}))
    assert victims is not None and [k for k, _ in victims] == [0, 1, 2, 3, 5]
    assert policy._idle1.heap == [] and policy._idle1.marked == 0
    policy.check_invariants()


def test_dormant_heap_entries_are_dropped_once(monkeypatch: pytest.MonkeyPatch) -> None:
    policy, records = _filled(1_003, 0)
    older = records[:1_000]
    _load_and_release(policy, older[::-1])  # the first to the late ring, the rest heaped
    assert policy._idle1.marked == 999
    for record in older:  # pinned again: their heap entries go dormant
        record.ref_cnt = 1
        policy.mark_non_evictable(record.key)
    pops = _CountingPops(monkeypatch)
    victims = policy.evict(3, frozenset())
    assert victims is not None and [k for k, _ in victims] == [1_000, 1_001, 1_002]
    assert len(pops.popped) == 999  # each dormant entry dropped, once
    assert policy._idle1.marked == 0 and policy._idle1.heap == []
    for record in older:  # unpinned once more: back in a ring, in place
        record.ref_cnt = 0
        policy.mark_evictable(record.key)
    policy.check_invariants()
    victims = policy.evict(2, frozenset())
    assert victims is not None and [k for k, _ in victims] == [0, 1]


def test_heap_garbage_stays_bounded() -> None:
    policy = ARCCachePolicy(3_000)
    for i in range(1_000):  # each round heaps one entry, then a touch makes it garbage
        trio = [ArcRecord(3 * i + j) for j in range(3)]
        for j, record in enumerate(trio):
            policy.insert((i, j), record)
            record.ref_cnt = 0
            policy.mark_evictable((i, j))
        _load_and_release(policy, [trio[1], trio[0]])  # 1 to the late ring, 0 heaped
        policy.touch([(i, 0)])
        index = policy._idle1
        assert len(index.heap) <= 2 * index.marked + arc_index.COMPACT_SLACK + 1
    policy.check_invariants()


def test_a_failed_evict_restores_the_heap() -> None:
    policy, records = _filled(5, 0)
    _load_and_release(policy, [records[2], records[0], records[1]])
    assert policy._idle1.marked == 2
    before = policy.snapshot()
    assert policy.evict(5, frozenset({4})) is None
    assert policy.snapshot() == before
    policy.check_invariants()
    victims = policy.evict(4, frozenset({4}))
    assert victims is not None and [k for k, _ in victims] == [0, 1, 2, 3]


def test_rejects_a_record_of_another_class() -> None:
    policy = ARCCachePolicy(2)
    with pytest.raises(InvalidArgumentError, match="ArcRecord"):
        policy.insert("a", BlockStatus(0))
    assert policy.table == {}
    policy.check_invariants()


def test_checkpoint_and_rollback_restore_every_place() -> None:
    policy, records = _filled(6, 0)
    _load_and_release(policy, [records[2], records[1]])  # 2 to the late ring, 1 heaped
    records[4].ref_cnt = 1
    policy.mark_non_evictable(4)  # pinned
    policy.touch([5])
    before = policy.snapshot()
    saved = policy.checkpoint()
    assert policy.evict(3, frozenset()) is not None
    policy.touch([0, 2, 9])
    policy.insert("x", ArcRecord(7))
    policy.rollback(saved)
    assert policy.snapshot() == before
    policy.check_invariants()
    victims = policy.evict(4, frozenset())
    assert victims is not None and [k for k, _ in victims] == [0, 1, 2, 3]


@pytest.mark.parametrize("copier", ["pickle", "deepcopy"])
def test_copies_relink_the_idle_index(copier: str) -> None:
    import copy
    import pickle

    policy, records = _filled(3_000, 0)  # a ring deeper than the recursion limit
    for record in records[10:20]:
        record.ref_cnt = 1
        policy.mark_non_evictable(record.key)
    for record in records[14:9:-1]:  # one to the late ring, four heaped
        record.ref_cnt = 0
        policy.mark_evictable(record.key)
    clone = pickle.loads(pickle.dumps(policy)) if copier == "pickle" else copy.deepcopy(policy)
    assert clone.snapshot() == policy.snapshot()
    clone.check_invariants()
    expected = policy.evict(30, frozenset())
    assert expected is not None
    assert [k for k, _ in expected] == [k for k, _ in clone.evict(30, frozenset()) or ()]
    assert all(isinstance(r, ArcRecord) for r in clone.table.values())


def test_check_invariants_reports_a_corrupted_index() -> None:
    policy = ARCCachePolicy(4)
    block = ArcRecord(0)
    policy.insert("a", block)
    block.ref_cnt = 0  # the manager forgot mark_evictable
    with pytest.raises(InvariantViolationError, match="eligible index"):
        policy.check_invariants()
