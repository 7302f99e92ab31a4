"""`evictable replay TRACE.jsonl`: a recorded trace of manager calls against the model.

```
evictable replay TRACE.jsonl [--num-blocks N --policy P --events] [--json PATH]
```

The trace format is `check.replay` (docs/conformance.md). Exit codes: 0 the trace
matches the model, 1 it diverges (the first divergence is printed), 2 could not run.
"""

from __future__ import annotations

import argparse
from typing import Any

from evictable.proofs.check.replay import Header, TraceFormatError, parse_trace, replay_file
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
    p.add_argument("trace", metavar="TRACE.jsonl")
    p.add_argument(
        "--num-blocks",
        type=count(0),
        default=None,
        help="constructor argument when the trace has no header (overrides it)",
    )
    p.add_argument("--policy", default=None, help="policy (overrides the header)")
    p.add_argument(
        "--events", action="store_true", default=None, help="enable events (overrides the header)"
    )
    p.add_argument(
        "--json", metavar="PATH", type=writable_path, help="also write the report as JSON"
    )
    p.set_defaults(handler=cmd_replay)


def cmd_replay(args: argparse.Namespace) -> tuple[int, dict[str, Any]]:
    where = f"evictable replay: {args.trace}"
    try:
        header = None
        if args.num_blocks is not None or args.policy is not None or args.events is not None:
            with open(args.trace, encoding="utf-8") as fh:
                found, _ = parse_trace(fh)
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
        report = replay_file(args.trace, header)
    except TraceFormatError as exc:
        raise UsageError(f"{where}:{exc.line}: {exc.reason}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{where}: not UTF-8 text (byte {exc.start}: {exc.reason})") from None
    except OSError as exc:
        raise UsageError(f"{where}: cannot read it: {exc.strerror}") from None
    print(report.text())
    d = report.divergence
    h = report.header
    return (0 if report.ok else 1), {
        "trace": args.trace,
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
