"""`python -m tools.mutate` (`make mutate`): mutation testing of `impl/` by the engines.

    python -m tools.mutate [--jobs 2] [--sample N] [--seed S] [--files impl/x.py ...]
                           [--oracle] [--timeout S] [--json PATH] [--ids ID ...]

Every mutant of every `impl/` module (`tools.mutate.operators`) is run in its own
forked process: the mutated module is served by an import hook before anything
imports it, and the engines (`tools.mutate.kill`) run against the mutated package.
A mutant is *killed* when an engine reports a finding (or crashes, or the process
runs past `--timeout`), and *survives* otherwise. Mutants listed in
`tools/mutate/equivalent.txt` (each with a one-line reason it cannot be told apart)
are left out of the score; a listed mutant that is killed is reported as stale.
Oracle sites (`check_invariants`, `__repr__`) are skipped unless `--oracle`.

The report: the score over the non-equivalent mutants, per file and per operator,
every survivor (file, line, function, change), and the time taken. At most
`--jobs` mutants run at once (default 2: this is a shared 2-core machine).
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import random
import select
import signal
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import CodeType, ModuleType

from tools.mutate.operators import Site, mutate, sites

ROOT = Path(__file__).resolve().parents[2]
EQUIVALENTS = Path(__file__).with_name("equivalent.txt")
FILES = sorted(
    str(p.relative_to(ROOT))
    for p in [*ROOT.glob("impl/*.py"), *ROOT.glob("impl/policies/*.py")]
    if p.name != "__init__.py"
)


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


def _module_name(path: str) -> str:
    return "evictable." + path.removesuffix(".py").replace("/", ".")


def load_equivalents() -> dict[str, str]:
    """`id -> reason` from `equivalent.txt` (`<id>  # <reason>` per line)."""
    out: dict[str, str] = {}
    if not EQUIVALENTS.exists():
        return out
    for raw in EQUIVALENTS.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        ident, _, note = line.partition("  # ")
        out[ident.strip()] = note.strip()
    return out


SOURCES: dict[str, str] = {}
"""Each mutated file's text as enumerated (children mutate exactly this text)."""


def all_mutants(files: list[str], oracle: bool) -> list[Mutant]:
    out = []
    for path in files:
        SOURCES[path] = (ROOT / path).read_text()
        for site in sites(SOURCES[path]):
            if oracle or not site.oracle:
                out.append(Mutant(path, site))
    return out


# ------------------------------------------------------------------ the child


class _Served(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves one module's mutated code; every other import goes the usual way."""

    def __init__(self, name: str, code: CodeType, origin: str) -> None:
        self.name, self.code, self.origin = name, code, origin

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        return importlib.util.spec_from_loader(fullname, self, origin=self.origin)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None

    def exec_module(self, module: ModuleType) -> None:
        module.__file__ = self.origin
        exec(self.code, module.__dict__)


def _child(mutant: Mutant, out_fd: int) -> None:
    os.nice(5)
    tree = mutate(SOURCES[mutant.path], mutant.site.index)
    code = compile(tree, str(ROOT / mutant.path), "exec")
    sys.meta_path.insert(0, _Served(_module_name(mutant.path), code, str(ROOT / mutant.path)))
    from tools.mutate.kill import kill

    try:
        found = kill(mutant.path)
        result = {
            "killed": found is not None,
            "engine": found[0] if found else "",
            "why": found[1] if found else "",
        }
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


def _warm() -> None:
    """Import what every child needs but no `evictable.impl` module (children import it)."""
    import hypothesis
    import hypothesis.stateful  # noqa: F401

    for name in list(sys.modules):
        if name.startswith(("evictable.impl", "evictable.proofs")):
            raise RuntimeError(f"{name} imported before forking")


def run(
    mutants: list[Mutant], jobs: int, timeout: float, progress: bool = True
) -> dict[str, dict[str, object]]:
    _warm()
    results: dict[str, dict[str, object]] = {}
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
                    _child(mutant, w)
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
            if progress:
                done = len(results)
                mark = "killed" if result["killed"] else "SURVIVED"
                print(
                    f"[{done}/{len(mutants)} {time.monotonic() - started:.0f}s] {mark:8} "
                    f"{p.mutant.describe()}  ({result['engine']})",
                    flush=True,
                )
    return results


def report(
    mutants: list[Mutant], results: dict[str, dict[str, object]], seconds: float
) -> tuple[str, float]:
    equivalents = load_equivalents()
    counted = [m for m in mutants if m.id not in equivalents]
    killed = [m for m in counted if results[m.id]["killed"]]
    survivors = [m for m in counted if not results[m.id]["killed"]]
    stale = [m for m in mutants if m.id in equivalents and results[m.id]["killed"]]
    listed_equiv = [m for m in mutants if m.id in equivalents]
    score = 100.0 * len(killed) / len(counted) if counted else 100.0
    lines = [
        f"mutants: {len(mutants)} ({len(listed_equiv)} listed as equivalent); "
        f"non-equivalent: {len(counted)}, killed {len(killed)}, survived {len(survivors)}",
        f"engine kill score: {score:.1f}% of non-equivalent mutants ({seconds:.0f}s)",
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
        lines.append(f"stale equivalents (killed, remove them from equivalent.txt): {len(stale)}")
        lines += [f"  {m.id}" for m in stale]
    return "\n".join(lines), score


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutate")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--sample", type=int, default=0, help="run a random sample of N mutants")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--files", nargs="*", default=None)
    parser.add_argument("--ids", nargs="*", default=None, help="run only these mutant ids")
    parser.add_argument(
        "--oracle", action="store_true", help="mutate check_invariants/__repr__ too"
    )
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--json", default=None, help="write every result here")
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--target", type=float, default=95.0)
    args = parser.parse_args(argv)
    mutants = all_mutants(args.files or FILES, args.oracle)
    if args.ids:
        mutants = [m for m in mutants if m.id in set(args.ids)]
    if args.sample:
        mutants = sorted(
            random.Random(args.seed).sample(mutants, min(args.sample, len(mutants))),
            key=lambda m: (m.path, m.site.index),
        )
    if args.list:
        for m in mutants:
            print(f"{m.id}\n    {m.describe()}")
        return 0
    start = time.monotonic()
    results = run(mutants, args.jobs, args.timeout)
    text, score = report(mutants, results, time.monotonic() - start)
    print("\n" + text)
    if args.json:
        Path(args.json).write_text(json.dumps({m.id: results[m.id] for m in mutants}, indent=1))
    return 0 if score >= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
