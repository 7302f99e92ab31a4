"""Tests of the policy registry (`impl.policies.factory`) and of third-party policies.

A third-party policy written against `CachePolicy` only (a list-based LRU, with the
base class's default `checkpoint`/`rollback`) must plug into `CPUOffloadingManager`,
behave like the model, and get the all-or-nothing guarantee when one of its hooks
raises.
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from typing import Any

import pytest

from evictable.impl.block import BlockStatus
from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.policies.base import CachePolicy
from evictable.impl.policies.factory import (
    builtin_class,
    create_policy,
    is_builtin,
    known_policies,
    register_policy,
)
from evictable.impl.policies.lru import LRUCachePolicy
from evictable.model.errors import InvalidArgumentError
from evictable.model.manager import ModelManager
from evictable.model.types import LruPolicySnapshot
from tests.model.test_model_manager import stored


class ListLRU(CachePolicy):
    """A third-party LRU over a plain list (no fast path, default checkpoint)."""

    name = "list-lru"

    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.table: dict[Any, BlockStatus] = {}
        self.order: list[Any] = []

    def get(self, key: Any) -> BlockStatus | None:
        return self.table.get(key)

    def insert(self, key: Any, block: BlockStatus) -> None:
        self.table[key] = block

    def remove(self, key: Any) -> None:
        del self.table[key]

    def mark_evictable(self, key: Any) -> None:
        self.order.append(key)

    def mark_non_evictable(self, key: Any) -> None:
        self.order.remove(key)

    def touch(self, keys: Iterable[Any]) -> None:
        for key in reversed(list(keys)):
            if key in self.order:
                self.order.remove(key)
                self.order.append(key)

    def evict(self, n: int, protected: Set[Any]) -> list[tuple[Any, BlockStatus]] | None:
        victims = [k for k in self.order if k not in protected][:n]
        if len(victims) < n:
            return None
        for key in victims:
            self.order.remove(key)
        return [(key, self.table.pop(key)) for key in victims]

    def clear(self) -> None:
        self.table.clear()
        self.order.clear()

    def snapshot(self) -> LruPolicySnapshot:
        return LruPolicySnapshot(tuple(self.order))


class FlakyListLRU(ListLRU):
    """ListLRU whose second `mark_non_evictable` since `arm()` raises (after acting)."""

    armed = False
    calls = 0

    def mark_non_evictable(self, key: Any) -> None:
        super().mark_non_evictable(key)
        if FlakyListLRU.armed:
            FlakyListLRU.calls += 1
            if FlakyListLRU.calls == 2:
                raise RuntimeError("flaky hook")


register_policy("list-lru-test", ListLRU)
register_policy("flaky-list-lru-test", FlakyListLRU)


class Abstract(CachePolicy):
    """Misses every abstract method."""


def test_create_policy_builds_the_builtin_lru() -> None:
    policy = create_policy("lru", 8)
    assert type(policy) is LRUCachePolicy
    assert policy.cache_capacity == 8
    assert builtin_class("lru") is LRUCachePolicy
    assert is_builtin(LRUCachePolicy) and not is_builtin(ListLRU)
    assert builtin_class("list-lru-test") is None


def test_known_policies_lists_builtin_and_registered_names() -> None:
    names = known_policies()
    assert names == sorted(names)
    assert {"lru", "list-lru-test", "flaky-list-lru-test"} <= set(names)


def test_rejects_unknown_policy_listing_known_names() -> None:
    with pytest.raises(InvalidArgumentError) as info:
        create_policy("mru", 4)
    message = str(info.value)
    assert "'mru'" in message
    for name in known_policies():
        assert name in message


@pytest.mark.parametrize("capacity", [-1, True, 2.0, "3"])
def test_rejects_bad_capacity(capacity: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="capacity"):
        create_policy("lru", capacity)


@pytest.mark.parametrize("name", ["", "a b", "\t", None, 3, b"lru"], ids=repr)
def test_rejects_bad_policy_names(name: Any) -> None:
    before = known_policies()
    with pytest.raises(InvalidArgumentError):
        register_policy(name, ListLRU)
    assert known_policies() == before


@pytest.mark.parametrize("cls", [object, dict, 3, None, Abstract], ids=repr)
def test_rejects_classes_that_are_not_concrete_policies(cls: Any) -> None:
    before = known_policies()
    with pytest.raises(InvalidArgumentError):
        register_policy("bad-class-test", cls)
    assert known_policies() == before


def test_rejects_replacing_a_builtin_or_registered_name() -> None:
    with pytest.raises(InvalidArgumentError, match="built in"):
        register_policy("lru", ListLRU)
    with pytest.raises(InvalidArgumentError, match="already registered"):
        register_policy("list-lru-test", FlakyListLRU)
    register_policy("list-lru-test", ListLRU)  # same class again: a no-op
    assert create_policy("list-lru-test", 2).__class__ is ListLRU


def test_third_party_policy_behaves_like_the_model() -> None:
    ops: list[tuple[str, tuple[Any, ...]]] = [
        ("prepare_store", (["a", "b", "c"],)),
        ("complete_store", (["c", "a", "b"],)),
        ("prepare_load", (["a"],)),
        ("touch", (["b", "c"],)),
        ("prepare_store", (["d", "e"],)),
        ("complete_load", (["a"],)),
        ("complete_store", (["d", "e"], False)),
        ("prepare_store", (["f", "b"],)),
        ("take_events", ()),
    ]
    model = ModelManager(3, "lru", True)
    impl = CPUOffloadingManager(3, "list-lru-test", True)
    for name, args in ops:
        assert getattr(impl, name)(*args) == getattr(model, name)(*args), name
        assert impl.snapshot() == model.snapshot(), name
        impl.check_invariants()


def test_third_party_hook_fault_is_undone_with_the_default_checkpoint() -> None:
    m = CPUOffloadingManager(4, "flaky-list-lru-test", True)
    stored(m, ["a", "b", "c"])
    before = m.snapshot()
    FlakyListLRU.armed, FlakyListLRU.calls = True, 0
    try:
        with pytest.raises(RuntimeError, match="flaky hook"):
            m.prepare_load(["c", "a", "b"])
    finally:
        FlakyListLRU.armed = False
    assert m.snapshot() == before
    m.check_invariants()
    # The records are still shared after the rollback: loads keep working.
    assert m.prepare_load(["c", "a", "b"]) == [2, 0, 1]
    m.complete_load(["a"])
    assert m.snapshot().policy == LruPolicySnapshot(("a",))
    m.check_invariants()


def test_default_checkpoint_shares_block_records() -> None:
    policy = ListLRU(2)
    block = BlockStatus(0)
    policy.insert("a", block)
    saved = policy.checkpoint()
    policy.remove("a")
    policy.rollback(saved)
    assert policy.get("a") is block
