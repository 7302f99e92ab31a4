"""Discharging a claim with Z3, bounded by work: validity by refuting the negation,
and satisfiability.

A claim is *proved* when its negation is unsatisfiable; the model of a satisfiable
negation is the counterexample, rendered by the caller. Every query is bounded by a
**resource limit** (`rlimit`), Z3's deterministic count of its own work: the same
query gives the same answer on a busy machine and on an idle one. A query that
reaches it is `unknown` ("rlimit N reached"), which counts as a failure. The wall
clock is only a hang backstop (the running obligation's, `base.records.remaining`):
a query stopped by it is `unknown` too, and says so.

`RLIMIT` is the default limit per query, calibrated from the work the suite's
queries do (`python -m tools.rlimits` measures every query of `evictable verify`);
`rlimit_scope(n)` sets another for the queries made inside it. `work()` collects what
the queries of a block used, for the records' figures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import Any

import z3
from z3 import z3core

from evictable.proofs.base.records import Outcome, Status, aimed, proved, refuted, remaining

__all__ = [
    "RLIMIT",
    "VACUITY_RLIMIT",
    "Witness",
    "Work",
    "check",
    "check_assumed",
    "decided",
    "evidenced",
    "ground_solver",
    "lia_solver",
    "nonvacuous",
    "refute_claims",
    "rlimit",
    "rlimit_scope",
    "searching",
    "solver",
    "unknown",
    "work",
    "z3_sat",
    "z3_valid",
]

RLIMIT = 1_000_000_000
"""The default resource limit of one query: about 15 times the most any query of
`evictable verify --thorough` uses (68M units, `bmc.manager` at depth 6), 58 times
the most at the default level (docs/proofs.md, "Work bounds")."""

_RLIMIT: ContextVar[int] = ContextVar("evictable_z3_rlimit", default=RLIMIT)


@dataclass
class Work:
    """What the queries of a block did: how many, the rlimit units they used in all
    and at most in one, and the limit they ran under."""

    queries: int = 0
    used: int = 0
    peak: int = 0
    limit: int = RLIMIT
    proofs: int = 0
    """The queries made to decide the claim (not to search for a readable
    counterexample first: `searching`)."""

    def line(self) -> str:
        return (
            f"z3: {self.queries} quer{'y' if self.queries == 1 else 'ies'}, "
            f"rlimit used {self.used:,} (at most {self.peak:,} of {self.limit:,} per query)"
        )


_WORK: ContextVar[Work | None] = ContextVar("evictable_z3_work", default=None)
_SEARCHING: ContextVar[bool] = ContextVar("evictable_z3_searching", default=False)


@contextmanager
def searching() -> Iterator[None]:
    """Queries made inside the block look for a counterexample in a finite world
    before the proof: they decide nothing (`Work.proofs` does not count them)."""
    token = _SEARCHING.set(True)
    try:
        yield
    finally:
        _SEARCHING.reset(token)


def rlimit() -> int:
    """The resource limit of the queries made now."""
    return _RLIMIT.get()


@contextmanager
def rlimit_scope(limit: int) -> Iterator[None]:
    """Queries made inside the block run under `limit` (a positive int)."""
    if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
        raise ValueError(f"an rlimit is a positive int, got {limit!r}")
    token = _RLIMIT.set(limit)
    try:
        yield
    finally:
        _RLIMIT.reset(token)


@contextmanager
def work() -> Iterator[Work]:
    """Collect the work of the queries made inside the block (nested blocks each see
    their own)."""
    w = Work(limit=rlimit())
    token = _WORK.set(w)
    try:
        yield w
    finally:
        _WORK.reset(token)


def solver(backstop_s: float) -> Any:
    """A fresh solver under the current rlimit, with the hang backstop as its timeout."""
    s = z3.Solver()
    s.set("rlimit", rlimit())
    s.set("timeout", max(1, int(remaining(backstop_s) * 1000)))
    return s


def lia_solver(backstop_s: float) -> Any:
    """A fresh incremental solver for quantifier-free linear integer arithmetic (a
    finite world unrolled: `bmc`), under the current rlimit. Z3's solver for the logic
    skips the general one's theory dispatch (on `bmc.manager`, 25-45% less work); a
    formula outside the logic comes back `unknown`, a failure like any other."""
    s = z3.SolverFor("QF_LIA")
    s.set("rlimit", rlimit())
    s.set("timeout", max(1, int(remaining(backstop_s) * 1000)))
    return s


def ground_solver(backstop_s: float) -> Any:
    """A solver for formulas that become ground under the assumptions of each check
    (a relation checked on concrete values, many times): it simplifies and solves the
    equalities away before the SMT core, under the current rlimit."""
    s = z3.Then("simplify", "propagate-values", "solve-eqs", "smt").solver()
    s.set("rlimit", rlimit())
    s.set("timeout", max(1, int(remaining(backstop_s) * 1000)))
    return s


def _count(s: Any) -> int:
    """The solver's "rlimit count" statistic (0 before its first check), read through
    the C API: the Python `Statistics` wrapper lists every key first, which costs more
    than a small check of the refinement oracle."""
    ctx = s.ctx.ref()
    stats = z3core.Z3_solver_get_statistics(ctx, s.solver)
    z3core.Z3_stats_inc_ref(ctx, stats)
    try:
        for i in reversed(range(z3core.Z3_stats_size(ctx, stats))):  # the keys are sorted
            if z3core.Z3_stats_get_key(ctx, stats, i) == "rlimit count":
                if z3core.Z3_stats_is_uint(ctx, stats, i):
                    return int(z3core.Z3_stats_get_uint_value(ctx, stats, i))
                return int(z3core.Z3_stats_get_double_value(ctx, stats, i))
        return 0
    finally:
        z3core.Z3_stats_dec_ref(ctx, stats)


def _recorded(s: Any, query: Callable[[], Any]) -> Any:
    """Run `query` on `s`, its work recorded in the enclosing `work()` block."""
    before = _count(s)
    result = query()
    used = max(0, _count(s) - before)
    w = _WORK.get()
    if w is not None:
        w.queries += 1
        w.used += used
        w.peak = max(w.peak, used)
        if not _SEARCHING.get():
            w.proofs += 1
    return result


def check(s: Any, *assumptions: Any) -> Any:
    """`s.check(*assumptions)`, its work recorded in the enclosing `work()` block."""
    return _recorded(s, lambda: s.check(*assumptions))


def check_assumed(s: Any, literals: Sequence[Any]) -> Any:
    """`check(s, *literals)` for Boolean literals already built (no casts: the cost of
    a call the refinement oracle makes thousands of times), its work recorded alike."""
    array = (z3.Ast * len(literals))(*[lit.as_ast() for lit in literals])
    code = _recorded(
        s, lambda: z3core.Z3_solver_check_assumptions(s.ctx.ref(), s.solver, len(literals), array)
    )
    return z3.CheckSatResult(code)


def unknown(s: Any, what: str = "z3") -> Outcome:
    """The outcome of a query that returned `unknown`, saying which limit it met."""
    reason = s.reason_unknown()
    if "resource limit" in reason or "rlimit" in reason:
        text = f"{what}: rlimit {rlimit():,} per query reached (a work bound, not time)"
    elif "timeout" in reason or "canceled" in reason:
        text = f"{what}: hang backstop reached (the wall clock, not a finding): {reason}"
    else:
        text = f"{what} returned unknown: {reason}"
    return Outcome(Status.UNKNOWN, text)


Witness = Callable[[], Sequence[Any]]
"""A finite instance of a quantified query's assumptions: the same builder run in a
finite world, so that a model of it is a model of the query's assumptions (its keys
and slots some of the unboundedly many; a finite world only adds clauses)."""

VACUITY_RLIMIT = 200_000_000
"""The resource limit of one vacuity check (the assumptions alone, quantifier-free):
a fifth of a query's, far above what any of them uses (a query stated in the wrong
world comes back `unknown` here, a failure, rather than running long)."""


def _satisfiable(assumptions: Sequence[Any], backstop_s: float, what: str) -> Outcome | None:
    """None when `assumptions` have a model; else the outcome that says they do not
    (`vacuous`) or that it is undecided (`unknown`)."""
    s = solver(backstop_s)
    s.set("rlimit", min(rlimit(), VACUITY_RLIMIT))
    s.add(*assumptions)
    r = check(s)
    if r == z3.sat:
        return None
    if r == z3.unsat:
        return Outcome(
            Status.VACUOUS,
            f"{what}: its assumptions are unsatisfiable, so it proves nothing (vacuous)",
        )
    return unknown(s, f"{what} (the vacuity check of its assumptions)")


def nonvacuous(
    assumptions: Sequence[Any], backstop_s: float, what: str, witness: Witness | None = None
) -> Outcome | None:
    """The vacuity check every proof makes (`z3_valid`, `refute_claims`): None when the
    assumptions have a model -- checked on `witness()` for a quantified query, on the
    assumptions themselves otherwise -- else `vacuous` (or `unknown`)."""
    return _satisfiable(witness() if witness is not None else assumptions, backstop_s, what)


def z3_valid(
    claim: Any,
    backstop_s: float,
    describe: Callable[[Any], str],
    assumptions: Sequence[Any] = (),
    witness: Witness | None = None,
) -> Outcome:
    """Prove `assumptions ⇒ claim` by refuting its negation; a proof whose assumptions
    are unsatisfiable is `vacuous` (`nonvacuous`: pass `witness` for a quantified
    query).

    `describe(model)` renders a counterexample model as readable text.
    """
    s = solver(backstop_s)
    s.add(*assumptions)
    s.add(z3.Not(claim))
    r = check(s)
    if r == z3.unsat:
        return nonvacuous(assumptions, backstop_s, "the query", witness) or proved()
    if r == z3.sat:
        return refuted(describe(s.model()))
    return unknown(s)


def refute_claims(
    claims: Mapping[str, Any],
    assumptions: Sequence[Any],
    backstop_s: float,
    what: str,
    describe: Callable[[Any], str],
    witness: Witness | None = None,
    search: bool = False,
    new_solver: Callable[[float], Any] | None = None,
) -> Outcome:
    """Prove `assumptions ⇒` every claim at once; a counterexample is rendered by
    `describe(model)` and names the claims the model violates (read off the model:
    quantifier-free claims, a finite world). `what` names the query if it comes
    back `unknown`; a proof whose assumptions are unsatisfiable is `vacuous`
    (`nonvacuous`: pass `witness` for a quantified query). `search`: the query only
    looks for a counterexample before a proof (`searching`). `new_solver` makes the
    solver (default `solver`; `ground_solver` for a quantifier-free query whose
    terms are mostly definitions)."""
    if search and not _SEARCHING.get():
        with searching():
            return refute_claims(
                claims, assumptions, backstop_s, what, describe, witness, True, new_solver
            )
    claims = aimed(claims)  # a control's targets only, when it names some
    s = (new_solver or solver)(backstop_s)
    s.add(*assumptions)
    s.add(z3.Not(z3.And(*claims.values())))
    r = check(s)
    if r == z3.unsat:  # a search decides nothing: the proof after it checks vacuity
        return (None if search else nonvacuous(assumptions, backstop_s, what, witness)) or proved()
    if r == z3.unknown:
        return unknown(s, what)
    model = s.model()
    failed = [n for n, c in claims.items() if z3.is_false(model.eval(c, model_completion=True))]
    return refuted(f"{describe(model)}; violated: {', '.join(failed)}", failed)


def z3_sat(formulas: Sequence[Any], backstop_s: float, what: str = "formula") -> Outcome:
    """Non-vacuity: `formulas` are jointly satisfiable (PROVED), else COUNTEREXAMPLE."""
    s = solver(backstop_s)
    s.add(*formulas)
    r = check(s)
    if r == z3.sat:
        return proved()
    if r == z3.unsat:
        return refuted(f"{what} is unsatisfiable (vacuous)")
    return unknown(s)


def decided(check: Callable[[], Outcome], what: str) -> Outcome:
    """`check()`, which may say PROVED only when one of its own queries decided it
    (beyond finite-world searches): else an `error` naming `what`. Its queries count
    toward the enclosing block's work too (a part of a record's proof: each part must
    be decided, not only the record as a whole)."""
    outer = _WORK.get()
    with work() as w:
        out = check()
    if outer is not None:
        outer.queries += w.queries
        outer.used += w.used
        outer.peak = max(outer.peak, w.peak)
        outer.proofs += w.proofs
    if out.status is Status.PROVED and w.proofs == 0:
        return Outcome(
            Status.ERROR,
            f"{what}: said to hold, but no Z3 query decided it "
            f"({w.queries} search quer{'y' if w.queries == 1 else 'ies'} only)",
        )
    return out


def evidenced(check: Callable[[float], Outcome]) -> Callable[[float], Outcome]:
    """A Z3 record's check that may print `proved` only when a query decided it: a
    check that says it holds without having made one (beyond the finite-world
    searches) is an `error` -- a stubbed proof proves nothing (`decided`, for the
    record as a whole)."""

    def run(backstop_s: float) -> Outcome:
        return decided(partial(check, backstop_s), "the check")

    return run
