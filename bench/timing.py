"""Side-by-side timing: warm-up, interleaved repetitions, medians, paired ratios.

On a small shared machine the load changes from second to second, so two numbers
measured a minute apart are not comparable. Here every contender runs once per
*round*, the order rotating from round to round, and a ratio between two
contenders is the median over rounds of the per-round ratio: both sides of each
ratio were measured seconds apart, under the same load.

A contender is a callable `run(units)` that performs `units` units of work (for
the manager benchmark, trace steps) and an `ops_per_unit` count. A contender that
runs in another process (vLLM's managers run in a worker of the interop venv, see
`bench.interop`) has a `timed(units)` instead, which returns the CPU and wall
seconds that process measured around its own work: the rounds interleave it with
the in-process contenders all the same. Each contender
first warms up (doubling chunks until `warm_s` has passed), which also calibrates
how many units make one repetition of about `target_s` seconds; each repetition
is preceded by a short untimed pre-roll, so a contender whose caches were just
evicted by the previous one is not charged for refilling them.

Rates are taken on the process's CPU clock (`time.process_time`): on a machine
shared with other jobs, wall time also counts the slices in which this process was
not running at all, which is noise, not cost. Wall-clock rates are recorded too.

Garbage collection stays on (the allocator's and the collector's cost of what a
contender allocates is part of its cost), but everything built before the rounds
(the contenders' managers, traces, imports) is frozen (`gc.freeze`): otherwise a
collection triggered by one contender would scan every other contender's million
records, and charge it to whichever contender happened to be running.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = [
    "Contender",
    "Measurement",
    "interleaved",
    "paired_ratio",
    "units_budget",
]


@dataclass
class Contender:
    """One thing to time: `run(units)` does `units` units of work, each `ops_per_unit` ops.

    With `timed`, the work is done elsewhere: `timed(units)` does it and returns the
    (CPU, wall) seconds measured there around the work alone, and `run` is not used.
    """

    name: str
    run: Callable[[int], object]
    ops_per_unit: int = 1
    timed: Callable[[int], tuple[float, float]] | None = None

    def measure(self, units: int) -> tuple[float, float]:
        """Do `units` units of work; return its (CPU, wall) seconds."""
        if self.timed is not None:
            return self.timed(units)
        w0, t0 = time.perf_counter(), time.process_time()
        self.run(units)
        return time.process_time() - t0, time.perf_counter() - w0


@dataclass
class Measurement:
    """Per-round rates (ops per CPU second, and per wall second) of one contender."""

    name: str
    units_per_rep: int
    rates: list[float] = field(default_factory=list)
    wall_rates: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.rates)

    def as_dict(self) -> dict[str, object]:
        return {
            "median_ops_per_s": self.median,
            "min_ops_per_s": min(self.rates),
            "max_ops_per_s": max(self.rates),
            "rates": self.rates,
            "median_wall_ops_per_s": statistics.median(self.wall_rates),
            "units_per_rep": self.units_per_rep,
        }


def units_budget(reps: int, max_units: int) -> int:
    """An upper bound on the units `interleaved` makes one contender consume."""
    warm = 3 * max_units  # chunks 1, 2, 4, ... below max_units, then max_units itself
    return warm + reps * (max_units + max_units // 10 + 1)


def _calibrate(c: Contender, warm_s: float, target_s: float, min_units: int, max_units: int) -> int:
    units, spent = 1, 0.0
    while True:
        elapsed = c.measure(units)[0]
        spent += elapsed
        if spent >= warm_s or units >= max_units:
            break
        units = min(2 * units, max_units)
    rate = units / max(elapsed, 1e-9)
    return max(min_units, min(max_units, round(target_s * rate)))


def interleaved(
    contenders: Sequence[Contender],
    reps: int,
    *,
    target_s: float,
    warm_s: float,
    min_units: int = 1,
    max_units: int = 1000,
    freeze: Sequence[Callable[[bool], object]] = (),
) -> dict[str, Measurement]:
    """Time every contender `reps` times, one round each, rotating the order.

    Each contender consumes at most `units_budget(reps, max_units)` units. Before the
    rounds a full collection runs and the survivors are frozen (this process's, and,
    through each `freeze(True)` callback, another process's); after them, `freeze(False)`
    and `gc.unfreeze()` (see the module doc).
    """
    sizes = {c.name: _calibrate(c, warm_s, target_s, min_units, max_units) for c in contenders}
    results = {c.name: Measurement(c.name, sizes[c.name]) for c in contenders}
    for hook in freeze:
        hook(True)
    gc.collect()
    gc.freeze()
    try:
        _rounds(contenders, reps, sizes, results)
    finally:
        gc.unfreeze()
        for hook in freeze:
            hook(False)
    return results


def _rounds(
    contenders: Sequence[Contender],
    reps: int,
    sizes: dict[str, int],
    results: dict[str, Measurement],
) -> None:
    n = len(contenders)
    for r in range(reps):
        for i in range(n):
            c = contenders[(i + r) % n]
            units = sizes[c.name]
            pre = units // 10
            if pre:
                c.measure(pre)
            cpu, wall = c.measure(units)
            ops = units * c.ops_per_unit
            results[c.name].rates.append(ops / max(cpu, 1e-9))
            results[c.name].wall_rates.append(ops / max(wall, 1e-9))


def paired_ratio(results: Mapping[str, Measurement], a: str, b: str) -> float:
    """Median over rounds of rate(a) / rate(b): how many times faster `a` is than `b`."""
    ra, rb = results[a].rates, results[b].rates
    return statistics.median(x / y for x, y in zip(ra, rb, strict=True))
