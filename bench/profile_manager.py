"""Profile the manager's hot path on the benchmark trace (cProfile).

    python -m bench.profile_manager [--contender impl-lru] [--blocks 65536]
                                    [--pinned 0.9] [--steps 20000] [--top 25]

Fills a manager (untimed, not profiled), then runs `--steps` trace steps under
cProfile and prints the functions sorted by own time. cProfile charges a fixed
cost to every Python-level call, so it overstates code that makes many small
calls; read it for *where* the calls are, and confirm any change with
`evictable bench`, which measures without a profiler.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
from collections.abc import Sequence
from dataclasses import replace

from bench.contenders import IMPL, available
from bench.workloads import fill, make_trace, pinned_indices, run_steps

__all__ = ["main", "profile_text"]


def profile_text(contender: str, blocks: int, pinned: float, steps: int, top: int) -> str:
    """The cProfile report (own time, top `top` rows) of `steps` steps on a filled manager."""
    factories, missing = available()
    if contender not in factories:
        raise SystemExit(f"{contender}: {missing.get(contender, 'unknown contender')}")
    trace = replace(
        make_trace(blocks, 0.0, steps),
        pinned_fraction=pinned,
        pinned=pinned_indices(blocks, pinned),
    )
    manager = factories[contender](blocks)
    fill(manager, trace)
    profiler = cProfile.Profile()
    profiler.runcall(run_steps, manager, trace.steps)
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.profile_manager", description=__doc__)
    p.add_argument("--contender", default=IMPL)
    p.add_argument("--blocks", type=int, default=1 << 16)
    p.add_argument("--pinned", type=float, default=0.9)
    p.add_argument("--steps", type=int, default=20000)
    p.add_argument("--top", type=int, default=25)
    args = p.parse_args(argv)
    print(profile_text(args.contender, args.blocks, args.pinned, args.steps, args.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
