"""The seed table: every seeded bug, hunted by the engines with seeds 0-9.

    python -m tools.seed_table [--seeds N] [--random-engines] [--json PATH] [NAME ...]

For each bug of `evictable.proofs.controls.catalogue` and each seed, the engines run
at their default budgets in their fixed order until one catches the bug with a
trace of at most 8 calls (`proofs.obligations.hunt`; any trace for a bug whose
`long_history` says why no short one exists). One row per bug: its target and
class, on how many seeds it was caught, which engine caught it first, the worst
seconds until the catch and the longest winning trace.

`--random-engines` adds, per bug, how many seeds the seeded (Hypothesis) engine
alone catches it on at its default budget -- the conformance engine for managers,
the lock-step machine otherwise (stopping at the first failure, unshrunk) -- so
that the explorers' seed-independent catches do not hide how the random engine
fares. CPU-heavy: run it niced, once.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from evictable.proofs.base.records import Status
from evictable.proofs.controls.bug import SeededBug
from evictable.proofs.controls.catalogue import CATALOGUE
from evictable.proofs.obligations.hunt import hunt, machine_for


def _random_engine(bug: SeededBug, seed: int) -> tuple[bool, float]:
    """Whether the seeded engine alone catches `bug` (and its seconds)."""
    start = time.perf_counter()
    if bug.target == "manager":
        from evictable.proofs.lockstep.conformance import SIZES, run_conformance

        examples, steps = SIZES["default"]
        rec = run_conformance(
            bug.factory,
            bug.policy,
            examples,
            steps,
            seed,
            inject_faults=True if bug.faults else None,
        )
        return rec.status == "failed", time.perf_counter() - start
    from evictable.proofs.lockstep.gpu_machines import BUDGET, run_machine

    examples, steps = BUDGET["default"]
    out = run_machine(machine_for(bug), examples, steps, shrink=False, seed=seed)
    return out.status is Status.COUNTEREXAMPLE, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.seed_table")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--random-engines", action="store_true")
    parser.add_argument("--json", default=None)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    rows: list[dict[str, object]] = []
    extra = " random engine alone |" if args.random_engines else ""
    print(f"| bug | target | class | caught | first catch | max s | max calls |{extra}")
    print("|---|---|---|---|---|---|---|" + ("---|" if extra else ""))
    for bug in CATALOGUE:
        if args.names and bug.name not in args.names:
            continue
        hunts = [hunt(bug, seed) for seed in range(args.seeds)]
        caught = [h for h in hunts if h.caught]
        winners = sorted({h.winner.engine for h in caught if h.winner is not None})
        row: dict[str, object] = {
            "bug": bug.name,
            "target": bug.target,
            "class": bug.klass,
            "caught": len(caught),
            "seeds": args.seeds,
            "first": "/".join(winners) or "-",
            "max_seconds": round(max(h.seconds for h in hunts), 2),
            "max_calls": max((h.winner.calls or 0 for h in caught if h.winner), default=None),
        }
        cell = ""
        if args.random_engines:
            runs = [_random_engine(bug, seed) for seed in range(args.seeds)]
            row["random_caught"] = sum(c for c, _ in runs)
            row["random_max_seconds"] = round(max(t for _, t in runs), 2)
            cell = f" {row['random_caught']}/{args.seeds} (max {row['random_max_seconds']}s) |"
        rows.append(row)
        print(
            f"| {bug.name} | {bug.target} | {bug.klass} | {len(caught)}/{args.seeds} | "
            f"{row['first']} | {row['max_seconds']} | {row['max_calls']} |{cell}",
            flush=True,
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    missed = [r["bug"] for r in rows if r["caught"] != r["seeds"]]
    slow = [r["bug"] for r in rows if float(str(r["max_seconds"])) >= 30]
    print(f"\n{len(rows) - len(missed)}/{len(rows)} bugs caught on every seed; missed: {missed}")
    print(f"hunts of 30 s or more: {slow}")
    return 1 if missed or slow else 0


if __name__ == "__main__":
    sys.exit(main())
