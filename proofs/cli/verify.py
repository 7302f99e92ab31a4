"""`evictable verify`: every obligation, a live progress line, then one table.

```
evictable verify [--quick | --thorough] [-j N] [--only PREFIX ...] [--group NAME ...]
                 [--backstop SECONDS] [--verbose] [--json PATH]
```

Each obligation yields one record, and one more for its negative control. The
obligations run in `-j N` worker processes (default: the machine's cores;
`base.parallel`), each bounded by its work (states, examples x steps, a Z3 rlimit
per query); the wall clock is only a hang backstop (`--backstop`, default
`HANG_BACKSTOP_S`), so a busy machine gives the same records as an idle one, later.
While the run goes on, a live line on stderr says how many records have landed, what
is running and for how long (rich on a terminal; a plain line every few seconds
otherwise), with an estimate from the previous run's times when there is one;
`--verbose` prints each record as one fixed-format line as it lands. The table then
lists every record with its kind, verdict, bounds and time; the counts below it add
up by kind (with the time per kind) and by verdict, and every failure follows with
its counterexample. Exit code: 0 when every record is ok, 1 otherwise (a
counterexample, an unknown, an error, a control not refuted), 2 when the run could
not be made or was interrupted (the records that had landed are still printed and
written).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from evictable.proofs.base.levels import Level
from evictable.proofs.base.parallel import Interrupted, run_parallel
from evictable.proofs.base.records import (
    HANG_BACKSTOP_S,
    Kind,
    Obligation,
    Result,
    Status,
    format_result,
)
from evictable.proofs.cli.args import add_report_options, count
from evictable.proofs.cli.errors import UsageError
from evictable.proofs.obligations import registry
from evictable.proofs.obligations.registry import load_group

__all__ = ["add_parser", "collect", "counts", "verify"]

TIMES_FILE = "verify-times.json"
"""Each record's seconds of the last complete run, per level (for the estimate), in
the user's cache directory (`$XDG_CACHE_HOME/evictable`, else `~/.cache/evictable`)."""


def collect(
    level: Level, only: str | Sequence[str] | None, groups: Sequence[str] | None = None
) -> tuple[list[Obligation], list[Result]]:
    """Every obligation of every group (`registry.GROUPS` by default) whose name starts
    with `only` (one prefix or any of several); a group that fails to load is an
    `error` record."""
    prefixes = None if only is None else (only,) if isinstance(only, str) else tuple(only)
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
        obligations.extend(ob for ob in group if prefixes is None or ob.name.startswith(prefixes))
    return obligations, broken


def _records(obs: Sequence[Obligation]) -> int:
    return sum(1 + (ob.negative is not None) for ob in obs)


# ------------------------------------------------------------------ progress


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "evictable"


def _last_times(level: Level) -> dict[str, float]:
    """Each record's seconds in the last complete run at `level` (empty if none)."""
    try:
        data = json.loads((_cache_dir() / TIMES_FILE).read_text(encoding="utf-8"))
        times = data.get(level, {})
        return {str(k): float(v) for k, v in times.items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def _save_times(level: Level, results: Sequence[Result]) -> None:
    path = _cache_dir() / TIMES_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        if not isinstance(data, dict):
            data = {}
        data[level] = {r.name: round(r.seconds, 3) for r in results}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data), encoding="utf-8")
    except (OSError, ValueError):
        pass  # an estimate is a convenience: never a reason to fail


class Progress:
    """The live line: records landed / total, what runs, elapsed, and an estimate."""

    def __init__(
        self, total: int, estimate_s: float | None, stream: TextIO, every_s: float = 5.0
    ) -> None:
        self.total = total
        self.done = 0
        self.estimate_s = estimate_s
        self.stream = stream
        self.running: list[str] = []  # the records being made
        self.start = time.monotonic()
        self.every_s = every_s
        self.last = 0.0
        self.bar: Any = None
        if stream.isatty():
            from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as Bar

            self.bar = Bar(
                TextColumn("[bold]verify[/bold]"),
                BarColumn(),
                TextColumn("{task.completed}/{task.total} records"),
                TimeElapsedColumn(),
                TextColumn("{task.description}"),
                transient=True,
                auto_refresh=False,  # no thread: workers are forked from this process
                console=_console(stream),
            )
            self.task = self.bar.add_task("", total=total)
            self.bar.start()

    def line(self) -> str:
        """The plain progress line."""
        names = list(self.running)
        running = ", ".join(names[:2]) + (f" (+{len(names) - 2})" if len(names) > 2 else "")
        eta = ""
        if self.estimate_s:
            left = max(0.0, self.estimate_s - (time.monotonic() - self.start))
            eta = f", about {left:.0f}s left (last run {self.estimate_s:.0f}s)"
        return (
            f"verify: {self.done}/{self.total} records, running {running or '-'}, "
            f"{time.monotonic() - self.start:.0f}s elapsed{eta}"
        )

    def started(self, name: str) -> None:
        self.running.append(name)
        self._show()

    def landed(self, r: Result) -> None:
        self.done += 1
        if r.name in self.running:
            self.running.remove(r.name)
        self._show()

    def print(self, text: str) -> None:
        if self.bar is not None:
            self.bar.console.print(text, markup=False, highlight=False)
        else:
            print(text, flush=True)

    def _show(self) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done, description=", ".join(self.running))
            self.bar.refresh()
            return
        now = time.monotonic()
        if now - self.last >= self.every_s or self.done == self.total:
            self.last = now
            print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def _console(stream: TextIO) -> Any:
    from rich.console import Console

    return Console(file=stream)


# ------------------------------------------------------------------ the run


def verify(
    level: Level = "default",
    only: str | Sequence[str] | None = None,
    backstop_s: float = HANG_BACKSTOP_S,
    emit: Callable[[str], None] | None = None,
    jobs: int = 0,
    groups: Sequence[str] | None = None,
    progress: TextIO | None = None,
) -> list[Result]:
    """Run every obligation at `level` in `jobs` worker processes (0: in this process);
    `emit` receives one fixed-format line per record as it lands; `progress` (a
    stream) shows the live line. Raises `base.parallel.Interrupted` on Ctrl-C, with
    the records that had landed."""
    obligations, broken = collect(level, only, groups)
    say = emit or (lambda line: None)
    for r in broken:
        say(format_result(r))
    times = _last_times(level)
    live: Progress | None = None
    if progress is not None:
        known = [times.get(n) for ob in obligations for n in _names(ob)]
        estimate = None
        if known and all(t is not None for t in known):
            estimate = sum(t for t in known if t is not None) / max(1, jobs)
        live = Progress(_records(obligations), estimate, progress)

    def landed(r: Result) -> None:
        if emit is not None:
            if live is not None:
                live.print(format_result(r))
            else:
                say(format_result(r))
        if live is not None:
            live.landed(r)

    try:
        results = run_parallel(
            obligations,
            jobs,
            backstop_s,
            on_result=landed,
            on_start=live.started if live is not None else None,
            estimate=times,
        )
    except Interrupted as stop:
        raise Interrupted([*broken, *stop.records]) from None
    finally:
        if live is not None:
            live.close()
    return [*broken, *results]


def _names(ob: Obligation) -> list[str]:
    return [ob.name] + ([f"{ob.name}~neg"] if ob.negative is not None else [])


def counts(results: Sequence[Result]) -> dict[str, Any]:
    """How many records, failed ones, records (and seconds) by kind, records by verdict."""
    seconds: dict[str, float] = {}
    for r in results:
        seconds[r.kind.value] = seconds.get(r.kind.value, 0.0) + r.seconds
    return {
        "records": len(results),
        "failed": sum(not r.ok for r in results),
        "by_kind": dict(sorted(Counter(r.kind.value for r in results).items())),
        "seconds_by_kind": {k: round(v, 3) for k, v in sorted(seconds.items())},
        "by_verdict": dict(sorted(Counter(r.verdict for r in results).items())),
    }


def _summary(results: Sequence[Result], wall_s: float, jobs: int) -> None:
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
    kinds = ", ".join(f"{n} {k}" for k, n in c["by_kind"].items())
    verdicts = ", ".join(f"{n} {v}" for v, n in c["by_verdict"].items())
    per_kind = ", ".join(f"{k} {s:.1f}s" for k, s in c["seconds_by_kind"].items())
    console.print(
        f"{c['records']} records ({kinds}): {verdicts}; {c['failed']} failed; "
        f"{wall_s:.1f}s with {max(jobs, 1)} worker(s) (check time by kind: {per_kind})",
        highlight=False,
    )
    assumed = [r for r in results if r.assumptions]
    if assumed:
        console.print('\nassumed, not proved by the record (docs/proofs.md, "Assumptions"):')
        for r in assumed:
            console.print(f"  {r.name}:", markup=False, highlight=False)
            for text in r.assumptions:
                console.print(f"    - {text}", markup=False, highlight=False)
    for r in results:
        if not r.ok:
            console.print(f"\n[bold red]{r.name}[/] ({r.verdict})", highlight=False)
            if r.counterexample:
                console.print(r.counterexample, markup=False, highlight=False)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "verify",
        help="run proofs, explorer and conformance",
        description="Run every obligation (Z3 proofs, the explorer, conformance runs), each "
        "with its negative control, and print one table of records.",
    )
    depth = p.add_mutually_exclusive_group()
    depth.add_argument(
        "--quick", action="store_true", help="small bounds (seconds; default: the default level)"
    )
    depth.add_argument(
        "--thorough",
        action="store_true",
        help="larger bounds, more examples (default: the default level)",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=count(0),
        default=os.cpu_count() or 1,
        metavar="N",
        help="worker processes (default: %(default)s, the cores; 0: run in this process)",
    )
    p.add_argument(
        "--only",
        metavar="PREFIX",
        action="append",
        help="run only the obligations whose name starts with PREFIX; repeat it for several "
        "prefixes (default: all)",
    )
    p.add_argument(
        "--group",
        metavar="NAME",
        action="append",
        help="run only the obligations of the group NAME (a module of "
        "evictable.proofs.obligations, e.g. z3_manager: the order of registry.GROUPS); "
        "repeat it for several groups (default: all)",
    )
    p.add_argument(
        "--backstop",
        type=_positive_float,
        default=HANG_BACKSTOP_S,
        metavar="SECONDS",
        help="hang backstop of each check: a check still running after it is reported "
        "unknown, never as a finding (default: %(default)g; verdicts come from work)",
    )
    p.add_argument("--verbose", action="store_true", help="print one line per record as it lands")
    add_report_options(p)
    p.set_defaults(handler=run)


def _groups(names: Sequence[str]) -> list[str]:
    """The groups `--group` names (short or full module names), in registry order."""
    short = {g.rsplit(".", 1)[-1]: g for g in registry.GROUPS}
    for name in names:
        if name not in short and name not in registry.GROUPS:
            raise UsageError(
                f"evictable verify: --group {name!r} is no group (groups: {', '.join(short)})"
            )
    wanted = {short.get(n, n) for n in names}
    return [g for g in registry.GROUPS if g in wanted]


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
    groups = None if args.group is None else _groups(args.group)
    if args.only is not None:
        names = [ob.name for ob in collect(level, None, groups)[0]]
        for prefix in args.only:
            if not any(n.startswith(prefix) for n in names):
                raise UsageError(
                    f"evictable verify: --only {prefix!r} selects no obligation "
                    f"(names start with e.g. {', '.join(sorted({n.split('.')[0] for n in names}))})"
                )
    emit = print if args.verbose else None
    start = time.monotonic()
    error: str | None = None
    try:
        results = verify(
            level, args.only, args.backstop, emit, args.jobs, groups, progress=sys.stderr
        )
    except Interrupted as stop:
        results = stop.records
        error = f"evictable verify: interrupted after {len(results)} record(s)"
    wall = time.monotonic() - start
    _summary(results, wall, args.jobs)
    if error is None and args.only is None and groups is None:
        _save_times(level, results)
    code = 2 if error is not None else 0 if results and all(r.ok for r in results) else 1
    fields: dict[str, Any] = {
        "level": level,
        "backstop_s": args.backstop,
        "jobs": args.jobs,
        # one prefix as a string (as before), several as a list
        "only": args.only[0] if args.only and len(args.only) == 1 else args.only,
        "groups": groups,
        "counts": counts(results),
        "records": [r.as_dict() for r in results],
    }
    if error is not None:
        fields["error"] = error
    return code, fields
