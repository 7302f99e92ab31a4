"""Smoke test of bench/bench_explore.py: run(quick) works and reports consistent numbers.

No timing thresholds: only structure and sanity of the reported numbers.
"""

from __future__ import annotations

from typing import Any

import pytest

from bench.bench_explore import TARGET_STATES_PER_S, _spread, run


@pytest.fixture(scope="module")
def quick() -> dict[str, Any]:
    return run(quick=True)


def test_spread_keeps_first_and_spans_the_order() -> None:
    items = [(i,) for i in range(100)]
    picked = _spread(items, 10)
    assert len(picked) == 10 and picked[0] == (0,) and picked[-1] == (90,)
    assert _spread(items[:5], 10) == items[:5]


def test_quick_run_explores_both_worker_counts(quick: dict[str, Any]) -> None:
    assert [r["workers"] for r in quick["explorer"]] == [1, 2]
    one, two = quick["explorer"]
    assert one["states"] == two["states"] > 1
    assert one["transitions"] == two["transitions"]
    assert one["states_per_s"] > 0 and two["states_per_s"] > 0
    assert quick["edges_per_state"] > 1


def test_quick_run_reports_positive_floors(quick: dict[str, Any]) -> None:
    floor = quick["floor"]
    for side in ("impl", "model"):
        assert floor[f"{side}_us_per_edge"] > 0
        assert floor[f"{side}_snapshot_us"] > 0 and floor[f"{side}_copy_us"] > 0
    assert floor["edges_timed_per_rep"] > quick["sample_states"] > 0


def test_ceilings_follow_from_the_floors(quick: dict[str, Any]) -> None:
    ceiling = quick["ceiling"]
    assert ceiling["impl_only"] > ceiling["model_and_impl"] > 0
    assert quick["target_states_per_s"] == TARGET_STATES_PER_S
    assert ceiling["target_over_impl_only"] == pytest.approx(
        TARGET_STATES_PER_S / ceiling["impl_only"]
    )


def test_quick_run_reports_table_notes_and_plot(quick: dict[str, Any]) -> None:
    table = quick["table"]
    assert len(table["rows"]) == 5
    assert all(len(row) == len(table["columns"]) for row in table["rows"])
    assert all(isinstance(cell, str) for row in table["rows"] for cell in row)
    assert quick["notes"]
    plot = quick["plot"]
    assert plot["kind"] == "bar" and plot["log_y"] is True
    assert len(plot["x"]) == len(plot["series"]["states/s"]) == 5
