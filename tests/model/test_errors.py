"""The error hierarchy: one base, vLLM-compatible builtins, offenders named."""

from __future__ import annotations

import pytest

from evictable.model import errors as E

KEYED = [E.DuplicateKeysError, E.BlockNotFoundError, E.BlockNotReadyError, E.NotLoadingError]
BLOCKED = [
    E.DuplicateBlocksError,
    E.BlockNotLinkedError,
    E.BlockAlreadyLinkedError,
    E.ForeignBlockError,
    E.StaleCursorError,
]


@pytest.mark.parametrize("cls", KEYED)
def test_keyed_errors_name_their_keys(cls: type[E.LifecycleError]) -> None:
    err = cls([b"k1", b"k2"])  # type: ignore[call-arg]
    assert err.keys == (b"k1", b"k2")
    assert "b'k1'" in str(err) and "b'k2'" in str(err)
    assert isinstance(err, E.LifecycleError)


@pytest.mark.parametrize("cls", BLOCKED)
def test_block_errors_name_their_block_ids(cls: type[E.LifecycleError]) -> None:
    err = cls([7, 9])  # type: ignore[call-arg]
    assert err.block_ids == (7, 9)
    assert "7" in str(err) and "9" in str(err)


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (E.InvalidArgumentError, ValueError),
        (E.BlockNotFoundError, KeyError),
        (E.QueueEmptyError, ValueError),
        (E.InsufficientFreeBlocksError, ValueError),
        (E.BlockNotLinkedError, RuntimeError),
        (E.BlockAlreadyLinkedError, RuntimeError),
        (E.ForeignBlockError, RuntimeError),
        (E.ConcurrentModificationError, RuntimeError),
    ],
)
def test_errors_subclass_the_builtin_vllm_raises(cls: type, builtin: type) -> None:
    assert issubclass(cls, builtin)
    assert issubclass(cls, E.LifecycleError)


def test_queue_empty_message_matches_vllm() -> None:
    assert str(E.QueueEmptyError()) == "No free blocks available"


def test_key_error_prints_its_message_unquoted() -> None:
    err = E.BlockNotFoundError([b"x"])
    assert str(err) == "block not found: b'x'"


def test_identity_compares_type_and_attributes() -> None:
    a, b = E.BlockNotFoundError([1]), E.BlockNotFoundError([1])
    assert a.identity() == b.identity()
    assert a.identity() != E.BlockNotFoundError([2]).identity()
    assert a.identity() != E.NotLoadingError([1]).identity()


def test_ref_count_underflow_names_keys_or_blocks() -> None:
    assert E.RefCountUnderflowError(keys=["a"]).keys == ("a",)
    assert E.RefCountUnderflowError(block_ids=[3]).block_ids == (3,)
    assert "3" in str(E.RefCountUnderflowError(block_ids=[3]))


def test_insufficient_free_blocks_reports_both_counts() -> None:
    err = E.InsufficientFreeBlocksError(5, 2)
    assert (err.requested, err.available) == (5, 2)
    assert "5" in str(err) and "2" in str(err)
