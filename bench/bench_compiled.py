"""The compiled build against the pure one: manager trace steps per CPU second.

    python -m bench.bench_compiled [--quick] [--out bench/results/compiled.json]

Needs `make compiled` (the build in `build/compiled`). Two builds of one module name
cannot share a process: mypyc's extensions carry their full dotted names and import
each other through one shared library, so loading them under another package name
would mean a second, differently named build. Each build therefore runs in its own
worker process (the same interpreter; `PYTHONPATH=build/compiled` for the compiled
one) that fills its managers once, untimed, and then, on each request, runs the next
chunk of the same trace under `time.process_time` (CPU time) and answers. The parent
interleaves the two workers round by round (the order alternates), so a slow spell on
the machine falls on both; it reports the median ratio and its spread (min, max).
Bytes per resident block (tracemalloc, a full manager minus its keys) come from the
same workers. Writes JSON; prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "compiled"

__all__ = ["main"]

SIZES = (1 << 10, 1 << 16, 1 << 20)
PINNED = (0.0, 0.9)
POLICIES = ("lru", "arc")


def _worker() -> None:
    """Serve requests on stdin: `fill P N F S`, `run K`, `bytes`; answer one JSON line each."""
    import evictable.impl
    from bench.workloads import fill, make_trace, pinned_indices, stepper
    from evictable.impl import CPUOffloadingManager

    compiled = getattr(evictable.impl, "COMPILED", False)  # absent before the compiled build
    print(json.dumps({"compiled": compiled}), flush=True)
    run: Any = None
    for line in sys.stdin:
        cmd, *args = line.split()
        if cmd == "fill":
            policy, blocks, pinned, steps = args[0], int(args[1]), float(args[2]), int(args[3])
            trace = replace(
                make_trace(blocks, 0.0, steps),
                pinned_fraction=pinned,
                pinned=pinned_indices(blocks, pinned),
            )
            tracemalloc.start()
            base = tracemalloc.get_traced_memory()[0]
            manager = CPUOffloadingManager(blocks, policy)
            fill(manager, trace)
            used = tracemalloc.get_traced_memory()[0] - base
            tracemalloc.stop()
            run = stepper(manager, trace.steps)
            print(json.dumps({"bytes_per_block": used / blocks}), flush=True)
        elif cmd == "run":
            units = int(args[0])
            t0 = time.process_time()
            run(units)
            print(json.dumps({"cpu": time.process_time() - t0}), flush=True)


class _Worker:
    def __init__(self, compiled: bool, source: Path | None = None) -> None:
        """A worker on the compiled build, or on pure Python (from `source`, another
        checkout's `src/`, when given: the pure build against an earlier version)."""
        env = dict(os.environ)
        first = [str(BUILD)] if compiled else [str(source)] if source else []
        env["PYTHONPATH"] = os.pathsep.join([*first, str(ROOT)])
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.bench_compiled", "--worker"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        hello = self.ask(None)
        if hello["compiled"] is not compiled:
            raise SystemExit(f"worker loaded the wrong build: {hello}")

    def ask(self, line: str | None) -> dict[str, Any]:
        if self.proc.stdin is None or self.proc.stdout is None:
            raise RuntimeError("worker pipes are closed")
        if line is not None:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        answer: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return answer

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


def measure(
    policy: str, blocks: int, pinned: float, rounds: int, chunk: int, baseline: Path | None = None
) -> dict[str, Any]:
    """Steps per CPU second of both builds, `rounds` interleaved chunks of `chunk` steps.

    With `baseline` (another checkout's `src/`), "compiled" is this checkout's pure
    build and "pure" the baseline's: the ratio is then new pure / old pure."""
    workers = {
        "pure": _Worker(False, baseline),
        "compiled": _Worker(False) if baseline else _Worker(True),
    }
    try:
        mem = {
            name: w.ask(f"fill {policy} {blocks} {pinned} {rounds * chunk}")["bytes_per_block"]
            for name, w in workers.items()
        }
        rates: dict[str, list[float]] = {"pure": [], "compiled": []}
        for r in range(rounds):
            order = ("pure", "compiled") if r % 2 == 0 else ("compiled", "pure")
            for name in order:
                cpu = workers[name].ask(f"run {chunk}")["cpu"]
                rates[name].append(chunk / cpu if cpu > 0 else float("inf"))
    finally:
        for w in workers.values():
            w.close()
    ratios = [c / p for c, p in zip(rates["compiled"], rates["pure"], strict=True)]
    return {
        "policy": policy,
        "blocks": blocks,
        "pinned": pinned,
        "rounds": rounds,
        "chunk_steps": chunk,
        "pure_steps_per_cpu_s": statistics.median(rates["pure"]),
        "compiled_steps_per_cpu_s": statistics.median(rates["compiled"]),
        "ratio_median": statistics.median(ratios),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "bytes_per_block_pure": mem["pure"],
        "bytes_per_block_compiled": mem["compiled"],
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.bench_compiled", description=__doc__)
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--quick", action="store_true", help="1K and 64K only, fewer rounds")
    p.add_argument("--rounds", type=int, default=None)
    p.add_argument(
        "--chunk",
        type=int,
        default=10000,
        help="trace steps per timed chunk (long enough that the other worker's run, which "
        "evicts this one's caches, costs little of it)",
    )
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "compiled.json"))
    p.add_argument(
        "--pure-baseline",
        type=Path,
        default=None,
        help="another checkout's src/: compare this pure build with that one instead",
    )
    args = p.parse_args(argv)
    if args.worker:
        _worker()
        return 0
    if args.pure_baseline is None and not any(BUILD.glob("evictable/impl/*.so")):
        raise SystemExit("no compiled build: run `make compiled` first")
    sizes = SIZES[:2] if args.quick else SIZES
    rounds = args.rounds or (5 if args.quick else 9)
    rows = []
    load_before = os.getloadavg()
    for policy in POLICIES:
        for blocks in sizes:
            for pinned in PINNED:
                row = measure(policy, blocks, pinned, rounds, args.chunk, args.pure_baseline)
                rows.append(row)
                print(
                    f"{policy} {blocks:>8} pinned {pinned:.0%}: compiled/pure "
                    f"{row['ratio_median']:.2f}x ({row['ratio_min']:.2f}-{row['ratio_max']:.2f}), "
                    f"bytes/block {row['bytes_per_block_pure']:.0f} pure, "
                    f"{row['bytes_per_block_compiled']:.0f} compiled",
                    flush=True,
                )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    load = {"before": load_before, "after": os.getloadavg()}
    out.write_text(json.dumps({"rows": rows, "load_average": load}, indent=2))
    print(f"load average (1, 5, 15 min) before {load_before}, after {load['after']}")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
