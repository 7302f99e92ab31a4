"""`evictable replay TRACE.jsonl`: a recorded trace of manager calls against the model.

```
evictable replay TRACE [--num-blocks N --policy P --events] [--finding N] [--json PATH]
```

TRACE is a file or `-` (standard input), in the JSON Lines format of `check.replay`
(docs/conformance.md) or a structured trace: a `check --json` report (its `--finding`
-th finding, the most severe by default), one finding, or its steps. Exit codes: 0
the trace matches the model, 1 it diverges (the first divergence is printed), 2
could not run (a malformed line or step, an unknown error type, an unreadable file).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from evictable.proofs.check.replay import Header, TraceFormatError, parse_text, replay_text
from evictable.proofs.cli.args import count, writable_path
from evictable.proofs.cli.errors import UsageError

__all__ = ["add_parser", "cmd_replay"]


def add_parser(subparsers: Any) -> None:
    """Add `replay` to the `evictable` parser."""
    p = subparsers.add_parser(
        "replay",
        help="check a recorded JSONL trace against the model",
        description="Replay recorded manager calls on the model and report the first "
        "divergence (format: docs/conformance.md).",
    )
    p.add_argument(
        "trace",
        metavar="TRACE",
        help="a JSON Lines trace, or a structured one (a check --json report, a finding, "
        "its steps); - reads standard input",
    )
    p.add_argument(
        "--num-blocks",
        type=count(0),
        default=None,
        help="constructor argument when the trace has no header (overrides it)",
    )
    p.add_argument(
        "--policy", default=None, help="policy (overrides the header; default: the header's)"
    )
    p.add_argument(
        "--finding",
        type=count(1),
        default=1,
        help="which finding of a check report to replay (1: the most severe)",
    )
    p.add_argument(
        "--events", action="store_true", default=None, help="enable events (overrides the header)"
    )
    p.add_argument(
        "--json", metavar="PATH", type=writable_path, help="also write the report as JSON"
    )
    p.set_defaults(handler=cmd_replay)


def _read(path: str) -> str:
    if path == "-":
        data = sys.stdin.buffer.read()
        return data.decode("utf-8")
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def cmd_replay(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    shown = "<stdin>" if args.trace == "-" else args.trace
    where = f"evictable replay: {shown}"
    try:
        text = _read(args.trace)
        found, _ = parse_text(text, args.finding)
        header = None
        if args.num_blocks is not None or args.policy is not None or args.events is not None:
            nb = (
                args.num_blocks
                if args.num_blocks is not None
                else (found.num_blocks if found else None)
            )
            if nb is None:
                raise TraceFormatError(1, "no header line: give --num-blocks")
            header = Header(
                nb,
                args.policy or (found.policy if found else "lru"),
                args.events if args.events is not None else bool(found and found.enable_events),
            )
        report = replay_text(text, header, args.finding)
    except TraceFormatError as exc:
        raise UsageError(f"{where}:{_at(exc)}: {exc.reason}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{where}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except OSError as exc:
        raise UsageError(f"{where}: cannot read it: {exc.strerror}") from None
    print(report.text())
    d = report.divergence
    h = report.header
    return (0 if report.ok else 1), {
        "trace": shown,
        "header": {
            "num_blocks": h.num_blocks,
            "policy": h.policy,
            "enable_events": h.enable_events,
        },
        "calls": report.calls,
        "verdict": "matches" if report.ok else "diverges",
        "divergence": None
        if d is None
        else {"line": d.line, "call": d.call, "recorded": d.recorded, "model": d.model},
    }


def _at(exc: TraceFormatError) -> str:
    """Where in the trace: `3` for line 3 of JSON lines, `step 3` in a structured trace."""
    return str(exc.line) if exc.unit == "line" else f"step {exc.line}"
