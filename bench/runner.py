"""The benchmark entry point: `evictable bench [--quick] [--only NAME] [--out DIR]`.

Runs each benchmark, writes one JSON file of results (`DIR/results.json`, default
`bench/results/`) and one PNG plot per benchmark (`DIR/<name>.png`, needs
matplotlib: `pip install 'evictable[bench]'`; without it the plots are skipped with
a message), and prints a table per benchmark.

A benchmark is a function `run(quick: bool) -> dict` in a module of `bench/`; the
ones listed in `BENCHMARKS` whose module is missing are skipped with a note. Its
dict is stored as is, and may hold, for the runner:

* `table`: `{"columns": [str], "rows": [[str]]}` -- printed;
* `notes`: `[str]` -- printed under the table;
* `plot`: `{"kind": "bar" | "barh" | "line", "title", "xlabel", "ylabel", "log_y",
  "x": [labels or numbers], "series": {name: [numbers or None]}}` -- drawn.

Without `table`/`plot` the runner prints and draws the dict's numeric leaves.
Exit status: 0, or 1 if a benchmark raised (its traceback is in the JSON).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["BENCHMARKS", "main"]

BENCHMARKS: tuple[tuple[str, str, str], ...] = (
    ("throughput", "bench.bench_manager", "run_throughput"),
    ("eviction", "bench.bench_manager", "run_eviction"),
    ("memory", "bench.bench_manager", "run_memory"),
    ("arc", "bench.bench_arc", "run"),
    ("free_queue", "bench.bench_free_queue", "run"),
    ("lazy", "bench.bench_lazy", "run"),
    ("explore", "bench.bench_explore", "run"),
)
"""(name, module, function): each benchmark, in the order they run."""

DEFAULT_OUT = Path(__file__).resolve().parent / "results"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="evictable bench", description=__doc__.split("\n")[0])
    p.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes and few repetitions (a smoke test, not a measurement)",
    )
    p.add_argument(
        "--only",
        metavar="NAME",
        action="append",
        choices=[name for name, _, _ in BENCHMARKS],
        help="run only this benchmark (repeatable)",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        default=str(DEFAULT_OUT),
        help=f"where results.json and the plots go (default {DEFAULT_OUT})",
    )
    return p


def _load(module: str, function: str) -> Callable[[bool], dict[str, Any]] | str:
    """The benchmark function, or the reason it is not there."""
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return f"module {module} is not present"
        raise
    fn = getattr(mod, function, None)
    if not callable(fn):
        return f"{module} has no function {function}()"
    return fn  # type: ignore[no-any-return]


def _load_average() -> list[float] | None:
    """1, 5 and 15 minute load averages (other work on the machine skews every number)."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def _meta(quick: bool) -> dict[str, Any]:
    return {
        "quick": quick,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "load_average_at_start": _load_average(),
    }


# ---------------------------------------------------------------- printing


def _leaves(obj: Any, prefix: str = "") -> Iterator[tuple[str, float]]:
    """Numeric leaves of a nested dict/list, as ("a/b/0", value)."""
    if isinstance(obj, bool):
        return
    if isinstance(obj, int | float):
        yield prefix or "value", float(obj)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("table", "plot", "notes"):
                continue
            yield from _leaves(v, f"{prefix}/{k}" if prefix else str(k))
    elif isinstance(obj, list | tuple) and len(obj) <= 32:
        for i, v in enumerate(obj):
            yield from _leaves(v, f"{prefix}/{i}")


def _print_table(name: str, result: dict[str, Any]) -> None:
    print(f"\n== {name} ==")
    table = result.get("table")
    if isinstance(table, dict) and "columns" in table and "rows" in table:
        columns = [str(c) for c in table["columns"]]
        rows = [[str(c) for c in row] for row in table["rows"]]
        widths = [
            max(len(c), *(len(r[i]) for r in rows)) if rows else len(c)
            for i, c in enumerate(columns)
        ]
        print("  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True)))
        for row in rows:
            print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))
    else:
        for key, value in _leaves(result):
            print(f"  {key}: {value:,.6g}")
    for note in result.get("notes", []):
        print(f"  note: {note}")


# ---------------------------------------------------------------- plotting


def _plot(name: str, result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    spec = result.get("plot")
    if not isinstance(spec, dict):
        leaves = list(_leaves(result))[:40]
        spec = {
            "kind": "barh",
            "title": name,
            "xlabel": "value",
            "ylabel": "",
            "x": [k for k, _ in leaves],
            "series": {name: [v for _, v in leaves]},
            "log_y": False,
        }
    kind = spec.get("kind", "bar")
    x = list(spec.get("x", []))
    series: dict[str, list[float | None]] = dict(spec.get("series", {}))
    fig, ax = plt.subplots(figsize=(9, 5) if kind != "barh" else (9, 1 + 0.35 * len(x)))
    if kind == "line":
        for label, ys in series.items():
            pts = [(a, b) for a, b in zip(x, ys, strict=False) if b is not None]
            ax.plot([a for a, _ in pts], [b for _, b in pts], marker="o", label=label)
    else:
        width = 0.8 / max(1, len(series))
        for i, (label, ys) in enumerate(series.items()):
            pos = [j + (i - (len(series) - 1) / 2) * width for j in range(len(x))]
            vals = [0.0 if v is None else v for v in ys]
            if kind == "barh":
                ax.barh(pos, vals, height=width, label=label)
            else:
                ax.bar(pos, vals, width=width, label=label)
        ticks = list(range(len(x)))
        if kind == "barh":
            ax.set_yticks(ticks, [str(v) for v in x], fontsize=8)
            ax.invert_yaxis()
        else:
            ax.set_xticks(ticks, [str(v) for v in x], fontsize=8)
    if spec.get("log_y"):
        (ax.set_xscale if kind == "barh" else ax.set_yscale)("log")
    ax.set_title(str(spec.get("title", name)))
    ax.set_xlabel(str(spec.get("xlabel", "")))
    ax.set_ylabel(str(spec.get("ylabel", "")))
    if len(series) > 1:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.grid(True, axis="x" if kind == "barh" else "y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def _have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


# ---------------------------------------------------------------- main


def standalone(
    name: str,
    fn: Callable[[bool], dict[str, Any]],
    description: str,
    argv: Sequence[str] | None = None,
) -> int:
    """`python -m bench.<module> [--quick]`: one benchmark on its own.

    Runs `fn`, writes its dict to `bench/results/<name>.json` and prints its table
    and notes as `evictable bench` does. Returns the exit status (0).
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes and few repetitions (a smoke test, not a measurement)",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    result = fn(args.quick)
    path = DEFAULT_OUT / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, default=str), encoding="utf-8")
    _print_table(name, result)
    print(f"wrote {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks; return 0, or 1 if any of them raised."""
    args = _parser().parse_args(list(argv) if argv is not None else None)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    plots = _have_matplotlib()
    if not plots:
        print(
            "matplotlib is not installed: no plots (pip install 'evictable[bench]')",
            file=sys.stderr,
        )
    payload: dict[str, Any] = {"meta": _meta(args.quick), "benchmarks": {}, "plots": {}}
    failed = False
    for name, module, function in BENCHMARKS:
        if args.only and name not in args.only:
            continue
        fn = _load(module, function)
        if isinstance(fn, str):
            print(f"\n== {name} == skipped: {fn}")
            payload["benchmarks"][name] = {"skipped": fn}
            continue
        t0 = time.perf_counter()
        try:
            result = fn(args.quick)
        except Exception:
            failed = True
            tb = traceback.format_exc()
            print(f"\n== {name} == FAILED\n{tb}", file=sys.stderr)
            payload["benchmarks"][name] = {"error": tb}
            continue
        result = dict(result)
        result["seconds"] = time.perf_counter() - t0
        payload["benchmarks"][name] = result
        _print_table(name, result)
        print(f"  ({result['seconds']:.1f}s)")
        if plots:
            path = out / f"{name}.png"
            try:
                _plot(name, result, path)
                payload["plots"][name] = str(path)
            except Exception as exc:  # a bad plot spec must not lose the numbers
                print(f"  plot failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    payload["meta"]["load_average_at_end"] = _load_average()
    results_path = out / "results.json"
    results_path.write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")
    print(f"\nresults: {results_path}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
