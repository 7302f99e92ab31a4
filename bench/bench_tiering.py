"""The tiering explorer: states per second, states per record's bounds, and how the
state count grows with keys and tiers.

* **Records** -- every world of the `explore.tiering.*` records at the `default` level
  (quick: `quick`), explored under the `spec` profile with its edges kept, then the
  fair-cycle search over the graph: states, transitions, depth, CPU seconds of the
  search and of the lasso search, and distinct states per CPU second.
* **Growth** -- the scan world (one slot, a storage tier holding every key, a request
  whose prefix is up to two keys long and a second of one key; quick: the first alone)
  at 1..3 keys (quick: 1..2) and 1..2 tiers: states and CPU seconds, and the ratio of
  each count to the one with a key (or a tier) fewer. The figure to plan bounds with.

All times are CPU seconds of this process (`time.process_time`), so a busy machine
shows the same figures. `python -m bench.bench_tiering [--quick]` writes
bench/results/tiering.json; `evictable bench --only tiering` runs `run(quick)`.
"""

from __future__ import annotations

import gc
import time
from typing import Any

from bench.runner import standalone
from evictable.model.tiering_types import Profile, TierSpec
from evictable.proofs.base.levels import Level
from evictable.proofs.explore.liveness import find_lasso
from evictable.proofs.explore.tiering import explore
from evictable.proofs.explore.tiering_bounds import FAMILIES, WORLDS
from evictable.proofs.explore.tiering_moves import edge_props
from evictable.proofs.explore.tiering_world import TieringBounds

__all__ = ["growth_world", "main", "run"]


def growth_world(keys: int, tiers: int, requests: int = 2) -> TieringBounds:
    """The scan world at `keys` keys and `tiers` tiers (the first holds every key), with
    one request (a prefix of up to two keys) or two (and one of one key)."""
    return TieringBounds(
        keys=keys,
        slots=1,
        tiers=tuple(TierSpec() for _ in range(tiers)),
        requests=(min(keys, 2), 1)[:requests],
        copies=(tuple(range(keys)),),
    )


def _measure(bounds: TieringBounds, liveness: bool) -> dict[str, Any]:
    gc.collect()
    start = time.process_time()
    result = explore(bounds, Profile.SPEC, record_edges=liveness)
    search_s = time.process_time() - start
    out: dict[str, Any] = {
        "bounds": bounds.describe(),
        "states": result.states,
        "transitions": result.transitions,
        "depth": result.depth,
        "complete": result.complete,
        "cpu_s": search_s,
        "states_per_cpu_s": result.states / search_s if search_s > 0 else 0.0,
        "edges_per_state": result.transitions / max(1, result.states),
    }
    if liveness:
        start = time.process_time()
        lasso = find_lasso(result, edge_props)
        out["lasso_cpu_s"] = time.process_time() - start
        out["lasso"] = None if lasso is None else str(lasso.token)
    return out


def _table(records: list[dict[str, Any]], growth: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [
        [
            r["record"],
            f"{r['states']:,}",
            f"{r['transitions']:,}",
            str(r["depth"]),
            f"{r['cpu_s']:.2f}",
            f"{r['states_per_cpu_s']:,.0f}",
            f"{r['lasso_cpu_s']:.2f}",
        ]
        for r in records
    ]
    return {
        "columns": ["world", "states", "transitions", "depth", "CPU s", "states/CPU s", "lasso s"],
        "rows": rows,
    }


def _growth_table(growth: list[dict[str, Any]]) -> dict[str, Any]:
    rows = [
        [
            str(g["keys"]),
            str(g["tiers"]),
            f"{g['states']:,}",
            f"{g['cpu_s']:.2f}",
            "—" if g["per_key"] is None else f"x{g['per_key']:.1f}",
            "—" if g["per_tier"] is None else f"x{g['per_tier']:.1f}",
        ]
        for g in growth
    ]
    return {
        "title": "growth of the scan world",
        "columns": ["keys", "tiers", "states", "CPU s", "vs a key fewer", "vs a tier fewer"],
        "rows": rows,
    }


def run(quick: bool) -> dict[str, Any]:
    """Record worlds and the growth grid; see the module doc."""
    level: Level = "quick" if quick else "default"
    records = []
    for family in FAMILIES:
        for i, bounds in enumerate(WORLDS[level][family]):
            figures = _measure(bounds, liveness=True)
            records.append({"record": f"explore.tiering.{family}[{i}]", **figures})
    growth: list[dict[str, Any]] = []
    states: dict[tuple[int, int], int] = {}
    for tiers in (1, 2):
        for keys in (1, 2) if quick else (1, 2, 3):
            world = growth_world(keys, tiers, 1 if quick else 2)
            figures = _measure(world, liveness=False)
            states[(keys, tiers)] = figures["states"]
            fewer_key = states.get((keys - 1, tiers))
            fewer_tier = states.get((keys, tiers - 1))
            growth.append(
                {
                    "keys": keys,
                    "tiers": tiers,
                    **figures,
                    "per_key": figures["states"] / fewer_key if fewer_key else None,
                    "per_tier": figures["states"] / fewer_tier if fewer_tier else None,
                }
            )
    total_states = sum(r["states"] for r in records)
    total_s = sum(r["cpu_s"] + r["lasso_cpu_s"] for r in records)
    per_key = [g["per_key"] for g in growth if g["per_key"]]
    per_tier = [g["per_tier"] for g in growth if g["per_tier"]]
    notes = [
        f"{level} worlds: {total_states:,} states in {total_s:.1f} CPU s in all "
        f"({total_states / total_s:,.0f} states per CPU second, lasso searches included).",
        f"A key more multiplies the scan world by {min(per_key):.1f}..{max(per_key):.1f}; a "
        f"tier more by {min(per_tier):.1f}..{max(per_tier):.1f}.",
    ]
    return {
        "level": level,
        "records": records,
        "growth": growth,
        "table": _table(records, growth),
        "extra_tables": [_growth_table(growth)],
        "notes": notes,
        "plot": {
            "kind": "bar",
            "title": "tiering explorer: states of the scan world by keys and tiers",
            "xlabel": "keys",
            "ylabel": "distinct states (log scale)",
            "log_y": True,
            "x": [str(k) for k in sorted({g["keys"] for g in growth})],
            "series": {
                f"{t} tier(s)": [g["states"] for g in growth if g["tiers"] == t] for t in (1, 2)
            },
        },
    }


def main(argv: list[str] | None = None) -> int:
    """This benchmark alone: see `bench.runner.standalone`."""
    return standalone("tiering", run, (__doc__ or "").split("\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
