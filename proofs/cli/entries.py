"""The records of a report as rows: what the HTML page and the JUnit file show.

Both are made from the JSON report (`cli.report`'s document), so the three files of
one run can never disagree. `entries(doc)` gives one `Entry` per record:

* `verify`: one per obligation and per negative control (its name, kind, verdict,
  bounds, seconds, counterexample);
* `check`: one per class of finding, most severe first (kind `finding`, verdict its
  severity), each with its trace as steps and its runnable snippet; then the records
  of the engines that found them (the conformance run, every explorer round), each
  naming the findings (`found`) so that a finding is counted once;
* `explore`, `replay`: the one run;
* a command that could not run: one `error` entry with the reason.

`reproduce(doc)` is the command line that runs the same check again (with the seed
it used).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Entry", "entries", "reproduce"]


@dataclass(frozen=True)
class Entry:
    """One record of a report."""

    name: str
    kind: str
    verdict: str
    ok: bool
    bounds: str = ""
    seconds: float = 0.0
    detail: str = ""
    counterexample: str = ""
    """The counterexample as text (a Z3 model, a trace, a runnable snippet)."""
    steps: tuple[Mapping[str, Any], ...] = field(default=())
    """The counterexample as steps (`#/$defs/step` of the report schema), if it has any."""
    reproduce: str = ""
    group: str = ""
    """What the record belongs to (`verify`: the obligation a control controls)."""
    found: tuple[str, ...] = ()
    """An engine's record that failed only by finding something: the findings of the
    report (each a record of its own: the failure is counted there, once)."""


def _flag_value(argv: Sequence[str], flag: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == flag and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(flag + "="):
            return arg.partition("=")[2]
    return None


def _without(argv: Sequence[str], flags: Sequence[str]) -> list[str]:
    """`argv` without the report-file flags (and their values)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in flags:
            skip = True
            continue
        if any(arg.startswith(f + "=") for f in flags):
            continue
        out.append(arg)
    return out


def reproduce(doc: Mapping[str, Any]) -> str:
    """The command that runs this report's check again (with its seed, for `check`)."""
    argv = _without(list(doc.get("argv", [])), ("--json", "--html", "--junit"))
    seed = doc.get("seed")
    if doc.get("command") == "check" and seed is not None and _flag_value(argv, "--seed") is None:
        argv += ["--seed", str(seed)]
    return shlex.join(["evictable", *argv])


def _verify(doc: Mapping[str, Any]) -> list[Entry]:
    level = doc.get("level", "default")
    depth = [] if level == "default" else [f"--{level}"]
    out = []
    for r in doc.get("records", []):
        base = r.get("control_of") or r["name"]
        command = shlex.join(["evictable", "verify", *depth, "--only", base])
        out.append(
            Entry(
                r["name"],
                r["kind"],
                r["verdict"],
                bool(r["ok"]),
                r.get("bounds", ""),
                float(r.get("seconds", 0.0)),
                "\n".join(x for x in (r.get("statement", ""), r.get("detail", "")) if x),
                r.get("counterexample", ""),
                reproduce=command,
                group=base,
            )
        )
    return out


def _bounds_text(b: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in b.items())


def _check(doc: Mapping[str, Any]) -> list[Entry]:
    again = reproduce(doc)
    out: list[Entry] = []
    found = tuple(f"finding {i}: {f['label']}" for i, f in enumerate(doc.get("findings", []), 1))
    for i, finding in enumerate(doc.get("findings", []), 1):
        cause = finding.get("cause")
        first = (
            f"\nfirst divergence, at call {cause['call']}: [{cause['label']}] {cause['reason']}"
            if cause
            else ""
        )
        also = "".join(
            f"\nthe same trace also shows [{c['label']}]: {c['reason']}"
            for c in finding.get("consequences", [])
        )
        out.append(
            Entry(
                f"finding {i}: {finding['label']}",
                "finding",
                str(finding.get("severity", "finding")),
                False,
                f"{finding['calls']} call(s), {finding['hits']} hit(s), by the {finding['engine']}",
                0.0,
                finding["reason"] + first + also,
                finding.get("snippet", ""),
                tuple(finding.get("trace", [])),
                again,
                "findings",
            )
        )
    conf = doc.get("conformance") or {}
    if conf:
        seed = doc.get("seed")
        bounds = f"{conf.get('examples')} examples x {conf.get('steps')} steps" + (
            f", seed {seed}" if seed is not None else ""
        )
        verdict = str(conf.get("status", ""))
        out.append(
            Entry(
                f"{doc.get('target', 'manager')}: conformance engine",
                "tested",
                verdict,
                verdict == "passed",
                bounds,
                float(conf.get("seconds", 0.0)),
                f"{conf.get('examples_run')} examples, {conf.get('steps_run')} calls run"
                + (f"; {conf['reason']}" if conf.get("reason") and verdict == "error" else ""),
                reproduce=again,
                group="engines",
                found=found if verdict == "failed" else (),
            )
        )
    for i, run in enumerate(doc.get("explorations", []), 1):
        f = run.get("figures", {})
        failure = run.get("failure") or {}
        out.append(
            Entry(
                f"explorer round {i}",
                "explored",
                str(run.get("verdict", "")),
                run.get("verdict") == "ok",
                _bounds_text(run.get("bounds", {})),
                float(f.get("seconds", 0.0)),
                f"{f.get('states')} states, {f.get('transitions')} transitions, "
                f"depth {f.get('depth')}"
                + (" (a finding class found in an earlier round is masked)" if i > 1 else ""),
                failure.get("snippet", ""),
                tuple(failure.get("trace", [])),
                again,
                "engines",
                found if run.get("verdict") == "failed" else (),
            )
        )
    return out


def entries(doc: Mapping[str, Any]) -> list[Entry]:
    """Every record of the report `doc` (see the module docstring)."""
    command = str(doc.get("command", ""))
    out: list[Entry] = []
    if doc.get("error"):
        out.append(
            Entry(
                f"evictable {command}",
                "error",
                "could not run",
                False,
                detail=str(doc["error"]),
                reproduce=reproduce(doc),
            )
        )
    if command == "verify":
        return out + _verify(doc)
    if command == "check":
        return out + _check(doc)
    if command == "explore" and "figures" in doc:
        failure = doc.get("failure") or {}
        out.append(
            Entry(
                "explore",
                "explored",
                str(doc.get("verdict", "")),
                doc.get("verdict") == "ok",
                _bounds_text(doc.get("bounds", {})),
                float(doc["figures"].get("seconds", 0.0)),
                f"{doc['figures'].get('states')} states",
                failure.get("snippet", ""),
                tuple(failure.get("trace", [])),
                reproduce(doc),
            )
        )
    if command == "replay" and "verdict" in doc:
        d = doc.get("divergence") or {}
        text = "" if not d else f"line {d['line']}: {d['call']}\nrecorded: {d['recorded']}\n"
        out.append(
            Entry(
                f"replay {doc.get('trace', '')}",
                "replayed",
                str(doc["verdict"]),
                doc["verdict"] == "matches",
                detail=f"{doc.get('calls')} calls",
                counterexample=text + (f"model: {d['model']}" if d else ""),
                reproduce=reproduce(doc),
            )
        )
    return out
