"""The tiering records are listed, explored, with their bounds and controls."""

from __future__ import annotations

import pytest

from evictable.proofs.base.levels import LEVELS, Level
from evictable.proofs.base.records import Kind
from evictable.proofs.explore.tiering_bounds import FAMILIES
from evictable.proofs.obligations.registry import collect


@pytest.mark.parametrize("level", LEVELS)
def test_the_tiering_records_are_registered(level: Level) -> None:
    explored = ("explore.tiering.", "liveness.tiering.", "refine.tiering")  # tiering.* are Z3
    names = {ob.name: ob for ob in collect(level) if ob.name.startswith(explored)}
    assert {f"explore.tiering.{f}" for f in FAMILIES} <= set(names)
    assert {"liveness.tiering.scan", "liveness.tiering.peer", "refine.tiering"} <= set(names)
    for ob in names.values():
        assert ob.kind is Kind.EXPLORED
        assert "key" in ob.bounds and "primary slot" in ob.bounds and "tiers:" in ob.bounds
        assert ob.negative is not None and ob.batch.startswith("tiering.")
