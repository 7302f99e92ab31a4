"""Inside vLLM, side by side in one process: vLLM 0.33's `CPUOffloadingManager` with
evictable's `EvictableLRU` / `EvictableARC` against the same manager with vLLM's own
`lru` / `arc`, and the cost of the checking mode (`EvictableChecked`, the mirrored
manager of `CheckedOffloadingSpec`).

Run it in the interop venv (vLLM is imported):

    .venv-interop/bin/python -m bench.vllm_inside [--quick] [--json PATH]

Workload, per size N (1K, 64K, 1M chunks) and pinned fraction (0, 90, 99 %): each
contender's manager is filled with N ready chunks in one request's stores, then
the oldest `fraction * N` are pinned (`prepare_load`: the worst place for a policy
that scans from the least recent end). A step is one eviction-bearing store: a new
key through `prepare_store` (the manager evicts one idle chunk) and
`complete_store`. Rounds are interleaved: each round runs every contender for the
same number of steps, one after the other, timing each with `time.process_time`
(CPU seconds); the contender order rotates every round. A ratio is paired within a
round (vLLM's policy / ours); the mirrored manager, ~1000x slower, runs a
twentieth of the steps per round (its time is per store all the same). Rounds and
stores per round: `PLAN_UNPINNED` at 0% pinned (long rounds: the ratios are near
1), `PLAN` with pinned chunks (vLLM's ARC scans them, ms per store). The report
gives each ratio's median and spread (min, max) over the rounds. Each contender's
trace is the same and each evicts the same number of chunks (checked: every store
evicts exactly one).

Output: a table on stdout and JSON (`--json`, default `bench/results/vllm_inside.json`).
The JSON records which build of `evictable.impl` ran (`build`: "compiled" when
`evictable.impl.COMPILED`, the mypyc build put first on the path with
`PYTHONPATH=build/compiled`, else "pure") and the load average at the start and the
end; `--expect-build` refuses to run on the other build. `--fractions` selects the
pinned fractions (default 0,0.9,0.99).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vllm.v1.kv_offload.base import ReqContext
from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager

import evictable.impl
from evictable.vllm import MirroredManager

PAIRS = {"lru": ("lru", "EvictableLRU"), "arc": ("arc", "EvictableARC")}
"""Policy family -> (vLLM's own, evictable's)."""

MODULE = "evictable.vllm"
SIZES = {"1K": 1_000, "64K": 64_000, "1M": 1_000_000}
FRACTIONS = (0.0, 0.9, 0.99)
PLAN = {"1K": (15, 200), "64K": (7, 40), "1M": (3, 4)}
"""Size -> (rounds, steps per round), with pinned chunks (vLLM's ARC takes ms per store)."""
PLAN_UNPINNED = {"1K": (31, 1000), "64K": (21, 500), "1M": (7, 200)}
"""Size -> (rounds, steps per round) at 0% pinned: every store costs µs, and a ratio
near 1 needs long rounds (a garbage collection lands in one contender's round)."""
QUICK = {"1K": (5, 50), "64K": (3, 10), "1M": (2, 2)}


def key(i: int) -> bytes:
    return b"%016d\x00\x00\x00\x00" % i


class Subject:
    """One manager under test, filled and pinned, with its next fresh key."""

    def __init__(self, name: str, make: Callable[[int], Any], n: int, fraction: float) -> None:
        self.name = name
        self.manager = make(n)
        self.req = ReqContext(req_id="bench")
        m = self.manager
        m.on_new_request(self.req)
        batch = 4096
        for lo in range(0, n, batch):
            keys = [key(i) for i in range(lo, min(n, lo + batch))]
            out = m.prepare_store(keys, self.req)
            assert out is not None and len(out.keys_to_store) == len(keys)
            m.complete_store(keys, self.req)
        pinned = int(n * fraction)
        for lo in range(0, pinned, batch):
            m.prepare_load([key(i) for i in range(lo, min(pinned, lo + batch))], self.req)
        self.next = n

    def run(self, steps: int) -> float:
        """`steps` eviction-bearing stores; the CPU seconds they took."""
        m, req = self.manager, self.req
        keys = [[key(self.next + i)] for i in range(steps)]
        self.next += steps
        t0 = time.process_time()
        for k in keys:
            out = m.prepare_store(k, req)
            m.complete_store(k, req)
            if out is None or len(out.evicted_keys) != 1:
                raise RuntimeError(f"{self.name}: a store did not evict exactly one chunk")
        return time.process_time() - t0


def plain(policy: str, module: str | None) -> Callable[[int], Any]:
    def make(n: int) -> Any:
        return CPUOffloadingManager(
            num_chunks=n, cache_policy=policy, cache_policy_module_path=module
        )

    return make


def mirrored(policy: str) -> Callable[[int], Any]:
    def make(n: int) -> Any:
        return MirroredManager(CPUOffloadingManager(num_chunks=n, cache_policy=policy))

    return make


def contenders(size: str, with_checks: bool) -> dict[str, Callable[[int], Any]]:
    out: dict[str, Callable[[int], Any]] = {}
    for fam, (theirs, ours) in PAIRS.items():
        out[f"vllm-{fam}"] = plain(theirs, None)
        out[f"evictable-{fam}"] = plain(ours, MODULE)
        if with_checks:
            out[f"checked-evictable-{fam}"] = plain(f"EvictableChecked({ours})", MODULE)
            out[f"checked-vllm-{fam}"] = plain(f"EvictableChecked({theirs})", MODULE)
    if with_checks and size == "1K":
        out["mirrored-vllm-lru"] = mirrored("lru")
    return out


RATIOS = [
    ("lru: vLLM / evictable", "vllm-lru", "evictable-lru"),
    ("arc: vLLM / evictable", "vllm-arc", "evictable-arc"),
    ("EvictableChecked overhead (lru)", "checked-evictable-lru", "evictable-lru"),
    ("EvictableChecked overhead (arc)", "checked-evictable-arc", "evictable-arc"),
    ("EvictableChecked(vLLM arc) overhead", "checked-vllm-arc", "vllm-arc"),
    ("mirrored manager overhead (vLLM lru)", "mirrored-vllm-lru", "vllm-lru"),
]


def cell(size: str, fraction: float, plan: tuple[int, int], checks: bool) -> dict[str, Any]:
    rounds, steps = plan
    n = SIZES[size]
    made = {
        name: Subject(name, make, n, fraction) for name, make in contenders(size, checks).items()
    }
    names = list(made)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            k = max(1, steps // 20) if name.startswith("mirrored") else steps
            times[name].append(made[name].run(k) / k)
    ratios: dict[str, Any] = {}
    for label, a, b in RATIOS:
        if a in times and b in times:
            rs = [x / y for x, y in zip(times[a], times[b], strict=True) if y > 0]
            ratios[label] = {
                "median": statistics.median(rs),
                "min": min(rs),
                "max": max(rs),
                "rounds": len(rs),
            }
    return {
        "size": size,
        "chunks": n,
        "pinned": fraction,
        "rounds": rounds,
        "steps_per_round": steps,
        "cpu_us_per_store": {k: statistics.median(v) * 1e6 for k, v in times.items()},
        "ratios": ratios,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer rounds and steps")
    p.add_argument("--sizes", default="1K,64K,1M")
    p.add_argument("--no-checks", action="store_true", help="skip the checking mode")
    p.add_argument("--fractions", default=",".join(str(f) for f in FRACTIONS))
    p.add_argument(
        "--expect-build",
        choices=("compiled", "pure"),
        help="refuse to run unless this build of evictable.impl is loaded",
    )
    p.add_argument("--json", default=str(Path(__file__).parent / "results" / "vllm_inside.json"))
    args = p.parse_args(argv)
    build = "compiled" if evictable.impl.COMPILED else "pure"
    if args.expect_build and args.expect_build != build:
        print(f"vllm_inside: expected the {args.expect_build} build, loaded {build}")
        return 2
    print(f"evictable.impl build: {build}", flush=True)
    load_start = os.getloadavg()
    quick = args.quick
    cells = []
    for size in args.sizes.split(","):
        for fraction in (float(f) for f in args.fractions.split(",")):
            checks = not args.no_checks and size != "1M"
            plan = QUICK if quick else (PLAN_UNPINNED if fraction == 0 else PLAN)
            got = cell(size, fraction, plan[size], checks)
            cells.append(got)
            for label, r in got["ratios"].items():
                print(
                    f"{size:>4} {fraction:>5.0%} {label:<38} median {r['median']:8.2f}x"
                    f"  [{r['min']:.2f}, {r['max']:.2f}]",
                    flush=True,
                )
    import vllm

    report = {
        "benchmark": "vllm_inside",
        "measure": "CPU seconds per eviction-bearing store (time.process_time), one process",
        "python": sys.version.split()[0],
        "vllm": vllm.__version__,
        "machine": platform.machine(),
        "build": build,
        "load_average_start": load_start,
        "load_average_end": os.getloadavg(),
        "cells": cells,
    }
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
