"""The checks that hold a Z3 record to what it prints: no vacuous proof, a proof made
by a query, controls refuted on the claim they break, the relation held to the fold
lemma's walk, and the assumptions a record rests on stated with it."""

from __future__ import annotations

from typing import Any

import pytest
import z3

from evictable.model.lifecycle import CPU_MACHINE, CpuEvent, CpuState, Hook
from evictable.proofs.base.records import Kind, Obligation, Status, proved, run_claim, targeted
from evictable.proofs.controls.encodings import positional_hook
from evictable.proofs.obligations import registry, z3_manager
from evictable.proofs.z3 import manager_fold, policy_compose
from evictable.proofs.z3.manager_ops import Variant
from evictable.proofs.z3.manager_state import REFERENCE
from evictable.proofs.z3.solver import evidenced, refute_claims, z3_valid
from tests.obligation_checks import BACKSTOP_S


def test_a_proof_whose_assumptions_are_unsatisfiable_is_vacuous() -> None:
    x = z3.Int("x")
    out = refute_claims({"positive": x > 0}, [x > 1, x < 0], BACKSTOP_S, "q", lambda _m: "")
    assert out.status is Status.VACUOUS
    assert "unsatisfiable" in out.counterexample
    assert z3_valid(x > 0, BACKSTOP_S, lambda _m: "", [x > 1, x < 0]).status is Status.VACUOUS


def test_a_proof_with_satisfiable_assumptions_is_proved() -> None:
    x = z3.Int("x")
    out = refute_claims({"positive": x > 0}, [x > 1], BACKSTOP_S, "q", lambda _m: "")
    assert out.status is Status.PROVED


def test_a_quantified_proof_is_judged_by_its_finite_witness() -> None:
    x = z3.Int("x")
    f = z3.Function("f", z3.IntSort(), z3.IntSort())
    k = z3.Int("k")
    facts = [z3.ForAll([k], f(k) > 0), x == f(3)]
    good = refute_claims({"pos": x > 0}, facts, BACKSTOP_S, "q", lambda _m: "", lambda: [x == 1])
    assert good.status is Status.PROVED
    bad = refute_claims(
        {"pos": x > 0}, facts, BACKSTOP_S, "q", lambda _m: "", lambda: [x == 1, x == 2]
    )
    assert bad.status is Status.VACUOUS


def test_the_unbounded_lru_query_made_inconsistent_is_vacuous(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = policy_compose.lru_query

    def inconsistent(*args: Any, **kwargs: Any) -> Any:
        claims, assumptions, describe = real(*args, **kwargs)
        return claims, [*assumptions, z3.BoolVal(False)], describe

    monkeypatch.setattr(policy_compose, "lru_query", inconsistent)
    out = policy_compose.check_lru(REFERENCE, "complete_load", 2, BACKSTOP_S, search=False)
    assert out.status is Status.VACUOUS


def test_a_stubbed_proof_is_an_error() -> None:
    out = evidenced(lambda _t: proved("stub"))(BACKSTOP_S)
    assert out.status is Status.ERROR
    assert "no Z3 query decided it" in out.counterexample


def test_every_proof_record_is_evidenced_by_the_registry() -> None:
    for ob in registry.load_group("evictable.proofs.obligations.z3_manager", "quick"):
        assert ob.kind in (Kind.UNBOUNDED, Kind.BOUNDED)
        assert ob.check.__qualname__.startswith("evidenced"), ob.name


def test_a_control_refuted_on_another_claim_is_not_refuted() -> None:
    x = z3.Int("x")
    claims = {"small": x < 10, "positive": x > 0}

    def check(_t: float) -> Any:  # x = 20: only "small" can fail
        return refute_claims(claims, [x == 20], BACKSTOP_S, "q", lambda _m: "x=20")

    assert targeted(check, ["small"])(BACKSTOP_S).status is Status.COUNTEREXAMPLE
    # asked about "positive" alone, the query holds: `not refuted` once a record runs it
    assert targeted(check, ["positive"])(BACKSTOP_S).status is Status.PROVED
    # a target the query does not name: every claim is checked, and the one violated
    # is not the one the control stands for
    out = targeted(check, ["agreement/"])(BACKSTOP_S)
    assert out.status is Status.PROVED
    assert "refuted on small, not on the claim it breaks (agreement/)" in out.detail


def test_a_control_is_asked_about_its_claim_alone() -> None:
    x = z3.Int("x")
    claims = {"small": x < 10, "positive": x > 0}

    def check(_t: float) -> Any:  # x = 20 or -5: both claims can fail, one at a time
        return refute_claims(claims, [z3.Or(x == 20, x == -5)], BACKSTOP_S, "q", lambda _m: "")

    for target in ("small", "positive"):
        out = targeted(check, [target])(BACKSTOP_S)
        assert out.status is Status.COUNTEREXAMPLE
        assert out.violated == (target,)


def test_a_relation_whose_step_breaks_a_later_position_is_refuted_by_the_lemma() -> None:
    broken = positional_hook(
        CPU_MACHINE, CpuEvent.LOAD_END, CpuState.LOADING, CpuState.READY, Hook.NONE
    )
    out = manager_fold.check_fold(CPU_MACHINE, "complete_load", BACKSTOP_S, broken)
    assert out.status is Status.COUNTEREXAMPLE
    assert out.counterexample.startswith("fold lemma, step: complete_load")
    assert any(v.startswith("fold lemma, step/") for v in out.violated)


@pytest.mark.parametrize("op", manager_fold.FOLD_OPS)
def test_a_relation_whose_walk_drops_the_third_key_is_refuted_by_the_agreement(op: str) -> None:
    out = manager_fold.agreement(CPU_MACHINE, op, BACKSTOP_S, Variant(drops_from=2))
    assert out.status is Status.COUNTEREXAMPLE, op
    assert out.counterexample.startswith("relation differs from the lemma's fold")
    assert out.violated and all(v.startswith("agreement/") for v in out.violated)


@pytest.mark.parametrize("op", manager_fold.FOLD_OPS)
def test_the_relation_is_the_lemmas_walk(op: str) -> None:
    assert manager_fold.agreement(CPU_MACHINE, op, BACKSTOP_S).status is Status.PROVED


def test_a_consecution_record_states_its_assumptions() -> None:
    obs = {ob.name: ob for ob in z3_manager.obligations("quick")}
    for op in manager_fold.FOLD_OPS:
        ob = obs[f"manager.consecution.{op}"]
        assert ob.assumptions == manager_fold.ASSUMPTIONS[op]
        assert any("held for calls of up to 3 keys" in a for a in ob.assumptions)
    assert obs["manager.consecution.reset_cache"].assumptions == ()


def test_a_record_carries_its_assumptions_into_its_report() -> None:
    ob = Obligation(
        "x", "x", lambda _t: proved(), kind=Kind.UNBOUNDED, assumptions=("a fact assumed",)
    )
    result = run_claim(ob)
    assert result.assumptions == ("a fact assumed",)
    assert result.as_dict()["assumptions"] == ["a fact assumed"]


def test_each_consecution_control_names_the_part_that_must_refute_it() -> None:
    from evictable.proofs.controls.encodings import fold_controls

    for op, controls in fold_controls(REFERENCE).items():
        targets = {claims for _, _, claims in controls}
        assert targets == {("fold lemma",), ("agreement/",)}, op


def test_a_lemma_part_said_to_hold_without_a_query_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each part of the fold lemma must be decided by its own query: a part stubbed to
    `proved` is an error even where other queries of the record decide something."""
    from evictable.model.lifecycle import CPU_MACHINE
    from evictable.proofs.base.records import proved as said
    from evictable.proofs.z3 import manager_fold

    monkeypatch.setattr(manager_fold, "_prove", lambda *args, **kwargs: said())
    out = manager_fold.check_fold(CPU_MACHINE, "complete_load", 60.0)
    assert out.status is Status.ERROR
    assert "no Z3 query decided it" in out.counterexample
