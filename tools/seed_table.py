"""The seed table: every seeded bug, every engine, seeds 0-9.

    python -m tools.seed_table [--seeds N] [--json PATH] [NAME ...]

Runs every engine that applies to each bug of `evictable.proofs.controls.catalogue`
(no early exit) for each seed, and prints one row per bug: its class, the engine
that catches it first with a trace of at most 8 calls, the worst seconds until
that catch and the longest winning trace over the seeds, and per engine how many
seeds it caught the bug on. CPU-heavy: run it niced, once.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict

from evictable.proofs.controls.catalogue import CATALOGUE
from evictable.proofs.controls.hunt import Hunt, hunt


def _row(hunts: list[Hunt]) -> dict[str, object]:
    bug = hunts[0].bug
    caught = [h for h in hunts if h.caught]
    per_engine: dict[str, int] = defaultdict(int)
    for h in hunts:
        for v in h.verdicts:
            per_engine[v.engine] += v.short
    winners = sorted({h.winner.engine for h in caught if h.winner is not None})
    return {
        "bug": bug.name,
        "target": bug.target,
        "class": bug.klass,
        "seeds": len(hunts),
        "caught": len(caught),
        "first": "/".join(winners) or "-",
        "max_seconds": round(max(h.seconds for h in hunts), 2),
        "max_calls": max(
            (h.winner.calls or 0 for h in caught if h.winner is not None), default=None
        ),
        "engines": dict(per_engine),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.seed_table")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--json", default=None)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    rows = []
    print("| bug | target | class | caught | first catch | max s | max calls | per engine |")
    print("|---|---|---|---|---|---|---|---|")
    for bug in CATALOGUE:
        if args.names and bug.name not in args.names:
            continue
        hunts = [hunt(bug, seed, stop=False) for seed in range(args.seeds)]
        row = _row(hunts)
        rows.append(row)
        engines = ", ".join(f"{k} {v}/{row['seeds']}" for k, v in row["engines"].items())  # type: ignore[attr-defined]
        print(
            f"| {row['bug']} | {row['target']} | {row['class']} | {row['caught']}/{row['seeds']} "
            f"| {row['first']} | {row['max_seconds']} | {row['max_calls']} | {engines} |",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    missed = [r["bug"] for r in rows if r["caught"] != r["seeds"]]
    print(f"\n{len(rows) - len(missed)}/{len(rows)} bugs caught on every seed; missed: {missed}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
