"""The layers of the installed package, read from the code's own imports.

`python -m tools.layers` prints the import graph between packages, layer by layer,
and every violation of the house rules (docs/architecture.md, "Layers"):

* **up** -- a module imports a package of a higher layer;
* **sideways** -- a module imports a sibling package of its own layer (the engines
  `z3`, `explore` and `lockstep` never import one another; what two of them share
  lives in `proofs.base`);
* **circle** -- modules that import one another, directly or through others
  (imports inside functions count too);
* **private** -- a name starting with `_` that crosses a module boundary: imported
  by name, read as `module._name` or `Class._name`, or reached as an attribute
  (`obj._name`) that no module of the reading package defines.

It exits 1 when there is a violation. `tests/test_layers.py` runs the same check.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from evictable.proofs import LAYERS

ROOT = Path(__file__).resolve().parent.parent

SOURCES: tuple[tuple[str, Path], ...] = (
    ("evictable.model", ROOT / "model"),
    ("evictable.impl", ROOT / "impl"),
    ("evictable.proofs", ROOT / "proofs"),
)
"""Installed name and folder of each linked package (src/evictable links them)."""

FACE_DIR = ROOT / "src" / "evictable"

THIRD_PARTY_READERS: frozenset[str] = frozenset({"proofs.adapters"})
"""Packages whose job is to read another project's internals (vLLM's managers keep
their state in private fields): `obj._name` on objects of unknown origin is not
checked there; private names of this project's own modules still are."""


@dataclass(frozen=True)
class Module:
    name: str  # dotted, without the leading "evictable."
    path: Path

    @property
    def package(self) -> str:
        return package_of(self.name)


@dataclass
class Graph:
    modules: dict[str, Module] = field(default_factory=dict)
    edges: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    """module -> modules it imports (module level and inside functions)."""
    violations: list[str] = field(default_factory=list)


def package_of(module: str) -> str:
    """`proofs.z3.manager` -> `proofs.z3`; `model.errors` -> `model`; a module of the
    face (`testing`, `errors`, `vllm`, `__init__`) -> `face`."""
    parts = module.split(".")
    if parts[0] in ("model", "impl"):
        return parts[0]
    if parts[0] == "proofs":
        return "proofs" if len(parts) == 1 else f"proofs.{parts[1]}"
    return "face"


def layer_of(package: str) -> int:
    for i, names in enumerate(LAYERS):
        if package in names:
            return i
    return -1


def _modules() -> Iterator[Module]:
    for dotted, folder in SOURCES:
        short = dotted.removeprefix("evictable.")
        for path in sorted(folder.rglob("*.py")):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            yield Module(".".join([short, *parts]), path)
    for path in sorted(FACE_DIR.rglob("*.py")):
        rel = path.relative_to(FACE_DIR).with_suffix("")
        if rel.parts[0] in ("model", "impl", "proofs"):
            continue  # the links: read above, under their own names
        parts = [p for p in rel.parts if p != "__init__"] or ["__init__"]
        yield Module(".".join(parts), path)


def _resolve(module: Module, node: ast.ImportFrom) -> str | None:
    """The dotted (short) name an ImportFrom refers to, or None outside the package."""
    if node.level:
        base = module.name.split(".")
        if module.path.name != "__init__.py":
            base = base[:-1]
        base = base[: len(base) - node.level + 1]
        target = ".".join([*base, node.module] if node.module else base)
        return target
    if node.module and (node.module == "evictable" or node.module.startswith("evictable.")):
        return node.module.removeprefix("evictable").lstrip(".") or "__init__"
    return None


def _defined_private(tree: ast.AST, skip: set[int]) -> set[str]:
    """Every `_name` a module defines: functions, classes, assignments, attributes set
    on any object (except inside the classes whose node ids are in `skip`: subclasses
    of another package's classes, whose stores may be that package's fields), and
    string constants (`__slots__` entries, `getattr` names)."""
    out: set[str] = set()
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            skipped |= {id(n) for n in ast.walk(node)} - {id(node)}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if id(node) not in skipped:
                out.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.isidentifier()
        ):
            out.add(node.value)
    return {n for n in out if n.startswith("_") and not n.startswith("__")}


def _imports(module: Module, tree: ast.Module, known: set[str]) -> dict[str, str]:
    """Local name -> the module (short dotted name) it was imported from."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            src = _resolve(module, node)
            if src is None:
                continue
            for alias in node.names:
                sub = f"{src}.{alias.name}"
                out[alias.asname or alias.name] = sub if sub in known else src
    return out


def _foreign_classes(tree: ast.Module, imported: dict[str, str], pkg: str) -> dict[int, str]:
    """Classes with a base imported from another package: node id -> that package."""
    out: dict[int, str] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for base in node.bases:
            name = base.id if isinstance(base, ast.Name) else None
            if name in imported and package_of(imported[name]) != pkg:
                out[id(node)] = package_of(imported[name])
    return out


def build() -> Graph:
    g = Graph()
    trees: dict[str, ast.Module] = {}
    for m in _modules():
        g.modules[m.name] = m
        trees[m.name] = ast.parse(m.path.read_text(encoding="utf-8"))
    known = set(trees)
    imports = {name: _imports(g.modules[name], tree, known) for name, tree in trees.items()}
    foreign = {
        name: _foreign_classes(tree, imports[name], package_of(name))
        for name, tree in trees.items()
    }
    defined: dict[str, set[str]] = defaultdict(set)  # package -> private names defined
    for name, tree in trees.items():
        defined[package_of(name)] |= _defined_private(tree, set(foreign[name]))
    ours = set().union(*defined.values())
    for name, tree in trees.items():
        module = g.modules[name]
        imported_from = imports[name]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                src = _resolve(module, node)
                if src is None:
                    continue
                for alias in node.names:
                    sub = f"{src}.{alias.name}"
                    target, imported = (sub, "") if sub in known else (src, alias.name)
                    if target in known and target != name:
                        g.edges[name].add(target)
                        if imported.startswith("_") and not imported.startswith("__"):
                            g.violations.append(f"private: {name} imports {imported} from {target}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    target = alias.name.removeprefix("evictable.")
                    if alias.name.startswith("evictable.") and target in known:
                        g.edges[name].add(target)
        pkg = package_of(name)
        own = defined[pkg]
        for cls in ast.walk(tree):
            other = foreign[name].get(id(cls))
            if other is None:
                continue
            for node in ast.walk(cls):
                used = None
                if isinstance(node, ast.Attribute) and (
                    (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
                    or (
                        isinstance(node.value, ast.Call)
                        and isinstance(node.value.func, ast.Name)
                        and node.value.func.id == "super"
                    )
                ):
                    used = node.attr
                elif isinstance(node, ast.FunctionDef) and node in cls.body:  # type: ignore[attr-defined]
                    used = node.name  # overriding a private method
                if (
                    used is not None
                    and used.startswith("_")
                    and not used.startswith("__")
                    and used in defined[other]
                ):
                    g.violations.append(
                        f"private: {name}.{cls.name} uses {used} of its base in {other}"  # type: ignore[attr-defined]
                    )
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute):
                continue
            attr = node.attr
            if not attr.startswith("_") or attr.startswith("__"):
                continue
            base = node.value
            if isinstance(base, ast.Name) and base.id in imported_from:
                src = imported_from[base.id]
                if src != name:
                    g.violations.append(f"private: {name} reads {base.id}.{attr} of {src}")
                continue
            if pkg in THIRD_PARTY_READERS:
                continue
            if attr in ours and attr not in own:
                g.violations.append(
                    f"private: {name} reaches .{attr}, defined only in another package"
                )
    check_layers(g)
    check_circles(g)
    g.violations = sorted(set(g.violations))
    return g


def check_layers(g: Graph) -> None:
    for src, targets in g.edges.items():
        a = package_of(src)
        for dst in targets:
            b = package_of(dst)
            if a == b or (b == "face" and dst == "__init__"):
                continue
            la, lb = layer_of(a), layer_of(b)
            if la < 0 or lb < 0:
                g.violations.append(f"unplaced: {src} -> {dst} ({a} or {b} is in no layer)")
            elif lb > la:
                g.violations.append(f"up: {src} ({a}) imports {dst} ({b})")
            elif lb == la:
                g.violations.append(f"sideways: {src} ({a}) imports {dst} ({b})")


def check_circles(g: Graph) -> None:
    """Tarjan's strongly connected components over the module graph."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    counter = [0]

    def visit(v: str) -> None:
        work: list[tuple[str, Iterator[str]]] = [(v, iter(sorted(g.edges.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            node, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g.edges.get(w, ())))))
                    advanced = True
                    break
                if w in on:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                if len(comp) > 1:
                    g.violations.append("circle: " + " -> ".join(sorted(comp)))

    for v in sorted(g.modules):
        if v not in index:
            visit(v)


def package_edges(g: Graph) -> dict[tuple[str, str], int]:
    """(package, package it imports) -> number of module-to-module imports."""
    out: dict[tuple[str, str], int] = defaultdict(int)
    for src, targets in g.edges.items():
        for dst in targets:
            a, b = package_of(src), package_of(dst)
            if a != b:
                out[(a, b)] += 1
    return dict(out)


def report(g: Graph) -> Iterable[str]:
    edges = package_edges(g)
    for i, names in reversed(list(enumerate(LAYERS))):
        yield f"layer {i}: {', '.join(names)}"
        for pkg in names:
            outs = sorted((b, n) for (a, b), n in edges.items() if a == pkg)
            if outs:
                yield f"  {pkg} -> " + ", ".join(f"{b} ({n})" for b, n in outs)
    yield f"{len(g.modules)} modules, {sum(len(t) for t in g.edges.values())} imports"
    if g.violations:
        yield f"{len(g.violations)} violation(s):"
        yield from (f"  {v}" for v in g.violations)
    else:
        yield "no violation: no import up or sideways, no circle, no private name crossing"


def main() -> int:
    g = build()
    for line in report(g):
        print(line)
    return 1 if g.violations else 0


if __name__ == "__main__":
    sys.exit(main())
