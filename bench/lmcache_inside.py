"""Inside LMCache, side by side in one process: LMCache 0.5's `LocalCPUBackend` with
evictable's `EvictableLRUPolicy` (`cache_policy: EVICTABLE`) against the same backend
with LMCache's own LRU, FIFO and LFU.

Run it in the LMCache venv (LMCache is imported):

    .venv-interop-lmcache/bin/python -m bench.lmcache_inside [--quick] [--json PATH]

Workload, per size N (1K, 8K, 64K chunks) and pinned fraction (0 and 90 %): each
contender's backend (LMCache's default allocator, N pages of 128 bytes) is filled with
N chunks, then the oldest `fraction * N` are pinned (`LocalCPUBackend.pin`: the worst
place for a policy that scans from the old end). A step is one eviction-bearing store,
as LMCache's storage manager makes it: `allocate` (the backend asks its policy for a
victim and evicts it), `batched_submit_put_task`, the writer's `ref_count_down`.
Rounds are interleaved: each round runs every (contender, pinned fraction) of a size
once, one after the other, timing each with `time.process_time` (CPU seconds); the
order rotates every round. Each subject's stores per round are calibrated so that one
measurement takes about `TARGET_S` (times are per store), and each measurement is
preceded by an untimed pre-roll of a tenth of its stores, so that a subject whose
caches the previous one evicted (LMCache's scans walk tens of thousands of objects) is
not charged for refilling them. A ratio is paired within a
round (LMCache's policy / ours, at one fraction); the report gives each ratio's median
and spread (min, max) over the rounds, each contender's median microseconds per
store, and `flat`: ours at 0% over ours at 90% pinned, paired the same way (1.0 =
pinning costs nothing). Every store is checked to evict exactly one
chunk (the index keeps N chunks and the allocation never fails).

Output: a table on stdout and JSON (`--json`, default `bench/results/lmcache_inside.json`).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LMCACHE_LOG_LEVEL", "ERROR")

import torch
from lmcache.utils import CacheEngineKey
from lmcache.v1.config import LMCacheEngineConfig
from lmcache.v1.memory_allocators.mixed_memory_allocator import MixedMemoryAllocator
from lmcache.v1.memory_management import MemoryFormat
from lmcache.v1.pin_monitor import PinMonitor
from lmcache.v1.storage_backend.local_cpu_backend import LocalCPUBackend

import evictable.lmcache

CONTENDERS = {
    "evictable": evictable.lmcache.POLICY_NAME,
    "lmcache-lru": "LRU",
    "lmcache-fifo": "FIFO",
    "lmcache-lfu": "LFU",
}
"""Contender -> LMCache `cache_policy` setting."""

OURS = "evictable"
SIZES = {"1K": 1_024, "8K": 8_192, "64K": 65_536}
FRACTIONS = (0.0, 0.9)
PAGE = 128
SHAPE = torch.Size([2, 1, 4, 16])  # one 128-byte chunk in LMCache's KV_2LTD format
ROUNDS = {"1K": 11, "8K": 11, "64K": 9}
"""Size -> rounds; each round runs every (contender, pinned fraction) once."""
TARGET_S = 0.08
"""CPU seconds of one measurement: each subject's stores per round are calibrated to it
(LMCache's policies at 90% pinned take milliseconds per store, ours microseconds)."""


def key(i: int) -> CacheEngineKey:
    return CacheEngineKey("bench", 1, 0, i, torch.uint8)


class Subject:
    """One `LocalCPUBackend` with `policy`, full, the oldest `pinned` chunks pinned."""

    def __init__(self, policy: str, size: int, pinned: int) -> None:
        config = LMCacheEngineConfig.from_defaults(
            local_cpu=True, cache_policy=policy, pin_timeout_sec=10**9, pin_check_interval_sec=3600
        )
        PinMonitor.GetOrCreate(config)
        alloc = MixedMemoryAllocator(size * PAGE, align_bytes=PAGE)
        self.backend = LocalCPUBackend(config, memory_allocator=alloc)
        self.size = size
        self.next = 0
        for _ in range(size):
            self.store()
        for i in range(pinned):
            self.backend.pin(key(i))

    def store(self) -> None:
        """One store, as LMCache's storage manager makes it (evicts once the cache is full)."""
        b = self.backend
        obj = b.allocate(SHAPE, torch.uint8, fmt=MemoryFormat.KV_2LTD, busy_loop=False)
        if obj is None:
            raise RuntimeError("the store found no victim")
        b.batched_submit_put_task([key(self.next)], [obj])
        obj.ref_count_down()
        self.next += 1

    def run(self, n: int) -> float:
        """CPU seconds of `n` stores (each evicts exactly one chunk: checked)."""
        store = self.store
        t0 = time.process_time()
        for _ in range(n):
            store()
        spent = time.process_time() - t0
        if len(self.backend.hot_cache) != self.size:
            raise RuntimeError(f"{len(self.backend.hot_cache)} chunks cached, not {self.size}")
        return spent


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _calibrate(subject: Subject, target_s: float) -> int:
    """Stores per round so that one measurement takes about `target_s` CPU seconds."""
    n, spent = 1, subject.run(1)
    while spent < target_s / 4 and n < 4096:
        n *= 2
        spent = subject.run(n)
    return max(2, min(20_000, int(n * target_s / max(spent, 1e-6))))


def cell(size: str, rounds: int, target_s: float) -> dict[str, Any]:
    """One size: every contender at every pinned fraction, interleaved in the same
    rounds; ratios paired within a round."""
    n = SIZES[size]
    subjects = {
        (name, f): Subject(policy, n, int(f * n))
        for f in FRACTIONS
        for name, policy in CONTENDERS.items()
    }
    steps = {label: _calibrate(s, target_s) for label, s in subjects.items()}  # also warms up
    gc.collect()
    gc.freeze()
    labels = list(subjects)
    per_store: dict[tuple[str, float], list[float]] = {label: [] for label in labels}
    for r in range(rounds):
        order = labels[r % len(labels) :] + labels[: r % len(labels)]
        for label in order:
            subject = subjects[label]
            subject.run(max(1, steps[label] // 10))  # untimed pre-roll: warm caches again
            per_store[label].append(subject.run(steps[label]) / steps[label])
    gc.unfreeze()
    out: dict[str, Any] = {"size": size, "entries": n, "rounds": rounds, "fractions": []}
    for f in FRACTIONS:
        ours = per_store[(OURS, f)]
        out["fractions"].append(
            {
                "pinned_fraction": f,
                "stores_per_round": {name: steps[(name, f)] for name in CONTENDERS},
                "us_per_store": {
                    name: {k: v * 1e6 for k, v in _summary(per_store[(name, f)]).items()}
                    for name in CONTENDERS
                },
                "ratios": {
                    f"{name} / {OURS}": _summary(
                        [a / b for a, b in zip(per_store[(name, f)], ours, strict=True)]
                    )
                    for name in CONTENDERS
                    if name != OURS
                },
            }
        )
    zero, pinned = per_store[(OURS, 0.0)], per_store[(OURS, FRACTIONS[-1])]
    out["flat"] = _summary([a / b for a, b in zip(zero, pinned, strict=True)])
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="few rounds (a smoke run)")
    p.add_argument("--sizes", default=",".join(SIZES), help="comma-separated: 1K,8K,64K")
    p.add_argument("--json", default="bench/results/lmcache_inside.json")
    args = p.parse_args(argv)
    load_start = os.getloadavg()
    cells = []
    flat = {}
    for size in args.sizes.split(","):
        got = cell(size, 3 if args.quick else ROUNDS[size], 0.02 if args.quick else TARGET_S)
        cells.append(got)
        for row in got["fractions"]:
            f = row["pinned_fraction"]
            ours = row["us_per_store"][OURS]["median"]
            print(f"{size:>4} {f:>4.0%} {OURS} {ours:9.1f} us/store", flush=True)
            for label, r in row["ratios"].items():
                print(
                    f"{size:>4} {f:>4.0%} {label:<26} median {r['median']:8.2f}x"
                    f"  [{r['min']:.2f}, {r['max']:.2f}]",
                    flush=True,
                )
        fl = got["flat"]
        flat[size] = fl
        print(
            f"{size:>4} {OURS} flat (time per store, 0% / 90%, paired): median "
            f"{fl['median']:.2f}  [{fl['min']:.2f}, {fl['max']:.2f}]",
            flush=True,
        )
    import lmcache

    report = {
        "benchmark": "lmcache_inside",
        "measure": "CPU seconds per eviction-bearing store (time.process_time), one process",
        "python": sys.version.split()[0],
        "lmcache": lmcache.__version__,
        "machine": platform.machine(),
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
        "flat": flat,
        "cells": cells,
    }
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
