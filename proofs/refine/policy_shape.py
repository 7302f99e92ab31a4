"""The policy's part of a refinement shape: the LRU's or ARC's own state, bound to the code.

A shape of the manager relation (`manager_shape`) may carry a policy's relation
composed with it: the LRU's (`z3.policy_lru.compose`, the relation `policy.lru.*`
prove) or ARC's (`z3.policy_arc.compose`, `policy.arc.*`: T1/T2/B1/B2 membership,
the idle view, the ghost lists' order as chains, the target within
`TARGET_TOLERANCE`; `arc_part`). The concrete LRU state is read off the snapshot's
evictable list (least recent first):

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
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import z3

from evictable.model.types import ArcPolicySnapshot, LruPolicySnapshot, ManagerSnapshot
from evictable.proofs.z3.manager_call import Choice, Step
from evictable.proofs.z3.manager_state import BoundedWorld, MState, invariant
from evictable.proofs.z3.policy_arc import ARC_HOOKS, ArcHooks, ArcState, ArcStep
from evictable.proofs.z3.policy_arc import compose as arc_compose
from evictable.proofs.z3.policy_arc import fresh as arc_fresh
from evictable.proofs.z3.policy_arc import invariant as arc_invariant
from evictable.proofs.z3.policy_lru import LRU_HOOKS, LruHooks, PolicyStep, compose, fresh
from evictable.proofs.z3.policy_lru import invariant as lru_invariant
from evictable.proofs.z3.solver import check, unknown

__all__ = [
    "TARGET_TOLERANCE",
    "PolicyPart",
    "arc_part",
    "arc_post_values",
    "arc_pre_values",
    "literal",
    "lru_part",
    "lru_post_values",
    "lru_pre_values",
    "policy_keys",
    "policy_of",
    "policy_values",
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
    step: PolicyStep | ArcStep
    facts: list[Term]
    pre_terms: dict[str, Term]
    observed: dict[str, Term]
    invariant: dict[str, Term]
    _literals: dict[tuple[Any, ...], Term] = field(default_factory=dict)

    def post_literals(self, values: dict[str, Any]) -> list[Term]:
        """The observed fields as literals of the post-state (the LRU's ranks as a
        chain; ARC's membership as literals, ghost ranks as chains, the target within
        `TARGET_TOLERANCE` of the float the code holds)."""
        if isinstance(self.step, ArcStep):
            return self._arc_literals(self.step.post, values)
        post = self.step.post
        ranks = {k: r for k, r in ((int(n[9:-1]), v) for n, v in values.items()) if r >= 0}
        order = sorted(ranks, key=ranks.__getitem__)
        keys = sorted(int(n[9:-1]) for n in values)
        out = [
            self._lit(("listed", k, k in ranks), _member, post.listed, k, k in ranks) for k in keys
        ]
        for a, b in itertools.pairwise(order):
            out.append(self._lit(("older", a, b), _older, post.stamp, a, b))
        return out

    def _arc_literals(self, post: ArcState, values: dict[str, Any]) -> list[Term]:
        out: list[Term] = []
        for name, v in values.items():
            if name == "arc.target":
                lit = self._literals.get(("target", v))
                if lit is None:
                    t = z3.RealVal(str(Fraction(v)))
                    eps = z3.RealVal(str(TARGET_TOLERANCE))
                    lit = z3.And(post.target >= t - eps, post.target <= t + eps)
                    self._literals["target", v] = lit
                out.append(lit)
            elif ".rank" not in name:
                out.append(self._lit((name, bool(v)), literal, self.observed[name], bool(v)))
        for lst, stamp in (
            ("b1", post.gstamp),
            ("b2", post.gstamp),
            ("t1", post.rstamp),
            ("t2", post.rstamp),
        ):
            ranks = {
                int(n[len(f"arc.{lst}.rank[") : -1]): r
                for n, r in values.items()
                if n.startswith(f"arc.{lst}.rank[") and r >= 0
            }
            order = sorted(ranks, key=ranks.__getitem__)
            for a, b in itertools.pairwise(order):
                out.append(self._lit((lst, a, b), _older, stamp, a, b))
        return out

    def _lit(self, key: tuple[Any, ...], build: Callable[..., Term], *args: Any) -> Term:
        """The literal named `key`, `build(*args)` the first time only (building a Z3
        term costs more than the check that uses it)."""
        lit = self._literals.get(key)
        if lit is None:
            lit = self._literals[key] = build(*args)
        return lit


def literal(term: Term, value: bool) -> Term:
    """`term` if `value`, else its negation (a Boolean observation as a literal)."""
    return term if value else z3.Not(term)


def _member(fn: Callable[[int], Term], k: int, value: bool) -> Term:
    return literal(fn(k), value)


def _older(stamp: Callable[[int], Term], a: int, b: int) -> Term:
    return stamp(a) < stamp(b)


TARGET_TOLERANCE = Fraction(1, 10**9)
"""ARC's target is a float in the code and a rational in the relation: they must agree
within this (the code rounds each ghost hit's ratio)."""


def policy_of(snap: ManagerSnapshot) -> str | None:
    """The policy whose own state the refinement binds ("lru", "arc"), or None."""
    if isinstance(snap.policy, LruPolicySnapshot):
        return "lru"
    if isinstance(snap.policy, ArcPolicySnapshot) and snap.policy.evictable is not None:
        return "arc"
    return None


def arc_part(
    world: BoundedWorld, step: Step, c: Choice, pre: MState, hooks: ArcHooks = ARC_HOOKS
) -> PolicyPart:
    """ARC composed with `step` in `world` (`z3.policy_arc`): membership, idle view,
    target and the order of every list bound (T1's and T2's by the resident stamps,
    B1's and B2's by the ghost stamps)."""
    p0 = arc_fresh(world, "pre")
    ps = arc_compose(world, step, c, p0, pre.cap, hooks)
    post = ps.post
    keys = range(world.keys)
    pre_terms: dict[str, Term] = {
        "arc.target": p0.target,
        "arc.gclock": p0.gclock,
        "arc.rclock": p0.rclock,
    }
    observed: dict[str, Term] = {"arc.target": post.target}
    for k in keys:
        for f in ("t1", "t2", "b1", "b2", "idle"):
            pre_terms[f"arc.{f}[{k}]"] = getattr(p0, f)(k)
            observed[f"arc.{f}[{k}]"] = getattr(post, f)(k)
        pre_terms[f"arc.gstamp[{k}]"] = p0.gstamp(k)
        pre_terms[f"arc.rstamp[{k}]"] = p0.rstamp(k)
        for g, stamp in (
            ("b1", post.gstamp),
            ("b2", post.gstamp),
            ("t1", post.rstamp),
            ("t2", post.rstamp),
        ):
            fn = getattr(post, g)
            older = [z3.If(z3.And(fn(u), stamp(u) < stamp(k)), 1, 0) for u in keys]
            observed[f"arc.{g}.rank[{k}]"] = z3.If(fn(k), z3.Sum(older), -1)
    inv = {**invariant(world, pre), **arc_invariant(world, pre, p0)}
    return PolicyPart("arc", ps, ps.facts, pre_terms, observed, inv)


def arc_pre_values(snap: ManagerSnapshot, index: dict[Hashable, int], keys: int) -> dict[str, Any]:
    """The snapshot's ARC state as values of `arc_part`'s pre-state fields."""
    a = _arc(snap)
    out: dict[str, Any] = {"arc.target": float(a.target)}
    lists = {"t1": a.t1, "t2": a.t2, "b1": a.b1, "b2": a.b2}
    idle = {index[k] for k in a.evictable or ()}
    pos = {index[k]: i for g in (a.b1, a.b2) for i, k in enumerate(g)}
    rpos = {index[k]: i for i, k in enumerate((*a.t1, *a.t2))}  # one stamping of both orders
    for k in range(keys):
        for f, entries in lists.items():
            out[f"arc.{f}[{k}]"] = any(index.get(e) == k for e in entries)
        out[f"arc.idle[{k}]"] = k in idle
        out[f"arc.gstamp[{k}]"] = pos.get(k, 0)
        out[f"arc.rstamp[{k}]"] = rpos.get(k, 0)
    out["arc.gclock"] = max(len(a.b1), len(a.b2))
    out["arc.rclock"] = len(a.t1) + len(a.t2)
    return out


def arc_post_values(snap: ManagerSnapshot, index: dict[Hashable, int], keys: int) -> dict[str, Any]:
    """The snapshot's ARC state as values of `arc_part`'s observed fields."""
    a = _arc(snap)
    out: dict[str, Any] = {"arc.target": a.target}
    lists = {"t1": a.t1, "t2": a.t2, "b1": a.b1, "b2": a.b2}
    idle = {index[k] for k in a.evictable or ()}
    for k in range(keys):
        for f, entries in lists.items():
            out[f"arc.{f}[{k}]"] = any(index.get(e) == k for e in entries)
        out[f"arc.idle[{k}]"] = k in idle
    for g in ("b1", "b2", "t1", "t2"):
        pos = {index[k]: i for i, k in enumerate(getattr(a, g))}
        for k in range(keys):
            out[f"arc.{g}.rank[{k}]"] = pos.get(k, -1)
    return out


def policy_values(
    policy: str,
    before: ManagerSnapshot,
    after: ManagerSnapshot,
    index: dict[Hashable, int],
    keys: int,
) -> tuple[dict[str, Any], dict[str, Any]] | str:
    """The policy part's pre-state and observed values of one call, or why not."""
    if policy_of(after) != policy:
        return f"the {policy} snapshot after the call is {after.policy!r}"
    if policy == "lru":
        return lru_pre_values(before, index, keys), lru_post_values(after, index, keys)
    return arc_pre_values(before, index, keys), arc_post_values(after, index, keys)


def policy_keys(snap: ManagerSnapshot) -> tuple[Hashable, ...]:
    """The keys a policy snapshot names besides the resident ones (ARC's ghosts)."""
    if isinstance(snap.policy, ArcPolicySnapshot):
        return (*snap.policy.b1, *snap.policy.b2)
    return ()


def _arc(snap: ManagerSnapshot) -> ArcPolicySnapshot:
    if not isinstance(snap.policy, ArcPolicySnapshot):
        raise TypeError(f"not an ARC snapshot: {snap.policy!r}")
    return snap.policy


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
    step_of_policy: PolicyStep | ArcStep,
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
    which = "LRU" if isinstance(step_of_policy, PolicyStep) else "ARC"
    rule = f"policy.{which.lower()}'s hook relations composed with it"
    if z3.is_false(model.eval(c.supplied, model_completion=True)):
        return f"the {which} relation ({rule}) returns None here"
    return f"the {which} relation ({rule}) evicts [{', '.join(theirs)}]"
