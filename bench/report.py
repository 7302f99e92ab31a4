"""Render a results file as Markdown tables (for docs/performance.md).

    python -m bench.report [bench/results/results.json]

Prints one section per benchmark: its table, its notes, and the run's metadata.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.runner import DEFAULT_OUT

__all__ = ["main", "markdown"]


def _table(table: dict[str, Any]) -> list[str]:
    columns = [str(c) for c in table["columns"]]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in table["rows"]]
    return lines


def markdown(payload: dict[str, Any]) -> str:
    """The Markdown text for a parsed results file."""
    meta = payload.get("meta", {})
    lines = [
        f"Run of {meta.get('started', '?')}: Python {meta.get('python', '?')} on "
        f"{meta.get('platform', '?')}, {meta.get('cpu_count', '?')} CPUs, load average "
        f"{meta.get('load_average_at_start', '?')} at start, "
        f"{meta.get('load_average_at_end', '?')} at end"
        + (" (QUICK: not a measurement)" if meta.get("quick") else "")
        + ".",
    ]
    for name, result in payload.get("benchmarks", {}).items():
        lines += ["", f"### {name}", ""]
        if "error" in result:
            lines.append("failed:\n\n```\n" + result["error"] + "\n```")
            continue
        if "table" in result:
            lines += _table(result["table"])
        elif "skipped" in result:
            lines.append(f"skipped: {result['skipped']}")
        for extra in result.get("extra_tables", []):
            lines += ["", f"{extra.get('title', '')}:", "", *_table(extra)]
        notes = result.get("notes", [])
        if notes:
            lines.append("")
            lines += [f"- {note}" for note in notes]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    path = Path(args[0]) if args else DEFAULT_OUT / "results.json"
    print(markdown(json.loads(path.read_text(encoding="utf-8"))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
