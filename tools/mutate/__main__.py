"""`python -m tools.mutate` (`make mutate`): mutation testing of `impl/` by the engines.

    python -m tools.mutate [--jobs 2] [--sample N] [--seed S] [--files impl/x.py ...]
                           [--oracle] [--timeout S] [--json PATH] [--ids ID ...]
    python -m tools.mutate --proofs ...   (`make mutate-proofs`: `tools.mutate.proofs`)

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
`--jobs` mutants run at once (default 2: this is a shared 2-core machine). The
runner, the ids and the report are `tools.mutate.core`, shared with `--proofs`.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

from tools.mutate.core import ROOT, SOURCES, Mutant, Result, load_equivalents, report, run
from tools.mutate.operators import mutate, sites

EQUIVALENTS = Path(__file__).with_name("equivalent.txt")
FILES = sorted(
    str(p.relative_to(ROOT))
    for p in [*ROOT.glob("impl/*.py"), *ROOT.glob("impl/policies/*.py")]
    if p.name != "__init__.py"
)


def all_mutants(files: list[str], oracle: bool) -> list[Mutant]:
    out = []
    for path in files:
        SOURCES[path] = (ROOT / path).read_text()
        for site in sites(SOURCES[path]):
            if oracle or not site.oracle:
                out.append(Mutant(path, site))
    return out


def _warm() -> None:
    """Import what every child needs but no `evictable.impl` module (children import it)."""
    import hypothesis
    import hypothesis.stateful  # noqa: F401

    for name in list(sys.modules):
        if name.startswith(("evictable.impl", "evictable.proofs")):
            raise RuntimeError(f"{name} imported before forking")


def _decide(mutant: Mutant) -> Result:
    from tools.mutate.kill import kill

    found = kill(mutant.path)
    return {
        "killed": found is not None,
        "engine": found[0] if found else "",
        "why": found[1] if found else "",
    }


def main(argv: list[str] | None = None) -> int:
    args_in = sys.argv[1:] if argv is None else argv
    if "--proofs" in args_in:
        from tools.mutate.proofs import main as proofs_main

        return proofs_main([a for a in args_in if a != "--proofs"])
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
    args = parser.parse_args(args_in)
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
    _warm()
    start = time.monotonic()
    results = run(mutants, args.jobs, args.timeout, mutate, _decide)
    text, score = report(mutants, results, time.monotonic() - start, load_equivalents(EQUIVALENTS))
    print("\n" + text)
    if args.json:
        Path(args.json).write_text(json.dumps({m.id: results[m.id] for m in mutants}, indent=1))
    return 0 if score >= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
