"""Generate the lifecycle tables and diagrams of `docs/spec.md` from `model/lifecycle.py`.

`docs/spec.md` holds hand-written prose plus generated regions delimited by
`<!-- BEGIN GENERATED: name -->` / `<!-- END GENERATED: name -->`. `render()` rewrites
every region from the tables; `python -m evictable.proofs.cli.docgen --write` updates the file and
`--check` exits non-zero when it is stale (a test does the same).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from pathlib import Path

from evictable.model.lifecycle import (
    CPU_MACHINE,
    GPU_MACHINE,
    MACHINES,
    Hook,
    Machine,
    RefGuard,
    Transition,
    derive_hook,
)

__all__ = [
    "SPEC_PATH",
    "dot",
    "main",
    "mermaid",
    "regions",
    "rejections_table",
    "render",
    "states_table",
    "transitions_table",
]

SPEC_PATH = Path(__file__).resolve().parents[2] / "docs" / "spec.md"
"""`docs/spec.md` of the checkout this module was installed from (editable install)."""

_REGION = re.compile(
    r"(<!-- BEGIN GENERATED: (?P<name>[\w-]+) -->\n)(?P<body>.*?)"
    r"(<!-- END GENERATED: (?P=name) -->)",
    re.DOTALL,
)


def _yes(flag: bool) -> str:
    return "**yes**" if flag else "no"


def states_table(m: Machine) -> str:
    """Markdown: state | ref_cnt | flag | meaning."""
    rows = [f"| state | ref_cnt | {m.flag_name} | meaning |", "|---|---|---|---|"]
    for s in m.states:
        rows.append(f"| `{s.state.name}` | {s.ref_text()} | {_yes(s.flag)} | {s.meaning} |")
    return "\n".join(rows)


def _hook_text(m: Machine, hook: Hook) -> str:
    name = m.hook_name(hook)
    if hook in (Hook.FLAG_ON, Hook.FLAG_OFF):
        return f"`{name}`"
    return name


def transitions_table(m: Machine) -> str:
    """Markdown: event | from → to | ref effect | hook (derived from the flag flip)."""
    rows = ["| event | from → to | ref effect | hook |", "|---|---|---|---|"]
    for t in m.transitions:
        effect = t.update.describe(t.guard, m.spec(t.source).fixed_ref)
        hook = _hook_text(m, derive_hook(m, t))
        rows.append(
            f"| `{t.event.value}` | {t.source.name} → {t.target.name} | {effect} | {hook} |"
        )
    return "\n".join(rows)


def rejections_table(m: Machine) -> str:
    """Markdown: every (state, event) pair that is rejected or ignored."""
    rows = ["| event | in state | outcome | why |", "|---|---|---|---|"]
    for r in m.rejections:
        rows.append(
            f"| `{r.event.value}` | {r.state.name} | rejected: `{r.error.__name__}` | {r.reason} |"
        )
    for state, event in m.ignored:
        rows.append(f"| `{event.value}` | {state.name} | ignored (no-op) | tolerated by contract |")
    return "\n".join(rows)


def _edge_label(m: Machine, t: Transition) -> str:
    """A diagram edge's label: the event, its guard if any, and the derived hook if any."""
    label = str(t.event.value)
    if t.guard is not RefGuard.ANY:
        label += f" [{t.guard.value}]"
    hook = derive_hook(m, t)
    if hook in (Hook.FLAG_ON, Hook.FLAG_OFF):
        label += f" / {m.hook_name(hook)}"
    return label


def mermaid(m: Machine) -> str:
    """A Mermaid state diagram (raw, as a `.mmd` file holds it); edge labels carry the
    event, guard and derived hook."""
    lines = ["stateDiagram-v2"]
    for s in m.initial:
        lines.append(f"    [*] --> {s.name}")
    for t in m.transitions:
        lines.append(f"    {t.source.name} --> {t.target.name} : {_edge_label(m, t)}")
    return "\n".join(lines)


def dot(m: Machine) -> str:
    """The same diagram in Graphviz dot."""
    lines = [f"digraph {m.name} {{", "    rankdir=LR;", "    node [shape=box, style=rounded];"]
    for s in m.states:
        style = ", penwidth=2" if s.flag else ""
        lines.append(f'    {s.state.name} [label="{s.state.name}\\nref {s.ref_text()}"{style}];')
    for t in m.transitions:
        lines.append(f'    {t.source.name} -> {t.target.name} [label="{_edge_label(m, t)}"];')
    lines.append("}")
    return "\n".join(lines)


def regions() -> dict[str, str]:
    """Every generated region's body, by region name."""
    out: dict[str, str] = {}
    for m in MACHINES:
        out[f"{m.name}-states"] = states_table(m)
        out[f"{m.name}-transitions"] = transitions_table(m)
        out[f"{m.name}-rejections"] = rejections_table(m)
        out[f"{m.name}-diagram"] = f"```mermaid\n{mermaid(m)}\n```"
    return out


def render(text: str, bodies: dict[str, str] | None = None) -> str:
    """`text` with every generated region rewritten; unknown region names are errors."""
    bodies = regions() if bodies is None else bodies

    def fill(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in bodies:
            raise KeyError(f"docs/spec.md names an unknown generated region {name!r}")
        return f"{match.group(1)}{bodies[name]}\n{match.group(4)}"

    return _REGION.sub(fill, text)


def diagram(fmt: str, machine: str = "cpu") -> str:
    """The diagram of one machine (`cpu` or `gpu`) in `mermaid` or `dot` format."""
    machines = {CPU_MACHINE.name: CPU_MACHINE, GPU_MACHINE.name: GPU_MACHINE}
    renderers: dict[str, Callable[[Machine], str]] = {"mermaid": mermaid, "dot": dot}
    return renderers[fmt](machines[machine])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evictable.proofs.cli.docgen")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help="rewrite docs/spec.md in place")
    group.add_argument("--check", action="store_true", help="exit 1 if docs/spec.md is stale")
    args = parser.parse_args(argv)
    current = SPEC_PATH.read_text(encoding="utf-8")
    fresh = render(current)
    if args.write:
        SPEC_PATH.write_text(fresh, encoding="utf-8")
        return 0
    if fresh != current:
        print("docs/spec.md is stale: run `make docs`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
