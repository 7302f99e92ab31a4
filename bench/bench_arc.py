"""ARC eviction cost against the fraction of pinned blocks: the idle index vs a scan.

Contenders, per cache size N (1K, 64K, 1M; `--quick`: 1K and 64K, fewer rounds):

* `fast-0%`, `fast-90%` -- `impl.policies.arc.ARCCachePolicy` (idle entries kept in
  list order in its idle index, `impl.policies.arc_index`: eviction never visits
  pinned ones); plotted as `impl-arc`;
* `naive-0%`, `naive-90%` -- `ScanningArc` below, written for this benchmark: the
  same ARC whose eviction walks T1 (then T2) from the least-recent end looking for
  ref_cnt == 0, as vLLM's ARC does; plotted as `scanning-arc`.

Each cache is filled with N ready blocks in T1; for the 90% variants the 0.9·N least
recent are then pinned (ref 1, `mark_non_evictable`) -- the worst case for a scan
from the least-recent end, and the common one (old blocks being read by a long
prefix). One unit of work is one *eviction cycle*: `evict(1)`, then a fresh key is
inserted and committed in the freed place (so the cache stays full and the pinned
prefix stays put). The four contenders of one size run interleaved
(bench/timing.py), so the ratios compare numbers measured seconds apart.

Reported per N: µs per eviction cycle (median of rounds, CPU time) for each
contender, `naive/fast` at 0% and at 90% (paired median ratios), and flatness:
`fast-90% / fast-0%` (1.0 = eviction cost independent of pinning) next to
`naive-90% / naive-0%`.

`python -m bench.bench_arc [--quick]` writes bench/results/arc.json;
`evictable bench --only arc` calls `run(quick)` through bench/runner.py (which puts
the result, its table and its plot with the others).
"""

from __future__ import annotations

import gc
import itertools
from collections import OrderedDict
from collections.abc import Iterable, Set
from typing import Any

from bench.runner import standalone
from bench.timing import Contender, Measurement, interleaved, paired_ratio
from bench.workloads import label
from evictable.impl.block import BlockStatus
from evictable.impl.policies.arc import ARCCachePolicy
from evictable.impl.policies.base import CachePolicy
from evictable.model.arc import target_after_b1_hit, target_after_b2_hit
from evictable.model.types import ArcPolicySnapshot, Key

__all__ = ["ScanningArc", "main", "run"]

PINNED = (0.0, 0.9)


class ScanningArc(CachePolicy):
    """ARC with vLLM's eviction: scan T1/T2 for ref_cnt == 0 (benchmark baseline only).

    Same lists, touch rules and candidate order as docs/semantics.md, "ARC"; eviction costs
    O(entries scanned), pinned ones included.
    """

    name = "naive-arc"

    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.t1: OrderedDict[Key, BlockStatus] = OrderedDict()
        self.t2: OrderedDict[Key, BlockStatus] = OrderedDict()
        self.b1: OrderedDict[Key, None] = OrderedDict()
        self.b2: OrderedDict[Key, None] = OrderedDict()
        self.target_t1_size = 0.0

    def get(self, key: Key) -> BlockStatus | None:
        block = self.t1.get(key)
        return block if block is not None else self.t2.get(key)

    def insert(self, key: Key, block: BlockStatus) -> None:
        self.b1.pop(key, None)
        self.b2.pop(key, None)
        self.t1[key] = block

    def remove(self, key: Key) -> None:
        if self.t1.pop(key, None) is None:
            self.t2.pop(key, None)

    def touch(self, keys: Iterable[Key]) -> None:
        for key in reversed(list(keys)):
            block = self.t1.get(key)
            if block is not None:
                del self.t1[key]
                if block.is_ready:
                    self.t2[key] = block
                else:
                    self.t1[key] = block
            elif key in self.t2:
                self.t2.move_to_end(key)
            elif key in self.b1:
                self.target_t1_size = target_after_b1_hit(
                    self.target_t1_size, len(self.b1), len(self.b2), self.cache_capacity
                )
                self.b1.move_to_end(key)
            elif key in self.b2:
                self.target_t1_size = target_after_b2_hit(
                    self.target_t1_size, len(self.b1), len(self.b2)
                )
                self.b2.move_to_end(key)

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:
        chosen: list[tuple[Key, BlockStatus, bool]] = []
        taken: set[Key] = set()

        def scan(entries: OrderedDict[Key, BlockStatus]) -> tuple[Key, BlockStatus] | None:
            for key, block in entries.items():  # visits pinned entries too
                if block.ref_cnt == 0 and key not in protected and key not in taken:
                    return key, block
            return None

        t1 = len(self.t1)
        for _ in range(n):
            from_t1 = False
            pick = scan(self.t1) if t1 >= int(self.target_t1_size) else None
            from_t1 = pick is not None
            if pick is None:
                pick = scan(self.t2)
            if pick is None:
                pick = scan(self.t1)
                from_t1 = pick is not None
            if pick is None:
                return None
            t1 -= from_t1
            chosen.append((*pick, from_t1))
            taken.add(pick[0])
        for key, _, from_t1 in chosen:
            if from_t1:
                del self.t1[key]
                self.b1[key] = None
            else:
                del self.t2[key]
                self.b2[key] = None
        for ghosts in (self.b1, self.b2):
            while len(ghosts) > self.cache_capacity:
                ghosts.popitem(last=False)
        return [(key, block) for key, block, _ in chosen]

    def clear(self) -> None:
        for d in (self.t1, self.t2, self.b1, self.b2):
            d.clear()
        self.target_t1_size = 0.0

    def snapshot(self) -> ArcPolicySnapshot:
        resident = itertools.chain(self.t1.items(), self.t2.items())
        return ArcPolicySnapshot(
            tuple(self.t1),
            tuple(self.t2),
            tuple(self.b1),
            tuple(self.b2),
            float(self.target_t1_size),
            frozenset(k for k, b in resident if b.ref_cnt == 0),  # a scan's idle view
        )


def _filled(cls: type[CachePolicy], n: int, pinned: float) -> CachePolicy:
    """A cache of `n` ready blocks in T1, the `pinned·n` least recent of them loading."""
    policy = cls(n)
    blocks = [cls.record_class(i) for i in range(n)]
    for i, block in enumerate(blocks):
        policy.insert(i, block)
        block.ref_cnt = 0
        policy.mark_evictable(i)
    for i in range(int(pinned * n)):
        blocks[i].ref_cnt = 1
        policy.mark_non_evictable(i)
    return policy


def _cycle(policy: CachePolicy, fresh: Iterable[int]) -> Contender:
    """`run(units)`: units eviction cycles (evict one, store and commit a fresh key)."""
    keys = iter(fresh)
    none: frozenset[Key] = frozenset()

    def run(units: int) -> None:
        evict, insert, mark = policy.evict, policy.insert, policy.mark_evictable
        for key in itertools.islice(keys, units):
            victims = evict(1, none)
            if not victims:
                raise RuntimeError("benchmark cache ran out of idle blocks")
            block = victims[0][1]
            block.ref_cnt = 0
            insert(key, block)
            mark(key)

    return Contender(policy.name, run)


def _one_size(n: int, reps: int, target_s: float) -> dict[str, Any]:
    contenders: list[Contender] = []
    for kind, cls in (("fast", ARCCachePolicy), ("naive", ScanningArc)):
        for frac in PINNED:
            policy = _filled(cls, n, frac)
            c = _cycle(policy, itertools.count(n))
            c.name = f"{kind}-{round(frac * 100)}%"
            contenders.append(c)
    gc.collect()
    res: dict[str, Measurement] = interleaved(
        contenders, reps, target_s=target_s, warm_s=min(0.2, target_s), max_units=20_000
    )
    us = {name: 1e6 / m.median for name, m in res.items()}
    out: dict[str, Any] = {
        "num_blocks": n,
        "us_per_eviction": us,
        "measurements": {name: m.as_dict() for name, m in res.items()},
        "naive_over_fast_0pct": paired_ratio(res, "fast-0%", "naive-0%"),
        "naive_over_fast_90pct": paired_ratio(res, "fast-90%", "naive-90%"),
        "fast_flatness_90_over_0": paired_ratio(res, "fast-0%", "fast-90%"),
        "naive_flatness_90_over_0": paired_ratio(res, "naive-0%", "naive-90%"),
    }
    return out


_SERIES = {"fast": "impl-arc", "naive": "scanning-arc"}
"""The plot's name for each kind (one colour per contender across plots)."""


def _plot(rows: list[dict[str, Any]], sizes: tuple[int, ...], names: list[str]) -> dict[str, Any]:
    """µs per eviction cycle against N, per contender and pinned fraction (bars: min–max)."""
    series: dict[str, list[float | None]] = {}
    errors: dict[str, list[list[float | None]]] = {}
    styles: dict[str, str] = {}
    for name in names:
        kind, pct = name.split("-")
        shown = f"{_SERIES[kind]} {pct} pinned"
        series[shown] = [r["us_per_eviction"][name] for r in rows]
        errors[shown] = [
            [1e6 / r["measurements"][name]["max_ops_per_s"] for r in rows],
            [1e6 / r["measurements"][name]["min_ops_per_s"] for r in rows],
        ]
        if pct != "0%":
            styles[shown] = "--"
    return {
        "kind": "line",
        "title": "ARC eviction cycle cost: idle index vs a scan (median, bars: min–max)",
        "xlabel": "cache size N (blocks, log scale)",
        "ylabel": "CPU µs per eviction cycle (log scale)",
        "log_x": True,
        "log_y": True,
        "x": list(sizes),
        "xticklabels": [label(n) for n in sizes],
        "series": series,
        "errors": errors,
        "styles": styles,
    }


def run(quick: bool) -> dict[str, Any]:
    """Measure every size (µs per eviction cycle, paired ratios); return the results."""
    sizes = (1 << 10, 1 << 16) if quick else (1 << 10, 1 << 16, 1 << 20)
    reps = 3 if quick else 7
    target_s = 0.02 if quick else 0.15
    rows = [_one_size(n, reps, target_s) for n in sizes]
    names = [f"{kind}-{round(f * 100)}%" for kind in ("fast", "naive") for f in PINNED]
    return {
        "benchmark": "arc_eviction",
        "unit": "one eviction cycle: evict(1) + insert and commit of a fresh key",
        "pinned_fractions": list(PINNED),
        "quick": quick,
        "reps": reps,
        "sizes": rows,
        "ratios_are": "paired medians over interleaved rounds (CPU time); "
        "naive_over_fast = how many times cheaper fast is; "
        "flatness_90_over_0 = cost at 90% pinned / cost at 0% pinned",
        "table": {
            "columns": [
                "N",
                *(f"{c} µs" for c in names),
                "naive/fast 0%",
                "naive/fast 90%",
                "fast 90%/0%",
                "naive 90%/0%",
            ],
            "rows": [
                [
                    f"{r['num_blocks']:,}",
                    *(f"{r['us_per_eviction'][c]:.2f}" for c in names),
                    f"{r['naive_over_fast_0pct']:.1f}x",
                    f"{r['naive_over_fast_90pct']:.1f}x",
                    f"{r['fast_flatness_90_over_0']:.2f}",
                    f"{r['naive_flatness_90_over_0']:.1f}",
                ]
                for r in rows
            ],
        },
        "plot": _plot(rows, sizes, names),
    }


def main(argv: list[str] | None = None) -> int:
    """This benchmark alone: see `bench.runner.standalone`."""
    return standalone("arc", run, __doc__.split("\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
