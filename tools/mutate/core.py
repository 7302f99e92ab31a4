"""What both mutation front ends share: mutants and their ids, the equivalents lists,
the forked runner (each mutant in its own process, its module served mutated by an
import hook) and the report.

`python -m tools.mutate` (`make mutate`) mutates `impl/` and kills with the engines
(`tools.mutate.kill`); `python -m tools.mutate --proofs` (`make mutate-proofs`)
mutates `proofs/z3` and `proofs/refine` and kills with `evictable verify --quick`
(`tools.mutate.proofs`). A front end gives `run` how to build a mutant's code and
how its child decides the mutant (`decide(mutant) -> result`, a JSON-able dict with
at least `killed`, `engine` and `why`).
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import select
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, ModuleType

from tools.mutate.operators import Site

__all__ = [
    "ROOT",
    "SOURCES",
    "Mutant",
    "Result",
    "load_equivalents",
    "module_name",
    "report",
    "run",
    "serve",
]

ROOT = Path(__file__).resolve().parents[2]

Result = dict[str, object]


@dataclass(frozen=True)
class Mutant:
    path: str
    site: Site

    @property
    def id(self) -> str:
        return f"{self.path}::{self.site.key}"

    def describe(self) -> str:
        s = self.site
        return f"{self.path}:{s.line} {s.scope}: {s.operator} {s.before!r} -> {s.after!r}"


def module_name(path: str) -> str:
    """`proofs/z3/manager.py` -> `evictable.proofs.z3.manager`."""
    return "evictable." + path.removesuffix(".py").replace("/", ".")


def load_equivalents(path: Path) -> dict[str, str]:
    """`id -> reason` from an equivalents file (`<id>  # <reason>` per line)."""
    out: dict[str, str] = {}
    if not path.exists():
        return out
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        ident, _, note = line.partition("  # ")
        out[ident.strip()] = note.strip()
    return out


SOURCES: dict[str, str] = {}
"""Each mutated file's text as enumerated (children mutate exactly this text)."""


# ------------------------------------------------------------------ the child


class Served(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the given modules' code (`name -> (code, origin)`), each run in a
    namespace that starts with `preset`; every other import goes the usual way."""

    def __init__(
        self, codes: dict[str, tuple[CodeType, str]], preset: dict[str, object] | None = None
    ) -> None:
        self.codes, self.preset = codes, dict(preset or {})

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.codes:
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=self.codes[fullname][1])

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        code, origin = self.codes[module.__name__]
        module.__file__ = origin
        module.__dict__.update(self.preset)
        exec(code, module.__dict__)


def serve(
    mutant: Mutant, build: Callable[[str, int], ast.Module], forget: Iterable[str] = ()
) -> None:
    """Install the import hook that serves `mutant`'s module. The modules `forget`
    names (the module and every module importing it, when they were imported before
    the fork) are dropped first, so that they are imported again with the mutant;
    otherwise the module must not have been imported yet."""
    for old in forget:
        sys.modules.pop(old, None)
    name = module_name(mutant.path)
    if name in sys.modules:
        raise RuntimeError(f"{name} was imported before its mutant could be served")
    tree = build(SOURCES[mutant.path], mutant.site.index)
    code = compile(tree, str(ROOT / mutant.path), "exec")
    sys.meta_path.insert(0, Served({name: (code, str(ROOT / mutant.path))}))


def _child(
    mutant: Mutant,
    out_fd: int,
    build: Callable[[str, int], ast.Module],
    decide: Callable[[Mutant], Result],
    forget: Callable[[Mutant], Iterable[str]] | None,
) -> None:
    os.nice(5)
    try:
        serve(mutant, build, forget(mutant) if forget is not None else ())
        result = decide(mutant)
    except BaseException as exc:  # import errors, escaping timeouts: the mutant broke it
        result = {"killed": True, "engine": "crash", "why": f"{type(exc).__name__}: {exc}"}
    os.write(out_fd, json.dumps(result).encode())
    os._exit(0)


# ------------------------------------------------------------------ the parent


@dataclass
class _Running:
    mutant: Mutant
    pid: int
    fd: int
    start: float
    data: bytes = b""


def run(
    mutants: list[Mutant],
    jobs: int,
    timeout: float,
    build: Callable[[str, int], ast.Module],
    decide: Callable[[Mutant], Result],
    progress: bool = True,
    on_result: Callable[[str, Result], None] | None = None,
    forget: Callable[[Mutant], Iterable[str]] | None = None,
) -> dict[str, Result]:
    """Run every mutant in a forked child, at most `jobs` at once; a child still running
    after `timeout` seconds is killed (the mutant counts as killed, engine `timeout`).
    `on_result(id, result)` sees each result as it lands; `forget(mutant)` names the
    modules a child drops before serving the mutant (see `serve`)."""
    results: dict[str, Result] = {}
    todo = list(mutants)
    running: list[_Running] = []
    started = time.monotonic()
    while todo or running:
        while todo and len(running) < jobs:
            mutant = todo.pop(0)
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                try:
                    _child(mutant, w, build, decide, forget)
                finally:
                    os._exit(3)
            os.close(w)
            running.append(_Running(mutant, pid, r, time.monotonic()))
        ready, _, _ = select.select([p.fd for p in running], [], [], 0.5)
        for p in list(running):
            if p.fd in ready:
                chunk = os.read(p.fd, 65536)
                if chunk:
                    p.data += chunk
                    continue
            elif time.monotonic() - p.start < timeout:
                continue
            else:
                os.kill(p.pid, signal.SIGKILL)
                p.data = json.dumps(
                    {"killed": True, "engine": "timeout", "why": f"over {timeout}s"}
                ).encode()
            os.close(p.fd)
            _, status = os.waitpid(p.pid, 0)
            try:
                result = json.loads(p.data.decode() or "{}")
            except ValueError:
                result = {}
            if "killed" not in result:
                result = {"killed": True, "engine": "crash", "why": f"child exit status {status}"}
            result["seconds"] = round(time.monotonic() - p.start, 2)
            results[p.mutant.id] = result
            running.remove(p)
            if on_result is not None:
                on_result(p.mutant.id, result)
            if progress:
                done = len(results)
                mark = "killed" if result["killed"] else "SURVIVED"
                print(
                    f"[{done}/{len(mutants)} {time.monotonic() - started:.0f}s] {mark:8} "
                    f"{p.mutant.describe()}  ({result['engine']}, {result['seconds']}s)",
                    flush=True,
                )
    return results


def report(
    mutants: list[Mutant],
    results: dict[str, Result],
    seconds: float,
    equivalents: dict[str, str],
    what: str = "engine kill score",
    equivalents_file: str = "equivalent.txt",
) -> tuple[str, float]:
    """The report's text and the score (killed / non-equivalent, in percent)."""
    counted = [m for m in mutants if m.id not in equivalents]
    killed = [m for m in counted if results[m.id]["killed"]]
    survivors = [m for m in counted if not results[m.id]["killed"]]
    stale = [m for m in mutants if m.id in equivalents and results[m.id]["killed"]]
    listed_equiv = [m for m in mutants if m.id in equivalents]
    score = 100.0 * len(killed) / len(counted) if counted else 100.0
    per_mutant = sum(float(str(results[m.id].get("seconds", 0))) for m in mutants)
    lines = [
        f"mutants: {len(mutants)} ({len(listed_equiv)} listed as equivalent); "
        f"non-equivalent: {len(counted)}, killed {len(killed)}, survived {len(survivors)}",
        f"{what}: {score:.1f}% of non-equivalent mutants ({seconds:.0f}s; "
        f"{per_mutant / max(1, len(mutants)):.1f}s per mutant)",
        "",
        "by file (killed/non-equivalent):",
    ]
    for path in sorted({m.path for m in mutants}):
        c = [m for m in counted if m.path == path]
        k = [m for m in c if results[m.id]["killed"]]
        lines.append(f"  {path}: {len(k)}/{len(c)}")
    ops: Counter[str] = Counter(m.site.operator for m in counted)
    ops_k: Counter[str] = Counter(m.site.operator for m in killed)
    lines.append(
        "by operator (killed/non-equivalent): "
        + ", ".join(f"{o} {ops_k[o]}/{n}" for o, n in sorted(ops.items()))
    )
    engines: Counter[str] = Counter(str(results[m.id]["engine"]) for m in killed)
    lines.append("killed by: " + ", ".join(f"{e} {n}" for e, n in engines.most_common()))
    lines.append("")
    lines.append(f"survivors ({len(survivors)}):")
    lines += [f"  {m.describe()}\n    id: {m.id}" for m in survivors]
    if stale:
        lines.append(
            f"stale equivalents (killed, remove them from {equivalents_file}): {len(stale)}"
        )
        lines += [f"  {m.id}" for m in stale]
    return "\n".join(lines), score
