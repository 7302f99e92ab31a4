"""The obligation runner: records, statuses, negative controls, Z3 helpers."""

from __future__ import annotations

import time
from typing import Any

import z3

from evictable.proofs.base.records import (
    Kind,
    Obligation,
    Outcome,
    Status,
    check_deadline,
    deadline,
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


def _ob(name: str, check: Any, negative: Any = None) -> Obligation:
    return Obligation(name, "s", check, negative, kind=Kind.UNBOUNDED)


def test_a_slow_check_is_judged_by_its_work_not_its_time() -> None:
    seen: list[float | None] = []

    def slow(_backstop_s: float) -> Outcome:
        seen.append(deadline())
        time.sleep(0.2)
        return proved()  # it finished its work: its verdict stands, however long it took

    (r,) = run_one(_ob("slow", slow), backstop_s=0.05)
    assert r.status is Status.PROVED and r.ok
    assert seen[0] is not None and deadline() is None  # the engines see the backstop


def test_an_engine_stopped_by_the_hang_backstop_is_unknown_and_says_so() -> None:
    def engine(_backstop_s: float) -> Outcome:
        time.sleep(0.06)
        check_deadline("engine: 12 of 40 states")
        return proved()

    (r,) = run_one(_ob("engine", engine), backstop_s=0.05)
    assert r.status is Status.UNKNOWN and not r.ok
    assert "hang backstop after 0.05 s" in r.counterexample
    assert "not a finding" in r.counterexample and "12 of 40 states" in r.counterexample


def test_verdicts_say_what_a_record_is() -> None:
    for kind, word in (
        (Kind.UNBOUNDED, "proved"),
        (Kind.BOUNDED, "proved"),
        (Kind.EXPLORED, "explored"),
        (Kind.TESTED, "passed"),
    ):
        (r,) = run_one(Obligation("k", "s", lambda t: proved(), kind=kind))
        assert r.verdict == word and r.as_dict()["kind"] == kind.value


def test_unknown_is_not_a_pass() -> None:
    ob = _ob("u", lambda t: Outcome(Status.UNKNOWN, "timeout"))
    (r,) = run_one(ob)
    assert r.status is Status.UNKNOWN and not r.ok


def test_crashing_check_is_an_error_record() -> None:
    def boom(_: float) -> Outcome:
        raise RuntimeError("broken encoder")

    (r,) = run_one(_ob("b", boom))
    assert r.status is Status.ERROR and "broken encoder" in r.counterexample


def test_negative_control_passes_only_when_refuted() -> None:
    caught = _ob("c", lambda t: proved(), negative=lambda t: refuted("trace"))
    missed = _ob("m", lambda t: proved(), negative=lambda t: proved())
    ok, neg = run_one(caught)
    assert ok.ok and neg.ok and neg.name == "c~neg" and neg.counterexample == "trace"
    _, neg2 = run_one(missed)
    assert neg2.status is Status.NOT_REFUTED and not neg2.ok and "not caught" in neg2.counterexample
    assert neg.status is Status.REFUTED and neg.verdict == "refuted" and neg.control_of == "c"


def test_run_all_streams_records_in_order() -> None:
    seen: list[str] = []
    obs = [_ob(n, lambda t: proved()) for n in ("a", "b")]
    results = run_all(obs, on_result=lambda r: seen.append(r.name))
    assert [r.name for r in results] == seen == ["a", "b"]


def test_format_result_is_one_fixed_format_line() -> None:
    (r,) = run_one(_ob("x.y", lambda t: refuted("line one\nline two")))
    line = format_result(r)
    assert "\n" not in line
    assert line.startswith("counterexample") and "unbounded" in line
    assert "x.y" in line and "line one" in line
    assert r.as_dict()["status"] == "counterexample"


def test_a_control_with_its_own_bounds_reports_them() -> None:
    ob = Obligation(
        "b",
        "s",
        lambda t: proved(),
        lambda t: refuted("x"),
        kind=Kind.EXPLORED,
        bounds="3 slots",
        negative_bounds="2 slots",
    )
    claim, control = run_one(ob)
    assert (claim.bounds, control.bounds) == ("3 slots", "2 slots")
