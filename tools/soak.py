"""The soak profile: a million mixed steps on the implementation, memory flat, no slot lost.

    python -m tools.soak [--steps N] [--blocks N] [--keys N] [--policy lru|arc ...]

Drives `impl.manager.CPUOffloadingManager` with a seeded mix of every call (stores
and their commits or aborts, loads and their ends, touches, lookups, events, bad
input that must be refused, a rare reset) over more keys than blocks, and every
`check_every` steps checks every invariant (`check_invariants()`), that no slot is
lost (resident + free + never used = capacity) and the counters, and samples the
resident set size. The run fails on any violation, and when memory grows after the
warm-up by more than `max_growth_mb`. `make soak` runs it (not part of `make test`).
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import resource
import sys
import time
from collections.abc import Hashable
from dataclasses import dataclass, field

from evictable.impl.manager import CPUOffloadingManager
from evictable.model.errors import LifecycleError
from evictable.model.lifecycle import CpuState

__all__ = ["SoakReport", "main", "soak"]


def _rss_mb() -> float:
    """The current resident set size in MB (Linux /proc; the peak elsewhere)."""
    try:
        with open("/proc/self/statm") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class SoakReport:
    """What one soak run measured."""

    policy: str
    steps: int
    seconds: float = 0.0
    checks: int = 0
    refused: int = 0
    evictions: int = 0
    rss_mb: list[tuple[int, float]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def growth_mb(self) -> float:
        """RSS growth from the first sample after warm-up to the last one."""
        samples = self.rss_mb[1:] or self.rss_mb
        return samples[-1][1] - samples[0][1] if samples else 0.0

    def text(self) -> str:
        rss = ", ".join(f"{s // 1000}k:{mb:.1f}" for s, mb in self.rss_mb)
        verdict = "ok" if not self.problems else "FAILED: " + "; ".join(self.problems[:3])
        return (
            f"soak[{self.policy}] {self.steps} steps in {self.seconds:.1f}s "
            f"({self.steps / max(self.seconds, 1e-9):,.0f} steps/s), {self.checks} invariant "
            f"checks, {self.refused} refused calls, {self.evictions} evictions; RSS MB by step "
            f"[{rss}], growth after warm-up {self.growth_mb:+.2f} MB -> {verdict}"
        )


def _slots_ok(m: CPUOffloadingManager) -> str | None:
    snap = m.snapshot()
    owned = {e.slot for e in snap.blocks}
    free = set(snap.free_stack)
    fresh = snap.num_blocks - snap.high_water
    if owned & free or len(owned) + len(free) + fresh != snap.num_blocks:
        return f"slots: {len(owned)} owned + {len(free)} free + {fresh} fresh != {snap.num_blocks}"
    counts = {s: 0 for s in CpuState}
    for e in snap.blocks:
        counts[e.state] += 1
    if (counts[CpuState.READY], counts[CpuState.PENDING]) != (m.num_evictable, m.num_pending):
        return "counters disagree with the blocks"
    return None


def soak(
    policy: str = "lru",
    steps: int = 1_000_000,
    num_blocks: int = 1000,
    keys: int = 3000,
    seed: int = 0,
    check_every: int = 20_000,
    max_growth_mb: float = 8.0,
) -> SoakReport:
    """One soak run (see the module doc)."""
    rnd = random.Random(seed)
    universe: list[Hashable] = [f"k{i:06d}".encode() for i in range(keys)]
    m = CPUOffloadingManager(num_blocks, policy, enable_events=True)
    pending: dict[Hashable, None] = {}
    committed: dict[Hashable, None] = {}  # READY or LOADING (not evicted since)
    loading: dict[Hashable, int] = {}
    report = SoakReport(policy, steps)
    warm = min(steps, 10 * check_every)
    start = time.perf_counter()
    for i in range(1, steps + 1):
        roll = rnd.random()
        try:
            if roll < 0.30:
                batch = rnd.sample(universe, rnd.randint(1, 8))
                out = m.prepare_store(batch)
                if out is not None:
                    pending.update(dict.fromkeys(out.keys_to_store))
                    report.evictions += len(out.evicted_keys)
                    for k in out.evicted_keys:
                        committed.pop(k, None)
            elif roll < 0.50 and pending:
                some = list(pending)[: rnd.randint(1, 8)]
                success = rnd.random() < 0.95
                for k in m.complete_store(some, success=success):
                    del pending[k]
                    if success:
                        committed[k] = None
            elif roll < 0.62:
                # Mostly committed keys; now and then any key (refused: all or nothing).
                pool = list(committed) if committed and rnd.random() < 0.9 else universe
                batch = rnd.sample(pool, min(len(pool), rnd.randint(1, 4)))
                m.prepare_load(batch)
                for k in batch:
                    loading[k] = loading.get(k, 0) + 1
            elif roll < 0.74 and loading:
                done = list(loading)[: rnd.randint(1, 4)]
                m.complete_load(done)
                for k in done:
                    loading[k] -= 1
                    if not loading[k]:
                        del loading[k]
            elif roll < 0.94:
                m.touch(rnd.sample(universe, rnd.randint(1, 16)))
            elif roll < 0.97:
                m.lookup(rnd.choice(universe))
            elif roll < 0.99995:
                m.take_events()
            else:
                m.reset_cache()
                pending.clear()
                committed.clear()
                loading.clear()
        except LifecycleError:
            report.refused += 1
        if i % check_every == 0 or i == steps:
            report.checks += 1
            try:
                m.check_invariants()
            except LifecycleError as exc:
                report.problems.append(f"step {i}: {exc}")
            bad = _slots_ok(m)
            if bad:
                report.problems.append(f"step {i}: {bad}")
            m.take_events()
            if i % (5 * check_every) == 0 or i == steps:
                gc.collect()
                report.rss_mb.append((i, _rss_mb()))
            if report.problems:
                break
    report.seconds = time.perf_counter() - start
    if report.rss_mb and steps > warm and report.growth_mb > max_growth_mb:
        report.problems.append(f"memory grew by {report.growth_mb:.1f} MB after warm-up")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.soak")
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--blocks", type=int, default=1000)
    parser.add_argument("--keys", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policy", action="append", default=None)
    args = parser.parse_args(argv)
    failed = False
    for policy in args.policy or ["lru", "arc"]:
        report = soak(policy, args.steps, args.blocks, args.keys, args.seed)
        print(report.text(), flush=True)
        failed |= bool(report.problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
