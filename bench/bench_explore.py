"""Exhaustive explorer: distinct states per second, and the floor that bounds it.

The issue asks for 50,000 distinct states/s from the explorer (proofs/explore/);
it reaches a few hundred. This benchmark gives reproducible evidence of why, for
the LRU manager at the `default` bounds of `evictable verify` (quick: `quick`):

* **Explorer throughput** -- `explore(bounds, workers=w)` for w = 1 and 2: states,
  states before symmetry, transitions, depth, wall seconds, states/s (wall), CPU
  seconds of all its processes, and edges per state (transitions / states).
* **Floor per edge** -- lock-step checking runs every edge of every state on the
  implementation: at least one call through the adapter protocol
  (`evictable.proofs.explore.ops.invoke`), one `snapshot()` and one comparison with the
  pre-state's snapshot. On a sample of reachable states (evenly spaced over the
  breadth-first order of all of them), every op the explorer tries there
  (`Alphabet.ops_for`, with the mentioned/maxed masks computed as `_expand` does)
  is made on its own copy of the implementation, prepared beforehand (pickle round
  trip, untimed); only the loop `invoke`, `snapshot()`, `==` is timed
  (`time.process_time`, collector off). The same for `ModelManager` copies gives
  the model floor. Each repetition sums time and edges over all sampled states;
  the reported floor is the median over repetitions (after one untimed warm-up
  pass). Then, on the same post-states,
  `snapshot()` alone and the comparison alone are timed again (the call is the
  rest); the time to make the copies is measured too. Neither part enters a
  ceiling twice, and copying enters none.
* **Ceiling** -- `cores / (edges_per_state * floor)`: the states/s an explorer
  would reach on this machine if the model, copying, encoding, deduplication and
  process coordination cost nothing, with the implementation floor only and with
  model + implementation floors. `cores` is `os.cpu_count()` (2 if unknown).

The sample comes from the 1-worker exploration itself (`Exploration.paths()`: a
shortest path of op indexes to every visited state, in breadth-first order). Each
sampled state is then built on a fresh model and implementation by
`Context.fresh(path)` from proofs/explore/manager_subject.py.

`python -m bench.bench_explore [--quick]` writes bench/results/explore.json;
`evictable bench --only explore` runs `run(quick)` through bench/runner.py.
"""

from __future__ import annotations

import gc
import os
import pickle
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.runner import standalone
from evictable.impl.manager import CPUOffloadingManager
from evictable.model.types import ManagerSnapshot
from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.profiles import profile
from evictable.proofs.explore.manager import Exploration, explore
from evictable.proofs.explore.manager_subject import Context
from evictable.proofs.explore.ops import Op, invoke

__all__ = ["TARGET_STATES_PER_S", "main", "run"]

TARGET_STATES_PER_S = 50_000
"""The rate the issue asks for."""
WORKERS = (1, 2)


# ------------------------------------------------------------------ explorer runs


def _explorer(bounds: Bounds, workers: int) -> tuple[dict[str, Any], Exploration]:
    """One exploration's figures, with its CPU time summed over the parent and its
    workers, and the exploration itself."""
    gc.collect()
    cpu0, kids0 = time.process_time(), os.times()
    run = explore(bounds, workers=workers)
    kids1 = os.times()
    cpu = (
        time.process_time()
        - cpu0
        + (kids1.children_user - kids0.children_user)
        + (kids1.children_system - kids0.children_system)
    )
    if not run.ok:
        raise RuntimeError(f"exploration failed: {run.summary()}")
    f = run.figures
    figures = {
        "workers": workers,
        "states": f.states,
        "concrete": f.concrete,
        "transitions": f.transitions,
        "depth": f.max_depth,
        "pruned": f.pruned,
        "seconds": f.seconds,
        "states_per_s": f.states_per_s,
        "cpu_seconds": cpu,
        "cpu_us_per_edge": cpu / f.transitions * 1e6,
        "edges_per_state": f.transitions / f.states,
    }
    return figures, run


# ------------------------------------------------------------------ sampled states


def _spread(items: Sequence[tuple[int, ...]], n: int) -> list[tuple[int, ...]]:
    """At most `n` items, evenly spaced (every depth of the BFS order is represented)."""
    if len(items) <= n:
        return list(items)
    return [items[i * len(items) // n] for i in range(n)]


# ------------------------------------------------------------------ floor per edge


@dataclass(frozen=True)
class Sampled:
    """One reachable state: pickled model and implementation, their snapshots, its ops."""

    model_blob: bytes
    impl_blob: bytes
    model_pre: ManagerSnapshot
    impl_pre: object
    ops: tuple[Op, ...]


def _sampled(ctx: Context, path: tuple[int, ...]) -> Sampled:
    model, impl = ctx.fresh(path)
    pre = model.snapshot()
    ops = tuple(ctx.ops[i] for i in ctx.ops_in(pre))
    return Sampled(
        pickle.dumps(model, pickle.HIGHEST_PROTOCOL),
        pickle.dumps(impl, pickle.HIGHEST_PROTOCOL),
        pre,
        impl.snapshot(),
        ops,
    )


def _copies(blob: bytes, n: int) -> tuple[list[Any], float]:
    """`n` independent copies (pickle round trips), and the CPU seconds they took."""
    t0 = time.process_time()
    out = [pickle.loads(blob) for _ in range(n)]
    return out, time.process_time() - t0


@dataclass
class Side:
    """CPU seconds on one side (model or impl), summed over edges."""

    edge_s: float = 0.0
    """The floor: `invoke` + `snapshot()` + `== pre`, in one loop."""
    snapshot_s: float = 0.0
    """Of which (timed again, on the same post-states): `snapshot()` alone."""
    compare_s: float = 0.0
    """Of which: `post == pre` alone."""
    copy_s: float = 0.0
    """Not part of the floor: making the copies."""

    def add(self, other: Side) -> None:
        self.edge_s += other.edge_s
        self.snapshot_s += other.snapshot_s
        self.compare_s += other.compare_s
        self.copy_s += other.copy_s


def _edges(blob: bytes, ops: tuple[Op, ...], pre: object) -> tuple[Side, int]:
    """Every op on its own copy: the floor, its parts, and how many edges left the
    state unchanged. Copies are made beforehand; the collector is off while timing."""
    copies, copy_s = _copies(blob, len(ops))
    same = 0
    gc.disable()
    try:
        t0 = time.process_time()
        for target, op in zip(copies, ops, strict=True):
            invoke(target, op)
            post = target.snapshot()
            same += post == pre
        t1 = time.process_time()
        posts = [target.snapshot() for target in copies]
        t2 = time.process_time()
        for post in posts:
            post == pre  # noqa: B015 -- the comparison is what is timed
        t3 = time.process_time()
    finally:
        gc.enable()
    return Side(t1 - t0, t2 - t1, t3 - t2, copy_s), same


@dataclass
class Totals:
    """Sums over the sampled states of one repetition."""

    edges: int = 0
    unchanged: int = 0
    impl: Side = field(default_factory=Side)
    model: Side = field(default_factory=Side)


def _one_rep(samples: Sequence[Sampled]) -> Totals:
    t = Totals()
    for s in samples:
        impl, same = _edges(s.impl_blob, s.ops, s.impl_pre)
        model, _ = _edges(s.model_blob, s.ops, s.model_pre)
        t.impl.add(impl)
        t.model.add(model)
        t.unchanged += same
        t.edges += len(s.ops)
    return t


def _floors(samples: Sequence[Sampled], reps: int) -> dict[str, Any]:
    """Median µs per edge over `reps` repetitions, each over every sampled state."""
    _one_rep(samples)  # warm-up: first calls, allocator, caches
    runs = [_one_rep(samples) for _ in range(reps)]
    edges = runs[0].edges
    out: dict[str, Any] = {
        "reps": reps,
        "edges_timed_per_rep": edges,
        "unchanged_fraction": runs[0].unchanged / edges,
    }
    for side in ("impl", "model"):
        sides: list[Side] = [getattr(r, side) for r in runs]
        per_rep = [x.edge_s / edges * 1e6 for x in sides]
        out[f"{side}_us_per_edge"] = statistics.median(per_rep)
        out[f"{side}_us_per_edge_reps"] = per_rep
        out[f"{side}_snapshot_us"] = statistics.median(x.snapshot_s for x in sides) / edges * 1e6
        out[f"{side}_compare_us"] = statistics.median(x.compare_s for x in sides) / edges * 1e6
        out[f"{side}_copy_us"] = statistics.median(x.copy_s for x in sides) / edges * 1e6
    return out


def _ceiling(cores: int, edges_per_state: float, us_per_edge: float) -> float:
    """States/s if every edge cost exactly `us_per_edge` CPU µs and nothing else did."""
    return cores / (edges_per_state * us_per_edge * 1e-6)


# ------------------------------------------------------------------ report


def _table(out: dict[str, Any]) -> dict[str, Any]:
    eps, cores = out["edges_per_state"], out["cores"]
    rows: list[list[str]] = []
    for r in out["explorer"]:
        rows.append(
            [
                f"explorer, {r['workers']} worker(s)",
                f"{r['states_per_s']:,.0f}",
                f"{r['cpu_us_per_edge']:.1f}",
                f"{r['edges_per_state']:.1f}",
                "measured (wall states/s; CPU µs/edge, all processes)",
            ]
        )
    c = out["ceiling"]
    rows.append(
        [
            "ceiling: impl floor only",
            f"{c['impl_only']:,.0f}",
            f"{out['floor']['impl_us_per_edge']:.2f}",
            f"{eps:.1f}",
            f"{cores} cores x impl invoke+snapshot+compare, all else free",
        ]
    )
    rows.append(
        [
            "ceiling: model+impl floor",
            f"{c['model_and_impl']:,.0f}",
            f"{c['model_and_impl_us_per_edge']:.2f}",
            f"{eps:.1f}",
            f"{cores} cores x both sides' floors, all else free",
        ]
    )
    rows.append(
        [
            "target (issue)",
            f"{TARGET_STATES_PER_S:,}",
            f"{c['budget_us_per_edge']:.2f}",
            f"{eps:.1f}",
            f"µs/edge = CPU budget per edge on {cores} cores",
        ]
    )
    return {"columns": ["what", "states/s", "µs per edge", "edges/state", "note"], "rows": rows}


def _notes(out: dict[str, Any]) -> list[str]:
    eps, cores, fl, c = out["edges_per_state"], out["cores"], out["floor"], out["ceiling"]
    best = max(r["states_per_s"] for r in out["explorer"])
    one = out["explorer"][0]["cpu_us_per_edge"]
    return [
        f"{out['bounds']}: {out['explorer'][0]['states']} states, {eps:.1f} edges per state; "
        f"best measured {best:,.0f} states/s.",
        f"Floor per edge (median of {fl['reps']}, {out['sample_states']} sampled states): "
        f"impl {fl['impl_us_per_edge']:.2f} µs, model {fl['model_us_per_edge']:.2f} µs "
        f"(copies, excluded: impl {fl['impl_copy_us']:.2f} µs, model "
        f"{fl['model_copy_us']:.2f} µs each).",
        f"Of the impl floor, snapshot() alone is {fl['impl_snapshot_us']:.2f} µs and the "
        f"comparison {fl['impl_compare_us']:.2f} µs; the call itself is the rest "
        f"(~{fl['impl_us_per_edge'] - fl['impl_snapshot_us'] - fl['impl_compare_us']:.2f} µs).",
        f"50,000 states/s on {cores} cores needs <= {c['budget_us_per_edge']:.2f} CPU µs per "
        f"edge; the impl floor alone is {fl['impl_us_per_edge'] / c['budget_us_per_edge']:.1f}x "
        "that.",
        f"Ceiling with the impl floor only: {c['impl_only']:,.0f} states/s "
        f"(target is {c['target_over_impl_only']:.1f}x it); with model+impl floors: "
        f"{c['model_and_impl']:,.0f} states/s ({c['target_over_model_and_impl']:.1f}x).",
        f"The explorer spends {one:.1f} CPU µs per edge (1 worker), "
        f"{one / c['model_and_impl_us_per_edge']:.2f}x "
        f"the model+impl floor; {fl['unchanged_fraction']:.0%} of edges leave the state "
        "unchanged (the explorer reuses its copies after those).",
        _verdict(c["impl_only"]),
    ]


def _verdict(impl_ceiling: float) -> str:
    if impl_ceiling < TARGET_STATES_PER_S:
        return (
            "So no explorer that steps the implementation in lock-step on every edge "
            "can reach the target at these bounds on this machine; only fewer edges per "
            "state or a cheaper call/snapshot per edge could."
        )
    return "The impl floor alone does not rule the target out at these bounds."


_BAR_COLORS = {"explorer": "#17becf", "ceiling": "#7f7f7f", "target": "#e377c2"}
"""Measured runs, ceilings and the target: one colour each."""


def _plot(out: dict[str, Any]) -> dict[str, Any]:
    labels = [f"explorer {r['workers']}w" for r in out["explorer"]]
    values = [r["states_per_s"] for r in out["explorer"]]
    labels += ["ceiling: impl floor", "ceiling: model+impl", "target"]
    values += [
        out["ceiling"]["impl_only"],
        out["ceiling"]["model_and_impl"],
        float(TARGET_STATES_PER_S),
    ]
    return {
        "kind": "bar",
        "title": f"explorer throughput vs floor ({out['bounds']})",
        "xlabel": "measured explorer runs, the ceilings their per-edge floors allow, the target",
        "ylabel": "distinct states per second (log scale)",
        "log_y": True,
        "x": labels,
        "series": {"states/s": values},
        "bar_colors": [_BAR_COLORS[label.split(" ")[0].rstrip(":")] for label in labels],
    }


def run(quick: bool) -> dict[str, Any]:
    """Explorer rates, floors per edge and the ceilings they imply; see the module doc."""
    level = "quick" if quick else "default"
    bounds = profile("lru").explore[level]
    n_sample, reps = (30, 1) if quick else (200, 3)
    cpu = os.cpu_count()
    cores = cpu or 2
    explored = [_explorer(bounds, w) for w in WORKERS]
    runs = [figures for figures, _ in explored]
    ctx = Context(bounds, CPUOffloadingManager, True)
    paths = explored[0][1].paths()  # every visited state, breadth-first
    samples = [_sampled(ctx, p) for p in _spread(paths, n_sample)]
    floor = _floors(samples, reps)
    eps = runs[0]["edges_per_state"]
    both = floor["impl_us_per_edge"] + floor["model_us_per_edge"]
    impl_only = _ceiling(cores, eps, floor["impl_us_per_edge"])
    model_and_impl = _ceiling(cores, eps, both)
    out: dict[str, Any] = {
        "level": level,
        "bounds": bounds.describe(),
        "cores": cores,
        "cores_source": "os.cpu_count()" if cpu else "assumed 2 (os.cpu_count() unknown)",
        "target_states_per_s": TARGET_STATES_PER_S,
        "explorer": runs,
        "edges_per_state": eps,
        "sample_states": len(samples),
        "sample_edges_per_state": floor["edges_timed_per_rep"] / len(samples),
        "floor": floor,
        "ceiling": {
            "impl_only": impl_only,
            "model_and_impl": model_and_impl,
            "model_and_impl_us_per_edge": both,
            "budget_us_per_edge": cores / (TARGET_STATES_PER_S * eps) * 1e6,
            "target_over_impl_only": TARGET_STATES_PER_S / impl_only,
            "target_over_model_and_impl": TARGET_STATES_PER_S / model_and_impl,
        },
    }
    out["table"] = _table(out)
    out["notes"] = _notes(out)
    out["plot"] = _plot(out)
    return out


def main(argv: list[str] | None = None) -> int:
    """This benchmark alone: see `bench.runner.standalone`."""
    return standalone("explore", run, __doc__.split("\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
