"""Which groups of `evictable verify` can reach a module: the import graph, and why
leaving the other groups out is sound.

A mutant of a `proofs/z3` or `proofs/refine` module changes only what that module's
code does, so only a record whose check runs that code can catch it; a record whose
check never imports the module gives the same verdict on the mutant as on the
original. `groups_for(module)` is every group of `registry.GROUPS` whose **import
closure** holds the module, computed from the code, never by hand:

* the static graph of `tools.layers` (every `import` and `from ... import`, at
  module level and inside functions), plus each package of an imported module
  (importing `a.b.c` runs `a/__init__` and `a/b/__init__`);
* one edge more for every string literal that names a module of the package
  (`"evictable.impl.manager"`, `"evictable.impl.policies.lru:LRUCachePolicy"`): the
  names a dynamic import (`importlib.import_module`) is given are written in the
  code as such literals (the seeded bugs of `proofs.controls` name the module they
  copy, the built-in policies of `impl.policies.factory` their class), except in
  `registry` itself, whose literals are the groups (the roots);
* the dynamic imports whose argument is not a literal are listed in `DYNAMIC_SITES`,
  each with the reason it cannot import a module a group does not already reach;
  `dynamic_sites()` finds them all in the code, and a test fails when one is added
  without being listed.

The graph is checked against what running a group really imports: `--check-selection`
runs every group's records at a level, each in a fresh process, and lists any module
of the package it imported outside its closure (none: the selection is sound); each
mutant's child checks the same of the groups it ran.
"""

from __future__ import annotations

import ast
import json
import os
import re
import sys
from collections import deque
from collections.abc import Iterable
from functools import cache

from tools.layers import Graph, build

__all__ = [
    "DYNAMIC_SITES",
    "check_selection",
    "closure",
    "dynamic_sites",
    "graph",
    "groups_for",
    "importers",
    "outside",
    "short",
]

DYNAMIC_SITES: dict[str, str] = {
    "proofs.obligations.registry": "imports the groups themselves: the roots of the selection",
    "proofs.controls.mutant": "imports the module a seeded bug copies; every caller names it "
    "as a literal (an `impl/` module), an edge of the graph",
    "proofs.check.setup": "imports the user's factory named on the command line "
    "(`evictable check`/`explore`); no obligation calls it",
    "model": "lazy attributes: imports a home named in its own `_HOME` table of literals",
    "impl": "lazy attributes: imports a home named in its own table of literals",
    "impl.policies.factory": "imports a built-in policy named in its table of literals",
    "testing": "lazy attributes of the public face: homes named in its own table of literals",
    "proofs.adapters.sglang.torchvision_stub": "imports torchvision (a third-party "
    "package, never a module of this project) to see whether the real one works",
    "vllm.checked": "imports the policy class a user names (`module:Class`) in the vLLM "
    "config (the vLLM face; no group imports it)",
}
"""Modules with a dynamic import whose argument is not a literal, and why it imports
nothing outside the closure of the group that runs it."""

REGISTRY = "proofs.obligations.registry"
"""The module that names the groups (the roots of every selection)."""

_NAMED = re.compile(r"^evictable\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?::[\w.]+)?$")


def short(name: str) -> str:
    """`evictable.proofs.z3.manager` -> `proofs.z3.manager` (the graph's names)."""
    return name.removeprefix("evictable.")


@cache
def _trees() -> tuple[Graph, dict[str, ast.Module]]:
    """The layers' graph, and every module's syntax tree (short names)."""
    g = build()
    trees = {n: ast.parse(m.path.read_text(encoding="utf-8")) for n, m in g.modules.items()}
    return g, trees


@cache
def graph() -> dict[str, frozenset[str]]:
    """module -> the modules importing it may import (short names)."""
    g, trees = _trees()
    known = set(g.modules)
    edges: dict[str, set[str]] = {m: set(g.edges.get(m, ())) for m in known}
    for name, tree in trees.items():
        if name == REGISTRY:
            continue  # its literals are the groups: the roots, never run by a group
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                hit = _NAMED.match(node.value)
                if hit and hit.group(1) in known and hit.group(1) != name:
                    edges[name].add(hit.group(1))
    for name in known:  # importing a.b.c runs the packages a and a.b first
        parts = name.split(".")
        edges[name] |= {".".join(parts[:i]) for i in range(1, len(parts))} & known
    return {m: frozenset(e) for m, e in edges.items()}


def closure(roots: Iterable[str]) -> dict[str, int]:
    """Every module reachable from `roots` (short names), with its distance."""
    g = graph()
    dist: dict[str, int] = {}
    todo = deque((r, 0) for r in roots)
    while todo:
        m, d = todo.popleft()
        if m in dist:
            continue
        dist[m] = d
        todo.extend((n, d + 1) for n in g.get(m, ()))
    return dist


def importers(modules: Iterable[str]) -> list[str]:
    """The modules (full names) whose closure holds any of `modules` (short names),
    these among them: what must be imported afresh to see a change to them."""
    wanted = set(modules)
    return sorted("evictable." + m for m in graph() if wanted & set(closure([m])))


def groups_for(module: str, groups: Iterable[str]) -> list[str]:
    """The groups (full names, e.g. `evictable.proofs.obligations.z3_manager`) whose
    closure holds `module` (a short name), nearest importer first, then in order."""
    found = []
    for i, group in enumerate(groups):
        d = closure([short(group)]).get(module)
        if d is not None:
            found.append((d, i, group))
    return [group for _, _, group in sorted(found)]


def outside(groups: Iterable[str], loaded: Iterable[str]) -> list[str]:
    """The modules of the package among `loaded` (full names) that lie outside the
    closure of `groups` and of this tool's own imports: an edge the graph missed."""
    reach = set(closure([short(g) for g in groups]))
    reach |= set(closure(["proofs.cli.verify", "proofs.base.records"]))
    known = set(graph())
    return sorted(
        n
        for n in loaded
        if n.startswith("evictable.") and short(n) in known and short(n) not in reach
    )


def dynamic_sites() -> list[str]:
    """Every module that uses `import_module` or `__import__` other than in a call on a
    string literal (called on a variable, or passed on as a value): short names."""
    out = set()
    for name, tree in _trees()[1].items():
        literal_calls = {
            id(node.func)
            for node in ast.walk(tree)
            if isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        }
        for node in ast.walk(tree):
            importer = (isinstance(node, ast.Attribute) and node.attr == "import_module") or (
                isinstance(node, ast.Name) and node.id == "__import__"
            )
            if importer and id(node) not in literal_calls:
                out.add(name)
    return sorted(out)


# ------------------------------------------------------------------ the check


def _run_group(group: str, level: str) -> list[str]:
    """In a fresh process: run every record of `group`; the modules it imported
    outside its closure."""
    before = set(sys.modules)
    from evictable.proofs.base.records import run_one
    from evictable.proofs.obligations.registry import load_group

    for ob in load_group(group, level):  # type: ignore[arg-type]
        run_one(ob)
    return outside([group], set(sys.modules) - before)


def check_selection(groups: Iterable[str], level: str = "quick", jobs: int = 2) -> list[str]:
    """Run every record of every group (each group in a forked process, `jobs` at
    once) and return `group: module` for each module of the package imported outside
    the group's static closure (an empty list: the selection is sound)."""
    graph()  # computed once, before forking
    todo, out = list(groups), []
    running: dict[int, tuple[str, int]] = {}
    while todo or running:
        while todo and len(running) < max(1, jobs):
            group = todo.pop(0)
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: run the group, write what it missed
                os.close(r)
                try:
                    data = json.dumps(_run_group(group, level))
                except BaseException as exc:
                    data = json.dumps([f"(the group could not run: {type(exc).__name__}: {exc})"])
                os.write(w, data.encode())
                os._exit(0)
            os.close(w)
            running[pid] = (group, r)
        pid, _ = os.wait()
        group, r = running.pop(pid)
        chunks = []
        while chunk := os.read(r, 65536):
            chunks.append(chunk)
        os.close(r)
        missed = json.loads(b"".join(chunks) or b'["(no answer)"]')
        print(f"{short(group)}: {'sound' if not missed else ', '.join(missed)}", flush=True)
        out += [f"{short(group)}: {m}" for m in missed]
    return out
