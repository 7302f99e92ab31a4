"""The `sglang-0.5` profile (model/sglang05.py): SGLang 0.5's host tier as a spec."""

from __future__ import annotations

from typing import Any

import pytest

from evictable.model.errors import InvalidArgumentError
from evictable.model.invariants import check_snapshot
from evictable.model.lifecycle import CpuState
from evictable.model.manager import ModelManager
from evictable.model.sglang05 import HostLeafLru, Sglang05Manager
from evictable.model.types import OpaquePolicySnapshot, PrepareStoreOutput
from evictable.model.vllm033 import PROFILES
from evictable.proofs.base.contract import Contract, resolve
from evictable.proofs.base.cpu_contract import make_model


def leaves(m: Sglang05Manager) -> tuple[str, ...]:
    """The host leaves in eviction order, read from the snapshot."""
    policy = m.snapshot().policy
    assert isinstance(policy, OpaquePolicySnapshot) and policy.name == "sglang-lru"
    state: Any = policy.state
    assert state[1] == tuple(m.policy.order())
    return tuple(state[1])


def stored(m: Sglang05Manager, *keys: str) -> None:
    assert m.prepare_store(list(keys)) is not None
    m.complete_store(list(keys))


def test_profile_is_known_and_selected_by_the_contract() -> None:
    assert "sglang-0.5" in PROFILES
    contract = resolve(None, profile="sglang-0.5")
    assert contract.profile == "sglang-0.5" and "profile sglang-0.5" in contract.describe()
    assert type(make_model(contract, 2, "lru", False)) is Sglang05Manager
    assert type(make_model(Contract(), 2, "lru", False)) is ModelManager


def test_rejects_a_policy_other_than_lru() -> None:
    with pytest.raises(InvalidArgumentError):
        Sglang05Manager(2, "arc")
    with pytest.raises(InvalidArgumentError):
        HostLeafLru(-1)


def test_the_host_leaf_rule_evicts_only_ready_keys() -> None:
    m = Sglang05Manager(2)
    stored(m, "a")
    m.prepare_load(["a"])  # a is locked by its load: not a host leaf
    m.prepare_store(["b"])  # b's write is in flight: not a host leaf either
    assert m.prepare_store(["c"]) is None  # no free page, no host leaf: nothing changes
    assert {e.key for e in m.snapshot().blocks} == {"a", "b"}
    m.complete_load(["a"])
    out = m.prepare_store(["c"])
    assert out == PrepareStoreOutput(["c"], [0], ["a"])


def test_a_store_is_best_effort_in_order() -> None:
    m = Sglang05Manager(1)
    stored(m, "a")
    out = m.prepare_store(["b", "c"])  # b takes a's page; nothing is left for c
    assert out == PrepareStoreOutput(["b"], [0], ["a"])
    assert m.lookup("c").name == "MISS" and m.snapshot().num_pending == 1


def test_the_calls_own_keys_are_never_its_victims() -> None:
    m = Sglang05Manager(1)
    stored(m, "a")
    assert m.prepare_store(["a", "b"]) is None  # a is the call's own: b has no page


def test_recency_is_last_access_not_the_time_a_key_became_evictable() -> None:
    m = Sglang05Manager(2)
    m.prepare_store(["a", "b"])
    m.complete_store(["b"])
    m.complete_store(["a"])  # the seed would rank a most recent; SGLang ranks by creation
    assert leaves(m) == ("a", "b")
    seed = ModelManager(2)
    seed.prepare_store(["a", "b"])
    seed.complete_store(["b"])
    seed.complete_store(["a"])
    assert seed.snapshot().policy.evictable == ("b", "a")  # type: ignore[union-attr]


def test_touch_and_load_stamp_keys_in_any_state() -> None:
    m = Sglang05Manager(3)
    m.prepare_store(["a", "b", "c"])
    m.touch(["a", "zz", ["unhashable"]])  # a is pending: matched all the same; never raises
    m.complete_store(["a", "b", "c"])
    assert leaves(m) == ("b", "c", "a")
    m.touch(["b", "c"])  # last first: b ends most recent
    assert leaves(m) == ("a", "c", "b")
    m.prepare_load(["c", "a"])
    m.complete_load(["c", "a"])
    assert leaves(m) == ("b", "c", "a")


def test_a_failed_write_commits() -> None:
    m = Sglang05Manager(1)
    m.prepare_store(["a"])
    assert m.complete_store(["a"], success=False) == ["a"]
    assert {(e.key, e.state) for e in m.snapshot().blocks} == {("a", CpuState.READY)}


def test_host_pages_are_a_queue() -> None:
    m = Sglang05Manager(3)
    stored(m, "a", "b", "c")  # pages 0, 1, 2
    out = m.prepare_store(["d", "e"])  # evict a (page 0), then b (page 1)
    assert out == PrepareStoreOutput(["d", "e"], [0, 1], ["a", "b"])  # the seed: [1, 0]
    snap = m.snapshot()
    assert snap.free_stack == () and snap.high_water == 3 and check_snapshot(snap) == []


def test_reset_frees_every_page_in_order_and_no_events() -> None:
    m = Sglang05Manager(2, enable_events=True)
    stored(m, "a", "b")
    m.prepare_store(["c"])
    assert m.take_events() == []
    m.reset_cache()
    snap = m.snapshot()
    assert snap.blocks == frozenset() and snap.free_stack == (0, 1) and check_snapshot(snap) == []
    assert m.prepare_store(["x"]) == PrepareStoreOutput(["x"], [0], [])
