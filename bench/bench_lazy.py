"""Lazy offload scan: cost per `step()` as the free queue grows, at a fixed window.

Two workloads, each keeping every step's work identical whatever the queue size:

* `walk` -- no block has a hash: each step visits `window` blocks, selects none and
  moves the cursor on (a pass over the queue is followed by `reset()`, whose cost is
  included);
* `store` -- every block has fresh content: each step visits `window` blocks,
  selects all of them, pins them (`pool.touch`), and `complete()` unpins them
  (they rejoin at the back); after a pass, `reset()` forgets what was offloaded.

Each size N is timed side by side with N = 1K (bench/timing.py: interleaved rounds,
CPU-time rates, paired medians), so "cost(N) / cost(1K)" is measured under the same
load; flat means close to 1.0. The executable model (`model/lazy_offload.py`, which
copies the queue on every step) is timed next to `impl` at the small sizes.

`python -m bench.bench_lazy [--quick]` writes bench/results/lazy.json;
`evictable bench --only lazy` runs `run(quick)` through bench/runner.py.
"""

from __future__ import annotations

import gc
from typing import Any

from bench.runner import standalone
from bench.timing import Contender, Measurement, interleaved, paired_ratio
from evictable.impl.block_pool import BlockPool
from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.model.block_pool import ModelBlockPool
from evictable.model.lazy_offload import ModelLazyOffload

__all__ = ["main", "run"]

WINDOW = 64


def _walk(n: int, window: int) -> Contender:
    pool = BlockPool(n + 1)
    scanner = LazyOffloadScanner(pool, window)
    per_pass = max(1, n // window)
    done = [0]

    def run(units: int) -> None:
        s, step = scanner, scanner.step
        k = done[0]
        for _ in range(units):
            if k == per_pass:
                s.reset()
                k = 0
            step()
            k += 1
        done[0] = k

    return Contender(f"walk@{n}", run)


def _store(n: int, window: int) -> Contender:
    pool = BlockPool(n + 1)
    blocks = pool.get_new_blocks(n)
    for b in blocks:
        pool.cache_block(b, b.block_id)
    pool.free_blocks(blocks)
    scanner = LazyOffloadScanner(pool, window)
    per_pass = max(1, n // window)
    done = [0]

    def run(units: int) -> None:
        s, step, complete = scanner, scanner.step, scanner.complete
        k = done[0]
        for _ in range(units):
            if k == per_pass:
                s.reset()
                k = 0
            complete(step())
            k += 1
        done[0] = k

    return Contender(f"store@{n}", run)


def _model_walk(n: int, window: int) -> Contender:
    scanner = ModelLazyOffload(ModelBlockPool(n + 1), window)
    per_pass = max(1, n // window)
    done = [0]

    def run(units: int) -> None:
        k = done[0]
        for _ in range(units):
            if k == per_pass:
                scanner.reset()
                k = 0
            scanner.step(window)
            k += 1
        done[0] = k

    return Contender(f"model_walk@{n}", run)


def _ns(m: Measurement) -> float:
    return 1e9 / m.median


def _ns_bounds(m: dict[str, Any]) -> tuple[float, float]:
    """(low, high) ns per step from a measurement's max and min rates."""
    return 1e9 / m["max_ops_per_s"], 1e9 / m["min_ops_per_s"]


def _plot(out: dict[str, Any], sizes: tuple[int, ...]) -> dict[str, Any]:
    """ns per step against the number of free blocks, impl's walk and store, and the
    model's walk where it was measured; bars: min–max over rounds."""
    entries = [out["sizes"][str(n)] for n in sizes]
    series: dict[str, list[float | None]] = {}
    errors: dict[str, list[list[float | None]]] = {}
    for name, key in (("impl walk", "walk"), ("impl store", "store")):
        series[name] = [e[f"{key}_ns_per_step"] for e in entries]
        bounds = [_ns_bounds(e[key]) for e in entries]
        errors[name] = [[b[0] for b in bounds], [b[1] for b in bounds]]
    series["model walk"] = [e.get("model_walk_ns_per_step") for e in entries]
    return {
        "kind": "line",
        "title": f"lazy offload scan, window {WINDOW}: cost per step (median, bars: min–max)",
        "xlabel": "free blocks in the queue (log scale)",
        "ylabel": "CPU ns per step (log scale)",
        "log_x": True,
        "log_y": True,
        "x": list(sizes),
        "xticklabels": [f"{n // 1000}K" if n < 1_000_000 else f"{n // 1_000_000}M" for n in sizes],
        "series": series,
        "errors": errors,
        "styles": {"impl store": "--"},
    }


def run(quick: bool) -> dict[str, Any]:
    """Cost per step at each size, and its paired ratio to the smallest size."""
    sizes = (1_000, 8_000) if quick else (1_000, 16_000, 128_000, 1_000_000)
    model_sizes = (1_000,) if quick else (1_000, 16_000)
    reps = 3 if quick else 9
    target_s = 0.01 if quick else 0.05
    base = sizes[0]
    base_walk, base_store = _walk(base, WINDOW), _store(base, WINDOW)
    out: dict[str, Any] = {"window": WINDOW, "reps": reps, "sizes": {}}
    rows: list[list[str]] = []
    for n in sizes:
        if n == base:
            res = interleaved(
                [base_walk, base_store], reps, target_s=target_s, warm_s=target_s, max_units=10**6
            )
            walk_ratio = store_ratio = 1.0
            walk, store = res[base_walk.name], res[base_store.name]
        else:
            w, s = _walk(n, WINDOW), _store(n, WINDOW)
            res = interleaved(
                [base_walk, w, base_store, s],
                reps,
                target_s=target_s,
                warm_s=target_s,
                max_units=10**6,
            )
            walk_ratio = paired_ratio(res, base_walk.name, w.name)
            store_ratio = paired_ratio(res, base_store.name, s.name)
            walk, store = res[w.name], res[s.name]
            del w, s
        entry: dict[str, Any] = {
            "walk_ns_per_step": _ns(walk),
            "store_ns_per_step": _ns(store),
            "walk_cost_over_1k": walk_ratio,
            "store_cost_over_1k": store_ratio,
            "walk": walk.as_dict(),
            "store": store.as_dict(),
        }
        row = [
            f"{n:,}",
            f"{_ns(walk):,.0f}",
            f"{walk_ratio:.2f}x",
            f"{_ns(store):,.0f}",
            f"{store_ratio:.2f}x",
            "-",
        ]
        if n in model_sizes:
            mw = _model_walk(n, WINDOW)
            mres = interleaved(
                [base_walk if n == base else _walk(n, WINDOW), mw],
                reps,
                target_s=target_s,
                warm_s=target_s,
                max_units=10**6,
            )
            impl_name = next(k for k in mres if k.startswith("walk@"))
            speedup = paired_ratio(mres, impl_name, mw.name)
            entry["model_walk_ns_per_step"] = _ns(mres[mw.name])
            entry["impl_over_model_walk"] = speedup
            row[-1] = f"{_ns(mres[mw.name]):,.0f} ({speedup:.0f}x)"
        out["sizes"][str(n)] = entry
        rows.append(row)
        gc.collect()
    out["table"] = {
        "columns": [
            "free blocks",
            "walk ns/step",
            "vs 1K",
            "store ns/step",
            "vs 1K",
            "model walk ns/step (impl speedup)",
        ],
        "rows": rows,
    }
    out["notes"] = [
        f"window {WINDOW}; 'vs 1K' = paired median of cost(N)/cost(1K), measured side by side",
        "walk: visit 64 unhashed blocks; store: visit, select, pin and complete 64 blocks",
    ]
    out["plot"] = _plot(out, sizes)
    return out


def main(argv: list[str] | None = None) -> int:
    """This benchmark alone: see `bench.runner.standalone`."""
    return standalone("lazy", run, __doc__.split("\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
