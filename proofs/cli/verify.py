"""`evictable verify`: every obligation, a progress display, then one table.

Each obligation yields one record, and one more for its negative control. While the
run goes on, a progress bar (on a terminal) counts *records*, so its total is the
table's; `--verbose` prints each record as one fixed-format line as it lands
(`obligations.format_result`) instead. The table lists every record with its kind,
verdict, bounds and time; the counts below it add up by kind and by verdict, and
every failure follows with its counterexample. Exit code: 0 when every record is
ok, 1 otherwise (a counterexample, an unknown, an error, a control not refuted, or
nothing selected).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, Result, Status, format_result, run_one
from evictable.proofs.obligations import registry
from evictable.proofs.obligations.registry import load_group

__all__ = ["DEFAULT_TIMEOUTS", "add_parser", "collect", "counts", "verify"]

DEFAULT_TIMEOUTS: dict[str, float] = {"quick": 60.0, "default": 180.0, "thorough": 1800.0}
"""The wall-clock bound of one check at each level, in seconds (`--timeout` overrides)."""


def collect(
    level: Level, only: str | None, groups: Sequence[str] | None = None
) -> tuple[list[Obligation], list[Result]]:
    """Every obligation of every group (`registry.GROUPS` by default); a group that
    fails to load is an `error` record."""
    obligations: list[Obligation] = []
    broken: list[Result] = []
    for mod_name in registry.GROUPS if groups is None else groups:
        start = time.perf_counter()
        try:
            group = load_group(mod_name, level)
        except Exception as exc:  # reported, and fails the run
            broken.append(
                Result(
                    mod_name,
                    Kind.TESTED,
                    "",
                    Status.ERROR,
                    time.perf_counter() - start,
                    f"cannot load obligations: {type(exc).__name__}: {exc}",
                )
            )
            continue
        obligations.extend(ob for ob in group if only is None or ob.name.startswith(only))
    return obligations, broken


def _records(obs: Sequence[Obligation]) -> int:
    return sum(1 + (ob.negative is not None) for ob in obs)


def verify(
    level: Level = "default",
    only: str | None = None,
    timeout_s: float | None = None,
    emit: Callable[[str], None] | None = None,
    progress: bool = False,
    groups: Sequence[str] | None = None,
) -> list[Result]:
    """Run every obligation at `level`; `emit` receives one fixed-format line per record."""
    budget = timeout_s if timeout_s is not None else DEFAULT_TIMEOUTS[level]
    obligations, results = collect(level, only, groups)
    say = emit or (lambda line: None)
    for r in results:
        say(format_result(r))
    if not progress:
        for ob in obligations:
            for r in run_one(ob, budget):
                results.append(r)
                say(format_result(r))
        return results
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("[bold]verify[/bold]"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} records"),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        transient=True,
    ) as bar:
        task = bar.add_task("", total=len(results) + _records(obligations), completed=len(results))
        for ob in obligations:
            bar.update(task, description=ob.name)
            for r in run_one(ob, budget):
                results.append(r)
                if emit is not None:
                    bar.console.print(format_result(r), markup=False, highlight=False)
                bar.advance(task)
    return results


def counts(results: Sequence[Result]) -> dict[str, Any]:
    """How many records, failed ones, and records by kind and by verdict."""
    return {
        "records": len(results),
        "failed": sum(not r.ok for r in results),
        "by_kind": dict(sorted(Counter(r.kind.value for r in results).items())),
        "by_verdict": dict(sorted(Counter(r.verdict for r in results).items())),
    }


def _summary(results: Sequence[Result]) -> None:
    from rich.console import Console
    from rich.table import Table

    colour = {True: "green", False: "red"}
    table = Table(title="evictable verify")
    for column, justify in (
        ("obligation", "left"),
        ("kind", "left"),
        ("verdict", "left"),
        ("bounds", "left"),
        ("seconds", "right"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for r in results:
        table.add_row(
            r.name, r.kind.value, f"[{colour[r.ok]}]{r.verdict}[/]", r.bounds, f"{r.seconds:.3f}"
        )
    console = Console(width=max(120, Console().width))
    console.print(table)
    c = counts(results)
    total = sum(r.seconds for r in results)
    kinds = ", ".join(f"{n} {k}" for k, n in c["by_kind"].items())
    verdicts = ", ".join(f"{n} {v}" for v, n in c["by_verdict"].items())
    console.print(
        f"{c['records']} records ({kinds}): {verdicts}; {c['failed']} failed, {total:.1f}s",
        highlight=False,
    )
    for r in results:
        if not r.ok:
            console.print(f"\n[bold red]{r.name}[/] ({r.verdict})", highlight=False)
            if r.counterexample:
                console.print(r.counterexample, markup=False, highlight=False)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("verify", help="run proofs, explorer and conformance")
    depth = p.add_mutually_exclusive_group()
    depth.add_argument("--quick", action="store_true", help="small bounds (seconds)")
    depth.add_argument("--thorough", action="store_true", help="larger bounds, more examples")
    p.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    p.add_argument("--only", metavar="PREFIX", help="run only obligations whose name starts so")
    p.add_argument(
        "--timeout",
        type=_positive_float,
        default=None,
        metavar="SECONDS",
        help="wall-clock bound of each check (default by level: "
        f"{', '.join(f'{k} {v:g}' for k, v in DEFAULT_TIMEOUTS.items())})",
    )
    p.add_argument("--verbose", action="store_true", help="print one line per record as it lands")
    p.set_defaults(handler=run)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def run(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    """The handler: (exit code, the report's own fields)."""
    level: Level = "quick" if args.quick else "thorough" if args.thorough else "default"
    emit = print if args.verbose else None
    results = verify(
        level, args.only, args.timeout, emit=emit, progress=sys.stdout.isatty() and not args.verbose
    )
    _summary(results)
    if not results:
        print("no obligations were run", file=sys.stderr)
    code = 0 if results and all(r.ok for r in results) else 1
    budget = args.timeout if args.timeout is not None else DEFAULT_TIMEOUTS[level]
    return code, {
        "level": level,
        "timeout_s": budget,
        "only": args.only,
        "counts": counts(results),
        "records": [r.as_dict() for r in results],
    }
