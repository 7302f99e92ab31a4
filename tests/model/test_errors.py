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
    err = cls([b"k1", b"k2"])  # type: ignore[arg-type]
    assert err.keys == (b"k1", b"k2")
    assert "b'k1'" in str(err) and "b'k2'" in str(err)
    assert isinstance(err, E.LifecycleError)


@pytest.mark.parametrize("cls", BLOCKED)
def test_block_errors_name_their_block_ids(cls: type[E.LifecycleError]) -> None:
    err = cls([7, 9])  # type: ignore[arg-type]
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


def test_a_refused_call_names_event_state_and_the_tables_reason() -> None:
    from evictable.model.manager import ModelManager

    m = ModelManager(2)
    m.prepare_store([b"a"])
    with pytest.raises(E.BlockNotReadyError) as info:
        m.prepare_load([b"a"])
    err = info.value
    assert str(err) == "load_begin refused for b'a' in PENDING: store still in flight"
    assert (err.event, err.state, err.reason) == ("load_begin", "PENDING", "store still in flight")
    assert err.keys == (b"a",)
    assert isinstance(err, AssertionError)  # the builtin vLLM raises stays


def test_the_implementation_raises_the_same_explained_error() -> None:
    from evictable.impl.block_pool import BlockPool
    from evictable.impl.manager import CPUOffloadingManager

    m = CPUOffloadingManager(2)
    with pytest.raises(E.BlockNotFoundError) as info:
        m.complete_load([b"z"])
    assert str(info.value) == "load_end refused for b'z' in ABSENT: nothing was loading"
    pool = BlockPool(3)
    with pytest.raises(E.RefCountUnderflowError) as under:
        pool.free_blocks([pool.blocks[1]])
    assert (under.value.event, under.value.state) == ("free", "FREE")
    assert str(under.value) == "free refused for block [1] in FREE: freeing a block at ref 0"


def test_identity_covers_every_attribute_but_the_message() -> None:
    a = E.BlockNotFoundError([1], event="load_begin", state="ABSENT", reason="x")
    b = E.BlockNotFoundError([1], event="load_begin", state="ABSENT", reason="x")
    assert a.identity() == b.identity()
    assert a.identity() != E.BlockNotFoundError([1]).identity()  # event and state differ
    assert E.InsufficientFreeBlocksError(5, 2).identity() != (
        E.InsufficientFreeBlocksError(5, 3).identity()
    )
