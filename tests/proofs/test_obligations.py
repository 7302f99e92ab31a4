"""The obligation runner: records, statuses, negative controls, Z3 helpers."""

from __future__ import annotations

import z3

from evictable.proofs.obligations import (
    Obligation,
    Outcome,
    Status,
    format_result,
    proved,
    refuted,
    run_all,
    run_one,
)
from evictable.proofs.z3.solver import z3_sat, z3_valid


def _never(_: object) -> str:
    return "model"


def test_valid_claim_is_proved() -> None:
    x = z3.Int("x")
    assert z3_valid(z3.Implies(x > 2, x > 1), 5.0, _never).status is Status.PROVED


def test_invalid_claim_gives_a_readable_counterexample() -> None:
    x = z3.Int("x")
    out = z3_valid(x > 1, 5.0, lambda m: f"x = {m.eval(x)}")
    assert out.status is Status.COUNTEREXAMPLE
    assert out.counterexample.startswith("x = ")


def test_unsatisfiable_formula_is_reported_vacuous() -> None:
    x = z3.Int("x")
    assert z3_sat([x > 1, x < 0], 5.0).status is Status.COUNTEREXAMPLE
    assert z3_sat([x > 1], 5.0).status is Status.PROVED


def test_unknown_is_not_a_pass() -> None:
    ob = Obligation("u", "undecided", lambda t: Outcome(Status.UNKNOWN, "timeout"))
    (r,) = run_one(ob)
    assert r.status is Status.UNKNOWN and not r.ok


def test_crashing_check_is_an_error_record() -> None:
    def boom(_: float) -> Outcome:
        raise RuntimeError("broken encoder")

    (r,) = run_one(Obligation("b", "crashes", boom))
    assert r.status is Status.ERROR and "broken encoder" in r.counterexample


def test_negative_control_passes_only_when_refuted() -> None:
    caught = Obligation("c", "s", lambda t: proved(), negative=lambda t: refuted("trace"))
    missed = Obligation("m", "s", lambda t: proved(), negative=lambda t: proved())
    ok, neg = run_one(caught)
    assert ok.ok and neg.ok and neg.name == "c~neg" and neg.counterexample == "trace"
    _, neg2 = run_one(missed)
    assert neg2.status is Status.COUNTEREXAMPLE and "not caught" in neg2.counterexample


def test_run_all_streams_records_in_order() -> None:
    seen: list[str] = []
    obs = [Obligation(n, "s", lambda t: proved()) for n in ("a", "b")]
    results = run_all(obs, on_result=lambda r: seen.append(r.name))
    assert [r.name for r in results] == seen == ["a", "b"]


def test_format_result_is_one_fixed_format_line() -> None:
    (r,) = run_one(Obligation("x.y", "s", lambda t: refuted("line one\nline two")))
    line = format_result(r)
    assert "\n" not in line
    assert line.startswith("counterexample")
    assert "x.y" in line and "line one" in line
    assert r.as_dict()["status"] == "counterexample"
