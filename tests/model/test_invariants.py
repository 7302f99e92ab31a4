"""The named invariants detect the states they forbid."""

from __future__ import annotations

import dataclasses

from evictable.model.invariants import INVARIANTS, check_snapshot
from evictable.model.lifecycle import CpuState
from evictable.model.types import (
    ArcPolicySnapshot,
    BlockEntry,
    LruPolicySnapshot,
    ManagerSnapshot,
)


def _snap(**kw: object) -> ManagerSnapshot:
    base = ManagerSnapshot(
        num_blocks=4,
        blocks=frozenset(
            {
                BlockEntry("a", CpuState.READY, 0, 0),
                BlockEntry("b", CpuState.PENDING, -1, 1),
                BlockEntry("c", CpuState.LOADING, 2, 2),
            }
        ),
        free_stack=(),
        high_water=3,
        num_evictable=1,
        num_pending=1,
        pending_events=(),
        policy=LruPolicySnapshot(("a",)),
    )
    return dataclasses.replace(base, **kw)  # type: ignore[arg-type]


def test_consistent_snapshot_has_no_violations() -> None:
    assert check_snapshot(_snap()) == []


def test_registry_names_are_unique_and_cover_both_kinds() -> None:
    assert {"evictable_iff_idle", "counters_match", "slot_partition"} <= set(INVARIANTS)


def test_pinned_block_in_the_list_is_caught() -> None:
    bad = _snap(policy=LruPolicySnapshot(("a", "c")))
    failed = check_snapshot(bad)
    assert "lru_list_exact" in failed and "evictable_iff_idle" in failed


def test_idle_block_missing_from_the_list_is_caught() -> None:
    assert "evictable_iff_idle" in check_snapshot(_snap(policy=LruPolicySnapshot(())))


def test_counter_drift_is_caught() -> None:
    assert check_snapshot(_snap(num_evictable=2)) == ["counters_match"]


def test_slot_owned_twice_is_caught() -> None:
    assert "slot_partition" in check_snapshot(_snap(free_stack=(1,), high_water=4))


def test_wrong_ref_for_state_is_caught() -> None:
    blocks = frozenset({BlockEntry("a", CpuState.PENDING, 0, 0)})
    bad = _snap(blocks=blocks, high_water=1, num_evictable=0, policy=LruPolicySnapshot(()))
    failed = check_snapshot(bad)
    assert "pending_iff_store_ref" in failed and "state_admits_ref" in failed


def test_arc_overlap_and_bounds_are_caught() -> None:
    arc = ArcPolicySnapshot(t1=("a", "b"), t2=("c",), b1=("a",), b2=(), target=9.0)
    failed = check_snapshot(_snap(policy=arc))
    assert "arc_lists_disjoint" in failed and "arc_bounds" in failed


def test_arc_idle_view_must_be_the_ready_keys() -> None:
    blocks = frozenset(
        {BlockEntry("a", CpuState.READY, 0, 0), BlockEntry("b", CpuState.LOADING, 1, 1)}
    )
    good = ArcPolicySnapshot(("a", "b"), (), (), (), 0.0, frozenset({"a"}))
    pinned_listed = ArcPolicySnapshot(("a", "b"), (), (), (), 0.0, frozenset({"a", "b"}))
    common = {"blocks": blocks, "high_water": 2, "num_evictable": 1}
    assert "arc_evictable_exact" not in check_snapshot(_snap(policy=good, **common))
    failed = check_snapshot(_snap(policy=pinned_listed, **common))
    assert "arc_evictable_exact" in failed and "evictable_iff_idle" in failed
