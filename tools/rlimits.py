"""Measure the Z3 work of every obligation: what `RLIMIT` is calibrated from.

`python -m tools.rlimits [--level default] [--only PREFIX] [--top N]` runs every
obligation of `evictable verify` at that level, in this process, its claim and its
control, and prints per check the number of Z3 queries, the rlimit units they used
in all and the most one query used, the heaviest first, then the largest and the
limit in force (`evictable.proofs.z3.solver.RLIMIT`). Obligations without a Z3
query are left out. Z3 counts work deterministically for a given sequence of
queries; the figures vary a little with what ran before in the process, which is
why the limit keeps a wide margin.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from evictable.proofs.base.records import HANG_BACKSTOP_S, Outcome
from evictable.proofs.obligations.registry import collect
from evictable.proofs.z3.solver import RLIMIT, Work, work


def _measured(fn: Callable[[float], Outcome]) -> tuple[Outcome, Work]:
    with work() as w:
        outcome = fn(HANG_BACKSTOP_S)
    return outcome, w


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.rlimits")
    parser.add_argument("--level", choices=("quick", "default", "thorough"), default="default")
    parser.add_argument("--only", default="")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    rows: list[tuple[int, str, Work, str]] = []
    for ob in collect(args.level):
        if not ob.name.startswith(args.only):
            continue
        checks = [("claim", ob.check)] + ([("control", ob.negative)] if ob.negative else [])
        for which, fn in checks:
            outcome, w = _measured(fn)
            if w.queries:
                rows.append((w.peak, f"{ob.name} ({which})", w, outcome.status.value))
    rows.sort(key=lambda r: -r[0])
    for peak, name, w, status in rows[: args.top]:
        print(f"{peak:>13,}  {w.queries:>4} queries  {w.used:>14,} in all  {status:<14}  {name}")
    top = rows[0][0] if rows else 0
    print(
        f"{len(rows)} checks with Z3 queries; the heaviest query used {top:,} rlimit units; "
        f"the limit per query is {RLIMIT:,} ({RLIMIT / max(top, 1):.0f}x)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
