"""The policies' own state composed with the manager relation, as Z3 obligations.

`policy.lru.<op>`: for every operation of the manager relation
(`manager_ops.relation`) composed with the LRU's hook relations
(`proofs.z3.policy_lru.compose`): from any state satisfying the manager invariant
and the LRU's (the list is the evictable set, stamps below the clock and distinct),
with any number of keys (an uninterpreted sort) and any batch of up to B keys, the
LRU's invariant holds after the call and the call's policy claims hold (victims are
evictable keys outside the batch, least recent first, and no evictable key outside
the batch is older than a victim; keys that became evictable are the most recent;
a touch leaves its first listed key the most recent). As `manager.consecution.*`,
a counterexample is sought first in a finite world (`manager.decide`).
"""

from __future__ import annotations

from typing import Any

from evictable.model.lifecycle import Machine
from evictable.proofs.base.records import Outcome, Status, proved
from evictable.proofs.z3.manager import Query, decide, failed_claims, finite_witness
from evictable.proofs.z3.manager_ops import MANAGER, choice, relation
from evictable.proofs.z3.manager_render import render_step
from evictable.proofs.z3.manager_state import UNBOUNDED, BoundedWorld, World, invariant
from evictable.proofs.z3.policy_arc import ARC_HOOKS, ArcHooks
from evictable.proofs.z3.policy_arc import claims as arc_claims
from evictable.proofs.z3.policy_arc import compose as arc_compose
from evictable.proofs.z3.policy_arc import fresh as arc_fresh
from evictable.proofs.z3.policy_arc import invariant as arc_invariant
from evictable.proofs.z3.policy_lru import LRU_HOOKS, LruHooks, claims, compose, fresh, ground
from evictable.proofs.z3.policy_lru import invariant as lru_invariant
from evictable.proofs.z3.solver import refute_claims

__all__ = ["arc_query", "check_arc", "check_lru", "lru_query"]

Term = Any


def lru_query(machine: Machine, op: str, batch: int, hooks: LruHooks, world: World) -> Query:
    """The claims of `op` composed with the LRU (`hooks`) in `world`, the assumptions
    (both invariants before, both relations) and a renderer."""
    pre = world.fresh("pre")
    c, facts = choice(world, "in", batch)
    step = relation(world, machine, op, pre, c, "op", MANAGER)
    p0 = fresh(world, "pre")
    ps = compose(world, step, c, p0, hooks)
    assumptions = [
        *invariant(world, pre).values(),
        *lru_invariant(world, pre, p0).values(),
        *facts,
        *step.facts,
        *ps.facts,
    ]
    # The ground instances the unbounded check needs (no instantiation search), stated
    # in every world: consequences of the facts above, so a finite world's model of
    # the assumptions (the unbounded query's vacuity witness) satisfies them too.
    probe = world.key("probe")
    terms = [probe, *c.keys, *c.victims]
    assumptions += [world.key_facts(probe), *ground(pre, p0, terms), *ps.instances(terms)]
    every_key = None if world.bounded else probe  # "every key" said of an arbitrary one
    out = {**lru_invariant(world, step.post, ps.post), **claims(world, step, c, ps, every_key)}
    return out, assumptions, lambda m: render_step(m, world, step)


def check_lru(
    machine: Machine,
    op: str,
    batch: int,
    backstop_s: float,
    hooks: LruHooks = LRU_HOOKS,
    search: bool = True,
) -> Outcome:
    """`op` composed with the LRU keeps the LRU's invariant and claims (module
    docstring), for calls of up to `batch` keys, any number of keys. `search`: look
    for a readable counterexample in a finite world first (`manager.decide`; a
    control does, to show one), else go to the unbounded world at once (where a
    counterexample names the failing claims)."""

    def make(w: World, b: int) -> Query:
        return lru_query(machine, op, b, hooks, w)

    if search:
        return decide(make, batch, backstop_s)
    claims, assumptions, _ = make(UNBOUNDED, batch)
    return failed_claims(claims, assumptions, backstop_s, finite_witness(make, batch))


# ------------------------------------------------------------------ ARC


def arc_query(machine: Machine, op: str, world: BoundedWorld, batch: int, hooks: ArcHooks) -> Query:
    """The claims of `op` composed with ARC (`hooks`) in the finite `world`."""
    pre = world.fresh("pre")
    c, facts = choice(world, "in", batch)
    step = relation(world, machine, op, pre, c, "op", MANAGER)
    p0 = arc_fresh(world, "pre")
    ps = arc_compose(world, step, c, p0, pre.cap, hooks)
    assumptions = [
        *invariant(world, pre).values(),
        *arc_invariant(world, pre, p0).values(),
        *facts,
        *step.facts,
        *ps.facts,
    ]
    out = {**arc_invariant(world, step.post, ps.post), **arc_claims(world, step, c, ps)}
    return out, assumptions, lambda m: render_step(m, world, step)


def check_arc(
    machine: Machine,
    op: str,
    world: BoundedWorld,
    batch: int,
    backstop_s: float,
    hooks: ArcHooks = ARC_HOOKS,
) -> Outcome:
    """`op` composed with ARC keeps ARC's invariant and claims (`z3.policy_arc`) in
    the finite `world`, calls of up to `batch` keys."""
    claims_, assumptions, describe = arc_query(machine, op, world, batch, hooks)
    out = refute_claims(claims_, assumptions, backstop_s, f"policy.arc.{op}", describe)
    if out.status is Status.PROVED:
        return proved(f"{world.name}, batches of <= {batch} keys")
    return out
