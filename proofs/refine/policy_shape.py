"""The policy's part of a refinement shape: the LRU's own state, bound to the code.

A shape of the manager relation (`manager_shape`) may carry the LRU's relation
composed with it (`z3.policy_lru.compose`, the relation `policy.lru.*` prove). The
concrete LRU state is read off the snapshot's evictable list (least recent first):

* pre-state: `lru.listed[k]` (in the list), `lru.stamp[k]` (its position, 0 when not
  listed), `lru.clock` (the list's length) -- one stamping of the order; every other
  stamping of the same order gives the same post order, since the hook relations
  only compare stamps and add stamps above the clock;
* observed post-state: `lru.rank[k]`, the key's position in the list (-1 when not
  listed): the relation's rank is the number of listed keys with a smaller stamp.

The victims of a `prepare_store` are the call's inputs (read off the reply, in
order); the composed relation admits them only when they are the ones the LRU
chooses, and a None reply only when too few evictable keys lie outside the batch.
The policy's post-state is a term of the pre-state and the inputs (the hook
relations introduce no free symbol), so it is the only one the relation admits.
"""

from __future__ import annotations

import itertools
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import z3

from evictable.model.types import LruPolicySnapshot, ManagerSnapshot
from evictable.proofs.z3.manager_call import Choice, Step
from evictable.proofs.z3.manager_state import BoundedWorld, MState, invariant
from evictable.proofs.z3.policy_lru import LRU_HOOKS, LruHooks, PolicyStep, compose, fresh
from evictable.proofs.z3.policy_lru import invariant as lru_invariant
from evictable.proofs.z3.solver import check, unknown

__all__ = [
    "PolicyPart",
    "lru_part",
    "lru_post_values",
    "lru_pre_values",
    "policy_of",
    "policy_victims",
]

Term = Any


@dataclass
class PolicyPart:
    """The policy's terms in a shape: facts, pre-state and observed fields, invariant.

    The observed order is assumed as a chain (`post_literals`: each key's membership,
    and each listed key's stamp below the next one's), which fixes the ranks given
    distinct stamps; the rank terms (`observed`) serve the diagnosis."""

    name: str
    step: PolicyStep
    facts: list[Term]
    pre_terms: dict[str, Term]
    observed: dict[str, Term]
    invariant: dict[str, Term]
    _literals: dict[tuple[int, int], Term] = field(default_factory=dict)

    def post_literals(self, values: dict[str, Any]) -> list[Term]:
        """The observed ranks (`lru_post_values`) as literals of the post-state."""
        post = self.step.post
        ranks = {k: r for k, r in ((int(n[9:-1]), v) for n, v in values.items()) if r >= 0}
        order = sorted(ranks, key=ranks.__getitem__)
        keys = sorted(int(n[9:-1]) for n in values)
        out = [
            self._lit(k, -1, post.listed(k) if k in ranks else z3.Not(post.listed(k))) for k in keys
        ]
        for a, b in itertools.pairwise(order):
            out.append(self._lit(a, b, post.stamp(a) < post.stamp(b)))
        return out

    def _lit(self, a: int, b: int, term: Term) -> Term:
        key = (a, b) if b >= 0 else (a, -1 if z3.is_not(term) else -2)
        lit = self._literals.get(key)
        if lit is None:
            lit = self._literals[key] = term
        return lit


def policy_of(snap: ManagerSnapshot) -> str | None:
    """The policy whose own state the refinement binds ("lru"), or None."""
    return "lru" if isinstance(snap.policy, LruPolicySnapshot) else None


def lru_part(
    world: BoundedWorld, step: Step, c: Choice, pre: MState, hooks: LruHooks = LRU_HOOKS
) -> PolicyPart:
    """The LRU composed with `step` in `world` (module docstring)."""
    p0 = fresh(world, "pre")
    ps = compose(world, step, c, p0, hooks)
    post = ps.post
    keys = range(world.keys)
    pre_terms: dict[str, Term] = {}
    observed: dict[str, Term] = {}
    for k in keys:
        pre_terms[f"lru.listed[{k}]"] = p0.listed(k)
        pre_terms[f"lru.stamp[{k}]"] = p0.stamp(k)
        older = [z3.If(z3.And(post.listed(u), post.stamp(u) < post.stamp(k)), 1, 0) for u in keys]
        observed[f"lru.rank[{k}]"] = z3.If(post.listed(k), z3.Sum(older), -1)
    pre_terms["lru.clock"] = p0.clock
    inv = {**invariant(world, pre), **lru_invariant(world, pre, p0)}
    return PolicyPart("lru", ps, ps.facts, pre_terms, observed, inv)


def lru_pre_values(snap: ManagerSnapshot, index: dict[Hashable, int], keys: int) -> dict[str, Any]:
    """The snapshot's LRU list as values of `lru_part`'s pre-state fields."""
    order = _order(snap)
    pos = {index[k]: i for i, k in enumerate(order)}
    out: dict[str, Any] = {}
    for k in range(keys):
        out[f"lru.listed[{k}]"] = k in pos
        out[f"lru.stamp[{k}]"] = pos.get(k, 0)
    out["lru.clock"] = len(order)
    return out


def lru_post_values(snap: ManagerSnapshot, index: dict[Hashable, int], keys: int) -> dict[str, Any]:
    """The snapshot's LRU list as values of `lru_part`'s observed fields."""
    pos = {index[k]: i for i, k in enumerate(_order(snap))}
    return {f"lru.rank[{k}]": pos.get(k, -1) for k in range(keys)}


def _order(snap: ManagerSnapshot) -> tuple[Hashable, ...]:
    if not isinstance(snap.policy, LruPolicySnapshot):
        raise TypeError(f"not an LRU snapshot: {snap.policy!r}")
    return snap.policy.evictable


def policy_victims(
    solver: Any,
    step: Step,
    c: Choice,
    literals: list[Term],
    observed: tuple[list[Hashable], bool],
    names: dict[int, str],
) -> str:
    """What the composed relation does instead of a `prepare_store`'s victims (or its
    None): the victims the LRU relation chooses from the same pre-state and batch
    (`literals` fix those, not the victims), or that it returns None."""
    del observed
    r = check(solver, *literals)
    if r == z3.unknown:
        raise RuntimeError(f"prepare_store: not decided: {unknown(solver).detail}")
    if r != z3.sat:
        return "the relation admits no step from this state (it is not total here)"
    model = solver.model()
    acts = [a for a in step.actors if z3.is_true(model.eval(a.active, model_completion=True))]
    theirs = [
        names.get(model.eval(a.key, model_completion=True).as_long(), "?")
        for a in acts
        if a.event.name == "EVICT"
    ]
    rule = "policy.lru's hook relations composed with it"
    if z3.is_false(model.eval(c.supplied, model_completion=True)):
        return f"the LRU relation ({rule}) returns None here"
    return f"the LRU relation ({rule}) evicts [{', '.join(theirs)}]"
