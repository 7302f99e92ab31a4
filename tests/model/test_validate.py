"""Tests of the shared argument validation (`model.validate`)."""

from __future__ import annotations

from collections import UserList
from typing import Any

import pytest

from evictable.model.errors import DuplicateKeysError, InvalidArgumentError
from evictable.model.validate import (
    check_enable_events,
    check_key,
    check_keys,
    check_keys_and_success,
    check_num_blocks,
    check_policy_name,
    duplicated_keys,
    touch_keys,
)


@pytest.mark.parametrize("value", [0, 1, 65536, 2**40])
def test_num_blocks_accepts_non_negative_ints(value: int) -> None:
    assert check_num_blocks(value) == value


@pytest.mark.parametrize("value", [-1, True, False, 1.0, "1", None, [1]], ids=repr)
def test_rejects_bad_num_blocks(value: Any) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        check_num_blocks(value)
    assert "num_blocks" in str(info.value)
    assert repr(value) in str(info.value)


def test_rejects_bad_capacity_under_its_own_name() -> None:
    with pytest.raises(InvalidArgumentError, match="capacity"):
        check_num_blocks(-3, "capacity")


def test_enable_events_must_be_a_bool() -> None:
    assert check_enable_events(True) is True
    for value in (0, 1, None, "yes"):
        with pytest.raises(InvalidArgumentError, match="enable_events"):
            check_enable_events(value)


def test_rejects_unknown_policy_listing_known_names_sorted() -> None:
    assert check_policy_name("lru", {"lru", "arc"}) == "lru"
    with pytest.raises(InvalidArgumentError) as info:
        check_policy_name("mru", {"lru", "arc"})
    assert str(info.value) == "unknown policy 'mru'; known policies: arc, lru"
    with pytest.raises(InvalidArgumentError):
        check_policy_name(None, {"lru"})


def test_check_key_accepts_hashables_and_rejects_others() -> None:
    assert check_key(b"k") == b"k"
    assert check_key((1, 2)) == (1, 2)
    with pytest.raises(InvalidArgumentError, match=r"\[1\]"):
        check_key([1])


@pytest.mark.parametrize(
    "keys", [[b"a", b"b"], (b"a", b"b"), range(3), UserList([1, 2]), []], ids=repr
)
def test_check_keys_accepts_sequences(keys: Any) -> None:
    seq, unique = check_keys(keys)
    assert list(seq) == list(keys)
    assert unique == set(keys)


def test_check_keys_returns_list_and_tuple_inputs_as_is() -> None:
    keys = [b"a"]
    assert check_keys(keys)[0] is keys
    tup = (b"a",)
    assert check_keys(tup)[0] is tup


@pytest.mark.parametrize(
    "keys",
    [None, 3, "ab", b"ab", bytearray(b"ab"), {1: 2}, iter([1])],
    ids=lambda v: type(v).__name__,
)
def test_rejects_keys_that_are_not_a_collection(keys: Any) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        check_keys(keys)
    assert type(keys).__name__ in str(info.value)
    assert info.value.keys == ()


def test_rejects_unhashable_key_naming_it() -> None:
    with pytest.raises(InvalidArgumentError, match=r"\{'x': 1\}"):
        check_keys([1, {"x": 1}, 1])  # shape (hashability) is checked before duplicates


def test_rejects_duplicates_naming_each_once_in_first_occurrence_order() -> None:
    with pytest.raises(DuplicateKeysError) as info:
        check_keys([b"b", b"a", b"c", b"a", b"b", b"a"])
    assert info.value.keys == (b"b", b"a")
    assert "b'b'" in str(info.value) and "b'a'" in str(info.value)


def test_duplicates_compare_by_equality() -> None:
    assert duplicated_keys([1, 2, 1.0, True, 3]) == [1]
    assert duplicated_keys([1, 2, 3]) == []


def test_success_is_checked_after_the_keys_shape_and_before_duplicates() -> None:
    with pytest.raises(InvalidArgumentError, match="keys must be"):
        check_keys_and_success(None, 1)
    with pytest.raises(InvalidArgumentError, match="success"):
        check_keys_and_success([1, 1], 1)
    with pytest.raises(DuplicateKeysError):
        check_keys_and_success([1, 1], False)
    assert check_keys_and_success([1], True)[1] == {1}


def test_touch_keys_never_raises() -> None:
    assert touch_keys([b"a", [1], b"b"]) == [b"a", b"b"]
    assert list(touch_keys((1, 2))) == [1, 2]
    assert touch_keys({1}) == [1]  # any collection, in its iteration order
    for bad in (None, 5, "ab", b"ab", {1: 2}, iter([1])):
        assert touch_keys(bad) == []

    class BadHash:
        def __hash__(self) -> int:
            raise ValueError("no")

    assert touch_keys([BadHash(), 1]) == [1]
