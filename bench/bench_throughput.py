"""Manager throughput on the store/load trace, every contender side by side.

`run(quick)`: block operations per CPU second on the trace (`bench.workloads`) at
1K, 64K and 1M blocks, 0% and 90% pinned, for every contender (`bench.contenders`,
vLLM's LRU and ARC included when the interop venv exists, see `bench.interop`), all
interleaved in one set of rounds (`bench.timing`). So every ratio is a paired
ratio measured side by side: impl against vLLM, the model, the naive scan, the
bare skeleton and the dict floor, impl at 1M against impl at 1K.

Reported per cell (size, pinned fraction): each contender's median rate and its
spread (min and max over rounds); the paired ratios `impl-lru/<other>`,
`impl-arc/vllm-arc` and `impl-arc/impl-lru`, each with its spread; and every
contender's ratio to `dict-floor` (`floor_ratios`: how close it gets to the hash-table
work the trace forces). Plus the 1K/N scaling ratios, where the added time per step
goes (`scaling_budget`), one absent-key dict lookup per size (`dict_probe_ns`), and
whether vLLM's managers return exactly what impl's do on this trace (`interop`).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from bench.contenders import IMPL, available
from bench.interop import VLLM_CONTENDERS, Worker, shared_worker, trace_digest
from bench.timing import Contender, Measurement, interleaved, paired_ratio, units_budget
from bench.workloads import (
    OPS_PER_STEP,
    FillTimeout,
    Manager,
    fill_timed,
    label,
    make_keys,
    make_trace,
    pinned_indices,
    stepper,
)

__all__ = ["PINNED_FRACTIONS", "RATIOS", "run"]

PINNED_FRACTIONS = (0.0, 0.9)
FILL_LIMIT_S = 20.0
"""A contender whose fill at a size takes longer than this is skipped there (and above)."""

RATIOS: tuple[tuple[str, str], ...] = (
    (IMPL, "vllm-lru"),
    ("impl-arc", "vllm-arc"),
    ("impl-arc", IMPL),
    (IMPL, "model-lru"),
    (IMPL, "naive"),
    (IMPL, "skeleton"),
)
"""The paired ratios reported per cell (when both contenders ran there)."""

FLOOR = "dict-floor"

SCALING_BOUND = 1.5
"""Issue 7's bound: impl throughput at the largest size within this factor of the smallest."""


def _cid(name: str, n: int, frac: float) -> str:
    return f"{name}@{label(n)}/{round(frac * 100)}%"


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _paired(results: dict[str, Measurement], a: str, b: str) -> dict[str, float]:
    """The paired ratio rate(a)/rate(b): median and spread of the per-round ratios."""
    ra, rb = results[a].rates, results[b].rates
    return _spread([x / y for x, y in zip(ra, rb, strict=True)])


def _same_work(worker: Worker, quick: bool) -> dict[str, Any]:
    """Whether each vLLM manager returns exactly what impl's returns on the trace, and
    whether the results have the same shape (as many keys stored, evicted, loaded)."""
    n, steps = 512, 40 if quick else 200
    out: dict[str, Any] = {}
    for name, policy in VLLM_CONTENDERS.items():
        impl = "impl-lru" if policy == "lru" else "impl-arc"
        for frac in PINNED_FRACTIONS:
            theirs = worker.digest(policy, n, frac, steps)
            ours = trace_digest(policy, n, frac, steps)
            out[f"{name} vs {impl} @{n}/{round(frac * 100)}%"] = {
                "same_results": theirs["sha256"] == ours["sha256"],
                "same_shape": theirs["shape_sha256"] == ours["shape_sha256"],
                "steps": steps,
            }
    return out


def run(quick: bool, sizes: Sequence[int] | None = None) -> dict[str, Any]:
    """Ops/s of every contender at every (size, pinned fraction), interleaved in one run.

    `sizes` defaults to 1K, 64K and 1M blocks (512 and 2K with `quick`).
    """
    if sizes is None:
        sizes = (512, 2048) if quick else (1 << 10, 1 << 16, 1 << 20)
    reps = 3 if quick else 7
    max_units = 60 if quick else 3000
    target_s, warm_s = (0.004, 0.004) if quick else (0.12, 0.15)
    factories, missing = available()
    skipped = dict(missing)
    worker, why = shared_worker()
    remote = list(VLLM_CONTENDERS) if worker is not None else []
    if worker is None:
        skipped.update(dict.fromkeys(VLLM_CONTENDERS, why))
    names = [*factories, *remote]
    num_steps = units_budget(reps, max_units)

    contenders: list[Contender] = []
    cells: list[tuple[int, float, dict[str, str]]] = []
    fill_s: dict[str, float] = {}
    too_slow: dict[str, str] = {}
    limit_s = 5.0 if quick else FILL_LIMIT_S
    keep: list[Manager] = []
    for n in sizes:
        base = make_trace(n, 0.0, num_steps)
        for frac in PINNED_FRACTIONS:
            trace = replace(base, pinned_fraction=frac, pinned=pinned_indices(n, frac))
            in_cell: dict[str, str] = {}
            for name in names:
                cid = _cid(name, n, frac)
                if name in too_slow:
                    skipped[cid] = too_slow[name]
                    continue
                if name in factories:
                    try:
                        manager, seconds = fill_timed(factories[name], n, trace, limit_s)
                    except FillTimeout as exc:
                        too_slow[name] = f"too slow from {label(n)} blocks on: {exc}"
                        skipped[cid] = too_slow[name]
                        gc.collect()
                        continue
                    keep.append(manager)
                    contenders.append(Contender(cid, stepper(manager, trace.steps), OPS_PER_STEP))
                elif worker is not None:
                    seconds = worker.setup(cid, VLLM_CONTENDERS[name], n, frac, num_steps)
                    contenders.append(worker.contender(cid))
                    if seconds > limit_s:
                        too_slow[name] = f"too slow from {label(n)} blocks on: fill {seconds:.0f}s"
                else:
                    continue
                fill_s[cid] = seconds
                in_cell[name] = cid
            cells.append((n, frac, in_cell))
    results = interleaved(
        contenders,
        reps,
        target_s=target_s,
        warm_s=warm_s,
        max_units=max_units,
        freeze=[worker.freeze] if worker is not None else [],
    )
    del keep
    if worker is not None:
        for contender in contenders:
            if contender.timed is not None:
                worker.drop(contender.name)
    gc.collect()

    out_cells = [_cell(results, n, frac, in_cell) for n, frac, in_cell in cells]
    scaling = _scaling(results, sizes)
    budget = _budget(out_cells, sizes)
    probe = _probe_ns(sizes, quick)
    interop: dict[str, Any] = {"available": worker is not None, "source": why}
    if worker is not None:
        interop.update(worker.hello)
        interop["same_work"] = _same_work(worker, quick)
    return {
        "method": {
            "ops_per_step": OPS_PER_STEP,
            "reps": reps,
            "target_rep_s": target_s,
            "trace": "per step: prepare_store(16 new) + complete_store + "
            "prepare_load(4 of the previous batch) + complete_load",
            "clock": "CPU time of the process doing the work (time.process_time); vLLM's "
            "managers run in a worker process that times its own steps",
            "spread": "min and max over rounds; ratios are medians of per-round ratios",
        },
        "cells": out_cells,
        "vs_vllm": _vs_vllm(out_cells),
        "scaling": {f"{name}: {k}": v for (name, k), v in scaling.items()},
        "scaling_budget": budget,
        "dict_probe_ns": probe,
        "fill_seconds": fill_s,
        "interop": interop,
        "skipped": skipped,
        "table": _table(out_cells, names),
        "extra_tables": [_ratio_table(out_cells), _floor_table(out_cells, names)],
        "notes": _notes(scaling, probe, budget, interop, skipped),
        "plot": _plot(out_cells, names, sizes),
        "extra_plots": {"floor": _floor_plot(out_cells, names, sizes)},
    }


def _cell(
    results: dict[str, Measurement], n: int, frac: float, names: dict[str, str]
) -> dict[str, Any]:
    """One (size, pinned fraction): rates, spreads, paired ratios, ratios to the floor."""
    ratios = {
        f"{a}/{b}": _paired(results, names[a], names[b])
        for a, b in RATIOS
        if a in names and b in names
    }
    floor = (
        {name: _paired(results, cid, names[FLOOR]) for name, cid in names.items()}
        if FLOOR in names
        else {}
    )
    return {
        "num_blocks": n,
        "pinned_fraction": frac,
        "median_ops_per_s": {name: results[cid].median for name, cid in names.items()},
        "spread_ops_per_s": {
            name: [min(results[cid].rates), max(results[cid].rates)] for name, cid in names.items()
        },
        "ratios": {k: v["median"] for k, v in ratios.items()},
        "ratio_spread": ratios,
        "floor_ratios": {k: v["median"] for k, v in floor.items()},
        "floor_ratio_spread": floor,
        "detail": {name: results[cid].as_dict() for name, cid in names.items()},
    }


def _vs_vllm(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's table: impl against vLLM and impl ARC against impl LRU, per cell."""
    keys = ("impl-lru/vllm-lru", "impl-arc/vllm-arc", "impl-arc/impl-lru")
    return [
        {
            "num_blocks": c["num_blocks"],
            "pinned_fraction": c["pinned_fraction"],
            **{k: c["ratio_spread"][k] for k in keys if k in c["ratio_spread"]},
        }
        for c in cells
    ]


def _probe_ns(sizes: Sequence[int], quick: bool) -> dict[str, float]:
    """CPU ns per lookup of an absent key in a dict of n keys, at each size (interleaved).

    The floor under every manager's per-key cost: one hash-table probe at a random
    slot, which stays in cache for a small table and goes to memory for a big one.
    """
    probes = make_keys(2000 if quick else 100_000, seed=23)
    tables = {n: dict.fromkeys(make_keys(n, seed=29)) for n in sizes}
    samples: dict[int, list[float]] = {n: [] for n in sizes}
    for _ in range(3 if quick else 7):
        for n, table in tables.items():
            t0 = time.process_time()
            for key in probes:
                key in table  # noqa: B015 - the lookup is what is timed
            samples[n].append((time.process_time() - t0) / len(probes) * 1e9)
    return {label(n): statistics.median(v) for n, v in samples.items()}


def _scaling(results: dict[str, Measurement], sizes: Sequence[int]) -> dict[tuple[str, str], float]:
    """Throughput at the smallest size over throughput at each larger one (paired)."""
    out: dict[tuple[str, str], float] = {}
    small = sizes[0]
    for name in (IMPL, "impl-arc", "skeleton", "skeleton-split", FLOOR):
        for n in sizes[1:]:
            for frac in PINNED_FRACTIONS:
                a, b = _cid(name, small, frac), _cid(name, n, frac)
                if a in results and b in results:
                    key = f"{label(small)} / {label(n)}, {round(frac * 100)}% pinned"
                    out[(name, key)] = paired_ratio(results, a, b)
    return out


def _us_per_step(ops_per_s: float) -> float:
    return 1e6 * OPS_PER_STEP / ops_per_s


def _budget(cells: list[dict[str, Any]], sizes: Sequence[int]) -> list[dict[str, Any]]:
    """Where the time added between the smallest and the largest size goes.

    Per pinned fraction: CPU µs per trace step of impl-lru and of the dict floor at
    both sizes, what each adds at the large size, and what the scaling bound allows
    impl-lru to add (`SCALING_BOUND - 1` times its own time per step at the small size).
    """
    small, large = sizes[0], sizes[-1]
    by = {(c["num_blocks"], c["pinned_fraction"]): c["median_ops_per_s"] for c in cells}
    out: list[dict[str, Any]] = []
    for frac in PINNED_FRACTIONS:
        lo, hi = by.get((small, frac), {}), by.get((large, frac), {})
        if not all(IMPL in d and FLOOR in d for d in (lo, hi)):
            continue
        impl_lo, impl_hi = _us_per_step(lo[IMPL]), _us_per_step(hi[IMPL])
        floor_lo, floor_hi = _us_per_step(lo[FLOOR]), _us_per_step(hi[FLOOR])
        out.append(
            {
                "sizes": f"{label(small)} -> {label(large)}",
                "pinned_fraction": frac,
                "impl_us_per_step": [impl_lo, impl_hi],
                "floor_us_per_step": [floor_lo, floor_hi],
                "impl_added_us": impl_hi - impl_lo,
                "floor_added_us": floor_hi - floor_lo,
                "allowed_added_us": (SCALING_BOUND - 1) * impl_lo,
            }
        )
    return out


def _notes(
    scaling: dict[tuple[str, str], float],
    probe: dict[str, float],
    budget: list[dict[str, Any]],
    interop: dict[str, Any],
    skipped: dict[str, str],
) -> list[str]:
    notes = [f"{name} ops/s at {k}: {v:.2f}x" for (name, k), v in scaling.items()]
    notes.append(
        "CPU ns per absent-key lookup in a dict of that many keys: "
        + ", ".join(f"{k}: {v:.0f}" for k, v in probe.items())
    )
    for b in budget:
        allowed = b["allowed_added_us"]
        notes.append(
            f"{b['sizes']}, {round(b['pinned_fraction'] * 100)}% pinned: impl-lru adds "
            f"{b['impl_added_us']:.1f} us per step; the {SCALING_BOUND}x bound allows "
            f"{allowed:.1f}; the dict floor alone adds {b['floor_added_us']:.1f} "
            f"({100 * b['floor_added_us'] / allowed:.0f}% of the allowance)"
        )
    if interop["available"]:
        notes.append(
            f"vLLM {interop.get('version')} ({interop['source']}): imported in the worker in "
            f"{interop.get('import_s', 0):.1f} s (not counted), worker ready in "
            f"{interop.get('start_s', 0):.1f} s"
        )
        for what, check in interop.get("same_work", {}).items():
            verdict = (
                "the same results"
                if check["same_results"]
                else "the same shape, other blocks"
                if check["same_shape"]
                else "DIFFERENT shapes"
            )
            notes.append(f"{what}, {check['steps']} steps: {verdict}")
    else:
        notes.append(f"vllm-lru, vllm-arc not measured: {interop['source']}")
    notes += [f"skipped {k}: {v}" for k, v in skipped.items() if k not in VLLM_CONTENDERS]
    return notes


# ---------------------------------------------------------------- tables and plots


def _pct(c: dict[str, Any]) -> str:
    return f"{round(c['pinned_fraction'] * 100)}%"


def _table(cells: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    columns = ["blocks", "pinned", *[f"{n} ops/s" for n in names]]
    rows = []
    for c in cells:
        rates = c["median_ops_per_s"]
        rows.append(
            [label(c["num_blocks"]), _pct(c)]
            + [f"{rates[n]:,.0f}" if n in rates else "—" for n in names]
        )
    return {"columns": columns, "rows": rows}


def _fmt(spread: dict[str, float] | None) -> str:
    if spread is None:
        return "—"
    return f"{spread['median']:.2f}x [{spread['min']:.2f}–{spread['max']:.2f}]"


def _ratio_table(cells: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [f"{a}/{b}" for a, b in RATIOS]
    present = [k for k in keys if any(k in c["ratio_spread"] for c in cells)]
    return {
        "title": "paired ratios (median [min–max] over rounds)",
        "columns": ["blocks", "pinned", *present],
        "rows": [
            [label(c["num_blocks"]), _pct(c), *[_fmt(c["ratio_spread"].get(k)) for k in present]]
            for c in cells
        ],
    }


def _floor_table(cells: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    shown = [n for n in names if n != FLOOR]
    return {
        "title": f"throughput / {FLOOR} throughput (paired median)",
        "columns": ["blocks", "pinned", *shown],
        "rows": [
            [label(c["num_blocks"]), _pct(c)]
            + [f"{c['floor_ratios'][n]:.2f}" if n in c["floor_ratios"] else "—" for n in shown]
            for c in cells
        ],
    }


def _panels(
    cells: list[dict[str, Any]], names: list[str], sizes: Sequence[int], floor: bool
) -> list[dict[str, Any]]:
    panels = []
    for frac in PINNED_FRACTIONS:
        row = {c["num_blocks"]: c for c in cells if c["pinned_fraction"] == frac}
        series: dict[str, list[float | None]] = {}
        errors: dict[str, list[list[float | None]]] = {}
        for name in names:
            if floor and name == FLOOR:
                continue
            values, low, high = [], [], []
            for n in sizes:
                c = row.get(n)
                if floor:
                    s = c["floor_ratio_spread"].get(name) if c else None
                    lo_hi = None if s is None else (s["min"], s["max"])
                    values.append(None if s is None else s["median"])
                else:
                    values.append(c["median_ops_per_s"].get(name) if c else None)
                    lo_hi = c["spread_ops_per_s"].get(name) if c else None
                low.append(None if lo_hi is None else lo_hi[0])
                high.append(None if lo_hi is None else lo_hi[1])
            if any(v is not None for v in values):
                series[name], errors[name] = values, [low, high]
        panels.append(
            {"title": f"{round(frac * 100)}% of blocks pinned", "series": series, "errors": errors}
        )
    return panels


def _plot(cells: list[dict[str, Any]], names: list[str], sizes: Sequence[int]) -> dict[str, Any]:
    return {
        "kind": "line",
        "title": "manager throughput, trace of 16 stores + 4 loads per step "
        "(median of rounds, bars: min–max)",
        "xlabel": "cache size (blocks, log scale)",
        "ylabel": "block operations per CPU second (log scale)",
        "log_x": True,
        "log_y": True,
        "x": list(sizes),
        "xticklabels": [label(n) for n in sizes],
        "panels": _panels(cells, names, sizes, floor=False),
    }


def _floor_plot(
    cells: list[dict[str, Any]], names: list[str], sizes: Sequence[int]
) -> dict[str, Any]:
    return {
        "kind": "line",
        "title": f"throughput as a fraction of {FLOOR} (the hash-table work the trace forces)",
        "xlabel": "cache size (blocks, log scale)",
        "ylabel": f"throughput / {FLOOR} throughput (ratio, log scale)",
        "log_x": True,
        "log_y": True,
        "x": list(sizes),
        "xticklabels": [label(n) for n in sizes],
        "panels": _panels(cells, names, sizes, floor=True),
    }


def main(argv: list[str] | None = None) -> int:
    """This benchmark alone: see `bench.runner.standalone`."""
    from bench.runner import standalone

    return standalone("throughput", run, __doc__.split("\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
