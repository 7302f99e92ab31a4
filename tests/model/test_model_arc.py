"""The model ARC (`model.arc`): what it derives from the lifecycle table, its target
arithmetic, and ARC through the whole manager (model and implementation alike).

Policy-level scenarios with exact lists run on model and implementation in
`tests/impl/test_arc_policy.py`."""

from __future__ import annotations

from typing import Any

import pytest

from evictable.impl.manager import CPUOffloadingManager
from evictable.model.arc import (
    ModelArc,
    is_evictable_ref,
    is_pending_ref,
    target_after_b1_hit,
    target_after_b2_hit,
)
from evictable.model.invariants import check_snapshot
from evictable.model.manager import MODEL_POLICIES, ModelManager
from evictable.model.types import ArcPolicySnapshot, PrepareStoreOutput


def test_arc_is_a_model_policy() -> None:
    assert MODEL_POLICIES["arc"] is ModelArc
    assert ModelManager(2, "arc").snapshot().policy == ArcPolicySnapshot(
        (), (), (), (), 0.0, frozenset()
    )


@pytest.mark.parametrize(
    ("ref", "evictable", "pending"),
    [
        (None, False, False),
        (-1, False, True),
        (0, True, False),
        (1, False, False),
        (7, False, False),
    ],
)
def test_ref_meaning_comes_from_the_lifecycle_table(
    ref: int | None, evictable: bool, pending: bool
) -> None:
    assert is_evictable_ref(ref) is evictable
    assert is_pending_ref(ref) is pending


@pytest.mark.parametrize(
    ("target", "b1", "b2", "n", "expected"),
    [(0.0, 1, 0, 4, 1.0), (0.0, 1, 2, 4, 2.0), (3.5, 2, 6, 4, 4.0), (1.0, 3, 2, 6, 2.0)],
)
def test_b1_hit_adds_max_one_ratio_capped(
    target: float, b1: int, b2: int, n: int, expected: float
) -> None:
    assert target_after_b1_hit(target, b1, b2, n) == expected


@pytest.mark.parametrize(
    ("target", "b1", "b2", "expected"),
    [(2.0, 0, 1, 1.0), (3.0, 3, 2, 1.5), (0.5, 2, 1, 0.0), (0.0, 0, 1, 0.0)],
)
def test_b2_hit_subtracts_max_one_ratio_floored(
    target: float, b1: int, b2: int, expected: float
) -> None:
    assert target_after_b2_hit(target, b1, b2) == expected


def _drive(m: Any) -> list[Any]:
    """One ARC story through the manager API; the answers, in order."""
    out: list[Any] = []
    out.append(m.prepare_store([b"a", b"b"]))
    out.append(m.complete_store([b"a", b"b"]))
    m.touch([b"a"])  # a: T1 -> T2
    out.append(m.snapshot().policy)
    out.append(m.prepare_store([b"c"]))  # |T1| = 1 >= 0: evict b from T1
    out.append(m.complete_store([b"c"], success=False))  # c leaves, no ghost
    out.append(m.snapshot().policy)
    m.touch([b"b"])  # B1 hit: target 0 -> 1
    out.append(m.prepare_store([b"b"]))  # a free slot: b back in T1, out of B1
    out.append(m.snapshot().policy)
    out.append(m.prepare_load([b"a"]))
    out.append(m.complete_store([b"b"]))
    out.append(m.prepare_store([b"d"]))  # |T1| = 1 >= int(1.0): b from T1
    out.append(m.prepare_store([b"e"]))  # d pending, a loading: no victim
    out.append(m.snapshot().policy)
    m.reset_cache()
    out.append(m.snapshot().policy)
    assert check_snapshot(m.snapshot()) == []
    return out


def test_arc_through_the_manager() -> None:
    got = _drive(ModelManager(2, "arc"))
    assert got == [
        PrepareStoreOutput([b"a", b"b"], [0, 1], []),
        [b"a", b"b"],
        ArcPolicySnapshot((b"b",), (b"a",), (), (), 0.0, frozenset({b"a", b"b"})),
        PrepareStoreOutput([b"c"], [1], [b"b"]),
        [b"c"],
        ArcPolicySnapshot((), (b"a",), (b"b",), (), 0.0, frozenset({b"a"})),
        PrepareStoreOutput([b"b"], [1], []),
        ArcPolicySnapshot((b"b",), (b"a",), (), (), 1.0, frozenset({b"a"})),
        [0],
        [b"b"],
        PrepareStoreOutput([b"d"], [1], [b"b"]),
        None,
        ArcPolicySnapshot((b"d",), (b"a",), (b"b",), (), 1.0, frozenset()),
        ArcPolicySnapshot((), (), (), (), 0.0, frozenset()),
    ]


def test_implementation_tells_the_same_story() -> None:
    assert _drive(CPUOffloadingManager(2, "arc")) == _drive(ModelManager(2, "arc"))
