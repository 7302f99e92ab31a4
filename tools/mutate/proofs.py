"""`python -m tools.mutate --proofs` (`make mutate-proofs`): mutation testing of the
proofs (`proofs/z3`, `proofs/refine`) by `evictable verify --quick`.

    python -m tools.mutate --proofs [--jobs 2] [--sample N] [--seed S] [--files F ...]
        [--ids ID ...] [--operators OP ...] [--all-records] [--timeout S] [--backstop S]
        [--json PATH] [--resume PATH] [--list] [--show ID] [--check-selection]

Every mutant (`tools.mutate.proof_operators`: a check stubbed to `proved`, a claim
weakened to True or a conjunct dropped, False added to a query's assumptions, a range
or a bound shrunk, a loop over keys cut after one or two) runs in its own forked
process with the mutated module served by an import hook, and is judged by the
records of `evictable verify --quick` that can reach it: the groups whose import
closure holds the mutated module (`tools.mutate.selection`; the same records as
`evictable verify --quick -j 0 --group G ...`). The mutant is **killed** when a
record fails (a counterexample, a control not refuted, an unknown, an error, a group
that cannot load) and **survives** when every record is ok: then a record prints its
verdict although the reasoning it reports was broken. The records run cheapest first
(by the last complete `verify --quick`'s times) and the first failing record ends
the run (`--all-records` runs them all and lists every one that failed).

Mutants listed in `tools/mutate/equivalent_proofs.txt` (each with its reason) are
left out of the score. `--json` is written after every mutant, and `--resume PATH`
skips the mutants a previous report already decided, so a long run can stop and go
on. `--check-selection` runs every group once, unmutated, and lists any module it
imported outside its static closure (none: leaving the other groups out is sound).
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import json
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from evictable.proofs.base.levels import Level
from tools.mutate.core import (
    ROOT,
    SOURCES,
    Mutant,
    Result,
    load_equivalents,
    module_name,
    report,
    run,
)
from tools.mutate.coverage import Coverage, records_for
from tools.mutate.coverage import load as load_coverage
from tools.mutate.proof_operators import PROOF_OPERATORS, mutate, sites
from tools.mutate.selection import (
    check_selection,
    closure,
    groups_for,
    importers,
    outside,
    short,
)

__all__ = ["EQUIVALENTS", "FILES", "all_mutants", "decide", "dependents", "groups_of", "main"]

EQUIVALENTS = Path(__file__).with_name("equivalent_proofs.txt")
FILES = sorted(
    str(p.relative_to(ROOT))
    for p in [*ROOT.glob("proofs/z3/*.py"), *ROOT.glob("proofs/refine/*.py")]
    if p.name != "__init__.py"
)
LEVEL: Level = "quick"
_OPTIONS: dict[str, Any] = {"all_records": False, "backstop": 600.0, "costs": {}, "coverage": None}
"""The run's options, read by `decide` in the children (set before forking)."""


def all_mutants(files: list[str], operators: tuple[str, ...] = PROOF_OPERATORS) -> list[Mutant]:
    """Every mutant of `files` by `operators`, in file and walk order."""
    out = []
    for path in files:
        SOURCES[path] = (ROOT / path).read_text()
        out += [Mutant(path, s) for s in sites(SOURCES[path]) if s.operator in operators]
    return out


def _groups() -> tuple[str, ...]:
    from evictable.proofs.obligations.registry import GROUPS

    return GROUPS


def groups_of(mutant: Mutant) -> list[str]:
    """The groups of `verify` whose records can reach the mutated module."""
    return groups_for(short(module_name(mutant.path)), _groups())


def dependents(mutant: Mutant) -> list[str]:
    """The mutated module and every module that imports it (full names): what a child
    imports afresh, with the mutant."""
    return importers([short(module_name(mutant.path))])


def decide(mutant: Mutant) -> Result:
    """In the child: run the records at `--quick` that can reach the mutant (its
    groups; with the coverage map, only those that call the mutated function); killed
    at the first that fails (or every one, with `--all-records`)."""
    from evictable.proofs.base.records import Obligation, run_claim, run_control
    from evictable.proofs.obligations.registry import load_group

    before = set(sys.modules)
    groups = groups_of(mutant)
    coverage: Coverage | None = _OPTIONS["coverage"]
    key = f"{mutant.path}::{mutant.site.scope}"
    failed: list[str] = []
    chosen: list[Obligation] = []
    skipped = 0
    for group in groups:
        try:
            obligations = load_group(group, LEVEL)
        except Exception as exc:  # as `verify` reports it: an error record
            failed.append(f"{short(group)}: error: cannot load obligations: {exc!r}"[:300])
            continue
        keep = None if coverage is None else records_for(coverage, key, group)
        chosen += [ob for ob in obligations if keep is None or ob.name in keep]
        skipped += sum(1 for ob in obligations if keep is not None and ob.name not in keep)
    cost: dict[str, float] = _OPTIONS["costs"]
    chosen.sort(key=lambda ob: cost.get(ob.name, 0.0) + cost.get(f"{ob.name}~neg", 0.0))
    ran = 0
    for ob in chosen:
        if failed and not _OPTIONS["all_records"]:
            break
        for make in (run_claim, run_control) if ob.negative is not None else (run_claim,):
            r = make(ob, _OPTIONS["backstop"])
            ran += 1
            if not r.ok:
                first = (r.counterexample or r.detail or "").strip().splitlines()
                failed.append(f"{r.name}: {r.verdict}" + (f": {first[0][:200]}" if first else ""))
                if not _OPTIONS["all_records"]:
                    break
    return {
        "killed": bool(failed),
        "engine": failed[0].split(":", 1)[0] if failed else "",
        "why": failed[0] if failed else "",
        "failed": failed,
        "records": ran,
        "obligations_skipped": skipped,
        "unreached": not chosen and not failed,
        "groups": [short(g).rsplit(".", 1)[-1] for g in groups],
        "unsound": outside(groups, set(sys.modules) - before),
    }


def _costs() -> dict[str, float]:
    """Each record's seconds in the last complete `verify --quick` (the file `verify`
    keeps in the user's cache directory), to run the cheapest records first: the
    first failure ends a mutant's run. Empty when there is none (then the registry's
    order); the order never changes a verdict."""
    from evictable.proofs.cli.verify import TIMES_FILE

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    try:
        data = json.loads((Path(base) / "evictable" / TIMES_FILE).read_text(encoding="utf-8"))
        return {str(k): float(v) for k, v in data.get(LEVEL, {}).items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def _warm(targets: set[str]) -> None:
    """Import, before forking, every module the groups reach that reaches no mutated
    module (children then import only what the mutant can change)."""
    import hypothesis.stateful
    import z3

    del hypothesis, z3  # imported for the children

    reach = closure(short(g) for g in _groups())
    for name in sorted(reach):
        if name.split(".")[0] not in ("model", "impl", "proofs"):
            continue
        if targets & set(closure([name])):
            continue
        try:
            importlib.import_module("evictable." + name)
        except Exception:  # warming is an optimisation only: the child imports it again
            continue
    loaded = sorted(t for t in targets if "evictable." + t in sys.modules)
    if loaded:
        raise RuntimeError(f"mutated modules imported before forking: {', '.join(loaded)}")


def show(mutant: Mutant) -> str:
    """The mutant as a diff of the module (both sides as `ast.unparse` prints them)."""
    import ast

    before = ast.unparse(ast.parse(SOURCES[mutant.path])).splitlines()
    after = ast.unparse(mutate(SOURCES[mutant.path], mutant.site.index)).splitlines()
    diff = difflib.unified_diff(before, after, mutant.path, f"{mutant.id}", n=2, lineterm="")
    return "\n".join(diff)


def _summary(mutants: list[Mutant], results: dict[str, Result]) -> dict[str, Any]:
    done = [m for m in mutants if m.id in results]
    per_file = Counter(m.path for m in mutants)
    seconds = [float(str(results[m.id].get("seconds", 0))) for m in done]
    return {
        "level": LEVEL,
        "mutants": len(mutants),
        "decided": len(done),
        "mutants_per_file": dict(sorted(per_file.items())),
        "seconds_per_mutant": round(sum(seconds) / len(seconds), 2) if seconds else None,
        "operators": dict(sorted(Counter(m.site.operator for m in mutants).items())),
    }


def _write(path: str, mutants: list[Mutant], results: dict[str, Result]) -> None:
    by_id = {m.id: m for m in mutants}
    rows = {}
    for ident, r in results.items():
        m = by_id.get(ident)
        where = (
            {}
            if m is None
            else {
                "path": m.path,
                "line": m.site.line,
                "scope": m.site.scope,
                "operator": m.site.operator,
                "before": m.site.before,
                "after": m.site.after,
            }
        )
        rows[ident] = {**where, **r}
    data = {"summary": _summary(mutants, results), "mutants": rows}
    Path(path).write_text(json.dumps(data, indent=1))


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.mutate --proofs")
    p.add_argument("--jobs", type=int, default=2, help="mutants at once (default 2)")
    p.add_argument("--sample", type=int, default=0, help="run a random sample of N mutants")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--files", nargs="*", default=None, help="proofs files (default: all)")
    p.add_argument("--ids", nargs="*", default=None, help="run only these mutant ids")
    p.add_argument(
        "--operators",
        nargs="*",
        default=list(PROOF_OPERATORS),
        help="operators to apply (default: the proof operators; the generic ones of "
        "tools.mutate.operators are named too: compare, boolop, unary, negate_if, ...)",
    )
    p.add_argument("--all-records", action="store_true", help="run every record, not to the first")
    p.add_argument(
        "--groups-only",
        action="store_true",
        help="run every record of the mutant's groups (no coverage map)",
    )
    p.add_argument("--timeout", type=float, default=1800.0, help="per mutant (a hang backstop)")
    p.add_argument("--backstop", type=float, default=600.0, help="per record (verify's --backstop)")
    p.add_argument("--json", default=None, help="write every result here (after each mutant)")
    p.add_argument("--resume", default=None, help="skip the mutants decided in this JSON report")
    p.add_argument("--list", action="store_true", help="list the mutants (and their groups)")
    p.add_argument("--show", default=None, metavar="ID", help="print one mutant as a diff")
    p.add_argument(
        "--check-selection",
        action="store_true",
        help="run every group once, unmutated: modules imported outside the static closure",
    )
    p.add_argument("--target", type=float, default=100.0, help="the score to reach (exit 1 below)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.check_selection:
        missed = check_selection(_groups(), LEVEL, args.jobs)
        print("selection sound" if not missed else "MISSED EDGES:\n" + "\n".join(missed))
        return 0 if not missed else 1
    files = args.files or FILES
    mutants = all_mutants(files, tuple(args.operators))
    if args.show:
        chosen = [m for m in mutants if m.id == args.show]
        print(show(chosen[0]) if chosen else f"no mutant {args.show!r}")
        return 0 if chosen else 2
    if args.ids:
        mutants = [m for m in mutants if m.id in set(args.ids)]
    if args.sample:
        mutants = sorted(
            random.Random(args.seed).sample(mutants, min(args.sample, len(mutants))),
            key=lambda m: (m.path, m.site.index),
        )
    if args.list:
        for m in mutants:
            groups = ", ".join(short(g).rsplit(".", 1)[-1] for g in groups_of(m))
            print(f"{m.id}\n    {m.describe()}\n    groups: {groups}")
        print(json.dumps(_summary(mutants, {}), indent=1))
        return 0
    results: dict[str, Result] = {}
    if args.resume and Path(args.resume).exists():
        previous = json.loads(Path(args.resume).read_text())["mutants"]
        ids = {m.id for m in mutants}
        results = {
            i: {k: v for k, v in r.items() if k in _RESULT_KEYS} for i, r in previous.items()
        }
        results = {i: r for i, r in results.items() if i in ids}
    todo = [m for m in mutants if m.id not in results]
    _OPTIONS.update(all_records=args.all_records, backstop=args.backstop, costs=_costs())
    if not args.groups_only and todo:
        reach = sorted(
            {g for path in FILES for g in groups_for(short(module_name(path)), _groups())}
        )
        _OPTIONS["coverage"] = load_coverage(FILES, reach, LEVEL, args.jobs)
    _warm({short(module_name(p)) for p in files})
    start = time.monotonic()

    def landed(ident: str, result: Result) -> None:
        results[ident] = result
        if args.json:
            _write(args.json, mutants, results)

    run(todo, args.jobs, args.timeout, mutate, decide, on_result=landed, forget=dependents)
    text, score = report(
        mutants,
        results,
        time.monotonic() - start,
        load_equivalents(EQUIVALENTS),
        what="proof mutation score (verify --quick)",
        equivalents_file=EQUIVALENTS.name,
    )
    print("\n" + text)
    unreached = [m for m in mutants if results[m.id].get("unreached")]
    if unreached:
        print(f"\nunreached ({len(unreached)}: survivors in a function no record calls):")
        print("\n".join(f"  {m.id}" for m in unreached))
    unsound = sorted({u for r in results.values() for u in r.get("unsound") or []})  # type: ignore[attr-defined]
    if unsound:
        print("\nSELECTION UNSOUND: a run imported modules outside its groups' closure:")
        print("\n".join(f"  {u}" for u in unsound))
    if args.json:
        _write(args.json, mutants, results)
    return 0 if score >= args.target and not unsound else 1


_RESULT_KEYS = frozenset(
    {
        "killed",
        "engine",
        "why",
        "failed",
        "records",
        "obligations_skipped",
        "unreached",
        "groups",
        "unsound",
        "seconds",
    }
)
