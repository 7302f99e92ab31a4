"""Unit tests of the model scanner (`model.lazy_offload`): rules, invariants, bad input."""

from __future__ import annotations

from typing import Any

import pytest

from evictable.model.block_pool import ModelBlockPool
from evictable.model.errors import DuplicateBlocksError, InvalidArgumentError, NotInFlightError
from evictable.model.lazy_offload import (
    LAZY_INVARIANTS,
    ModelLazyOffload,
    ScanView,
    StartKind,
    Validation,
    check_scan,
    inv_prefix_offloaded,
    inv_scan_complete,
    no_stall_bound,
    pending_blocks,
    require_validation,
)
from evictable.model.types import BlockId


def _scanner(
    hashes: list[str | None], window: int = 1, validation: Validation = Validation.GENERATION
) -> ModelLazyOffload:
    """Blocks 1..n free; unhashed ones at the front, hashed ones after (each in id order)."""
    pool = ModelBlockPool(len(hashes) + 1)
    taken = pool.get_new_blocks(len(hashes))
    for b, h in zip(taken, hashes, strict=True):
        if h is not None:
            pool.cache_block(b, h)
    pool.free_blocks([b for b in taken if b not in pool.block_hash])
    pool.free_blocks([b for b in taken if b in pool.block_hash])
    return ModelLazyOffload(pool, window, validation)


def _take_and_refree(m: ModelLazyOffload, b: int, h: str) -> None:
    """The cursor block's life between two steps: prefix hit, new hash, freed again."""
    m.pool.touch([BlockId(b)])
    if BlockId(b) not in m.pool.block_hash:
        m.pool.cache_block(BlockId(b), h)
    m.pool.free_blocks([BlockId(b)])


def test_step_visits_at_most_window_blocks_and_marks_them() -> None:
    m = _scanner([None, None, None], window=2)
    assert m.step(5) == []
    assert set(m.visited) == {1, 2}
    assert m.cursor is not None and m.cursor.block_id == 2


def test_step_pins_the_selection_after_the_walk() -> None:
    m = _scanner(["a", "b"], window=2)
    assert m.step(5) == [1, 2]
    assert m.pool.free_queue.order == []
    assert m.in_flight == {1: "a", 2: "b"}
    assert check_scan(m.view()) == []


def test_complete_records_hashes_and_abort_does_not() -> None:
    m = _scanner(["a", "b"], window=2)
    m.step(5)
    m.complete([BlockId(1)])
    m.abort([BlockId(2)])
    assert m.offloaded == {"a"} and m.in_flight == {}
    assert m.pool.free_queue.order == [1, 2]
    assert check_scan(m.view()) == []


def test_generation_rule_restarts_when_the_cursor_block_was_relinked() -> None:
    m = _scanner([None, None])
    m.step(1)
    _take_and_refree(m, 1, "x")
    assert m.start().kind is StartKind.FRONT
    assert check_scan(m.view()) == []


def test_refcount_rule_resumes_after_a_relinked_cursor_block() -> None:
    m = _scanner([None, None], validation=Validation.REFCOUNT)
    m.step(1)
    _take_and_refree(m, 1, "x")
    assert m.start().kind is StartKind.AFTER
    assert not inv_scan_complete(m.view())
    assert pending_blocks(m.view()) == {1}


def test_refcount_rule_restarts_while_the_cursor_block_is_in_use() -> None:
    m = _scanner([None, None], validation=Validation.REFCOUNT)
    m.step(1)
    m.pool.touch([BlockId(1)])
    assert m.start().kind is StartKind.FRONT


def test_refcount_rule_finds_no_position_for_an_unlinked_ref_zero_cursor() -> None:
    m = _scanner([None, "a"], validation=Validation.REFCOUNT)
    m.step(1)
    m.pool.free_queue.remove(BlockId(1))  # outside the pool API
    assert m.start().kind is StartKind.NOWHERE
    assert m.step(1) == []
    assert not inv_scan_complete(m.view())


def test_capacity_zero_stops_before_a_block_to_store() -> None:
    m = _scanner([None, "a"], window=2)
    assert m.step(0) == []
    assert m.cursor is not None and m.cursor.block_id == 1
    assert 2 not in m.visited
    assert check_scan(m.view()) == []


def test_reset_keeps_in_flight_and_restarts_the_scan() -> None:
    m = _scanner(["a", "b"])
    m.step(1)
    m.complete([BlockId(1)])
    m.step(1)
    m.reset()
    assert m.cursor is None and m.offloaded == set() and m.in_flight == {2: "b"}
    assert check_scan(m.view()) == []


def test_every_invariant_is_registered_and_holds_initially() -> None:
    m = _scanner(["a", None])
    assert set(LAZY_INVARIANTS) == {
        "scan_complete",
        "prefix_offloaded",
        "in_flight_pinned",
        "cursor_visited",
    }
    assert check_scan(m.view()) == []


def test_prefix_offloaded_implies_scan_complete_on_a_skip() -> None:
    m = _scanner([None, None], validation=Validation.REFCOUNT)
    m.step(1)
    _take_and_refree(m, 1, "x")
    view = m.view()
    assert not inv_prefix_offloaded(view) and not inv_scan_complete(view)


def test_pool_refuses_to_hash_a_free_block_behind_the_cursor() -> None:
    m = _scanner([None, None], window=2)
    m.step(1)  # cursor on block 2, the back: block 1 is before it
    before = (m.snapshot(), m.pool.snapshot(), dict(m.visited))
    with pytest.raises(InvalidArgumentError, match="cannot cache a free block: block 1 "):
        m.pool.cache_block(BlockId(1), "x")
    assert (m.snapshot(), m.pool.snapshot(), dict(m.visited)) == before
    assert check_scan(m.view()) == []
    # The legal way (in use, then freed) puts the content after the cursor.
    _take_and_refree(m, 1, "x")
    assert check_scan(m.view()) == []
    assert m.step(1) == [1]


def test_no_stall_bound_is_passes_plus_one() -> None:
    assert no_stall_bound(0, 1) == 1
    assert no_stall_bound(7, 2) == 5
    assert no_stall_bound(8, 2) == 5


@pytest.mark.parametrize("name", ["generation", "refcount"])
def test_validation_accepts_its_name(name: str) -> None:
    assert require_validation(name).value == name


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize("window", [0, -3, False, 2.0, "1"])
def test_rejects_bad_window(window: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        ModelLazyOffload(ModelBlockPool(2), window)


def test_rejects_unknown_validation() -> None:
    with pytest.raises(InvalidArgumentError, match="generation"):
        ModelLazyOffload(ModelBlockPool(2), 1, "sometimes")


def test_rejects_a_pool_that_is_not_a_model_pool() -> None:
    with pytest.raises(InvalidArgumentError):
        ModelLazyOffload(object(), 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("capacity", [-1, True, 1.0, None])
def test_rejects_bad_capacity_and_changes_nothing(capacity: Any) -> None:
    m = _scanner(["a"])
    before = (m.snapshot(), m.pool.snapshot(), dict(m.visited))
    with pytest.raises(InvalidArgumentError):
        m.step(capacity)
    assert (m.snapshot(), m.pool.snapshot(), dict(m.visited)) == before


@pytest.mark.parametrize("finish", ["complete", "abort"])
@pytest.mark.parametrize(
    ("arg", "error"),
    [
        ([BlockId(2)], NotInFlightError),
        ([BlockId(1), BlockId(1)], DuplicateBlocksError),
        ("1", InvalidArgumentError),
        ([True], InvalidArgumentError),
        ([None], InvalidArgumentError),
    ],
)
def test_rejects_bad_finish_and_changes_nothing(
    finish: str, arg: Any, error: type[Exception]
) -> None:
    m = _scanner(["a", "b"])
    m.step(1)
    before = (m.snapshot(), m.pool.snapshot())
    with pytest.raises(error):
        getattr(m, finish)(arg)
    assert (m.snapshot(), m.pool.snapshot()) == before


def test_invariants_needing_visit_marks_reject_a_view_without_them() -> None:
    m = _scanner(["a"])
    v = m.view()
    bare = ScanView(v.pool, v.scan, v.validation, None)
    with pytest.raises(InvalidArgumentError):
        inv_scan_complete(bare)
