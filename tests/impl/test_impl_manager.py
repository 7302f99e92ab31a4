"""Implementation-specific tests of `CPUOffloadingManager`.

The semantics scenarios and bad-input cases live in `test_model_manager.py` (run against the
model and both implementation paths). Here: all-or-nothing when a policy hook raises
half way through a batch, a policy breaking its `evict` contract, `check_invariants`
catching corrupted state, the fast path sharing the LRU's structures, and a small
Hypothesis differential test (model vs fast path vs generic path). The full
lock-step conformance engine is `proofs/lockstep/conformance.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evictable.impl.block import BlockStatus
from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.policies.factory import register_policy
from evictable.impl.policies.lru import LRUCachePolicy
from evictable.model.errors import InvariantViolationError, LifecycleError
from evictable.model.manager import ModelManager
from evictable.model.types import LruPolicySnapshot, PrepareStoreOutput
from tests.model.test_model_manager import GENERIC_LRU, stored


class Boom(RuntimeError):
    """The fault a test policy raises."""


class FaultyLRU(LRUCachePolicy):
    """The LRU whose hook `fail_hook` raises on its `fail_on`-th call (1-based)."""

    fail_hook: ClassVar[str | None] = None
    fail_on: ClassVar[int] = 0
    calls: ClassVar[int] = 0
    raised: ClassVar[list[Boom]] = []

    @classmethod
    def arm(cls, hook: str, nth: int) -> None:
        cls.fail_hook, cls.fail_on, cls.calls = hook, nth, 0
        cls.raised = []

    @classmethod
    def disarm(cls) -> None:
        cls.fail_hook = None

    def _tick(self, hook: str) -> None:
        cls = type(self)
        if cls.fail_hook != hook:
            return
        cls.calls += 1
        if cls.calls == cls.fail_on:
            error = Boom(f"injected into {hook}")
            cls.raised.append(error)
            raise error

    def insert(self, key: Any, block: BlockStatus) -> None:
        super().insert(key, block)
        self._tick("insert")  # after the change: the manager must undo it

    def remove(self, key: Any) -> None:
        super().remove(key)
        self._tick("remove")

    def mark_evictable(self, key: Any) -> None:
        super().mark_evictable(key)
        self._tick("mark_evictable")

    def mark_non_evictable(self, key: Any) -> None:
        super().mark_non_evictable(key)
        self._tick("mark_non_evictable")

    def evict(self, n: int, protected: Set[Any]) -> list[tuple[Any, BlockStatus]] | None:  # type: ignore[override]
        out = super().evict(n, protected)
        self._tick("evict")
        return out

    def touch(self, keys: Iterable[Any]) -> None:
        super().touch(keys)
        self._tick("touch")

    def clear(self) -> None:
        super().clear()
        self._tick("clear")


FAULTY = "lru-faulty-test"
register_policy(FAULTY, FaultyLRU)


@pytest.fixture
def faulty() -> Iterable[CPUOffloadingManager]:
    FaultyLRU.disarm()
    m = CPUOffloadingManager(6, FAULTY, enable_events=True)
    stored(m, ["a", "b", "c", "d"])
    m.prepare_store(["p", "q"])
    m.take_events()
    m.complete_store(["p"])  # one event left undrained, it must survive a failed call
    yield m
    FaultyLRU.disarm()


def assert_fault_undone(m: CPUOffloadingManager, hook: str, nth: int, call: Any) -> None:
    before = m.snapshot()
    FaultyLRU.arm(hook, nth)
    with pytest.raises(Boom) as info:
        call()
    FaultyLRU.disarm()
    assert FaultyLRU.raised and info.value is FaultyLRU.raised[0]  # the original exception
    assert m.snapshot() == before
    m.check_invariants()
    # Still usable, and consistent with a model replaying the same successful calls.
    call()
    m.check_invariants()


def test_fault_in_mark_non_evictable_mid_batch_is_undone(faulty: CPUOffloadingManager) -> None:
    assert_fault_undone(
        faulty, "mark_non_evictable", 3, lambda: faulty.prepare_load(["a", "b", "c", "d"])
    )


def test_fault_in_mark_evictable_on_commit_is_undone(faulty: CPUOffloadingManager) -> None:
    faulty.prepare_store(["x"])  # fills the cache: p, q, x pending with a..d ready
    assert_fault_undone(faulty, "mark_evictable", 2, lambda: faulty.complete_store(["q", "x"]))


def test_fault_in_mark_evictable_on_load_end_is_undone(faulty: CPUOffloadingManager) -> None:
    faulty.prepare_load(["a", "b", "c"])
    faulty.prepare_load(["b"])
    assert_fault_undone(faulty, "mark_evictable", 2, lambda: faulty.complete_load(["a", "b", "c"]))


def test_fault_in_insert_after_eviction_is_undone(faulty: CPUOffloadingManager) -> None:
    assert_fault_undone(faulty, "insert", 3, lambda: faulty.prepare_store(["x", "y", "z", "w"]))


def test_fault_in_evict_is_undone(faulty: CPUOffloadingManager) -> None:
    assert_fault_undone(faulty, "evict", 1, lambda: faulty.prepare_store(["x", "y", "z"]))


def test_fault_in_remove_is_undone(faulty: CPUOffloadingManager) -> None:
    faulty.prepare_store(["x"])
    assert_fault_undone(
        faulty, "remove", 2, lambda: faulty.complete_store(["q", "x"], success=False)
    )


def test_fault_in_touch_is_undone(faulty: CPUOffloadingManager) -> None:
    assert_fault_undone(faulty, "touch", 1, lambda: faulty.touch(["c", "a"]))


def test_fault_in_clear_is_undone(faulty: CPUOffloadingManager) -> None:
    assert_fault_undone(faulty, "clear", 1, faulty.reset_cache)


class GreedyLRU(LRUCachePolicy):
    """Breaks the evict contract: returns a protected victim."""

    def evict(self, n: int, protected: Set[Any]) -> list[tuple[Any, BlockStatus]] | None:  # type: ignore[override]
        return super().evict(n, frozenset())


register_policy("lru-greedy-test", GreedyLRU)


def test_rejects_policy_victims_that_break_the_contract() -> None:
    m = CPUOffloadingManager(2, "lru-greedy-test")
    stored(m, ["a", "b"])
    before = m.snapshot()
    with pytest.raises(InvariantViolationError) as info:
        m.prepare_store(["a", "c"])  # the greedy policy offers the protected a
    assert info.value.names == ("policy_evict_contract",)
    assert m.snapshot() == before
    m.check_invariants()


def test_the_lru_table_is_the_managers_table() -> None:
    m = CPUOffloadingManager(4)
    stored(m, ["a", "b"])
    policy = m._policy
    assert isinstance(policy, LRUCachePolicy)
    assert [b.key for b in policy.listed()] == ["a", "b"]
    assert policy.shared_table() is m._blocks is policy.blocks
    assert set(policy.blocks) == {"a", "b"}
    assert m.snapshot().policy == LruPolicySnapshot(("a", "b"))


@pytest.mark.parametrize("policy", ["lru", GENERIC_LRU])
def test_check_invariants_catches_a_pinned_block_in_the_evictable_list(policy: str) -> None:
    m = CPUOffloadingManager(4, policy)
    stored(m, ["a", "b"])
    m._blocks["a"].ref_cnt = 1  # corrupt: loading but still listed
    with pytest.raises(InvariantViolationError) as info:
        m.check_invariants()
    assert "evictable_iff_idle" in info.value.names


def test_check_invariants_catches_counter_drift() -> None:
    m = CPUOffloadingManager(4)
    stored(m, ["a"])
    m._num_evictable += 1
    with pytest.raises(InvariantViolationError, match="counters_match"):
        m.check_invariants()


def test_check_invariants_catches_a_reused_slot() -> None:
    m = CPUOffloadingManager(4)
    stored(m, ["a", "b"])
    m._blocks["b"].block_id = 0
    with pytest.raises(InvariantViolationError, match="slot_partition"):
        m.check_invariants()


def test_check_invariants_catches_a_record_the_policy_does_not_hold() -> None:
    m = CPUOffloadingManager(4, GENERIC_LRU)
    stored(m, ["a"])
    m._blocks["a"] = BlockStatus(0)
    m._blocks["a"].ref_cnt = 0
    with pytest.raises(InvariantViolationError) as info:
        m.check_invariants()
    assert "policy_tracks_blocks" in info.value.names or "lru_list_exact" in info.value.names


def test_check_invariants_catches_ref_below_minus_one() -> None:
    m = CPUOffloadingManager(4)
    m.prepare_store(["a"])
    m._blocks["a"].ref_cnt = -2
    with pytest.raises(InvariantViolationError, match="ref_at_least_minus_one"):
        m.check_invariants()


def test_eviction_cost_does_not_depend_on_pinned_blocks() -> None:
    """The protected set is consulted once per evictable block visited, never for pinned."""

    class CountingSet(frozenset[Any]):
        probes = 0

        def __contains__(self, key: object) -> bool:
            CountingSet.probes += 1
            return frozenset.__contains__(self, key)

    policy = LRUCachePolicy(1000)
    for i in range(1000):
        block = BlockStatus(i)
        policy.insert(i, block)
        block.ref_cnt = 0 if i >= 990 else 1  # 990 pinned, 10 idle
        if block.ref_cnt == 0:
            policy.mark_evictable(i)
    out = policy.evict(3, CountingSet({990, 991}))
    assert out is not None and [k for k, _ in out] == [992, 993, 994]
    assert CountingSet.probes == 5  # 2 protected skipped + 3 victims


# ---------------------------------------------------------------------- differential

KEYS = st.sampled_from(["a", "b", "c", "d", "e", "f"])
BATCH = st.lists(KEYS, max_size=4)
OPS = st.one_of(
    st.tuples(st.just("prepare_store"), BATCH),
    st.tuples(st.just("complete_store"), BATCH, st.booleans()),
    st.tuples(st.just("prepare_load"), BATCH),
    st.tuples(st.just("complete_load"), BATCH),
    st.tuples(st.just("touch"), BATCH),
    st.tuples(st.just("lookup"), KEYS),
    st.tuples(st.just("take_events")),
    st.tuples(st.just("reset_cache")),
)


def _outcome(m: Any, op: tuple[Any, ...]) -> object:
    name, *args = op
    try:
        return ("ok", getattr(m, name)(*args))
    except LifecycleError as error:
        return ("error", error.identity())


@given(st.integers(0, 4), st.booleans(), st.lists(OPS, max_size=30))
def test_impl_paths_match_the_model(num_blocks: int, events: bool, ops: list[Any]) -> None:
    sides: list[Any] = [
        ModelManager(num_blocks, "lru", events),
        CPUOffloadingManager(num_blocks, "lru", events),
        CPUOffloadingManager(num_blocks, GENERIC_LRU, events),
    ]
    for op in ops:
        outcomes = [_outcome(m, op) for m in sides]
        assert outcomes[1] == outcomes[0], op
        assert outcomes[2] == outcomes[0], op
        snaps = [m.snapshot() for m in sides]
        assert snaps[1] == snaps[0], op
        assert snaps[2] == snaps[0], op
        sides[1].check_invariants()
        sides[2].check_invariants()


def test_output_lists_are_not_shared_with_internal_state() -> None:
    m = CPUOffloadingManager(2)
    out = m.prepare_store(["a"])
    assert out == PrepareStoreOutput(["a"], [0], [])
    assert out is not None
    out.keys_to_store.append("zz")
    out.slot_ids.append(9)
    acted = m.complete_store(["a"])
    acted.append("zz")
    m.check_invariants()
    assert m.prepare_store(["b"]) == PrepareStoreOutput(["b"], [1], [])


def test_deep_copy_of_a_manager_is_independent() -> None:
    import copy

    from evictable.impl.manager import CPUOffloadingManager

    original = CPUOffloadingManager(4, policy="lru")
    original.prepare_store([b"a", b"b"])
    original.complete_store([b"a", b"b"])
    clone = copy.deepcopy(original)
    before = original.snapshot()
    clone.prepare_load([b"a"])
    assert original.snapshot() == before
    assert clone.snapshot() != before
    original.check_invariants()
    clone.check_invariants()


@pytest.mark.parametrize("policy", ["lru", "arc", GENERIC_LRU])
@pytest.mark.parametrize("copier", ["pickle", "deepcopy"])
def test_copies_of_a_large_manager_are_independent(policy: str, copier: str) -> None:
    import copy
    import pickle

    keys = [f"k{i}".encode() for i in range(3000)]  # a list deeper than the recursion limit
    original = CPUOffloadingManager(len(keys) + 8, policy=policy)
    original.prepare_store(keys)
    original.complete_store(keys)
    original.prepare_load(keys[:5])
    clone = pickle.loads(pickle.dumps(original)) if copier == "pickle" else copy.deepcopy(original)
    before = original.snapshot()
    assert clone.snapshot() == before
    clone.check_invariants()
    clone.complete_load(keys[:5])
    clone.prepare_store([f"n{i}".encode() for i in range(21)])
    clone.check_invariants()
    assert original.snapshot() == before
    original.check_invariants()
