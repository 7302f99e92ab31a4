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
* `extra_tables`: `[{"title", "columns", "rows"}]` -- printed after it;
* `plot`: a spec for `bench.plotting.draw` (kind, title, axis labels with units,
  series, error bars) -- drawn as `DIR/<name>.png`;
* `extra_plots`: `{key: spec}` -- drawn as `DIR/<name>-<key>.png`.

vLLM's managers are contenders when the interop venv exists (`bench.interop`); the
runner says at the start whether they are, and why not.

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
    ("throughput", "bench.bench_throughput", "run"),
    ("eviction", "bench.bench_manager", "run_eviction"),
    ("memory", "bench.bench_manager", "run_memory"),
    ("arc", "bench.bench_arc", "run"),
    ("free_queue", "bench.bench_free_queue", "run"),
    ("lazy", "bench.bench_lazy", "run"),
    ("explore", "bench.bench_explore", "run"),
    ("tiering", "bench.bench_tiering", "run"),
    ("tiering_impl", "bench.bench_tiering_impl", "run"),
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
    import evictable.impl

    return {
        "impl_build": "compiled" if evictable.impl.COMPILED else "pure",
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
            if k in ("table", "plot", "notes", "extra_tables", "extra_plots"):
                continue
            yield from _leaves(v, f"{prefix}/{k}" if prefix else str(k))
    elif isinstance(obj, list | tuple) and len(obj) <= 32:
        for i, v in enumerate(obj):
            yield from _leaves(v, f"{prefix}/{i}")


def _print_rows(table: dict[str, Any]) -> None:
    columns = [str(c) for c in table["columns"]]
    rows = [[str(c) for c in row] for row in table["rows"]]
    widths = [
        max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)
    ]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True)))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))


def _print_table(name: str, result: dict[str, Any]) -> None:
    print(f"\n== {name} ==")
    table = result.get("table")
    if isinstance(table, dict) and "columns" in table and "rows" in table:
        _print_rows(table)
    else:
        for key, value in _leaves(result):
            print(f"  {key}: {value:,.6g}")
    for extra in result.get("extra_tables", []):
        print(f"\n  -- {extra.get('title', '')} --")
        _print_rows(extra)
    for note in result.get("notes", []):
        print(f"  note: {note}")


# ---------------------------------------------------------------- plotting


def _fallback_spec(name: str, result: dict[str, Any]) -> dict[str, Any]:
    """A bar per numeric leaf, for a benchmark without a `plot` spec."""
    leaves = list(_leaves(result))[:40]
    return {
        "kind": "barh",
        "title": name,
        "xlabel": "value",
        "ylabel": "result",
        "x": [k for k, _ in leaves],
        "series": {name: [v for _, v in leaves]},
        "log_y": False,
    }


def _plots(name: str, result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """File stem -> plot spec: `<name>` and one `<name>-<key>` per extra plot."""
    spec = result.get("plot")
    specs = {name: spec if isinstance(spec, dict) else _fallback_spec(name, result)}
    for key, extra in (result.get("extra_plots") or {}).items():
        specs[f"{name}-{key}"] = extra
    return specs


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
    print(f"evictable.impl build: {payload['meta']['impl_build']}")
    from bench.interop import interop_python

    python, where = interop_python()
    payload["meta"]["interop"] = {"python": python, "source": where}
    if python is None:
        print(f"vLLM contenders (vllm-lru, vllm-arc) not measured: {where}")
    else:
        print(f"vLLM contenders (vllm-lru, vllm-arc): {python} ({where})")
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
            from bench.plotting import draw

            for stem, spec in _plots(name, result).items():
                path = out / f"{stem}.png"
                try:
                    draw(stem, spec, path)
                    payload["plots"][stem] = str(path)
                except Exception as exc:  # a bad plot spec must not lose the numbers
                    print(f"  plot {stem} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
    payload["meta"]["load_average_at_end"] = _load_average()
    results_path = out / "results.json"
    results_path.write_text(json.dumps(payload, indent=2, default=str), encoding="utf-8")
    print(f"\nresults: {results_path}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
