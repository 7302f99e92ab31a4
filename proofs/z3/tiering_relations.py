"""The tiering key relations as Z3 formulas over `proofs.z3.tiering`'s state.

`INVARIANTS` are the registry's key relations (`model.tiering_invariants`), by name;
their conjunction is the inductive invariant (`chunks_consistent` the auxiliary lemma the
others rest on). `STEP_CLAIMS` are claims about one kind of step (an evicted chunk was
idle; a reset leaves nothing). `sum_facts` is what the ghost counts are (sums over the
unbounded party sort). Each relation is stated `Over` every key and party (an
assumption) or at one key and party (a claim: its negation is ground, so a
counterexample names the relations it breaks). The invariant is always judged against
the reference CPU table (`proofs.z3.encode.REFERENCE_MACHINES`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import z3

from evictable.model.lifecycle import CpuState, Machine
from evictable.model.tiering_chunk import ChunkEvent
from evictable.proofs.z3.encode import REFERENCE_MACHINES, StateSort, inv_term
from evictable.proofs.z3.tiering import (
    Step,
    TState,
    is_state,
    key_sort,
    party_sort,
    readable,
)

__all__ = ["EVERY", "INVARIANTS", "STEP_CLAIMS", "Over", "at_some", "sum_facts"]

Term = Any


class Over:
    """How a relation's clauses are stated: for every key and party (`Over()`: an
    assumption), or at one key and party (`Over(p, x)`: a claim, whose negation is
    then ground, so a counterexample names the clauses it violates)."""

    def __init__(self, p: Term | None = None, x: Term | None = None) -> None:
        self.p, self.x = p, x

    def key(self, body: Callable[[Term], Term]) -> Term:
        if self.x is not None:
            return body(self.x)
        x = z3.Const("x", key_sort())
        return z3.ForAll([x], body(x))

    def pair(self, body: Callable[[Term, Term], Term]) -> Term:
        if self.p is not None and self.x is not None:
            return body(self.p, self.x)
        p, x = z3.Const("p", party_sort()), z3.Const("x", key_sort())
        return z3.ForAll([p, x], body(p, x))


def at_some(name: str) -> Over:
    """Fresh constants for a claim: one key and one party (any of them)."""
    return Over(z3.Const(f"{name}.party", party_sort()), z3.Const(f"{name}.key", key_sort()))


EVERY = Over()


def _chunks_consistent(m: Machine, ss: StateSort, s: TState, q: Over = EVERY) -> Term:
    """The CPU block invariants per chunk; owners only on a PENDING chunk, pins only on a
    LOADING one, whose ref count is its number of pins; the ghost counts are sums of
    non-negative entries."""

    def pending(x: Term) -> Term:
        return is_state(ss, s, x, CpuState.PENDING)

    def loading(x: Term) -> Term:
        return is_state(ss, s, x, CpuState.LOADING)

    return z3.And(
        q.key(
            lambda x: z3.And(
                inv_term(m, ss, s.block(x)),
                z3.Implies(z3.Not(pending(x)), s.npo(x) == 0),
                z3.Implies(z3.Not(loading(x)), s.npin(x) == 0),
                z3.Implies(loading(x), s.ref(x) == s.npin(x)),
            )
        ),
        q.pair(
            lambda p, x: z3.And(
                s.po(p, x) >= 0,
                s.po(p, x) <= s.npo(x),
                s.pin(p, x) >= 0,
                s.pin(p, x) <= s.npin(x),
                s.claim(p, x) >= 0,
                s.live(p, x) >= 0,
            )
        ),
    )


def _resident(m: Machine, ss: StateSort, s: TState, k: Term) -> Term:
    """Resident in the reference table (the specification a variant is judged by)."""
    spec = REFERENCE_MACHINES[m.name]
    return z3.Or(*[is_state(ss, s, k, x.state) for x in spec.states if x.resident], False)


def _pins_have_owners(m: Machine, ss: StateSort, s: TState, q: Over = EVERY) -> Term:
    """Every pin is held by a live party, and a resident chunk's positive ref count is
    its number of pins."""
    return z3.And(
        q.pair(lambda p, x: s.pin(p, x) <= s.live(p, x)),
        q.key(
            lambda x: z3.Implies(
                z3.And(_resident(m, ss, s, x), s.ref(x) > 0), s.ref(x) == s.npin(x)
            )
        ),
    )


def _owners_have_pins(m: Machine, ss: StateSort, s: TState, q: Over = EVERY) -> Term:
    """Every pin a live party holds is on the chunk."""
    del m, ss
    return q.pair(lambda p, x: s.live(p, x) <= s.pin(p, x))


def _one_pending_owner(m: Machine, ss: StateSort, s: TState, q: Over = EVERY) -> Term:
    """A PENDING chunk has exactly one pending owner."""
    del m
    return q.key(lambda x: z3.Implies(is_state(ss, s, x, CpuState.PENDING), s.npo(x) == 1))


def _pending_owners_live(m: Machine, ss: StateSort, s: TState, q: Over = EVERY) -> Term:
    """A PENDING chunk's owners are live claims on it, and every live claim owns a
    PENDING chunk."""
    del m
    return q.pair(
        lambda p, x: z3.And(
            s.po(p, x) <= s.claim(p, x),
            z3.Implies(
                s.claim(p, x) > 0,
                z3.And(is_state(ss, s, x, CpuState.PENDING), s.claim(p, x) <= s.po(p, x)),
            ),
        )
    )


def _no_stale_write(m: Machine, ss: StateSort, s: TState, q: Over = EVERY) -> Term:
    """A party that will write a chunk (a promotion job, a GPU store) writes only the
    chunk its key owns: PENDING under that party, at the slot the party recorded."""
    del m
    return q.pair(
        lambda p, x: z3.Implies(
            s.claim(p, x) > 0,
            z3.And(
                is_state(ss, s, x, CpuState.PENDING), s.po(p, x) > 0, s.jslot(p, x) == s.slot(x)
            ),
        )
    )


def _hits_stay_resident(m: Machine, ss: StateSort, s: TState, q: Over = EVERY) -> Term:
    """A key the open lookup hold reported HIT is still readable (resident, written) in
    the reference table."""
    states = readable(REFERENCE_MACHINES[m.name])
    return q.key(
        lambda x: z3.Implies(s.hit(x), z3.Or(*[is_state(ss, s, x, st) for st in states], False))
    )


def sum_facts(s: TState) -> list[Term]:
    """What the ghost counts are (the sum over the unbounded party sort of the
    per-party entries, which are non-negative): no two distinct parties' entries add up
    to more than the count. A fact of sums assumed of the pre-state (first-order logic
    has no sum over an unbounded sort); each step moves a count by exactly the change of
    the entries it changes (`_on_chunk`)."""
    p, q, x = z3.Const("p", party_sort()), z3.Const("q", party_sort()), z3.Const("x", key_sort())
    return [
        z3.ForAll(
            [p, q, x],
            z3.Implies(
                p != q,
                z3.And(s.po(p, x) + s.po(q, x) <= s.npo(x), s.pin(p, x) + s.pin(q, x) <= s.npin(x)),
            ),
        )
    ]


Invariant = Callable[[Machine, StateSort, TState, Over], Term]

INVARIANTS: Mapping[str, Invariant] = {
    "chunks_consistent": _chunks_consistent,
    "pins_have_owners": _pins_have_owners,
    "owners_have_pins": _owners_have_pins,
    "one_pending_owner": _one_pending_owner,
    "pending_owners_live": _pending_owners_live,
    "no_stale_write": _no_stale_write,
    "hits_stay_resident": _hits_stay_resident,
}
"""The key relations, by the registry's names (`model.tiering_invariants`); the
inductive invariant is their conjunction."""


# ------------------------------------------------------------------ step claims


def _only_idle_evicted(m: Machine, ss: StateSort, step: Step, q: Over = EVERY) -> Term | None:
    """An evicted chunk was READY: idle, unpinned, no pending owner."""
    del m, q
    if step.rule is None or step.rule.event is not ChunkEvent.EVICT:
        return None
    k, pre = step.key, step.pre
    return z3.And(is_state(ss, pre, k, CpuState.READY), pre.npin(k) == 0, pre.npo(k) == 0)


def _reset_left_nothing(m: Machine, ss: StateSort, step: Step, q: Over = EVERY) -> Term | None:
    """After a reset: no resident chunk, no owner or pin, no party's claim or pin."""
    del m
    if step.rule is None or step.rule.event is not ChunkEvent.RESET:
        return None
    s = step.post
    return z3.And(
        q.key(lambda x: z3.And(is_state(ss, s, x, CpuState.ABSENT), s.npo(x) == 0, s.npin(x) == 0)),
        q.pair(lambda p, x: z3.And(s.claim(p, x) == 0, s.live(p, x) == 0)),
    )


StepClaim = Callable[[Machine, StateSort, Step, Over], Term | None]

STEP_CLAIMS: Mapping[str, StepClaim] = {
    "only_idle_evicted": _only_idle_evicted,
    "reset_left_nothing": _reset_left_nothing,
}
"""Claims of one step (None: not about that step): the registry's log invariant
`only_idle_evicted` and the reset's postcondition `reset_left_nothing`."""
