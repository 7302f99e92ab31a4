"""Unit tests of the two LRU policies: `impl.policies.lru.LRUCachePolicy` and `model.lru.ModelLru`.

Both keep exactly the idle blocks in a list, least recent first; the manager tells
them when a block enters or leaves ref 0. The same behaviours are checked on each.
"""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

from evictable.impl.block import BlockStatus
from evictable.impl.policies.lru import LRUCachePolicy
from evictable.model.errors import InvalidArgumentError, InvariantViolationError
from evictable.model.lru import ModelLru
from evictable.model.types import LruPolicySnapshot


def no_ref(key: Any) -> int | None:
    return 0


def impl_with(ready: list[Any], pinned: tuple[Any, ...] = ()) -> LRUCachePolicy:
    """An LRU holding `ready` (idle, in this order) and `pinned` (ref 1) keys."""
    policy = LRUCachePolicy(len(ready) + len(pinned))
    for i, key in enumerate([*pinned, *ready]):
        block = BlockStatus(i)
        policy.insert(key, block)
        block.ref_cnt = 1 if key in pinned else 0
        if key not in pinned:
            policy.mark_evictable(key)
    return policy


def model_with(ready: list[Any]) -> ModelLru:
    policy = ModelLru(len(ready))
    for key in ready:
        policy.insert(key)
        policy.mark_evictable(key)
    return policy


# ---------------------------------------------------------------------- impl


def test_mark_evictable_appends_at_recent_end() -> None:
    policy = impl_with(["a", "b", "c"])
    assert policy.snapshot() == LruPolicySnapshot(("a", "b", "c"))


def test_mark_non_evictable_removes() -> None:
    policy = impl_with(["a", "b", "c"])
    block = policy.get("b")
    assert block is not None
    block.ref_cnt = 1
    policy.mark_non_evictable("b")
    assert policy.snapshot() == LruPolicySnapshot(("a", "c"))
    assert policy.get("b") is block
    policy.check_invariants()


def test_evict_takes_least_recent_skipping_protected() -> None:
    policy = impl_with(["a", "b", "c", "d"], pinned=("p",))
    out = policy.evict(2, {"a", "c"})
    assert out is not None
    assert [(k, b.block_id) for k, b in out] == [("b", 2), ("d", 4)]
    assert policy.snapshot() == LruPolicySnapshot(("a", "c"))
    assert policy.get("b") is None and policy.get("p") is not None
    policy.check_invariants()


def test_evict_returns_none_without_change_when_short() -> None:
    policy = impl_with(["a", "b"], pinned=("p", "q"))
    before = (dict(policy.blocks), list(policy.listed()))
    assert policy.evict(3, set()) is None
    assert policy.evict(2, {"a"}) is None
    assert (policy.blocks, list(policy.listed())) == before
    assert policy.evict(0, set()) == []


def test_evict_failure_restores_interleaved_order() -> None:
    policy = impl_with(["a", "b", "c", "d", "e"])
    assert policy.evict(3, {"b", "d", "e"}) is None
    assert policy.snapshot() == LruPolicySnapshot(("a", "b", "c", "d", "e"))
    out = policy.evict(2, {"b", "d"})
    assert out is not None and [k for k, _ in out] == ["a", "c"]
    assert policy.snapshot() == LruPolicySnapshot(("b", "d", "e"))
    policy.check_invariants()


@pytest.mark.parametrize("n", [-1, True, 1.0, None])
def test_rejects_bad_evict_count(n: Any) -> None:
    policy = impl_with(["a"])
    with pytest.raises(InvalidArgumentError):
        policy.evict(n, set())
    assert policy.snapshot() == LruPolicySnapshot(("a",))


def test_touch_walks_in_reverse_and_ignores_others() -> None:
    policy = impl_with(["a", "b", "c", "d"], pinned=("p",))
    policy.touch(["b", "p", "zz", "a"])
    assert policy.snapshot() == LruPolicySnapshot(("c", "d", "a", "b"))


@pytest.mark.parametrize(
    "keys", [["b", ["x"], "a"], ("b", {}, "a"), None, 5, "ab", b"ab", {"a": 1}], ids=repr
)
def test_touch_never_raises(keys: Any) -> None:
    policy = impl_with(["a", "b", "c"])
    policy.touch(keys)
    moved = isinstance(keys, list | tuple)
    assert policy.snapshot() == LruPolicySnapshot(("c", "a", "b") if moved else ("a", "b", "c"))


def test_rejects_broken_hook_preconditions() -> None:
    policy = impl_with(["a"], pinned=("p",))
    before = policy.checkpoint()
    with pytest.raises(InvalidArgumentError):
        policy.insert("a", BlockStatus(9))
    with pytest.raises(InvalidArgumentError):
        policy.remove("zz")
    with pytest.raises(InvalidArgumentError):
        policy.remove("a")  # evictable, not pending
    with pytest.raises(InvalidArgumentError):
        policy.mark_evictable("p")  # ref 1
    with pytest.raises(InvalidArgumentError):
        policy.mark_evictable("a")  # already listed
    with pytest.raises(InvalidArgumentError):
        policy.mark_non_evictable("p")
    assert policy.checkpoint() == before


def test_checkpoint_and_rollback_restore_in_place() -> None:
    policy = impl_with(["a", "b", "c"])
    blocks, ring = policy.blocks, policy.ring
    saved = policy.checkpoint()
    evicted = policy.evict(2, set())
    policy.touch(["c"])
    policy.rollback(saved)
    assert policy.blocks is blocks and policy.ring is ring
    assert evicted is not None and all(b.prev is not None for _, b in evicted)
    assert policy.snapshot() == LruPolicySnapshot(("a", "b", "c"))
    policy.check_invariants()
    with pytest.raises(InvalidArgumentError):
        policy.rollback("not a token")


def test_clear_empties_in_place() -> None:
    policy = impl_with(["a"], pinned=("p",))
    blocks = policy.blocks
    policy.clear()
    assert policy.blocks is blocks and not blocks and not list(policy.listed())
    assert policy.ring.next is policy.ring and policy.ring.prev is policy.ring


def test_check_invariants_catches_a_pinned_listed_block() -> None:
    policy = impl_with(["a", "b"])
    block = policy.get("a")
    assert block is not None
    block.ref_cnt = 2
    with pytest.raises(InvariantViolationError, match="evictable_iff_idle"):
        policy.check_invariants()


def test_check_invariants_catches_an_idle_unlisted_block() -> None:
    policy = impl_with(["a"], pinned=("p",))
    block = policy.get("p")
    assert block is not None
    block.ref_cnt = 0
    with pytest.raises(InvariantViolationError, match="evictable_iff_idle"):
        policy.check_invariants()


def test_check_invariants_catches_a_stale_record() -> None:
    policy = impl_with(["a"])
    policy.blocks["a"] = BlockStatus(0)
    with pytest.raises(InvariantViolationError, match="lru_list_exact"):
        policy.check_invariants()


# ---------------------------------------------------------------------- model


def test_model_evict_takes_least_recent_skipping_protected() -> None:
    policy = model_with(["a", "b", "c", "d"])
    assert policy.evict(2, {"a", "c"}, no_ref) == ["b", "d"]
    assert policy.snapshot() == LruPolicySnapshot(("a", "c"))


def test_model_evict_returns_none_without_change_when_short() -> None:
    policy = model_with(["a", "b"])
    assert policy.evict(2, {"b"}, no_ref) is None
    assert policy.snapshot() == LruPolicySnapshot(("a", "b"))


def test_model_touch_walks_in_reverse() -> None:
    policy = model_with(["a", "b", "c", "d"])
    policy.touch(["b", "zz", "a"], no_ref)
    assert policy.snapshot() == LruPolicySnapshot(("c", "d", "a", "b"))


def test_model_hooks_move_keys_in_and_out() -> None:
    policy = model_with(["a", "b"])
    policy.mark_non_evictable("a")
    policy.mark_evictable("a")
    assert policy.snapshot() == LruPolicySnapshot(("b", "a"))
    policy.clear()
    assert policy.snapshot() == LruPolicySnapshot(())


def test_model_rejects_broken_hook_preconditions() -> None:
    policy = model_with(["a"])
    with pytest.raises(InvalidArgumentError):
        policy.mark_evictable("a")
    with pytest.raises(InvalidArgumentError):
        policy.mark_non_evictable("zz")
    with pytest.raises(InvalidArgumentError):
        policy.remove("a")
    with pytest.raises(InvalidArgumentError):
        ModelLru(-1)
    assert policy.snapshot() == LruPolicySnapshot(("a",))


def test_evicted_and_cleared_records_keep_no_links() -> None:
    policy = impl_with(["a", "b", "c"])
    listed = list(policy.listed())
    out = policy.evict(1, set())
    assert out is not None and out[0][1].prev is None and out[0][1].next is None
    policy.clear()
    assert all(b.prev is None and b.next is None for b in listed)


def test_touch_of_the_most_recent_key_changes_nothing() -> None:
    policy = impl_with(["a", "b"])
    policy.touch(["b", "zz", ["unhashable"]])  # type: ignore[list-item]
    assert policy.snapshot() == LruPolicySnapshot(("a", "b"))
    policy.check_invariants()


def test_rejects_insert_of_a_listed_record() -> None:
    policy = impl_with(["a"])
    listed = policy.get("a")
    assert listed is not None
    with pytest.raises(InvalidArgumentError):
        policy.insert("b", listed)
    assert policy.get("b") is None and listed.key == "a"


def test_check_invariants_catches_a_broken_link() -> None:
    policy = impl_with(["a", "b", "c"])
    b = policy.get("b")
    assert b is not None and b.next is not None
    b.next.prev = policy.ring  # c no longer points back at b
    with pytest.raises(InvariantViolationError, match="lru_list_exact"):
        policy.check_invariants()


def test_check_invariants_catches_a_cycle() -> None:
    policy = impl_with(["a", "b"])
    a, b = policy.get("a"), policy.get("b")
    assert a is not None and b is not None
    b.next, a.prev = a, b  # a <-> b closed on itself, the sentinel never reached
    with pytest.raises(InvariantViolationError, match="lru_list_exact"):
        policy.check_invariants()


def test_check_invariants_catches_a_misfiled_record() -> None:
    policy = impl_with(["a", "b"])
    block = policy.get("a")
    assert block is not None
    block.key = "zz"
    with pytest.raises(InvariantViolationError, match="lru_list_exact"):
        policy.check_invariants()


@pytest.mark.parametrize("copier", ["pickle", "deepcopy"])
def test_copies_of_a_long_list_are_independent_and_do_not_recurse(copier: str) -> None:
    keys = [f"k{i}" for i in range(5000)]  # far deeper than the recursion limit
    policy = impl_with(keys, pinned=("p",))
    clone = pickle.loads(pickle.dumps(policy)) if copier == "pickle" else copy.deepcopy(policy)
    assert clone.snapshot() == policy.snapshot()
    clone.check_invariants()
    assert clone.evict(2, set()) is not None
    assert policy.snapshot().evictable[:2] == ("k0", "k1")
    policy.check_invariants()
