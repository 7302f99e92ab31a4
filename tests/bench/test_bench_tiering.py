"""Smoke test of bench/bench_tiering.py: run(quick) reports consistent figures.

No timing thresholds: only structure and sanity of the reported numbers.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench.bench_tiering import growth_world, run
from evictable.proofs.explore.tiering_bounds import FAMILIES


@pytest.fixture(scope="module")
def quick() -> dict[str, Any]:
    return run(quick=True)


def test_every_family_is_measured_with_its_lasso_search(quick: dict[str, Any]) -> None:
    names = {r["record"].split("[")[0] for r in quick["records"]}
    assert names == {f"explore.tiering.{f}" for f in FAMILIES}
    for r in quick["records"]:
        assert r["complete"] and r["states"] > 1 and r["lasso"] is None
        assert r["states_per_cpu_s"] > 0 and r["edges_per_state"] > 1


def test_the_growth_grid_reports_each_cell_and_its_ratios(quick: dict[str, Any]) -> None:
    grid = {(g["keys"], g["tiers"]): g for g in quick["growth"]}
    assert set(grid) == {(1, 1), (2, 1), (1, 2), (2, 2)}
    assert all(g["states"] > 1 and g["complete"] for g in grid.values())
    assert grid[(1, 1)]["per_key"] is None and grid[(2, 2)]["per_key"] > 0
    assert grid[(2, 2)]["per_tier"] == grid[(2, 2)]["states"] / grid[(2, 1)]["states"]
    assert quick["table"]["rows"] and quick["extra_tables"][0]["rows"]


def test_growth_worlds_hold_every_key_in_the_first_tier() -> None:
    world = growth_world(3, 2)
    assert world.copies == ((0, 1, 2),) and len(world.tiers) == 2
