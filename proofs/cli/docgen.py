"""Generate the lifecycle tables and diagrams of `docs/spec.md` from `model/lifecycle.py`
(and the tiering tables from `model/tiering_tables.py`, `docgen_tiering`),
the list of obligations of `docs/proofs.md` from the registry, and the module map of
`docs/architecture.md` from the package itself.

Both documents hold hand-written prose plus generated regions delimited by
`<!-- BEGIN GENERATED: name -->` / `<!-- END GENERATED: name -->`. `render()` rewrites
every region of a document; `python -m evictable.proofs.cli.docgen --write` updates both
files and `--check` exits non-zero when one is stale (a test does the same).
`docs/proofs.md`'s region `obligations` lists every obligation `evictable verify` runs
at the default level, with its kind, its bounds and its negative control
(`obligations_table`).
"""

from __future__ import annotations

import argparse
import ast
import html
import math
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
from evictable.proofs import LAYERS
from evictable.proofs.base.levels import Level
from evictable.proofs.cli.docgen_tiering import tiering_regions

__all__ = [
    "ARCHITECTURE_PATH",
    "DOCUMENTS",
    "PROOFS_PATH",
    "SPEC_PATH",
    "architecture_regions",
    "dot",
    "main",
    "mermaid",
    "module_map",
    "obligations_table",
    "proofs_regions",
    "regions",
    "rejections_table",
    "render",
    "states_table",
    "svg",
    "transitions_table",
]

SPEC_PATH = Path(__file__).resolve().parents[2] / "docs" / "spec.md"
"""`docs/spec.md` of the checkout this module was installed from (editable install)."""

PROOFS_PATH = SPEC_PATH.with_name("proofs.md")
"""`docs/proofs.md`, whose region `obligations` is generated from the registry."""

ARCHITECTURE_PATH = SPEC_PATH.with_name("architecture.md")
"""`docs/architecture.md`, whose region `module-map` is generated from the package."""

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


_BOX_W, _BOX_H = 128, 46
_FONT = 11


def _layout(m: Machine, width: float, height: float) -> dict[str, tuple[float, float]]:
    """Each state's centre: the states in table order, clockwise on an ellipse from the
    top left (a square for four states, a triangle for three)."""
    n = len(m.states)
    cx, cy = width / 2, height / 2
    rx, ry = width / 2 - _BOX_W, height / 2 - _BOX_H - 24
    start = -3 * math.pi / 4 if n == 4 else -math.pi / 2
    return {
        s.state.name: (
            cx + rx * math.cos(start + 2 * math.pi * i / n),
            cy + ry * math.sin(start + 2 * math.pi * i / n),
        )
        for i, s in enumerate(m.states)
    }


def _border(centre: tuple[float, float], towards: tuple[float, float]) -> tuple[float, float]:
    """Where the ray from a box's centre towards a point leaves the box."""
    (x, y), (tx, ty) = centre, towards
    dx, dy = tx - x, ty - y
    if dx == 0 and dy == 0:
        return x, y
    scale = min(
        (_BOX_W / 2) / abs(dx) if dx else math.inf, (_BOX_H / 2) / abs(dy) if dy else math.inf
    )
    return x + dx * scale, y + dy * scale


def _text(x: float, y: float, lines: list[str], cls: str, anchor: str = "middle") -> list[str]:
    """Lines of text centred on (x, y), on a white backing so edges do not cross them."""
    width = max(len(line) for line in lines) * _FONT * 0.6 + 8
    height = len(lines) * (_FONT + 3) + 4
    left = x - width / 2 if anchor == "middle" else x - 4
    out = [
        f'<rect class="label-bg" x="{left:.1f}" y="{y - height / 2:.1f}" '
        f'width="{width:.1f}" height="{height:.1f}" rx="3"/>'
    ]
    top = y - height / 2 + _FONT + 1
    for i, line in enumerate(lines):
        out.append(
            f'<text class="{cls}" x="{x:.1f}" y="{top + i * (_FONT + 3):.1f}" '
            f'text-anchor="{anchor}">{html.escape(line)}</text>'
        )
    return out


def svg(m: Machine, width: int = 760, height: int = 520) -> str:
    """The diagram as standalone SVG, drawn here from the table (no external tool):
    one box per state (its ref range; a thick border where the flag is set, e.g.
    evictable), one arrow per (source, target) pair carrying every event between them
    (event, guard and derived hook, as `mermaid` labels them), self-loops outside the
    box, and a dot marking the initial states."""
    pos = _layout(m, width, height)
    cx, cy = width / 2, height / 2
    edges: dict[tuple[str, str], list[str]] = {}
    for t in m.transitions:
        edges.setdefault((t.source.name, t.target.name), []).append(_edge_label(m, t))
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="lifecycle" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">',
        f"<title>{html.escape(m.name)} block lifecycle (generated from model/lifecycle.py)</title>",
        "<style>.state{fill:#f4f7fb;stroke:#2b4a6f;stroke-width:1.5}"
        ".state.flag{stroke-width:3.5}.edge{fill:none;stroke:#555;stroke-width:1.3}"
        ".label-bg{fill:#fff;opacity:.9}.edge-label{font:11px sans-serif;fill:#222}"
        ".state-name{font:bold 13px sans-serif;fill:#12263f}"
        ".state-ref{font:11px sans-serif;fill:#444}.init{fill:#12263f}</style>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
        'fill="#555"/></marker></defs>',
    ]
    labels: list[str] = []
    for (src, dst), names in edges.items():
        a, b = pos[src], pos[dst]
        if src == dst:
            ux, uy = a[0] - cx, a[1] - cy
            norm = math.hypot(ux, uy) or 1.0
            ux, uy = ux / norm, uy / norm
            px, py = -uy, ux
            start = _border(a, (a[0] + ux * 100 + px * 30, a[1] + uy * 100 + py * 30))
            end = _border(a, (a[0] + ux * 100 - px * 30, a[1] + uy * 100 - py * 30))
            c1 = (start[0] + ux * 55 + px * 25, start[1] + uy * 55 + py * 25)
            c2 = (end[0] + ux * 55 - px * 25, end[1] + uy * 55 - py * 25)
            out.append(
                f'<path class="edge" data-edge="{src}->{dst}" d="M{start[0]:.1f},{start[1]:.1f} '
                f"C{c1[0]:.1f},{c1[1]:.1f} {c2[0]:.1f},{c2[1]:.1f} "
                f'{end[0]:.1f},{end[1]:.1f}" marker-end="url(#arrow)"/>'
            )
            lx, ly = a[0] + ux * (_BOX_W / 2 + 50), a[1] + uy * (_BOX_H / 2 + 52)
            labels += _text(lx, ly, names, "edge-label")
            continue
        mx, my = (a[0] + b[0]) / 2, (a[1] + b[1]) / 2
        dx, dy = b[0] - a[0], b[1] - a[1]
        norm = math.hypot(dx, dy) or 1.0
        bend = 0.26 * norm if (dst, src) in edges else 0.06 * norm
        ctrl = (mx - dy / norm * bend, my + dx / norm * bend)
        start, end = _border(a, ctrl), _border(b, ctrl)
        out.append(
            f'<path class="edge" data-edge="{src}->{dst}" d="M{start[0]:.1f},{start[1]:.1f} '
            f'Q{ctrl[0]:.1f},{ctrl[1]:.1f} {end[0]:.1f},{end[1]:.1f}" marker-end="url(#arrow)"/>'
        )
        lx = 0.25 * start[0] + 0.5 * ctrl[0] + 0.25 * end[0]
        ly = 0.25 * start[1] + 0.5 * ctrl[1] + 0.25 * end[1]
        labels += _text(lx, ly, names, "edge-label")
    for spec in m.states:
        x, y = pos[spec.state.name]
        flag = " flag" if spec.flag else ""
        out.append(
            f'<g class="node" data-state="{spec.state.name}"><rect class="state{flag}" '
            f'x="{x - _BOX_W / 2:.1f}" y="{y - _BOX_H / 2:.1f}" width="{_BOX_W}" '
            f'height="{_BOX_H}" rx="10"/>'
            f'<text class="state-name" x="{x:.1f}" y="{y - 3:.1f}" text-anchor="middle">'
            f"{spec.state.name}</text>"
            f'<text class="state-ref" x="{x:.1f}" y="{y + 14:.1f}" text-anchor="middle">'
            f"ref {html.escape(spec.ref_text())}{' · ' + m.flag_name if spec.flag else ''}"
            "</text></g>"
        )
    for state in m.initial:
        x, y = pos[state.name]
        ix, iy = x - _BOX_W / 2 - 34, y - _BOX_H / 2 - 14
        out.append(f'<circle class="init" cx="{ix:.1f}" cy="{iy:.1f}" r="6"/>')
        ex, ey = _border((x, y), (ix, iy))
        out.append(
            f'<path class="edge" d="M{ix + 5:.1f},{iy + 3:.1f} L{ex:.1f},{ey:.1f}" '
            'marker-end="url(#arrow)"/>'
        )
    out += labels
    out.append("</svg>")
    return "\n".join(out)


def regions() -> dict[str, str]:
    """Every generated region's body, by region name."""
    out: dict[str, str] = {}
    for m in MACHINES:
        out[f"{m.name}-states"] = states_table(m)
        out[f"{m.name}-transitions"] = transitions_table(m)
        out[f"{m.name}-rejections"] = rejections_table(m)
        out[f"{m.name}-diagram"] = f"```mermaid\n{mermaid(m)}\n```"
    out.update(tiering_regions())
    return out


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def obligations_table(level: Level = "default") -> str:
    """Markdown: every obligation at `level` -- name, kind, bounds, negative control --
    in the order `evictable verify` runs them, then the count by kind."""
    from collections import Counter

    from evictable.proofs.obligations.registry import collect

    obs = collect(level)
    rows = [
        "| obligation | kind | bounds | negative control | assumed, not proved |",
        "|---|---|---|---|---|",
    ]
    for ob in obs:
        bounds = _cell(ob.bounds) if ob.bounds else "all sizes"
        control = _cell(ob.negative_statement) if ob.negative is not None else "—"
        assumed = "; ".join(_cell(a) for a in ob.assumptions) or "—"
        rows.append(f"| `{ob.name}` | {ob.kind.value} | {bounds} | {control} | {assumed} |")
    kinds = Counter(ob.kind.value for ob in obs)
    total = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    rows.append("")
    controls = sum(ob.negative is not None for ob in obs)
    rows.append(
        f"{len(obs)} obligations at the {level} level ({total}); "
        f"{controls} have a negative control."
    )
    return "\n".join(rows)


def _package_dirs() -> dict[str, Path]:
    """Each package of `LAYERS` (and the face) -> its folder, as installed."""
    import evictable

    top = Path(evictable.__file__).resolve().parent
    out: dict[str, Path] = {"face": top}
    for layer in LAYERS:
        for name in layer:
            if name != "face":
                out[name] = top.joinpath(*name.split("."))
    return out


def _summary(path: Path) -> str:
    """A module's summary: the first paragraph of its docstring, up to its first
    sentence when the paragraph is long."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    para = " ".join(doc.split("\n\n")[0].split())
    if len(para) > 200 and ". " in para:
        para = para[: para.index(". ") + 1]
    return _cell(para) if para else "—"


def _modules(package: str, folder: Path) -> list[tuple[str, Path]]:
    """(dotted name, file) of every module of one package of `LAYERS`."""
    if package == "face":
        files = [folder / "__init__.py", folder / "errors.py"]
        for sub in sorted(p for p in folder.iterdir() if (p / "__init__.py").is_file()):
            if sub.name not in ("model", "impl", "proofs"):  # the links: their own layers
                files += sorted(sub.rglob("*.py"), key=lambda f: (f.name != "__init__.py", f.name))
        base = folder
    elif package == "proofs":
        files, base = [folder / "__init__.py"], folder.parent
    else:
        files = sorted(
            folder.rglob("*.py"),
            key=lambda f: (f.name != "__init__.py", f.relative_to(folder).parts),
        )
        base = folder.parent.parent if "." in package else folder.parent
    out = []
    for f in files:
        parts = [p for p in f.relative_to(base).with_suffix("").parts if p != "__init__"]
        out.append((".".join(["evictable", *parts]), f))
    return out


def module_map() -> str:
    """Markdown: every module of the installed package, by layer from the top, with
    its summary (`_summary`)."""
    dirs = _package_dirs()
    rows: list[str] = []
    for i, layer in reversed(list(enumerate(LAYERS))):
        rows.append(f"**Layer {i}: {', '.join(f'`{p}`' for p in layer)}**")
        rows.append("")
        rows.append("| module | what it holds |")
        rows.append("|---|---|")
        for package in layer:
            for name, path in _modules(package, dirs[package]):
                rows.append(f"| `{name}` | {_summary(path)} |")
        rows.append("")
    return "\n".join(rows).rstrip()


def architecture_regions() -> dict[str, str]:
    """The generated regions of `docs/architecture.md`, by region name."""
    return {"module-map": module_map()}


def proofs_regions() -> dict[str, str]:
    """The generated regions of `docs/proofs.md`, by region name."""
    return {"obligations": obligations_table("default")}


DOCUMENTS: dict[Path, Callable[[], dict[str, str]]] = {
    SPEC_PATH: regions,
    PROOFS_PATH: proofs_regions,
    ARCHITECTURE_PATH: architecture_regions,
}
"""Every document with generated regions, and what fills them."""


def render(text: str, bodies: dict[str, str] | None = None) -> str:
    """`text` with every generated region rewritten; unknown region names are errors."""
    bodies = regions() if bodies is None else bodies

    def fill(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in bodies:
            raise KeyError(f"a document names an unknown generated region {name!r}")
        return f"{match.group(1)}{bodies[name]}\n{match.group(4)}"

    return _REGION.sub(fill, text)


def diagram(fmt: str, machine: str = "cpu") -> str:
    """The diagram of one machine (`cpu` or `gpu`) in `mermaid`, `dot` or `svg` format."""
    machines = {CPU_MACHINE.name: CPU_MACHINE, GPU_MACHINE.name: GPU_MACHINE}
    renderers: dict[str, Callable[[Machine], str]] = {"mermaid": mermaid, "dot": dot, "svg": svg}
    return renderers[fmt](machines[machine])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evictable.proofs.cli.docgen")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help="rewrite the documents in place")
    group.add_argument("--check", action="store_true", help="exit 1 if a document is stale")
    args = parser.parse_args(argv)
    stale = []
    for path, fill in DOCUMENTS.items():
        current = path.read_text(encoding="utf-8")
        fresh = render(current, fill())
        if args.write:
            path.write_text(fresh, encoding="utf-8")
        elif fresh != current:
            stale.append(path.name)
    if stale:
        print(f"docs/{', docs/'.join(stale)} stale: run `make docs`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
