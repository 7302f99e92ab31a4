"""SGLang 0.5's host eviction: the cost of its heap rebuild per eviction.

    .venv-interop-sglang/bin/python -m bench.sglang_host_heap [--json PATH]
        [--sizes 1024,8192,32768] [--locked 0,0.9] [--evictions 200]

SGLang keeps its evictable host leaves in a set (`evictable_host_leaves`, kept
incrementally) and, on every host eviction (`UnifiedTreeCore.drive_host_eviction`,
through `UnifiedRadixCache.evict_host`), builds a heap of *all* of them before it
pops the first. Locked host copies are not in the set, so they cost nothing; the
cost grows with the number of evictable ones. This benchmark measures it on SGLang's
real tree (the `evictable.sglang` adapter's `UnifiedRadixCache`, one page-sized node
per key under the root):

* a host tier of `n` keys is filled (every key stored and committed: `n` host
  leaves), then a fraction of them is locked the way a load-back locks its host
  copy (`inc_host_lock_ref`);
* each measured eviction is one `evict_host(page)` (one victim), timed on the
  process's CPU clock around that call alone; an untimed store then puts a new key
  in the freed page, so every eviction sees the same numbers of leaves;
* beside it, in the same process and at the same sizes, this project's
  `evictable.impl` manager (the evictable list) evicts one block per
  `prepare_store` with the same fraction of its blocks pinned.

The JSON has, per (size, locked fraction): the evictable and locked host-leaf counts,
the median and the 10th/90th percentiles of CPU µs per eviction for SGLang and for
`impl`, and their ratio. Nothing here is a threshold: the numbers are measurements.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["main", "measure"]


def _quantiles(samples: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "median_us": statistics.median(ordered) * 1e6,
        "p10_us": pick(0.1) * 1e6,
        "p90_us": pick(0.9) * 1e6,
    }


def _timed(call: Callable[[], object], refill: Callable[[], object], n: int) -> list[float]:
    """CPU seconds of `call` alone, `n` times, `refill` (untimed) after each."""
    out = []
    for _ in range(n):
        t0 = time.process_time()
        call()
        out.append(time.process_time() - t0)
        refill()
    return out


def _sglang(size: int, locked: float, evictions: int) -> dict[str, Any]:
    from evictable.proofs.adapters.sglang import PAGE_SIZE
    from evictable.sglang import SglangHostTier

    tier = SglangHostTier(size)
    keys = list(range(size))
    tier.prepare_store(keys)
    tier.complete_store(keys)
    for key in keys[: int(size * locked)]:
        tier.cache.inc_host_lock_ref(tier.node_of(key).id)  # what a load-back takes first
    evictable = tier.num_evictable
    fresh = iter(range(size, size + evictions + 1))

    def refill() -> None:
        key = next(fresh)
        tier.prepare_store([key])
        tier.complete_store([key])

    samples = _timed(lambda: tier.cache.evict_host(PAGE_SIZE), refill, evictions)
    return {"evictable": evictable, "locked": size - evictable, **_quantiles(samples)}


def _impl(size: int, locked: float, evictions: int) -> dict[str, Any]:
    from evictable.impl.manager import CPUOffloadingManager

    m = CPUOffloadingManager(size, "lru")
    keys = list(range(size))
    m.prepare_store(keys)
    m.complete_store(keys)
    m.prepare_load(keys[: int(size * locked)])
    fresh = iter(range(size, size + evictions + 1))
    pending: list[int] = []

    def store() -> None:
        key = next(fresh)
        m.prepare_store([key])  # evicts one idle block
        pending.append(key)

    def commit() -> None:
        m.complete_store(pending)
        pending.clear()

    samples = _timed(store, commit, evictions)
    return {"evictable": m.num_evictable, **_quantiles(samples)}


def measure(sizes: Sequence[int], fractions: Sequence[float], evictions: int) -> dict[str, Any]:
    """One row per (size, locked fraction); see the module docstring."""
    rows = []
    for size in sizes:
        for locked in fractions:
            sg = _sglang(size, locked, evictions)
            im = _impl(size, locked, evictions)
            rows.append(
                {
                    "host_leaves": size,
                    "locked_fraction": locked,
                    "sglang": sg,
                    "impl": im,
                    "sglang_over_impl": sg["median_us"] / max(im["median_us"], 1e-3),
                }
            )
    return {"benchmark": "sglang_host_heap", "evictions": evictions, "rows": rows}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.sglang_host_heap")
    p.add_argument("--sizes", default="1024,8192,32768")
    p.add_argument("--locked", default="0,0.9")
    p.add_argument("--evictions", type=int, default=200)
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    fractions = [float(f) for f in args.locked.split(",")]
    result = measure(sizes, fractions, args.evictions)
    text = json.dumps(result, indent=2)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
    for row in result["rows"]:
        sg, im = row["sglang"], row["impl"]
        print(
            f"{row['host_leaves']:>7} leaves, {row['locked_fraction']:.0%} locked: "
            f"SGLang {sg['median_us']:9.1f} us/eviction ({sg['evictable']} evictable), "
            f"impl {im['median_us']:6.1f} us, ratio {row['sglang_over_impl']:.1f}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
