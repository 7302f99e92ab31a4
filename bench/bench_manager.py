"""CPU offloading manager benchmarks: eviction latency and bytes per block.

(Throughput is `bench.bench_throughput`.)

* `run_eviction(quick)` -- the latency of one `prepare_store` of 16 new keys into a
  full cache (16 evictions) as the number of pinned blocks grows: flat for the
  evictable list and ARC's idle index, linear for a scan (the naive manager, vLLM's
  ARC). vLLM's managers run in the interop worker (`bench.interop`), which times
  each call there the same way.
* `run_memory(quick)` -- bytes per resident block (tracemalloc) of each manager
  (vLLM's measured in the worker), and of one block status as a `BlockStatus`, an
  `ArcRecord`, and a `ctypes.Structure` of an int32 ref count and an int64 id.

Each returns a dict with `table` (columns, rows), `plot` (see `bench.plotting`) and
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
from functools import partial
from typing import Any

from bench.contenders import available
from bench.interop import VLLM_CONTENDERS, Worker, shared_worker
from bench.workloads import (
    BATCH_STORES,
    MIN_EVICTABLE,
    Factory,
    FillTimeout,
    Manager,
    Step,
    Trace,
    fill,
    fill_timed,
    label,
    make_keys,
    make_trace,
)

__all__ = ["run_eviction", "run_memory", "timed_stores"]


# ---------------------------------------------------------------- eviction


def timed_stores(manager: Manager, steps: Sequence[Step], sink: list[float]) -> None:
    """Run the steps; record the wall-clock µs of each prepare_store (16 evictions each)."""
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


Timer = Callable[[int], list[float]]
"""`timer(k)`: the latencies (µs) of the next k prepare_store calls of one contender."""


def _local_timer(manager: Manager, steps: list[Step]) -> Timer:
    pos = 0

    def timer(k: int) -> list[float]:
        nonlocal pos
        sink: list[float] = []
        timed_stores(manager, steps[pos : pos + k], sink)
        pos += k
        return sink

    return timer


def run_eviction(quick: bool) -> dict[str, Any]:
    """Median prepare_store latency (16 evictions) against the number of pinned blocks.

    Per contender and pinned count: the median over every call of every round, and
    the spread of the per-round medians (min, max). Rounds interleave the contenders.
    """
    n = 1024 if quick else 1 << 16
    reps = 3 if quick else 5
    fractions = (0.0, 0.25, 0.5, 0.75, 0.9, 0.99)
    budget_s = 0.002 if quick else 0.04
    factories, missing = available()
    worker, why = shared_worker()
    if worker is None:
        missing.update(dict.fromkeys(VLLM_CONTENDERS, why))
    limit_s = 2.0 if quick else 5.0
    max_steps = 200 if not quick else 20
    num_steps = 2 + reps * (max_steps + 1)
    base = make_trace(n, 0.0, num_steps)
    pinned_counts: list[int] = []
    runs: list[tuple[str, int, Timer, int]] = []
    remote: list[str] = []
    names = [*factories, *(VLLM_CONTENDERS if worker is not None else ())]
    for frac in fractions:
        count = min(int(frac * n), n - MIN_EVICTABLE)
        pinned_counts.append(count)
        trace = replace(base, pinned=list(range(count)))
        for name in names:
            if name in missing:
                continue
            if name in factories:
                try:
                    manager, _ = fill_timed(factories[name], n, trace, limit_s)
                except FillTimeout as exc:
                    missing[name] = f"too slow at {label(n)} blocks: {exc}"
                    runs = [r for r in runs if r[0] != name]
                    continue
                timer = _local_timer(manager, trace.steps)
            elif worker is not None:
                cid = f"{name}@{count}"
                worker.setup(cid, VLLM_CONTENDERS[name], n, frac, num_steps, pinned=count)
                remote.append(cid)
                timer = _remote_timer(worker, cid)
            else:
                continue
            per_step = max(min(timer(2)) / 1e6, 1e-7)
            k = max(1, min(max_steps, round(budget_s / per_step)))
            runs.append((name, count, timer, k))
    latencies: dict[tuple[str, int], list[list[float]]] = {(r[0], r[1]): [] for r in runs}
    if worker is not None:
        worker.freeze(True)
    gc.collect()
    gc.freeze()  # as bench.timing.interleaved: set-up is not rescanned during the rounds
    try:
        for rep in range(reps):
            for i in range(len(runs)):
                name, count, timer, k = runs[(i + rep) % len(runs)]
                latencies[(name, count)].append(timer(k))
    finally:
        gc.unfreeze()
        if worker is not None:
            worker.freeze(False)
    del runs
    if worker is not None:
        for cid in remote:
            worker.drop(cid)
    gc.collect()
    names = [name for name in names if name not in missing]
    median_us = {
        name: [statistics.median(_flat(latencies[(name, c)])) for c in pinned_counts]
        for name in names
    }
    spread = {
        name: [
            [min(map(statistics.median, latencies[(name, c)])) for c in pinned_counts],
            [max(map(statistics.median, latencies[(name, c)])) for c in pinned_counts],
        ]
        for name in names
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
        "spread_prepare_store_us": spread,
        "max_over_min": flat,
        "skipped": missing,
        "table": {"columns": columns, "rows": rows},
        "notes": [
            f"{name}: slowest / fastest median over pinned counts = {v:.2f}x"
            for name, v in flat.items()
        ]
        + ["wall-clock µs per call (perf_counter_ns); error bars: min–max of per-round medians"]
        + [f"skipped {k}: {v}" for k, v in missing.items()],
        "plot": {
            "kind": "line",
            "title": f"prepare_store latency, 16 evictions per call, {label(n)} blocks "
            "(median, bars: min–max of rounds)",
            "xlabel": "pinned blocks (loading, never evictable)",
            "ylabel": "µs per prepare_store call, wall clock (log scale)",
            "log_y": True,
            "x": pinned_counts,
            "series": median_us,
            "errors": spread,
        },
    }


def _remote_timer(worker: Worker, cid: str) -> Timer:
    return lambda k: worker.latencies(cid, k)


def _flat(parts: list[list[float]]) -> list[float]:
    return [x for part in parts for x in part]


# ---------------------------------------------------------------- memory


class CBlockStatus(ctypes.Structure):
    """A block status as C data: int32 ref count, int64 slot id (16 bytes with padding)."""

    _fields_ = (("ref_cnt", ctypes.c_int32), ("block_id", ctypes.c_int64))


def _records_of(make: Callable[[int], object], n: int) -> list[object]:
    return [make(i + 1000) for i in range(n)]


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
    from evictable.impl.policies.arc import ArcRecord

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
                per_block[f"manager {name} (at {label(small)})"] = used / small
                notes.append(
                    f"{name}: too slow to fill {label(n)} blocks under tracemalloc; "
                    f"measured at {label(small)} blocks"
                )
            del obj
        makers: tuple[tuple[str, Callable[[int], object]], ...] = (
            ("BlockStatus object + its int id", BlockStatus),
            ("ArcRecord object + its int id", ArcRecord),
        )
        for what, make in makers:
            size, obj = _traced_bytes(partial(_records_of, make, n))
            per_block[what] = (size - 8 * n) / n
            del obj
        size, obj = _traced_bytes(lambda: [CBlockStatus(0, i + 1000) for i in range(n)])
        per_block["ctypes.Structure object"] = (size - 8 * n) / n
        del obj
        size, obj = _traced_bytes(lambda: (CBlockStatus * n)())
        per_block["ctypes.Structure in a ctypes array"] = size / n
        del obj
    finally:
        tracemalloc.stop()
    worker, why = shared_worker()
    if worker is None:
        missing.update(dict.fromkeys(VLLM_CONTENDERS, why))
    else:
        for name, policy in VLLM_CONTENDERS.items():
            per_block[f"manager {name}"] = worker.memory(policy, n)
    managers = [k for k in per_block if k.startswith("manager ")]
    per_block = {k: per_block[k] for k in [*managers, *(k for k in per_block if k not in managers)]}
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
            "title": f"bytes per resident block ({label(n)} idle blocks, tracemalloc)",
            "xlabel": "bytes per resident block",
            "ylabel": "manager or record",
            "log_y": False,
            "x": list(per_block),
            "series": {"bytes": list(per_block.values())},
            "bar_colors": [
                name.split()[1] if name.startswith("manager ") else None for name in per_block
            ],
        },
    }
