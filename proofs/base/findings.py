"""Findings: what a check found, one per class, each with its shortest trace.

The engines do not stop at the first divergence. Every failure has a class
(`compare.Kind`: atomicity, leaked pin, orphaned or doubly used slot, pinned or
protected block evicted, wrong lookup, accounting, error type, ...); a run keeps,
per class, the shortest failing trace it saw, shrinks it, and reports it once, as a
`Finding` with a runnable snippet: the imports (the factory, the key constructor of
the contract's key space), the construction, every call -- a call that raised on
either side wrapped in `suppress(Exception)` so the snippet runs to the end -- each
commented with both sides' answers, and the reason on the last line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from evictable.proofs.base.compare import Kind

__all__ = ["Finding", "factory_source", "findings_block", "group", "snippet"]


@dataclass(frozen=True)
class Finding:
    """One class of finding: its shortest trace, and how often it was hit.

    `engine` says who found it ("conformance", "explorer", ...); `hits` counts the
    examples (or edges) that showed it; `calls` is the length of `snippet`'s trace.
    """

    kind: Kind
    engine: str
    reason: str
    trace: str
    snippet: str
    calls: int
    hits: int = 1

    def text(self) -> str:
        """The finding for a terminal: class, reason, then the snippet, indented."""
        head = (
            f"[{self.kind.value}] found by the {self.engine} "
            f"({self.hits} hit(s)), {self.calls} call(s):"
        )
        body = "\n".join(f"    {line}" for line in self.snippet.splitlines())
        return f"{head}\n  {self.reason}\n{body}"

    def as_dict(self) -> dict[str, Any]:
        """The finding as report fields (`#/$defs/finding` of the report schema)."""
        return {
            "class": self.kind.name.lower(),
            "label": self.kind.value,
            "engine": self.engine,
            "reason": self.reason,
            "calls": self.calls,
            "hits": self.hits,
            "trace": self.trace,
            "snippet": self.snippet,
        }


def factory_source(factory: object) -> tuple[str, str]:
    """An import line and the callable's name, for a snippet that calls `factory`."""
    mod = getattr(factory, "__module__", None)
    name = getattr(factory, "__qualname__", None)
    if isinstance(mod, str) and isinstance(name, str) and mod != "__main__" and name.isidentifier():
        return f"from {mod} import {name}", name
    return "factory = ...  # the factory under test", "factory"


def snippet(
    factory: object,
    preamble: Sequence[str],
    lines: Iterable[tuple[str, str, bool]],
    reason: str,
    target: str = "factory",
) -> str:
    """Runnable Python for a trace: `lines` are (code, note, raised); code naming
    `target` (the factory's placeholder) is rewritten to call the factory by name."""
    imp, name = factory_source(factory)
    out = [imp, *preamble, "from contextlib import suppress"]
    for code, note, raised in lines:
        code = code.replace(f"{target}(", f"{name}(", 1) if target in code else code
        stmt = f"with suppress(Exception): {code}" if raised else code
        out.append(f"{stmt}  # {note}" if note else stmt)
    out.append(f"# {reason}")
    return "\n".join(out)


def group(findings: Iterable[Finding]) -> tuple[Finding, ...]:
    """One finding per class: the shortest (fewest calls), hits summed; in order of
    first appearance."""
    best: dict[Kind, Finding] = {}
    hits: dict[Kind, int] = {}
    for f in findings:
        hits[f.kind] = hits.get(f.kind, 0) + f.hits
        if f.kind not in best or f.calls < best[f.kind].calls:
            best[f.kind] = f
    return tuple(
        Finding(f.kind, f.engine, f.reason, f.trace, f.snippet, f.calls, hits[k])
        for k, f in best.items()
    )


def findings_block(findings: tuple[Finding, ...]) -> str:
    """The verdict line and one block per class of finding."""
    if not findings:
        return "verdict: conforms (no finding)"
    classes = ", ".join(f.kind.value for f in findings)
    head = f"verdict: REJECTED -- {len(findings)} class(es) of finding: {classes}"
    return "\n\n".join([head, *(f.text() for f in findings)])
