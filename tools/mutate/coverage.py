"""Which records of `verify` call which functions of the proofs: the map that lets a
mutant inside a function run only the records that call that function.

A mutant changes one function's body (or module-level code, or a class body). Code
in a function body runs only when the function is called, so a record whose run
never calls the function -- on the original code, in a process of its own after its
group was loaded, as `evictable verify` runs it -- runs exactly as before on the
mutant and keeps its verdict (the records are deterministic: work bounds, fixed
seeds). So a mutant inside function F of module M needs only:

* every record of a group whose *loading* (importing it, building its obligations)
  calls F -- the obligations themselves may change;
* and otherwise the records whose own run calls F;

among the groups whose import closure holds M (`tools.mutate.selection`). A mutant
outside every function body (module-level code, a class body) needs every record of
those groups. `--groups-only` skips this map and runs every record of the groups.

The map is made by running every group's records once with the proofs' functions
instrumented (a call of `__mutate_hit__("path::Class.function")` at the top of each
body: `instrument`), each group in a forked process and each obligation in a fork of
that (as `verify` runs them; obligations that share a `batch` together), and kept
in the user's cache directory under a digest of every source file of the package:
any edit makes it again (about one `verify --quick` of CPU time).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import select
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tools.mutate.core import ROOT, Served, module_name
from tools.mutate.selection import importers, short

__all__ = ["HIT", "compute", "function_keys", "instrument", "load", "records_for"]

HIT = "__mutate_hit__"
"""The name the instrumented code calls (preset in each served module)."""

CACHE = "mutate-proofs-coverage.json"

Coverage = dict[str, Any]
"""`{"digest", "level", "functions": [key], "load": {group: [key]},
"records": {group: {obligation: [key]}}}` (keys `path::scope`)."""


class _Instrument(ast.NodeTransformer):
    """Puts `__mutate_hit__("path::scope")` first in every function body (after its
    docstring); scopes are named as the mutation sites name them."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.scope: list[str] = []
        self.keys: list[str] = []

    def _scoped(self, node: Any) -> Any:
        self.scope.append(node.name)
        self.generic_visit(node)
        if not isinstance(node, ast.ClassDef):
            key = f"{self.path}::{'.'.join(self.scope)}"
            self.keys.append(key)
            call = ast.Expr(ast.Call(ast.Name(HIT, ast.Load()), [ast.Constant(key)], []))
            body = node.body
            docstring = (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            )
            node.body = [*body[:1], call, *body[1:]] if docstring else [call, *body]
        self.scope.pop()
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped


def instrument(source: str, path: str) -> tuple[ast.Module, list[str]]:
    """`source` with every function body reporting its calls, and the functions' keys."""
    walker = _Instrument(path)
    tree = ast.fix_missing_locations(walker.visit(ast.parse(source)))
    return tree, walker.keys


def function_keys(paths: Iterable[str]) -> set[str]:
    """The keys (`path::scope`) of every function of the files."""
    out: set[str] = set()
    for path in paths:
        out |= set(instrument((ROOT / path).read_text(), path)[1])
    return out


def _digest(level: str) -> str:
    """Of every source file of the package (any edit may move a call) and the level."""
    h = hashlib.sha256(level.encode())
    for folder in ("model", "impl", "proofs", "src/evictable"):
        for p in sorted((ROOT / folder).rglob("*.py")):
            if p.is_symlink() or any(part.is_symlink() for part in p.parents):
                continue
            h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "evictable" / CACHE


# ------------------------------------------------------------------ making the map


def _in_fork(job: Callable[[], object]) -> tuple[int, int]:
    """Fork; the child runs `job` and writes its JSON result to the pipe returned."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            data = json.dumps(job())
        except BaseException as exc:
            data = json.dumps({"error": f"{type(exc).__name__}: {exc}"})
        with os.fdopen(w, "w") as out:
            out.write(data)
        os._exit(0)
    os.close(w)
    return pid, r


def _answer(pid: int, fd: int) -> Any:
    with os.fdopen(fd) as stream:
        data = stream.read()
    os.waitpid(pid, 0)
    return json.loads(data or '{"error": "no answer"}')


def _group_map(group: str, level: str, hits: set[str]) -> dict[str, Any]:
    """In a fresh process: load `group` (its calls are `load`), then run each of its
    obligations (a `batch` together) in a fork of that process."""
    from evictable.proofs.base.records import run_one
    from evictable.proofs.obligations.registry import load_group

    obligations = load_group(group, level)  # type: ignore[arg-type]
    loaded = sorted(hits)
    batches: dict[str, list[Any]] = {}
    for ob in obligations:
        batches.setdefault(ob.batch or ob.name, []).append(ob)
    records: dict[str, list[str]] = {}
    for members in batches.values():

        def job(members: list[Any] = members) -> list[str]:
            hits.clear()
            for ob in members:
                run_one(ob)
            return sorted(hits)

        called = _answer(*_in_fork(job))
        if isinstance(called, dict):
            raise RuntimeError(f"{group}: {called['error']}")
        for ob in members:
            records[ob.name] = called
    return {"load": loaded, "records": records}


def compute(paths: list[str], groups: list[str], level: str, jobs: int = 2) -> Coverage:
    """Run every group's records with the functions of `paths` instrumented."""
    hits: set[str] = set()
    codes, keys = {}, []
    for path in paths:
        tree, found = instrument((ROOT / path).read_text(), path)
        codes[module_name(path)] = (compile(tree, str(ROOT / path), "exec"), str(ROOT / path))
        keys += found
    stale = importers(short(n) for n in codes)  # imported afresh, instrumented
    out: Coverage = {"level": level, "functions": sorted(keys), "load": {}, "records": {}}
    todo = list(groups)
    running: dict[int, tuple[str, int, list[bytes]]] = {}  # fd -> (group, pid, data)
    while todo or running:
        while todo and len(running) < max(1, jobs):
            group = todo.pop(0)

            def job(group: str = group) -> dict[str, Any]:
                for name in stale:
                    sys.modules.pop(name, None)
                sys.meta_path.insert(0, Served(codes, {HIT: hits.add}))
                return _group_map(group, level, hits)

            pid, fd = _in_fork(job)
            running[fd] = (group, pid, [])
        ready, _, _ = select.select(list(running), [], [])
        for fd in ready:
            group, pid, data = running[fd]
            chunk = os.read(fd, 1 << 16)
            if chunk:
                data.append(chunk)
                continue
            os.close(fd)
            os.waitpid(pid, 0)
            del running[fd]
            answer = json.loads(b"".join(data) or b'{"error": "no answer"}')
            if "error" in answer:
                raise RuntimeError(f"coverage of {group}: {answer['error']}")
            out["load"][group] = answer["load"]
            out["records"][group] = answer["records"]
            print(f"coverage: {group.rsplit('.', 1)[-1]} ({len(answer['records'])} obligations)")
    return out


def load(paths: list[str], groups: list[str], level: str, jobs: int = 2) -> Coverage:
    """The map for the current sources (from the cache, else made and cached)."""
    digest = _digest(level)
    path = _cache_file()
    try:
        cached: Coverage = json.loads(path.read_text(encoding="utf-8"))
        if cached.get("digest") == digest and set(groups) <= set(cached["records"]):
            return cached
    except (OSError, ValueError, KeyError):
        pass
    made = compute(paths, groups, level, jobs)
    made["digest"] = digest
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(made), encoding="utf-8")
    except OSError:
        pass
    return made


def records_for(coverage: Coverage, key: str, group: str) -> set[str] | None:
    """The obligations of `group` a mutant inside the function `key` can change: None
    for all of them (the key is not a function's, or loading the group calls it)."""
    if key not in set(coverage["functions"]) or key in set(coverage["load"][group]):
        return None
    return {name for name, called in coverage["records"][group].items() if key in called}
