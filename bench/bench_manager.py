"""CPU offloading manager benchmarks: throughput, eviction latency, bytes per block.

* `run_throughput(quick)` -- block operations per second on the store/load trace
  (`bench.workloads`) at each size and pinned fraction, for every contender
  (`bench.contenders`), all interleaved in one set of rounds (`bench.timing`), so
  that every ratio -- impl against the model, the naive scan, the bare skeleton,
  and impl at 1M blocks against impl at 1K -- is measured side by side.
* `run_eviction(quick)` -- the latency of one `prepare_store` of 16 new keys into a
  full cache (16 evictions) as the number of pinned blocks grows: flat for the
  evictable list, linear for the naive scan.
* `run_memory(quick)` -- bytes per resident block (tracemalloc) of each manager,
  and of one block status as a `BlockStatus` object and as a `ctypes.Structure`
  of an int32 ref count and an int64 id.

Each returns a dict with `table` (columns, rows), `plot` (see `bench.runner`) and
the raw numbers.
"""

from __future__ import annotations

import ctypes
import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from bench.contenders import IMPL, Factory, available
from bench.timing import Contender, interleaved, paired_ratio, units_budget
from bench.workloads import (
    BATCH_STORES,
    MIN_EVICTABLE,
    OPS_PER_STEP,
    FillTimeout,
    Manager,
    Step,
    Trace,
    fill,
    make_keys,
    make_trace,
    pinned_indices,
    run_steps,
)

__all__ = ["run_eviction", "run_memory", "run_throughput"]

PINNED_FRACTIONS = (0.0, 0.9)
FILL_LIMIT_S = 20.0
"""A contender whose fill at a size takes longer than this is skipped there (and above)."""


def _label(n: int) -> str:
    return (
        f"{n >> 20}M"
        if n >= 1 << 20 and n % (1 << 20) == 0
        else (f"{n >> 10}K" if n >= 1024 and n % 1024 == 0 else str(n))
    )


def _stepper(manager: Manager, steps: Sequence[Step]) -> Callable[[int], None]:
    """`run(units)`: the next `units` steps of the trace on this manager."""
    pos = 0

    def run(units: int) -> None:
        nonlocal pos
        if pos + units > len(steps):
            raise RuntimeError(f"trace exhausted: {pos + units} > {len(steps)} steps")
        run_steps(manager, steps[pos : pos + units])
        pos += units

    return run


def _fill_timed(
    factory: Factory, n: int, trace: Trace, limit_s: float | None = None
) -> tuple[Manager, float]:
    t0 = time.perf_counter()
    manager = factory(n)
    fill(manager, trace, limit_s=limit_s, chunk=1024)
    return manager, time.perf_counter() - t0


# ---------------------------------------------------------------- throughput


def run_throughput(quick: bool, sizes: Sequence[int] | None = None) -> dict[str, Any]:
    """Ops/s of every contender at every (size, pinned fraction), interleaved in one run.

    `sizes` defaults to 1K, 64K and 1M blocks (512 and 2K with `quick`).
    """
    if sizes is None:
        sizes = (512, 2048) if quick else (1 << 10, 1 << 16, 1 << 20)
    reps = 3 if quick else 7
    max_units = 60 if quick else 3000
    target_s, warm_s = (0.004, 0.004) if quick else (0.12, 0.15)
    factories, missing = available()
    skipped = {name: reason for name, reason in missing.items()}
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
            for name, factory in factories.items():
                cid = f"{name}@{_label(n)}/{round(frac * 100)}%"
                if name in too_slow:
                    skipped[cid] = too_slow[name]
                    continue
                try:
                    manager, seconds = _fill_timed(factory, n, trace, limit_s)
                except FillTimeout as exc:
                    too_slow[name] = f"too slow from {_label(n)} blocks on: {exc}"
                    skipped[cid] = too_slow[name]
                    gc.collect()
                    continue
                fill_s[cid] = seconds
                keep.append(manager)
                contenders.append(Contender(cid, _stepper(manager, trace.steps), OPS_PER_STEP))
                in_cell[name] = cid
            cells.append((n, frac, in_cell))
    results = interleaved(contenders, reps, target_s=target_s, warm_s=warm_s, max_units=max_units)
    del keep
    gc.collect()

    out_cells = []
    for n, frac, names in cells:
        ops = {name: results[cid].median for name, cid in names.items()}
        ratios: dict[str, float] = {}
        if IMPL in names:
            for other in ("model-lru", "naive", "skeleton", "impl-arc"):
                if other in names:
                    ratios[f"{IMPL}/{other}"] = paired_ratio(results, names[IMPL], names[other])
        out_cells.append(
            {
                "num_blocks": n,
                "pinned_fraction": frac,
                "median_ops_per_s": ops,
                "ratios": ratios,
                "detail": {name: results[cid].as_dict() for name, cid in names.items()},
            }
        )
    scaling = _scaling(results, sizes)
    budget = _budget(out_cells, sizes)
    probe = _probe_ns(sizes, quick)
    return {
        "method": {
            "ops_per_step": OPS_PER_STEP,
            "reps": reps,
            "target_rep_s": target_s,
            "trace": "per step: prepare_store(16 new) + complete_store + "
            "prepare_load(4 of the previous batch) + complete_load",
        },
        "cells": out_cells,
        "scaling": {f"{name}: {k}": v for (name, k), v in scaling.items()},
        "scaling_budget": budget,
        "dict_probe_ns": probe,
        "fill_seconds": fill_s,
        "skipped": skipped,
        "table": _throughput_table(out_cells, list(factories)),
        "notes": [f"{name} ops/s at {k}: {v:.2f}x" for (name, k), v in scaling.items()]
        + [
            "CPU ns per absent-key lookup in a dict of that many keys: "
            + ", ".join(f"{k}: {v:.0f}" for k, v in probe.items())
        ]
        + [_budget_note(b) for b in budget]
        + [f"skipped {k}: {v}" for k, v in skipped.items()],
        "plot": _throughput_plot(out_cells, list(factories)),
    }


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
    return {_label(n): statistics.median(v) for n, v in samples.items()}


def _scaling(results: dict[str, Any], sizes: Sequence[int]) -> dict[tuple[str, str], float]:
    """Throughput at the smallest size over throughput at each larger one (impl, skeletons)."""
    out: dict[tuple[str, str], float] = {}
    small = _label(sizes[0])
    for name in (IMPL, "skeleton", "skeleton-split", "dict-floor"):
        for n in sizes[1:]:
            for frac in PINNED_FRACTIONS:
                pct = f"{round(frac * 100)}%"
                a, b = f"{name}@{small}/{pct}", f"{name}@{_label(n)}/{pct}"
                if a in results and b in results:
                    out[(name, f"{small} / {_label(n)}, {pct} pinned")] = paired_ratio(
                        results, a, b
                    )
    return out


SCALING_BOUND = 1.5
"""The issue's bound: impl throughput at the largest size within this factor of the smallest."""


def _us_per_step(ops_per_s: float) -> float:
    return 1e6 * OPS_PER_STEP / ops_per_s


def _budget(cells: list[dict[str, Any]], sizes: Sequence[int]) -> list[dict[str, Any]]:
    """Where the time added between the smallest and the largest size goes.

    Per pinned fraction: CPU microseconds per trace step of impl-lru and of the
    dict floor at both sizes, what each adds at the large size, and what the
    scaling bound allows impl-lru to add (`SCALING_BOUND - 1` times its own time
    per step at the small size). When the floor alone uses most of the allowance,
    the bound is out of reach for any layout that finds blocks through a dict.
    """
    small, large = sizes[0], sizes[-1]
    by = {(c["num_blocks"], c["pinned_fraction"]): c["median_ops_per_s"] for c in cells}
    out: list[dict[str, Any]] = []
    for frac in PINNED_FRACTIONS:
        lo, hi = by.get((small, frac), {}), by.get((large, frac), {})
        if not all(IMPL in d and "dict-floor" in d for d in (lo, hi)):
            continue
        impl_lo, impl_hi = _us_per_step(lo[IMPL]), _us_per_step(hi[IMPL])
        floor_lo, floor_hi = _us_per_step(lo["dict-floor"]), _us_per_step(hi["dict-floor"])
        out.append(
            {
                "sizes": f"{_label(small)} -> {_label(large)}",
                "pinned_fraction": frac,
                "impl_us_per_step": [impl_lo, impl_hi],
                "floor_us_per_step": [floor_lo, floor_hi],
                "impl_added_us": impl_hi - impl_lo,
                "floor_added_us": floor_hi - floor_lo,
                "allowed_added_us": (SCALING_BOUND - 1) * impl_lo,
            }
        )
    return out


def _budget_note(b: dict[str, Any]) -> str:
    allowed = b["allowed_added_us"]
    return (
        f"{b['sizes']}, {round(b['pinned_fraction'] * 100)}% pinned: impl-lru adds "
        f"{b['impl_added_us']:.1f} us per step; the {SCALING_BOUND}x bound allows "
        f"{allowed:.1f}; the dict floor alone adds {b['floor_added_us']:.1f} "
        f"({100 * b['floor_added_us'] / allowed:.0f}% of the allowance)"
    )


def _throughput_table(cells: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    ratio_cols = [f"{IMPL}/{o}" for o in ("model-lru", "naive", "skeleton", "impl-arc")]
    columns = ["blocks", "pinned", *[f"{n} ops/s" for n in names], *ratio_cols]
    rows = []
    for c in cells:
        row: list[str] = [_label(c["num_blocks"]), f"{round(c['pinned_fraction'] * 100)}%"]
        row += [
            f"{c['median_ops_per_s'][n]:,.0f}" if n in c["median_ops_per_s"] else "—" for n in names
        ]
        row += [f"{c['ratios'][r]:.2f}x" if r in c["ratios"] else "—" for r in ratio_cols]
        rows.append(row)
    return {"columns": columns, "rows": rows}


def _throughput_plot(cells: list[dict[str, Any]], names: list[str]) -> dict[str, Any]:
    x = [f"{_label(c['num_blocks'])}\n{round(c['pinned_fraction'] * 100)}% pinned" for c in cells]
    series = {n: [c["median_ops_per_s"].get(n) for c in cells] for n in names}
    return {
        "kind": "bar",
        "title": "manager throughput (trace: 16 stores + 4 loads per step)",
        "xlabel": "blocks, pinned fraction",
        "ylabel": "block operations / s (median)",
        "log_y": True,
        "x": x,
        "series": series,
    }


# ---------------------------------------------------------------- eviction


def _timed_stores(manager: Manager, steps: Sequence[Step], sink: list[float]) -> None:
    """Run the steps; record the latency of each prepare_store (16 evictions each)."""
    clock = time.perf_counter_ns
    for step in steps:
        t0 = clock()
        out = manager.prepare_store(step.stores)
        sink.append((clock() - t0) / 1000.0)
        if out is None or len(out.evicted_keys) != BATCH_STORES:
            raise RuntimeError("eviction benchmark: prepare_store did not evict a full batch")
        manager.complete_store(step.stores)
        manager.prepare_load(step.loads)
        manager.complete_load(step.loads)


def run_eviction(quick: bool) -> dict[str, Any]:
    """Median prepare_store latency (16 evictions) against the number of pinned blocks."""
    n = 1024 if quick else 1 << 16
    reps = 3 if quick else 5
    fractions = (0.0, 0.25, 0.5, 0.75, 0.9, 0.99)
    budget_s = 0.002 if quick else 0.04
    factories, missing = available()
    limit_s = 2.0 if quick else 5.0
    max_steps = 200 if not quick else 20
    base = make_trace(n, 0.0, 2 + reps * (max_steps + 1))
    pinned_counts: list[int] = []
    runs: list[tuple[str, int, Manager, list[Step], int]] = []
    for frac in fractions:
        count = min(int(frac * n), n - MIN_EVICTABLE)
        pinned_counts.append(count)
        trace = replace(base, pinned=list(range(count)))
        for name, factory in factories.items():
            if name in missing:
                continue
            try:
                manager, _ = _fill_timed(factory, n, trace, limit_s)
            except FillTimeout as exc:
                missing[name] = f"too slow at {_label(n)} blocks: {exc}"
                runs = [r for r in runs if r[0] != name]
                continue
            probe: list[float] = []
            _timed_stores(manager, trace.steps[:2], probe)
            per_step = max(min(probe) / 1e6, 1e-7)
            k = max(1, min(max_steps, round(budget_s / per_step)))
            runs.append((name, count, manager, trace.steps[2:], k))
    latencies: dict[tuple[str, int], list[float]] = {(r[0], r[1]): [] for r in runs}
    cursors = [0] * len(runs)
    gc.collect()
    for rep in range(reps):
        for i in range(len(runs)):
            j = (i + rep) % len(runs)
            name, count, manager, steps, k = runs[j]
            _timed_stores(manager, steps[cursors[j] : cursors[j] + k], latencies[(name, count)])
            cursors[j] += k
    del runs
    gc.collect()
    names = [name for name in factories if name not in missing]
    median_us = {
        name: [statistics.median(latencies[(name, c)]) for c in pinned_counts] for name in names
    }
    flat = {name: max(v) / min(v) for name, v in median_us.items()}
    columns = ["pinned blocks", *[f"{name} µs" for name in names]]
    rows = [
        [f"{c:,}", *[f"{median_us[name][i]:.1f}" for name in names]]
        for i, c in enumerate(pinned_counts)
    ]
    return {
        "num_blocks": n,
        "pinned_counts": pinned_counts,
        "median_prepare_store_us": median_us,
        "max_over_min": flat,
        "skipped": missing,
        "table": {"columns": columns, "rows": rows},
        "notes": [
            f"{name}: slowest / fastest median over pinned counts = {v:.2f}x"
            for name, v in flat.items()
        ]
        + [f"skipped {k}: {v}" for k, v in missing.items()],
        "plot": {
            "kind": "line",
            "title": f"prepare_store latency, 16 evictions, {_label(n)} blocks",
            "xlabel": "pinned blocks",
            "ylabel": "µs per call (median)",
            "log_y": True,
            "x": pinned_counts,
            "series": median_us,
        },
    }


# ---------------------------------------------------------------- memory


class CBlockStatus(ctypes.Structure):
    """A block status as C data: int32 ref count, int64 slot id (16 bytes with padding)."""

    _fields_ = (("ref_cnt", ctypes.c_int32), ("block_id", ctypes.c_int64))


def _traced_bytes(build: Callable[[], object]) -> tuple[int, object]:
    """Bytes still allocated after `build()` (tracemalloc running), and what it built."""
    gc.collect()
    before = tracemalloc.get_traced_memory()[0]
    obj = build()
    gc.collect()
    return tracemalloc.get_traced_memory()[0] - before, obj


def run_memory(quick: bool) -> dict[str, Any]:
    """Bytes per resident (idle) block of each manager, and of one block status record."""
    n = 2048 if quick else 1 << 16
    small = 512 if quick else 4096
    keys = make_keys(n, seed=11)
    factories, missing = available()
    from evictable.impl.block import BlockStatus

    def filled(factory: Factory, size: int, limit_s: float) -> Callable[[], object]:
        def build() -> object:
            trace = Trace(size, 0.0, keys[:size], [], [])
            m = factory(size)
            fill(m, trace, limit_s=limit_s, chunk=1024)
            return m

        return build

    per_block: dict[str, float] = {}
    notes: list[str] = []
    tracemalloc.start()
    try:
        for name, factory in factories.items():
            try:
                used, obj = _traced_bytes(filled(factory, n, 5.0 if not quick else 2.0))
                per_block[f"manager {name}"] = used / n
            except FillTimeout:
                gc.collect()
                used, obj = _traced_bytes(filled(factory, small, 60.0))
                per_block[f"manager {name} (at {_label(small)})"] = used / small
                notes.append(
                    f"{name}: too slow to fill {_label(n)} blocks under tracemalloc; "
                    f"measured at {_label(small)} blocks"
                )
            del obj
        size, obj = _traced_bytes(lambda: [BlockStatus(i + 1000) for i in range(n)])
        per_block["BlockStatus object + its int id"] = (size - 8 * n) / n
        del obj
        size, obj = _traced_bytes(lambda: [CBlockStatus(0, i + 1000) for i in range(n)])
        per_block["ctypes.Structure object"] = (size - 8 * n) / n
        del obj
        size, obj = _traced_bytes(lambda: (CBlockStatus * n)())
        per_block["ctypes.Structure in a ctypes array"] = size / n
        del obj
    finally:
        tracemalloc.stop()
    rows = [[name, f"{v:.1f}"] for name, v in per_block.items()]
    return {
        "num_blocks": n,
        "bytes_per_block": per_block,
        "sizeof_ctypes_struct": ctypes.sizeof(CBlockStatus),
        "skipped": missing,
        "table": {"columns": ["what", "bytes per block"], "rows": rows},
        "notes": [
            "keys are allocated before tracing and not counted; a manager's cost is "
            "its dict entries, list nodes, status objects and slot-id ints",
            *notes,
        ]
        + [f"skipped {k}: {v}" for k, v in missing.items()],
        "plot": {
            "kind": "barh",
            "title": f"bytes per resident block ({_label(n)} blocks)",
            "xlabel": "bytes per block",
            "ylabel": "",
            "log_y": False,
            "x": list(per_block),
            "series": {"bytes": list(per_block.values())},
        },
    }
