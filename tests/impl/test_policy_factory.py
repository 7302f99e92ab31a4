"""Tests of the policy registry (`impl.policies.factory`) and of third-party policies.

A third-party policy written against `CachePolicy` only (a list-based LRU, with the
base class's default `checkpoint`/`rollback`) must plug into `CPUOffloadingManager`,
behave like the model, and get the all-or-nothing guarantee when one of its hooks
raises.
"""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import threading
from collections.abc import Iterable, Set
from typing import Any

import pytest

from evictable.impl.block import BlockStatus
from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.policies.base import CachePolicy
from evictable.impl.policies.factory import (
    PolicyRegistry,
    builtin_class,
    create_policy,
    is_builtin,
    known_policies,
    policy_scope,
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


# ---------------------------------------------------------------------- policy_scope


class ScopedLRU(LRUCachePolicy):
    """A policy only ever made known through `policy_scope` (never registered)."""

    __slots__ = ()


class OtherScopedLRU(LRUCachePolicy):
    __slots__ = ()


def test_a_scoped_policy_is_known_inside_its_block_only() -> None:
    before = known_policies()
    with policy_scope({"scoped-lru-test": ScopedLRU}):
        assert known_policies() == sorted([*before, "scoped-lru-test"])
        assert type(create_policy("scoped-lru-test", 2)) is ScopedLRU
        m = CPUOffloadingManager(2, "scoped-lru-test", True)
    assert known_policies() == before
    with pytest.raises(InvalidArgumentError, match="unknown policy 'scoped-lru-test'"):
        create_policy("scoped-lru-test", 2)
    with pytest.raises(InvalidArgumentError, match="unknown policy 'scoped-lru-test'"):
        CPUOffloadingManager(2, "scoped-lru-test")
    # A manager built inside the scope keeps its policy: it resolved the name once.
    stored(m, ["a", "b"])
    assert m.prepare_store(["c"]).evicted_keys == ["a"]  # type: ignore[union-attr]
    for twin in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        assert twin.snapshot() == m.snapshot()
        twin.check_invariants()


def test_a_scope_is_left_behind_on_an_exception() -> None:
    before = known_policies()
    with pytest.raises(RuntimeError, match="inside"), policy_scope({"scoped-lru-test": ScopedLRU}):
        assert "scoped-lru-test" in known_policies()
        raise RuntimeError("inside")
    assert known_policies() == before


BAD_ENTRIES: list[tuple[Any, Any]] = [
    ("", ScopedLRU),
    ("a b", ScopedLRU),
    (3, ScopedLRU),
    (None, ScopedLRU),
    ("scoped-bad-test", object),
    ("scoped-bad-test", 3),
    ("scoped-bad-test", ScopedLRU(1)),
    ("scoped-bad-test", Abstract),
    ("lru", ScopedLRU),  # built in
    ("list-lru-test", ListLRU),  # registered, even to the same class
    ("list-lru-test", ScopedLRU),  # registered to another class
]


def _describe(value: object) -> str:
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, CachePolicy):
        return f"a {type(value).__name__} instance"
    return repr(value)


@pytest.mark.parametrize(("name", "cls"), BAD_ENTRIES, ids=_describe)
def test_a_scope_refuses_what_register_policy_refuses_and_changes_nothing(
    name: Any, cls: Any
) -> None:
    before = known_policies()
    extra = {"scoped-good-test": ScopedLRU, name: cls}  # a good entry first
    with pytest.raises(InvalidArgumentError), policy_scope(extra):
        pytest.fail("the block ran")
    assert known_policies() == before
    with pytest.raises(InvalidArgumentError):
        create_policy("scoped-good-test", 1)


def test_a_scope_takes_a_mapping() -> None:
    with pytest.raises(InvalidArgumentError, match="mapping"), policy_scope([]):  # type: ignore[arg-type]
        pytest.fail("the block ran")


def test_scopes_nest() -> None:
    before = known_policies()
    with policy_scope({"scoped-outer-test": ScopedLRU}):
        with policy_scope({"scoped-inner-test": OtherScopedLRU, "scoped-outer-test": ScopedLRU}):
            assert {"scoped-outer-test", "scoped-inner-test"} <= set(known_policies())
            assert type(create_policy("scoped-inner-test", 1)) is OtherScopedLRU
        assert "scoped-inner-test" not in known_policies()
        assert type(create_policy("scoped-outer-test", 1)) is ScopedLRU
        # An inner scope may not rebind an outer name to another class.
        with (
            pytest.raises(InvalidArgumentError, match="already scoped"),
            policy_scope({"scoped-outer-test": OtherScopedLRU}),
        ):
            pytest.fail("the block ran")
        assert type(create_policy("scoped-outer-test", 1)) is ScopedLRU
    assert known_policies() == before


def test_a_scoped_name_cannot_be_registered() -> None:
    with policy_scope({"scoped-lru-test": ScopedLRU}):
        for cls in (ScopedLRU, OtherScopedLRU):
            with pytest.raises(InvalidArgumentError, match="policy scope"):
                register_policy("scoped-lru-test", cls)
    assert "scoped-lru-test" not in known_policies()


def test_a_scope_is_seen_by_its_own_thread_only() -> None:
    seen: list[list[str]] = []
    with policy_scope({"scoped-lru-test": ScopedLRU}):
        thread = threading.Thread(target=lambda: seen.append(known_policies()))
        thread.start()
        thread.join()
        assert "scoped-lru-test" in known_policies()
    assert seen and "scoped-lru-test" not in seen[0]


def test_a_fresh_registry_is_independent_of_the_default_one() -> None:
    before = known_policies()
    registry = PolicyRegistry()
    assert registry.known() == ["arc", "lru"]
    registry.register("fresh-registry-test", ScopedLRU)
    registry.register("fresh-registry-test", ScopedLRU)  # the same again: a no-op
    with pytest.raises(InvalidArgumentError, match="already registered"):
        registry.register("fresh-registry-test", OtherScopedLRU)
    assert type(registry.create("fresh-registry-test", 1)) is ScopedLRU
    assert registry.lookup("fresh-registry-test") is ScopedLRU
    assert registry.lookup("list-lru-test") is None
    with registry.scope({"fresh-scope-test": OtherScopedLRU}):
        assert "fresh-scope-test" in registry.known()
        assert "fresh-scope-test" not in known_policies()
    assert registry.known() == ["arc", "fresh-registry-test", "lru"]
    assert known_policies() == before


def test_the_seeded_bugs_register_nothing() -> None:
    """Importing every control and building and running every seeded bug leaves the
    registry as it was (a fresh interpreter: the import must register nothing)."""
    script = """
from evictable.impl.block_pool import BlockPool
from evictable.impl.free_queue import KVCacheBlock
from evictable.impl.policies.factory import known_policies

before = known_policies()
import evictable.proofs.controls
from evictable.proofs.controls import encodings, scanners
from evictable.proofs.controls.catalogue import CATALOGUE

assert known_policies() == before, known_policies()
def run(bug):
    if bug.target == "manager":
        m = bug.factory(3, bug.policy, True)
        m.prepare_store([b"a", b"b"])
        m.complete_store([b"a", b"b"])
        m.touch([b"a"])
        m.prepare_store([b"c", b"d"])
        m.take_events()
    elif bug.target == "queue":
        bug.factory([KVCacheBlock(i) for i in range(3)]).popleft()
    elif bug.target == "pool":
        bug.factory(3).get_new_blocks(1)
    else:
        bug.factory(BlockPool(3), 2, 0).step()  # capacity 0: no walk that never ends

for bug in CATALOGUE:
    try:
        run(bug)
    except Exception:  # a seeded bug may well fail
        pass
assert known_policies() == before, known_policies()
print("unchanged")
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "unchanged"
