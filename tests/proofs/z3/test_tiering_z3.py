"""The tiering key relations in Z3 (`tiering.*`): each record proved over unboundedly
many keys and parties, each control refuted on the claim it breaks, a vacuous query
reported vacuous, and the steps built from the chunk rules (a broken rule in the model's
table is refuted by the record of the relation it breaks)."""

from __future__ import annotations

import pytest
import z3

from evictable.model import tiering_chunk
from evictable.model.lifecycle import CPU_MACHINE, CpuEvent
from evictable.model.tiering_chunk import CHUNK_RULES, WHOLE_CACHE, ChunkEvent, ChunkGuard
from evictable.model.tiering_invariants import POSTCONDITIONS, TIERING_INVARIANTS
from evictable.proofs.base.records import Kind, Obligation, Status, run_claim, run_control
from evictable.proofs.controls.tiering_rules import RULE_CONTROLS, broken_rules
from evictable.proofs.obligations import registry, z3_tiering
from evictable.proofs.z3.encode import state_sort
from evictable.proofs.z3.solver import evidenced
from evictable.proofs.z3.tiering import fresh_state, steps
from evictable.proofs.z3.tiering_proofs import (
    check_consecution,
    check_initiation,
    check_step_claim,
)
from evictable.proofs.z3.tiering_relations import INVARIANTS, STEP_CLAIMS
from tests.obligation_checks import BACKSTOP_S

GROUP = "evictable.proofs.obligations.z3_tiering"


def _records() -> list[Obligation]:
    return registry.load_group(GROUP, "quick")


def test_the_group_runs_at_every_level() -> None:
    assert GROUP in registry.GROUPS
    names = {ob.name for ob in _records()}
    for level in ("default", "thorough"):
        assert {ob.name for ob in registry.load_group(GROUP, level)} == names


def test_the_records_are_the_relations_of_the_registry() -> None:
    names = {ob.name for ob in _records()}
    assert names == {
        "tiering.initiation",
        *(f"tiering.consecution.{n}" for n in INVARIANTS),
        *(f"tiering.{n}" for n in STEP_CLAIMS),
    }
    postconditions = {n for invs in POSTCONDITIONS.values() for n in invs}
    assert set(INVARIANTS) <= set(TIERING_INVARIANTS)
    assert set(STEP_CLAIMS) <= set(TIERING_INVARIANTS) | postconditions
    for ob in _records():
        assert ob.kind is Kind.UNBOUNDED
        assert ob.bounds == z3_tiering.BOUNDS
        assert ob.negative is not None


@pytest.mark.parametrize("ob", _records(), ids=lambda ob: ob.name)
def test_each_record_is_proved(ob: Obligation) -> None:
    r = run_claim(ob, BACKSTOP_S)
    assert r.status is Status.PROVED, r.counterexample or r.detail
    if ob.name != "tiering.initiation":
        assert r.assumptions == z3_tiering.ASSUMPTIONS


@pytest.mark.parametrize("ob", _records(), ids=lambda ob: ob.name)
def test_each_control_is_refuted_on_its_claim(ob: Obligation) -> None:
    r = run_control(ob, BACKSTOP_S)
    assert r.status is Status.REFUTED, r.counterexample or r.detail
    claim = "chunks_consistent" if ob.name == "tiering.initiation" else ob.name.split(".")[-1]
    assert f"violated: {claim}" in r.counterexample


def test_every_claim_has_a_control_that_breaks_it() -> None:
    assert set(RULE_CONTROLS) == set(INVARIANTS) | set(STEP_CLAIMS)
    for name, control in RULE_CONTROLS.items():
        broken = control.rules()
        assert broken != CHUNK_RULES
        assert sum(a != b for a, b in zip(broken, CHUNK_RULES, strict=True)) == 1, name


def test_a_query_whose_assumptions_are_unsatisfiable_is_vacuous() -> None:
    false = [z3.BoolVal(False)]
    assert check_initiation(CPU_MACHINE, BACKSTOP_S, false).status is Status.VACUOUS
    for name in ("pins_have_owners", "one_pending_owner"):
        out = check_consecution(CPU_MACHINE, CHUNK_RULES, name, BACKSTOP_S, false)
        assert out.status is Status.VACUOUS
        assert "unsatisfiable" in out.counterexample
    out = check_step_claim(CPU_MACHINE, CHUNK_RULES, "reset_left_nothing", BACKSTOP_S, false)
    assert out.status is Status.VACUOUS


def test_a_rule_that_can_never_fire_is_vacuous() -> None:
    # an unpin (its party must hold a pin) on the store-commit row (a PENDING chunk,
    # which has no pin): no state satisfying the invariant lets it fire
    rules = broken_rules(ChunkEvent.UNPIN, cpu=CpuEvent.STORE_COMMIT)
    out = check_consecution(CPU_MACHINE, rules, "pins_have_owners", BACKSTOP_S)
    assert out.status is Status.VACUOUS
    assert "unpin" in out.counterexample


def test_a_check_that_decides_nothing_is_an_error() -> None:
    without_evict = tuple(r for r in CHUNK_RULES if r.event is not ChunkEvent.EVICT)
    run = evidenced(lambda t: check_step_claim(CPU_MACHINE, without_evict, "only_idle_evicted", t))
    assert run(BACKSTOP_S).status is Status.ERROR


def test_the_steps_are_every_row_of_every_rule() -> None:
    ss = state_sort(CPU_MACHINE)
    names = [s.name for s in steps(CPU_MACHINE, CHUNK_RULES, fresh_state(ss, "t"))]
    expected = 2  # the hold's lookup and close
    for rule in CHUNK_RULES:
        rows = [t for t in CPU_MACHINE.transitions if t.event is rule.cpu]
        expected += 1 if rule.event in WHOLE_CACHE or rule.cpu is None else len(rows)
        assert any(n.startswith(rule.event.value) for n in names)
    assert len(names) == expected


def test_a_broken_rule_in_the_model_is_refuted_by_its_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the records read the model's table when they are built: anyone may complete a
    # pending chunk (vLLM 0.33's completion) breaks pending_owners_live
    broken = broken_rules(ChunkEvent.COMMIT, guard=ChunkGuard.ANYONE)
    monkeypatch.setattr(tiering_chunk, "CHUNK_RULES", broken)
    by_name = {ob.name: ob for ob in _records()}
    r = run_claim(by_name["tiering.consecution.pending_owners_live"], BACKSTOP_S)
    assert r.status is Status.COUNTEREXAMPLE
    assert "commit" in r.counterexample and "pending_owners_live" in r.counterexample
    ok = run_claim(by_name["tiering.consecution.pins_have_owners"], BACKSTOP_S)
    assert ok.status is Status.PROVED
