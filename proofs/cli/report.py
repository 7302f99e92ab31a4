"""The JSON reports of the `evictable` command (`--json PATH`), and their schema.

Every command writes one JSON object, an *envelope* shared by all commands plus
the command's own fields, described by the JSON Schema in `schema.json` beside
this module (`schema()`; documented in docs/proofs.md, "JSON reports"):

* envelope: `schema` ("evictable.report"), `schema_version`, `tool` (`name`,
  `version`, `commit` of the checkout when known, else null), `command`, `argv`,
  `exit_code` (0 holds, 1 a finding, 2 could not run), `ok`, `seconds`, and
  `error` (the one-line reason, when the command could not run);
* `verify`: `level`, `backstop_s`, `only`, `counts`, `records` (one per obligation
  and per negative control: name, kind, bounds, status, verdict, ...);
* `check`: `spec`, `target`, `policy`, `seed`, `contract`, `verdict`, `conformance`,
  `explorer` (its first round), `explorations` (every round), `findings` (one per
  class, each with its shortest trace and a runnable snippet), `timings` (the
  factory's import apart from the checking), and for the lazy target `lazy_search`;
* `explore`: `bounds`, `canonical`, `workers`, `figures`, `verdict`, `failure`;
* `replay`: `trace`, `header`, `calls`, `verdict`, `divergence`.

`schema_version` grows by one whenever a field is removed or changes meaning
(adding a field does not change it).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import evictable

__all__ = [
    "SCHEMA_VERSION",
    "envelope",
    "schema",
    "tool_info",
    "write_report",
]

SCHEMA_VERSION = 3
"""3: traces are data -- a list of steps (`#/$defs/step`), was a string of code -- with
the runnable snippet beside them; findings are ranked (`severity`, `consequences`).
2: a check is bounded by work; its wall clock is a hang backstop (`backstop_s`, was
`timeout_s` / `budget_s`)."""


@cache
def _commit() -> str | None:
    """The git commit of the checkout this package runs from, if it runs from one."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=here,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    commit = out.stdout.strip()
    return commit if out.returncode == 0 and len(commit) == 40 else None


def tool_info() -> dict[str, Any]:
    """`{"name", "version", "commit"}` of this tool."""
    return {"name": "evictable", "version": evictable.__version__, "commit": _commit()}


def envelope(
    command: str,
    argv: Sequence[str],
    exit_code: int,
    seconds: float,
    fields: dict[str, Any],
    error: str | None = None,
) -> dict[str, Any]:
    """One report: the shared envelope around a command's own `fields`."""
    doc: dict[str, Any] = {
        "schema": "evictable.report",
        "schema_version": SCHEMA_VERSION,
        "tool": tool_info(),
        "command": command,
        "argv": list(argv),
        "exit_code": exit_code,
        "ok": exit_code == 0,
        "seconds": round(seconds, 4),
    }
    if error is not None:
        doc["error"] = error
    doc.update(fields)
    return doc


def write_report(path: str | Path, doc: dict[str, Any]) -> None:
    """Write `doc` as JSON to `path` (UTF-8, indented). Raises `OSError`."""
    Path(path).write_text(json.dumps(doc, indent=2, default=repr) + "\n", encoding="utf-8")


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) every report validates against."""
    text = resources.files("evictable.proofs.cli").joinpath("schema.json").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded
