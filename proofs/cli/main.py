"""The `evictable` command.

Subcommands: `verify` (every obligation, `cli.verify`), `check` (`cli.check`),
`explore` (`cli.explore`), `replay` (`cli.replay`), `diagram` (raw Mermaid or DOT
from the lifecycle table) and `bench` (runs `bench/` from a checkout; the benchmarks
are not installed).

Exit codes, on every path: **0** the claims hold (or the implementation conforms,
or the trace matches); **1** a finding (a counterexample, a divergence, a failed
or undecided obligation); **2** the command could not run (bad arguments, an
unusable factory, an unreadable trace, an incomplete exploration). Every error that
stops a command is one line on stderr, never a traceback. `--json PATH` writes the
report described by `cli/schema.json` (`cli.report`), `--html PATH` the same as one
self-contained page (`cli.html`) and `--junit PATH` as JUnit XML (`cli.junit`), also
when the command could not run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TextIO

import evictable
import evictable.impl
from evictable.proofs.base import watch
from evictable.proofs.cli import check as check_cmd
from evictable.proofs.cli import explore as explore_cmd
from evictable.proofs.cli import replay as replay_cmd
from evictable.proofs.cli import verify as verify_cmd
from evictable.proofs.cli.args import DefaultsFormatter
from evictable.proofs.cli.errors import UsageError
from evictable.proofs.cli.html import render_html
from evictable.proofs.cli.junit import render_junit
from evictable.proofs.cli.report import envelope, write_report

__all__ = ["build_parser", "main"]

Handler = Callable[[argparse.Namespace], tuple[int, dict[str, Any]]]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (raised, reported by `main`), and
    whose `--help` shows every option's default (`args.DefaultsFormatter`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}")


def _diagram(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    from evictable.proofs.cli.docgen import diagram

    print(diagram(args.format, args.machine))
    return 0, {}


def _bench_root() -> Path:
    """The checkout whose `bench/` to run: the current directory, else this package's."""
    for root in (Path.cwd(), Path(__file__).resolve().parents[2]):
        if (root / "bench" / "runner.py").is_file():
            return root
    raise UsageError(
        "evictable bench: the benchmarks are not installed; run it from a "
        "checkout of evictable (bench/runner.py)"
    )


def _bench(argv: Sequence[str]) -> int:
    root = _bench_root()
    return subprocess.run(
        [sys.executable, "-m", "bench.runner", *argv], cwd=root, check=False
    ).returncode


_REPORTING = ("verify", "check", "explore", "replay")

_WRITERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "html": render_html,
    "junit": render_junit,
}


def _paths(args: argparse.Namespace) -> dict[str, str]:
    """The report files asked for: format -> path."""
    out = {}
    for fmt in ("json", "html", "junit"):
        path = getattr(args, fmt, None)
        if path:
            out[fmt] = path
    return out


def _write_reports(command: str, doc: dict[str, Any], paths: dict[str, str]) -> bool:
    """Write `doc` to every path asked for (`--json`, `--html`, `--junit`); False (and
    one line on stderr) when one cannot be written."""
    ok = True
    for fmt, path in paths.items():
        try:
            if fmt == "json":
                write_report(path, doc)
            else:
                Path(path).write_text(_WRITERS[fmt](doc), encoding="utf-8")
        except OSError as exc:
            print(f"evictable {command}: cannot write {path}: {exc.strerror}", file=sys.stderr)
            ok = False
        except Exception as exc:  # a bug of this tool: one line, never a traceback
            print(
                f"evictable {command}: cannot write {path}: internal error: "
                f"{type(exc).__name__}: {exc}",
                file=sys.stderr,
            )
            ok = False
    return ok


def _report_refusal(argv: list[str], error: str) -> int:
    """Arguments refused before a command ran: still write its reports, if any were
    asked for (`--json PATH` or `--json=PATH`, `--html`, `--junit`). Returns 2."""
    if not argv or argv[0] not in _REPORTING:
        return 2
    paths: dict[str, str] = {}
    for i, arg in enumerate(argv):
        for fmt in ("json", "html", "junit"):
            if arg == f"--{fmt}" and i + 1 < len(argv):
                paths[fmt] = argv[i + 1]
            elif arg.startswith(f"--{fmt}="):
                paths[fmt] = arg.partition("=")[2]
    usable = {
        fmt: path
        for fmt, path in paths.items()
        if os.path.isdir(os.path.dirname(os.path.abspath(path)))
    }
    _write_reports(argv[0], envelope(argv[0], argv, 2, 0.0, {}, error), usable)
    return 2


class _ClosedPipeOk(io.TextIOBase):
    """stdout, such that its reader going away (`evictable diagram | head -1`) ends
    nothing: the rest of the output goes to /dev/null, the command finishes, and its
    exit code is its own (0 for `diagram`, the verdict for `check` or `verify`)."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        self.closed_by_reader = False

    def _gone(self) -> None:
        self.closed_by_reader = True
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())  # no traceback at interpreter exit

    def write(self, text: str) -> int:
        if not self.closed_by_reader:
            try:
                return self.stream.write(text)
            except BrokenPipeError:
                self._gone()
        return len(text)

    def flush(self) -> None:
        if not self.closed_by_reader:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._gone()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.stream, "encoding", None) or "utf-8")

    def isatty(self) -> bool:
        return self.stream.isatty()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="evictable",
        description="Verify the KV-cache block lifecycle model and implementations.",
    )
    build = "compiled" if evictable.impl.COMPILED else "pure Python"
    parser.add_argument(
        "--version", action="version", version=f"evictable {evictable.__version__} ({build})"
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    verify_cmd.add_parser(sub)
    explore_cmd.add_parser(sub)
    check_cmd.add_parser(sub)
    replay_cmd.add_parser(sub)
    p = sub.add_parser("diagram", help="print the lifecycle diagram (raw Mermaid or DOT)")
    p.add_argument(
        "--format", choices=("mermaid", "dot", "svg"), default="mermaid", help="output format"
    )
    p.add_argument("--machine", choices=("cpu", "gpu"), default="cpu", help="which lifecycle table")
    p.set_defaults(handler=_diagram)
    sub.add_parser(
        "bench",
        help="run the benchmarks of a checkout (arguments go to bench/runner.py)",
        add_help=False,
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    try:
        if args_in[:1] == ["bench"]:
            # Everything after `bench` goes to bench/runner.py untouched.
            return _bench(args_in[1:])
        args = build_parser().parse_args(args_in)
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return _report_refusal(args_in, str(exc))
    handler: Handler = args.handler
    start = time.perf_counter()
    error: str | None = None
    stdout = sys.stdout
    if not isinstance(stdout, _ClosedPipeOk):
        sys.stdout = _ClosedPipeOk(stdout)
    try:
        code, fields = handler(args)
        error = fields.pop("error", None)  # a command that ran but reached no verdict
    except UsageError as exc:
        code, fields, error = 2, {}, str(exc)
        if not error.startswith("evictable"):
            error = f"evictable {args.command}: {error}"
    except SystemExit as exc:  # user code under check called sys.exit(): not our exit code
        code, fields = 2, {}
        error = f"evictable {args.command}: the code under check called sys.exit({exc.code!r})"
    except KeyboardInterrupt:
        during = watch.interrupted()
        code, fields = 2, {}
        error = f"evictable {args.command}: interrupted" + (f" during {during}" if during else "")
    except Exception as exc:  # a bug of this tool: still one line, and exit code 2
        code, fields = 2, {}
        error = f"evictable {args.command}: internal error: {type(exc).__name__}: {exc}"
    finally:
        sys.stdout = stdout
    if error is not None:
        print(error, file=sys.stderr)
    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader went away after the last write
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    doc = envelope(args.command, args_in, code, time.perf_counter() - start, fields, error)
    if not _write_reports(args.command, doc, _paths(args)):
        return 2
    return code


if __name__ == "__main__":
    raise SystemExit(main())
