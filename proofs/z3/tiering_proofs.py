"""The tiering key relations proved inductive over unboundedly many keys and parties.

The encoding is `proofs.z3.tiering` (steps from `CHUNK_RULES` and the CPU table's rows),
the relations `proofs.z3.tiering_relations`.
Three checks, each a `refute_claims` query per step (so each query's assumptions are
checked satisfiable: every row fires from some state satisfying the invariant, or the
record is `vacuous`):

* `check_initiation` -- a fresh cache satisfies every key relation;
* `check_consecution(name)` -- every step from a state satisfying all the key
  relations (the inductive invariant: their conjunction) keeps relation `name`;
* `check_step_claim(name)` -- a claim about one kind of step (`STEP_CLAIMS`: an
  evicted chunk was idle; a reset leaves nothing) holds on every step it is about,
  from a state satisfying the invariant.

The rules and the CPU table come in as arguments (a control passes a broken copy); the
invariant is always the reference one (`INVARIANTS`, and the CPU block invariants of
the reference table).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evictable.model.lifecycle import Machine
from evictable.model.tiering_chunk import WHOLE_CACHE, ChunkRule
from evictable.proofs.base.records import Outcome, Status, proved
from evictable.proofs.z3.encode import state_sort
from evictable.proofs.z3.solver import refute_claims
from evictable.proofs.z3.tiering import Step, fresh_state, initial_state, render, steps
from evictable.proofs.z3.tiering_relations import (
    EVERY,
    INVARIANTS,
    STEP_CLAIMS,
    at_some,
    sum_facts,
)

__all__ = ["check_consecution", "check_initiation", "check_step_claim"]

Term = Any


def check_initiation(m: Machine, backstop_s: float, extra: Sequence[Term] = ()) -> Outcome:
    """A fresh cache (every key in an initial state of `m`, no owner, pin, claim or
    hit) satisfies every key relation. `extra`: more assumptions (a test's)."""
    ss = state_sort(m)
    init, assumptions = initial_state(m, ss, "init")
    claims = {name: inv(m, ss, init, at_some(name)) for name, inv in INVARIANTS.items()}
    return refute_claims(
        claims,
        [*assumptions, *extra],
        backstop_s,
        "tiering.initiation",
        lambda _model: "a fresh cache",
    )


def _describe(step: Step, m: Machine) -> Any:
    ss = state_sort(m)

    def describe(model: Any) -> str:
        if step.rule is not None and step.rule.event in WHOLE_CACHE:
            return f"step {step.name} (every key at once)"
        return (
            f"step {step.name}: key k0 {render(model, ss, step.pre, step.key)} -> "
            f"{render(model, ss, step.post, step.key)}"
        )

    return describe


def _each_step(
    m: Machine,
    rules: Sequence[ChunkRule],
    backstop_s: float,
    record: str,
    claim_of: Any,
    extra: Sequence[Term],
) -> Outcome:
    ss = state_sort(m)
    pre = fresh_state(ss, "pre")
    invariant = [inv(m, ss, pre, EVERY) for inv in INVARIANTS.values()] + sum_facts(pre)
    decided = 0
    for step in steps(m, rules, pre):
        claims = claim_of(ss, step)
        if claims is None:
            continue
        out = refute_claims(
            claims,
            [*invariant, *step.assumptions, *extra],
            backstop_s,
            f"{record}, step {step.name}",
            _describe(step, m),
        )
        if out.status is not Status.PROVED:
            if out.status is Status.VACUOUS:
                return Outcome(out.status, f"step {step.name}: {out.counterexample}")
            return out
        decided += 1
    if not decided:
        return proved("no step this claim is about")
    return proved(
        f"{decided} step{'' if decided == 1 else 's'}, each a query over unboundedly many keys "
        "and parties"
    )


def check_consecution(
    m: Machine,
    rules: Sequence[ChunkRule],
    name: str,
    backstop_s: float,
    extra: Sequence[Term] = (),
) -> Outcome:
    """Every step (each row of each rule, the hold's lookup and close) from a state
    satisfying every key relation keeps relation `name`."""
    inv = INVARIANTS[name]
    return _each_step(
        m,
        rules,
        backstop_s,
        f"tiering.consecution.{name}",
        lambda ss, step: {name: inv(m, ss, step.post, at_some(name))},
        extra,
    )


def check_step_claim(
    m: Machine,
    rules: Sequence[ChunkRule],
    name: str,
    backstop_s: float,
    extra: Sequence[Term] = (),
) -> Outcome:
    """Step claim `name` (`STEP_CLAIMS`) holds on every step it is about, from a state
    satisfying every key relation. A check no step is about makes no query (and so is
    an error under `evidenced`)."""
    claim = STEP_CLAIMS[name]

    def claim_of(ss: Any, step: Step) -> dict[str, Term] | None:
        c = claim(m, ss, step, at_some(name))
        return None if c is None else {name: c}

    return _each_step(m, rules, backstop_s, f"tiering.{name}", claim_of, extra)
