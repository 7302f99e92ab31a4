"""The `evictable` command.

Subcommands:
  verify [--quick | --thorough] [--json PATH] [--only PREFIX]
                              run every obligation (Z3 proofs, explorer, conformance)
  diagram [--format mermaid|dot] [--machine cpu|gpu]
                              print a lifecycle diagram generated from the table
  bench [...]                 run the benchmarks (see bench/runner.py)

Further subcommands (explore, check, replay) register themselves through
`EXTRA_COMMANDS`: each module there exposes `register(subparsers)`, which adds a
parser whose `handler` default takes the parsed arguments and returns an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evictable.proofs.obligations import (
    DEFAULT_TIMEOUT_S,
    Obligation,
    Result,
    Status,
    format_result,
    run_one,
)
from evictable.proofs.registry import GROUPS, Level, load_group

__all__ = ["EXTRA_COMMANDS", "build_parser", "main", "verify"]

EXTRA_COMMANDS: tuple[str, ...] = ("evictable.proofs.cli.commands",)
"""Modules that add subcommands (explore, check, replay); missing ones are skipped."""


def _collect(level: Level, only: str | None) -> tuple[list[Obligation], list[Result]]:
    """Every obligation of every group; a group that fails to load is an `error` record."""
    obligations: list[Obligation] = []
    broken: list[Result] = []
    for mod_name in GROUPS:
        start = time.perf_counter()
        try:
            group = load_group(mod_name, level)
        except Exception as exc:  # reported, and fails the run
            broken.append(
                Result(mod_name, Status.ERROR, time.perf_counter() - start,
                       f"cannot load obligations: {type(exc).__name__}: {exc}")
            )
            continue
        obligations.extend(ob for ob in group if only is None or ob.name.startswith(only))
    return obligations, broken


def verify(
    level: Level = "default",
    only: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    emit: Callable[[str], None] | None = None,
    progress: bool = False,
) -> list[Result]:
    """Run every obligation at `level`; `emit` receives one fixed-format line per record."""
    say = emit or (lambda line: None)
    obligations, results = _collect(level, only)
    for r in results:
        say(format_result(r))
    if progress:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        with Progress(
            TextColumn("[bold]verify[/bold]"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            transient=True,
        ) as bar:
            task = bar.add_task("", total=len(obligations))
            for ob in obligations:
                bar.update(task, description=ob.name)
                for r in run_one(ob, timeout_s):
                    results.append(r)
                    bar.console.print(format_result(r), markup=False, highlight=False)
                bar.advance(task)
    else:
        for ob in obligations:
            for r in run_one(ob, timeout_s):
                results.append(r)
                say(format_result(r))
    return results


def _summary(results: Sequence[Result]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="evictable verify")
    table.add_column("obligation")
    table.add_column("status")
    table.add_column("seconds", justify="right")
    colour = {Status.PROVED: "green", Status.COUNTEREXAMPLE: "red",
              Status.UNKNOWN: "yellow", Status.ERROR: "magenta"}
    for r in results:
        table.add_row(r.name, f"[{colour[r.status]}]{r.status.value}[/]", f"{r.seconds:.3f}")
    console = Console()
    console.print(table)
    failed = [r for r in results if not r.ok]
    total = sum(r.seconds for r in results)
    console.print(
        f"{len(results)} obligations, {len(results) - len(failed)} proved, "
        f"{len(failed)} failed, {total:.1f}s"
    )
    for r in failed:
        console.print(f"\n[bold red]{r.name}[/] ({r.status.value})", highlight=False)
        if r.counterexample:
            console.print(r.counterexample, markup=False, highlight=False)


def _cmd_verify(args: argparse.Namespace) -> int:
    level: Level = "quick" if args.quick else "thorough" if args.thorough else "default"
    results = verify(level, args.only, args.timeout, emit=print, progress=sys.stdout.isatty())
    _summary(results)
    if args.json:
        payload: dict[str, Any] = {
            "level": level,
            "ok": all(r.ok for r in results),
            "results": [r.as_dict() for r in results],
        }
        Path(args.json).write_text(json.dumps(payload, indent=2), encoding="utf-8")
    if not results:
        print("no obligations were run", file=sys.stderr)
        return 1
    return 0 if all(r.ok for r in results) else 1


def _cmd_diagram(args: argparse.Namespace) -> int:
    from evictable.proofs.cli.docgen import diagram

    print(diagram(args.format, args.machine))
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    runner = importlib.import_module("bench.runner")
    code: int = runner.main(args.bench_args)
    return code


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evictable",
        description="Verify the KV-cache block lifecycle model and implementation.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("verify", help="run proofs, explorer and conformance")
    depth = p.add_mutually_exclusive_group()
    depth.add_argument("--quick", action="store_true", help="small bounds (about a minute)")
    depth.add_argument("--thorough", action="store_true", help="larger bounds, more examples")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    p.add_argument("--only", metavar="PREFIX", help="run only obligations whose name starts so")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S,
                   help="per-obligation solver timeout in seconds")
    p.set_defaults(handler=_cmd_verify)

    p = sub.add_parser("diagram", help="print the lifecycle diagram")
    p.add_argument("--format", choices=("mermaid", "dot"), default="mermaid")
    p.add_argument("--machine", choices=("cpu", "gpu"), default="cpu")
    p.set_defaults(handler=_cmd_diagram)

    p = sub.add_parser("bench", help="run the benchmarks (arguments go to bench/runner.py)")
    p.add_argument("bench_args", nargs=argparse.REMAINDER)
    p.set_defaults(handler=_cmd_bench)

    for mod_name in EXTRA_COMMANDS:
        try:
            mod = importlib.import_module(mod_name)
        except ModuleNotFoundError as exc:
            if exc.name != mod_name:
                raise
            continue
        mod.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["bench"]:
        # argparse's REMAINDER drops arguments that start with "-" (`bench --quick`):
        # everything after `bench` goes to bench/runner.py untouched.
        return _cmd_bench(argparse.Namespace(bench_args=argv[1:]))
    args = build_parser().parse_args(argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    return handler(args)


if __name__ == "__main__":
    raise SystemExit(main())
