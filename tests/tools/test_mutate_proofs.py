"""`make mutate-proofs` (`tools.mutate.proofs`): the proof operators, the kill by
`verify --quick`'s own records, the selection of those records (the import graph,
the coverage map) and the equivalents list."""

from __future__ import annotations

import ast
from typing import Any

import pytest

from evictable.proofs.base.records import Status
from evictable.proofs.obligations.registry import GROUPS
from tools.mutate.core import ROOT, Mutant, load_equivalents, run
from tools.mutate.coverage import HIT, compute, instrument, records_for
from tools.mutate.proof_operators import PROOF_OPERATORS, mutate, sites
from tools.mutate.proofs import EQUIVALENTS, FILES, all_mutants, decide, dependents
from tools.mutate.selection import (
    DYNAMIC_SITES,
    check_selection,
    closure,
    dynamic_sites,
    graph,
    groups_for,
    outside,
)

SOURCE = """
import z3
from evictable.proofs.base.records import Outcome, proved
from evictable.proofs.z3.solver import z3_valid

KEYS = 3


def claims(x):
    return {"positive": x > 0, "name": "text"}


def check(backstop_s: float) -> Outcome:
    x = z3.Int("x")
    facts = [x >= 1]
    return z3_valid(z3.And(x > 0, x != 0), backstop_s, lambda m: "", facts)


def search(backstop_s: float) -> Outcome | None:
    return None


def batch(keys):
    return [k for k in keys]


def render_text(x):
    return x + 1
"""
"""A small proofs module: a check with its facts, a claim dict, a bound, a loop over
keys, and a function that only renders text."""


def _proof_sites() -> dict[str, int]:
    return {s.key: s.index for s in sites(SOURCE) if s.operator in PROOF_OPERATORS}


def _run(key: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(mutate(SOURCE, _proof_sites()[key]), "<mutant>", "exec"), namespace)
    return namespace


def test_the_proof_operators_give_the_expected_mutants() -> None:
    assert set(_proof_sites()) == {
        "<module>:shrink:'KEYS = 3'->'KEYS = 2'#0",
        "claims:claim_true:'x > 0'->'True'#0",
        "check:stub:'check(...) -> Outcome'->'return proved()'#0",
        "check:assume_false:'facts = [...]'->'[..., False]'#0",
        "check:shrink:'1'->'0'#0",
        "check:assume_false:'z3_valid(...)'->'z3_valid(..., False)'#0",
        "check:conjunct:'x > 0'->'(dropped)'#0",
        "check:conjunct:'x != 0'->'(dropped)'#0",
        "search:stub:'search(...) -> Outcome | None'->'return None'#0",
        "batch:drop_key:'keys'->'first 1 of keys'#0",
        "batch:drop_key:'keys'->'first 2 of keys'#0",
    }


def test_a_function_that_only_renders_text_is_never_mutated() -> None:
    assert not [s for s in sites(SOURCE) if "render_text" in s.scope]


@pytest.fixture(scope="module")
def every_mutant() -> list[Mutant]:
    return all_mutants(FILES)


def test_every_mutant_of_every_proofs_file_compiles_and_has_a_unique_id(
    every_mutant: list[Mutant],
) -> None:
    mutants = every_mutant
    assert len({m.id for m in mutants}) == len(mutants)
    assert {m.site.operator for m in mutants} == set(PROOF_OPERATORS)
    for m in mutants[::25]:  # a spread of them: every one compiles in `--list`'s run
        compile(mutate((ROOT / m.path).read_text(), m.site.index), m.path, "exec")


def test_each_mutant_changes_what_it_says() -> None:
    original = _run("claims:claim_true:'x > 0'->'True'#0")  # any: the module runs
    assert original["KEYS"] == 3
    assert _run("<module>:shrink:'KEYS = 3'->'KEYS = 2'#0")["KEYS"] == 2
    assert _run("batch:drop_key:'keys'->'first 1 of keys'#0")["batch"]([7, 8, 9]) == [7]
    assert _run("batch:drop_key:'keys'->'first 2 of keys'#0")["batch"]([7, 8, 9]) == [7, 8]
    stub = _run("check:stub:'check(...) -> Outcome'->'return proved()'#0")["check"](10.0)
    assert stub.status is Status.PROVED and stub.detail == "mutant"
    claim = _run("claims:claim_true:'x > 0'->'True'#0")["claims"](-1)
    assert str(claim["positive"]) == "True" and claim["name"] == "text"


def test_false_among_the_assumptions_is_caught_as_vacuous() -> None:
    """The vacuity `assume_false` plants would prove a false claim; every proof's
    vacuity check reports the query vacuous instead (never proved)."""
    for key in (
        "check:assume_false:'facts = [...]'->'[..., False]'#0",
        "check:assume_false:'z3_valid(...)'->'z3_valid(..., False)'#0",
    ):
        src = ast.unparse(mutate(SOURCE, _proof_sites()[key]))
        broken = src.replace("x != 0", "x < 0")  # a claim the facts contradict
        namespace: dict[str, Any] = {}
        exec(compile(broken, "<mutant>", "exec"), namespace)
        assert namespace["check"](10.0).status is Status.VACUOUS, key
    namespace = {}
    exec(compile(SOURCE.replace("x != 0", "x < 0"), "<original>", "exec"), namespace)
    assert namespace["check"](10.0).status is Status.COUNTEREXAMPLE


def test_a_stubbed_check_is_killed_by_its_own_record() -> None:
    """`check_exact_victims` stubbed to `proved`: the record fails (a proof made by no
    query is an error), before its control is even run."""
    (mutant,) = [
        m
        for m in all_mutants(["proofs/z3/eviction.py"], ("stub",))
        if m.site.scope == "check_exact_victims"
    ]
    graph()  # once, before the fork
    results = run([mutant], 1, 600.0, mutate, decide, progress=False, forget=dependents)
    result = results[mutant.id]
    assert result["killed"] is True
    assert result["engine"] in {"eviction.lru.exact_victims", "eviction.lru.exact_victims~neg"}
    assert result["why"]
    assert result["groups"] == ["z3_eviction", "refine_bound"]
    assert result["unsound"] == []


def test_the_groups_of_a_module_are_those_whose_closure_holds_it() -> None:
    lazy = [g.rsplit(".", 1)[-1] for g in groups_for("proofs.z3.lazy", GROUPS)]
    assert lazy == ["explore_lazy_cursor"]
    for module in ("proofs.z3.manager_fold", "proofs.refine.bound"):
        chosen = set(groups_for(module, GROUPS))
        for group in GROUPS:
            reached = module in closure([group.removeprefix("evictable.")])
            assert (group in chosen) == reached


def test_a_string_naming_a_module_is_an_edge() -> None:
    """The seeded bugs of `proofs.controls` import the module they copy by name."""
    assert "impl.manager" in closure(["proofs.controls.manager"])


def test_every_dynamic_import_is_listed_with_its_reason() -> None:
    assert set(dynamic_sites()) == set(DYNAMIC_SITES)
    assert all(reason for reason in DYNAMIC_SITES.values())


def test_a_module_imported_outside_the_closure_is_reported() -> None:
    arc = "evictable.proofs.obligations.z3_arc"
    assert outside([arc], ["evictable.proofs.z3.lazy", "evictable.proofs.z3.arc"]) == [
        "evictable.proofs.z3.lazy"
    ]


def test_running_a_group_imports_nothing_outside_its_closure() -> None:
    assert check_selection(["evictable.proofs.obligations.z3_arc"], "quick", 1) == []


def test_the_equivalents_file_parses_and_names_existing_mutants(
    every_mutant: list[Mutant],
) -> None:
    listed = load_equivalents(EQUIVALENTS)
    ids = {m.id for m in every_mutant}
    for line in EQUIVALENTS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            assert "  # " in line, f"no reason given: {line}"
    assert all(reason for reason in listed.values())
    assert set(listed) <= ids, sorted(set(listed) - ids)


@pytest.mark.parametrize("path", ["proofs/z3/manager_fold.py", "proofs/refine/manager.py"])
def test_dependents_include_the_module_and_its_importers(path: str) -> None:
    mutant = Mutant(path, sites((ROOT / path).read_text())[0])
    names = dependents(mutant)
    assert "evictable." + path.removesuffix(".py").replace("/", ".") in names
    assert "evictable.proofs.obligations.z3_manager" in names or "refine" in path


def test_instrumented_functions_are_named_as_the_sites_name_their_scope() -> None:
    tree, keys = instrument(SOURCE, "x.py")
    scopes = {s.scope for s in sites(SOURCE)} - {"<module>"}
    assert scopes <= {k.removeprefix("x.py::") for k in keys}
    hits: set[str] = set()
    namespace: dict[str, Any] = {HIT: hits.add}
    exec(compile(tree, "<instrumented>", "exec"), namespace)
    assert namespace["batch"]([1, 2]) == [1, 2] and hits == {"x.py::batch"}


def test_a_mutant_in_a_function_runs_only_the_records_that_call_it() -> None:
    arc, group = "proofs/z3/arc.py", "evictable.proofs.obligations.z3_arc"
    coverage = compute([arc], [group], "quick", 1)
    coverage["digest"] = ""
    b1 = records_for(coverage, f"{arc}::b1_hit_term", group)
    assert b1 == {"arc.z3.target_b1_hit_in_range", "arc.z3.target_encoding_matches_model"}
    # called while the group's obligations are built: every record of the group
    assert records_for(coverage, f"{arc}::check_target_range", group) is None
    # not a function (module level): every record of the group
    assert records_for(coverage, f"{arc}::<module>", group) is None
