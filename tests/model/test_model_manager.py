"""Scenario and bad-input tests of the CPU manager (docs/semantics.md, "The CPU manager").

Every test runs against the model (`ModelManager`, the executable spec) and, so that
the same exact expectations pin the implementation too, against
`CPUOffloadingManager` on its fast path ("lru") and on its generic path (an
`LRUCachePolicy` subclass, which the manager drives through the policy's methods).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.policies.factory import register_policy
from evictable.impl.policies.lru import LRUCachePolicy
from evictable.model.errors import (
    BlockNotFoundError,
    BlockNotReadyError,
    DuplicateKeysError,
    InvalidArgumentError,
    LifecycleError,
    NotLoadingError,
)
from evictable.model.lifecycle import CpuState
from evictable.model.manager import ModelManager
from evictable.model.types import (
    BlockEntry,
    LookupResult,
    LruPolicySnapshot,
    OffloadingEvent,
    PrepareStoreOutput,
)


class GenericPathLRU(LRUCachePolicy):
    """Exactly the LRU, but not the exact class: the manager takes its generic path."""


GENERIC_LRU = "lru-generic-path"
register_policy(GENERIC_LRU, GenericPathLRU)

Factory = Callable[..., Any]

FACTORIES: dict[str, Factory] = {
    "model": lambda n, events=False: ModelManager(n, "lru", events),
    "impl": lambda n, events=False: CPUOffloadingManager(n, "lru", events),
    "impl-generic": lambda n, events=False: CPUOffloadingManager(n, GENERIC_LRU, events),
}


@pytest.fixture(params=sorted(FACTORIES))
def make(request: pytest.FixtureRequest) -> Factory:
    return FACTORIES[request.param]


def stored(m: Any, keys: list[Any]) -> PrepareStoreOutput:
    """prepare_store + complete_store(success) of `keys`; returns the prepare output."""
    out: PrepareStoreOutput | None = m.prepare_store(keys)
    assert out is not None
    m.complete_store(keys)
    return out


def evictable(m: Any) -> tuple[Any, ...]:
    policy = m.snapshot().policy
    assert isinstance(policy, LruPolicySnapshot)
    return policy.evictable


def entry(m: Any, key: Any) -> BlockEntry:
    matches: list[BlockEntry] = [e for e in m.snapshot().blocks if e.key == key]
    assert len(matches) == 1, f"{key!r} not resident"
    return matches[0]


def check(m: Any) -> None:
    if hasattr(m, "check_invariants"):
        m.check_invariants()


# ---------------------------------------------------------------------- stores and slots


def test_store_allocates_fresh_slots_ascending(make: Factory) -> None:
    m = make(4)
    assert m.prepare_store(["a", "b", "c"]) == PrepareStoreOutput(["a", "b", "c"], [0, 1, 2], [])
    snap = m.snapshot()
    assert snap.high_water == 3
    assert snap.free_stack == ()
    assert snap.blocks == frozenset(
        BlockEntry(k, CpuState.PENDING, -1, s) for k, s in (("a", 0), ("b", 1), ("c", 2))
    )
    assert (m.num_pending, m.num_evictable) == (3, 0)
    assert evictable(m) == ()
    check(m)


def test_complete_store_makes_keys_evictable_in_input_order(make: Factory) -> None:
    m = make(4)
    m.prepare_store(["a", "b", "c"])
    assert m.complete_store(["c", "a", "b"]) == ["c", "a", "b"]
    assert evictable(m) == ("c", "a", "b")
    assert (m.num_pending, m.num_evictable) == (0, 3)
    assert entry(m, "a") == BlockEntry("a", CpuState.READY, 0, 0)
    check(m)


def test_victim_slots_are_reused_lifo(make: Factory) -> None:
    m = make(4, True)
    assert stored(m, ["k0", "k1", "k2", "k3"]).slot_ids == [0, 1, 2, 3]
    m.touch(["k2", "k1", "k0", "k3"])  # LRU order now k3, k0, k1, k2 (first key most recent)
    assert evictable(m) == ("k3", "k0", "k1", "k2")
    out = m.prepare_store(["x", "y", "z"])
    # Victims k3, k0, k1 free slots [3, 0, 1] in victim order; reuse pops LIFO: [1, 0, 3].
    assert out == PrepareStoreOutput(["x", "y", "z"], [1, 0, 3], ["k3", "k0", "k1"])
    assert m.snapshot().free_stack == ()
    assert m.take_events() == [
        OffloadingEvent(("k0", "k1", "k2", "k3"), removed=False),
        OffloadingEvent(("k3", "k0", "k1"), removed=True),
    ]
    check(m)


def test_fresh_slots_come_before_freed_ones(make: Factory) -> None:
    m = make(4)
    m.prepare_store(["a", "b"])
    m.complete_store(["b", "a"], success=False)  # frees 1 then 0: stack [1, 0]
    assert m.snapshot().free_stack == (1, 0)
    out = m.prepare_store(["c", "d", "e", "f"])
    assert out == PrepareStoreOutput(["c", "d", "e", "f"], [2, 3, 0, 1], [])
    assert m.snapshot().high_water == 4
    check(m)


def test_prepare_store_keeps_input_order_and_skips_resident_keys(make: Factory) -> None:
    m = make(8)
    stored(m, ["b"])
    m.prepare_store(["d"])
    out = m.prepare_store(["c", "b", "a", "d"])
    assert out == PrepareStoreOutput(["c", "a"], [2, 3], [])
    check(m)


def test_prepare_store_never_evicts_an_input_key(make: Factory) -> None:
    m = make(2, True)
    stored(m, ["a", "b"])  # LRU: a, b
    out = m.prepare_store(["a", "c"])  # a is protected although least recent
    assert out == PrepareStoreOutput(["c"], [1], ["b"])
    assert evictable(m) == ("a",)
    assert m.take_events()[-1] == OffloadingEvent(("b",), removed=True)
    check(m)


def test_prepare_store_evicts_least_recent_first(make: Factory) -> None:
    m = make(3)
    stored(m, ["a", "b", "c"])
    m.prepare_load(["a"])
    m.complete_load(["a"])  # a became evictable again: most recent
    assert evictable(m) == ("b", "c", "a")
    out = m.prepare_store(["d", "e"])
    assert out == PrepareStoreOutput(["d", "e"], [2, 1], ["b", "c"])
    check(m)


def test_prepare_store_returns_none_when_victims_are_lacking(make: Factory) -> None:
    m = make(2, True)
    stored(m, ["a", "b"])
    m.prepare_load(["a"])  # a pinned: only b can go
    before = m.snapshot()
    assert m.prepare_store(["c", "d"]) is None
    assert m.prepare_store(["b", "c", "d"]) is None  # b protected, a pinned
    assert m.snapshot() == before
    check(m)


def test_prepare_store_returns_none_when_only_pending_blocks(make: Factory) -> None:
    m = make(2)
    m.prepare_store(["a", "b"])
    before = m.snapshot()
    assert m.prepare_store(["c"]) is None
    assert m.snapshot() == before


def test_empty_store_with_no_free_space_is_empty_output(make: Factory) -> None:
    m = make(2)
    m.prepare_store(["a", "b"])  # full, nothing evictable
    before = m.snapshot()
    assert m.prepare_store([]) == PrepareStoreOutput([], [], [])
    assert m.prepare_store(["b", "a"]) == PrepareStoreOutput([], [], [])
    assert m.snapshot() == before
    z = make(0)
    assert z.prepare_store([]) == PrepareStoreOutput([], [], [])
    assert z.prepare_store(["a"]) is None


def test_failed_store_frees_slots_in_input_order_without_event(make: Factory) -> None:
    m = make(3, True)
    m.prepare_store(["a", "b", "c"])
    assert m.complete_store(["c", "x", "a"], success=False) == ["c", "a"]
    snap = m.snapshot()
    assert snap.free_stack == (2, 0)
    assert {e.key for e in snap.blocks} == {"b"}
    assert (m.num_pending, m.num_evictable) == (1, 0)
    assert m.take_events() == []
    assert m.prepare_store(["d", "e"]) == PrepareStoreOutput(["d", "e"], [0, 2], [])
    check(m)


def test_complete_store_ignores_keys_that_are_not_pending(make: Factory) -> None:
    m = make(4, True)
    stored(m, ["a"])
    m.prepare_store(["b"])
    assert m.complete_store(["a", "zz", "b"]) == ["b"]
    assert m.complete_store(["a", "b"]) == []
    assert m.take_events() == [
        OffloadingEvent(("a",), removed=False),
        OffloadingEvent(("b",), removed=False),
    ]
    check(m)


# ---------------------------------------------------------------------- loads


def test_prepare_load_pins_and_returns_slots_in_key_order(make: Factory) -> None:
    m = make(4)
    stored(m, ["a", "b", "c"])
    assert m.prepare_load(["c", "a"]) == [2, 0]
    assert m.prepare_load(["a"]) == [0]
    assert entry(m, "a") == BlockEntry("a", CpuState.LOADING, 2, 0)
    assert entry(m, "c") == BlockEntry("c", CpuState.LOADING, 1, 2)
    assert evictable(m) == ("b",)
    assert m.num_evictable == 1
    check(m)


def test_complete_load_returns_blocks_to_the_recent_end_in_key_order(make: Factory) -> None:
    m = make(4)
    stored(m, ["a", "b", "c", "d"])
    m.prepare_load(["a", "b", "c"])
    m.prepare_load(["b"])
    m.complete_load(["c", "b", "a"])  # b still loading (ref 1)
    assert evictable(m) == ("d", "c", "a")
    assert entry(m, "b").ref_cnt == 1
    m.complete_load(["b"])
    assert evictable(m) == ("d", "c", "a", "b")
    assert m.num_evictable == 4
    check(m)


def test_lookup_reports_state_without_changing_anything(make: Factory) -> None:
    m = make(4)
    stored(m, ["r", "l"])
    m.prepare_store(["p"])
    m.prepare_load(["l"])
    before = m.snapshot()
    assert m.lookup("r") is LookupResult.HIT
    assert m.lookup("l") is LookupResult.HIT
    assert m.lookup("p") is LookupResult.HIT_PENDING
    assert m.lookup("nope") is LookupResult.MISS
    assert m.snapshot() == before


# ---------------------------------------------------------------------- touch, reset, events


def test_touch_walks_keys_in_reverse(make: Factory) -> None:
    m = make(4)
    stored(m, ["a", "b", "c", "d"])
    m.touch(["b", "a"])
    assert evictable(m) == ("c", "d", "a", "b")
    check(m)


def test_touch_ignores_pending_loading_and_absent_keys(make: Factory) -> None:
    m = make(4)
    stored(m, ["a", "b"])
    m.prepare_store(["p"])
    m.prepare_load(["a"])
    m.touch(["b", "p", "a", "zz"])
    assert evictable(m) == ("b",)
    m.complete_load(["a"])
    assert evictable(m) == ("b", "a")
    m.touch(["b", "b", "a"])  # duplicates are fine in a hint: the first occurrence wins
    assert evictable(m) == ("a", "b")
    check(m)


@pytest.mark.parametrize(
    "hint",
    [None, 5, "ab", b"ab", bytearray(b"ab"), {"a": 1}, [["unhashable"], "a"], ({}, "a"), {"a"}],
    ids=repr,
)
def test_touch_never_raises(make: Factory, hint: Any) -> None:
    m = make(2)
    stored(m, ["a", "b"])
    m.touch(hint)
    expected = ("b", "a") if isinstance(hint, list | tuple | set) else ("a", "b")
    assert evictable(m) == expected
    check(m)


def test_reset_cache_frees_everything_and_keeps_events(make: Factory) -> None:
    m = make(3, True)
    stored(m, ["a", "b"])
    m.prepare_store(["c"])
    m.prepare_load(["a"])
    m.reset_cache()
    snap = m.snapshot()
    assert snap.blocks == frozenset()
    assert (snap.free_stack, snap.high_water) == ((), 0)
    assert (m.num_evictable, m.num_pending) == (0, 0)
    assert evictable(m) == ()
    assert snap.pending_events == (OffloadingEvent(("a", "b"), removed=False),)
    assert m.lookup("a") is LookupResult.MISS
    assert m.prepare_store(["x", "y"]) == PrepareStoreOutput(["x", "y"], [0, 1], [])
    check(m)


def test_events_are_off_by_default(make: Factory) -> None:
    m = make(1)
    stored(m, ["a"])
    m.prepare_store(["b"])
    assert m.take_events() == []
    assert m.snapshot().pending_events == ()


def test_take_events_drains_the_buffer(make: Factory) -> None:
    m = make(1, True)
    stored(m, ["a"])
    assert m.take_events() == [OffloadingEvent(("a",), removed=False)]
    assert m.take_events() == []


# ---------------------------------------------------------------------- bad input


def assert_rejected(
    m: Any,
    call: Callable[[], object],
    error: type[LifecycleError],
    keys: tuple[Any, ...] = (),
    mentions: tuple[str, ...] = (),
) -> LifecycleError:
    """`call` raises exactly `error` naming `keys`, and `m` is unchanged."""
    before = m.snapshot()
    with pytest.raises(error) as info:
        call()
    assert type(info.value) is error
    assert info.value.keys == keys
    for key in keys:
        assert repr(key) in str(info.value)
    for text in mentions:
        assert text in str(info.value)
    assert m.snapshot() == before
    check(m)
    return info.value


@pytest.mark.parametrize("num_blocks", [-1, 1.5, "4", True, False, None, 2**0.5])
def test_rejects_bad_num_blocks(make: Factory, num_blocks: Any) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        make(num_blocks)
    assert "num_blocks" in str(info.value)
    assert info.value.keys == ()


@pytest.mark.parametrize("cls", [ModelManager, CPUOffloadingManager])
def test_rejects_unknown_policy_listing_known_names(cls: Any) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        cls(4, "mru")
    assert "'mru'" in str(info.value)
    assert "lru" in str(info.value)
    with pytest.raises(InvalidArgumentError):
        cls(4, None)


@pytest.mark.parametrize("cls", [ModelManager, CPUOffloadingManager])
def test_rejects_non_bool_enable_events(cls: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="enable_events"):
        cls(4, "lru", 1)


METHODS: dict[str, Callable[[Any, Any], object]] = {
    "prepare_store": lambda m, ks: m.prepare_store(ks),
    "complete_store": lambda m, ks: m.complete_store(ks),
    "complete_store_failed": lambda m, ks: m.complete_store(ks, success=False),
    "prepare_load": lambda m, ks: m.prepare_load(ks),
    "complete_load": lambda m, ks: m.complete_load(ks),
}


def loaded(make: Factory) -> Any:
    """A manager with a ready key `r`, a loading key `l` and a pending key `p`."""
    m = make(4, True)
    stored(m, ["r", "l"])
    m.prepare_store(["p"])
    m.prepare_load(["l"])
    return m


@pytest.mark.parametrize(
    "shape",
    [set, frozenset, lambda ks: dict.fromkeys(ks).keys()],
    ids=["set", "frozenset", "dict_keys"],
)
def test_accepts_any_collection_in_its_iteration_order(make: Factory, shape: Any) -> None:
    m, ref = make(8, True), make(8, True)
    keys = ["a", "b", "c", "d"]
    out = m.prepare_store(shape(keys))
    order = list(shape(keys))  # the iteration order the call saw
    assert out == ref.prepare_store(order)
    assert m.complete_store(shape(keys)) == ref.complete_store(order)
    assert m.prepare_load(shape(keys[:2])) == ref.prepare_load(list(shape(keys[:2])))
    m.complete_load(shape(keys[:2]))
    ref.complete_load(list(shape(keys[:2])))
    m.touch(shape(keys[1:]))
    ref.touch(list(shape(keys[1:])))
    assert m.snapshot() == ref.snapshot()


@pytest.mark.parametrize("method", sorted(METHODS))
@pytest.mark.parametrize(
    "keys",
    [None, 5, "rl", b"rl", bytearray(b"rl"), iter(["r"]), {"r": 1}],
    ids=lambda v: type(v).__name__,
)
def test_rejects_keys_that_are_not_a_collection(make: Factory, method: str, keys: Any) -> None:
    m = loaded(make)
    assert_rejected(m, lambda: METHODS[method](m, keys), InvalidArgumentError)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_rejects_unhashable_key(make: Factory, method: str) -> None:
    m = loaded(make)
    assert_rejected(
        m,
        lambda: METHODS[method](m, ["r", ["x"], "r"]),
        InvalidArgumentError,
        mentions=("['x']",),
    )


@pytest.mark.parametrize("method", sorted(METHODS))
def test_rejects_duplicate_keys_naming_each_once(make: Factory, method: str) -> None:
    m = loaded(make)
    assert_rejected(
        m,
        lambda: METHODS[method](m, ["zz", "r", "l", "r", "zz", "r"]),
        DuplicateKeysError,
        keys=("zz", "r"),
    )


def test_rejects_duplicates_before_per_key_checks(make: Factory) -> None:
    m = loaded(make)
    assert_rejected(
        m, lambda: m.prepare_load(["absent", "absent"]), DuplicateKeysError, keys=("absent",)
    )
    assert_rejected(m, lambda: m.complete_load(["r", "r"]), DuplicateKeysError, keys=("r",))


def test_rejects_non_bool_success_before_duplicates(make: Factory) -> None:
    m = loaded(make)
    for success in (1, None, "yes"):

        def call(success: object = success) -> object:
            return m.complete_store(["p", "p"], success=success)

        assert_rejected(m, call, InvalidArgumentError, mentions=("success",))


def test_rejects_prepare_load_of_absent_key(make: Factory) -> None:
    m = loaded(make)
    assert_rejected(
        m, lambda: m.prepare_load(["r", "nope", "l"]), BlockNotFoundError, keys=("nope",)
    )


def test_rejects_prepare_load_of_pending_key(make: Factory) -> None:
    m = loaded(make)
    assert_rejected(m, lambda: m.prepare_load(["r", "l", "p"]), BlockNotReadyError, keys=("p",))


def test_rejects_prepare_load_first_offender_decides(make: Factory) -> None:
    m = loaded(make)
    assert_rejected(m, lambda: m.prepare_load(["r", "p", "nope"]), BlockNotReadyError, keys=("p",))
    assert_rejected(m, lambda: m.prepare_load(["nope", "p"]), BlockNotFoundError, keys=("nope",))


def test_rejects_complete_load_of_absent_key(make: Factory) -> None:
    m = loaded(make)
    assert_rejected(m, lambda: m.complete_load(["l", "nope"]), BlockNotFoundError, keys=("nope",))


def test_rejects_complete_load_of_ready_key(make: Factory) -> None:
    m = loaded(make)
    assert_rejected(m, lambda: m.complete_load(["l", "r"]), NotLoadingError, keys=("r",))


def test_rejects_complete_load_of_pending_key(make: Factory) -> None:
    m = loaded(make)
    assert_rejected(m, lambda: m.complete_load(["l", "p"]), NotLoadingError, keys=("p",))


def test_rejects_complete_load_ref_underflow(make: Factory) -> None:
    m = loaded(make)
    m.complete_load(["l"])
    assert_rejected(m, lambda: m.complete_load(["l"]), NotLoadingError, keys=("l",))


def test_rejects_unhashable_lookup(make: Factory) -> None:
    m = loaded(make)
    assert_rejected(m, lambda: m.lookup(["r"]), InvalidArgumentError, mentions=("['r']",))


def test_rejects_any_sequence_type_consistently(make: Factory) -> None:
    m = loaded(make)
    # A range is a Sequence of hashable ints: accepted (and absent -> BlockNotFoundError).
    assert_rejected(m, lambda: m.prepare_load(range(3)), BlockNotFoundError, keys=(0,))
