"""The LRU policy's own state as Z3 state, driven by hook relations.

docs/semantics.md, "LRU", is the normative text; `model.lru.ModelLru` its executable
reference. The policy's state (`LruState`) is, per key, whether it is in the
evictable list (`listed`: the policy's own bit, apart from the manager's) and its
recency `stamp` (an integer, larger is more recent; the list is the listed keys in
stamp order, least recent first), and a `clock` above every listed stamp. Stamps,
not Z3 sequences: an order is what the list is, and stamps compare in quantifier-
friendly arithmetic (DESIGN §7).

Each hook of `impl.policies.base.CachePolicy` is a relation (`LruHooks`), applied
to one key when a condition holds:

* `became_evictable` (semantics "LRU": a key joins at the most-recent end):
  listed, stamped with the clock, the clock advances;
* `became_pinned` (its first load begins): it leaves the list;
* `stored` / `aborted` (a key became PENDING / a failed store left): the list never
  held the key, nothing changes;
* `touch` (keys walked last to first; each listed one moves to the most-recent end);
* `evict` (the victims leave the list), and the victims' choice (`choose`):
  victim j is a listed key outside the batch, none of the victims before it, and no
  such key is older -- the model's walk from the least-recent end, skipping
  protected keys;
* `clear` (`reset_cache`): the list empties.

`compose` drives them by the manager relation's step (`manager_ops.relation`): each
acting key's fired row owes the hook `model.machine.derive_hook` derives (FLAG_ON:
`became_evictable`, FLAG_OFF: `became_pinned`), a STORE_BEGIN is `stored`, a
STORE_ABORT `aborted`, an EVICT is `evict` (the policy removes its victims itself:
the row's DROP is no hook), `touch` gets the keys whose row fired, `reset_cache`
is `clear`. Order is the model manager's (`model.manager`): victims before the
keys stored, keys in input order.

`invariant` (the policy's data, each clause a claim): the list is exactly the keys
resident with ref count 0 (the evictable set), listed stamps are below the clock
and pairwise distinct. `claims` add per operation: the victims are evictable keys
outside the batch, in least-recent-first order, and no evictable key outside the
batch and the victims is older than a victim (the exact contract); keys that
became evictable are the most recent, in input order; after a touch the first
listed key touched is the most recent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import z3

from evictable.model.lifecycle import CpuEvent
from evictable.proofs.z3.manager_call import Choice, Step, owed_hooks, supplied_when_enough
from evictable.proofs.z3.manager_state import (
    REFERENCE,
    ArrayFn,
    BoundedWorld,
    Fn,
    MState,
    VecFn,
    World,
    resident,
)

__all__ = [
    "LRU_HOOKS",
    "LruHooks",
    "LruState",
    "PolicyStep",
    "claims",
    "compose",
    "evictable",
    "fresh",
    "invariant",
]

Term = Any


@dataclass(frozen=True)
class LruState:
    """The LRU policy's state as terms (see the module docstring)."""

    listed: Fn
    stamp: Fn
    clock: Term


def fresh(world: World, prefix: str) -> LruState:
    """Any LRU state (free terms), keys as `world` has them."""
    if isinstance(world, BoundedWorld):
        return LruState(
            VecFn(tuple(z3.Bool(f"{prefix}.lru.listed{i}") for i in range(world.keys))),
            VecFn(tuple(z3.Int(f"{prefix}.lru.stamp{i}") for i in range(world.keys))),
            z3.Int(f"{prefix}.lru.clock"),
        )
    sort = world.key("x").sort()
    return LruState(
        ArrayFn(z3.Array(f"{prefix}.lru.listed", sort, z3.BoolSort())),
        ArrayFn(z3.Array(f"{prefix}.lru.stamp", sort, z3.IntSort())),
        z3.Int(f"{prefix}.lru.clock"),
    )


# ------------------------------------------------------------------ the hooks

Hook1 = Callable[[LruState, Term, Term], LruState]


def _join(p: LruState, key: Term, when: Term) -> LruState:
    """`became_evictable`: listed at the most-recent end."""
    return LruState(
        p.listed.set(key, z3.BoolVal(True), when),
        p.stamp.set(key, p.clock, when),
        p.clock + z3.If(when, 1, 0),
    )


def _leave(p: LruState, key: Term, when: Term) -> LruState:
    """`became_pinned` / `evict`: out of the list."""
    return replace(p, listed=p.listed.set(key, z3.BoolVal(False), when))


def _nothing(p: LruState, key: Term, when: Term) -> LruState:
    """`stored` / `aborted`: the list never held a PENDING key."""
    del key, when
    return p


def _touch(p: LruState, keys: list[tuple[Term, Term]]) -> LruState:
    """`touch`: keys (with whether their row fired) walked last to first, each listed
    one moved to the most-recent end."""
    for key, moved in reversed(keys):
        p = _join(p, key, z3.And(moved, p.listed(key)))
    return p


@dataclass(frozen=True)
class LruHooks:
    """The hook relations (the default is the semantics; a control breaks one)."""

    became_evictable: Hook1 = _join
    became_pinned: Hook1 = _leave
    stored: Hook1 = _nothing
    aborted: Hook1 = _nothing
    evict: Hook1 = _leave
    touch: Callable[[LruState, list[tuple[Term, Term]]], LruState] = _touch
    clears: bool = True
    """False: `clear` keeps the list (a control)."""
    oldest_first: bool = True
    """False: the victims are chosen most recent first (a control)."""


LRU_HOOKS = LruHooks()


def victims_evictable_outside(step: Step, c: Choice, victims: list[tuple[Term, Term]]) -> Term:
    """Each victim (key, acts) that acts was evictable before the call and is none of
    the batch's keys (the safety contract's claim on a `prepare_store`)."""
    return z3.And(
        *[z3.Implies(a, z3.And(evictable(step.pre, v), c.outside(v))) for v, a in victims]
    )


def evictable(m: MState, key: Term) -> Term:
    """The evictable set of the semantics: resident with ref count 0."""
    return z3.And(resident(REFERENCE, m.state(key)), m.ref(key) == 0)


@dataclass
class PolicyStep:
    """The policy's part of one call: its post-state and the facts defining it."""

    pre: LruState
    post: LruState
    facts: list[Term]
    victims: list[tuple[Term, Term]]
    """The victims (key, acts) in the order chosen."""
    joined: list[tuple[Term, Term]]
    """The keys that became evictable (key, when), in order."""
    choices: list[tuple[Term, Callable[[Term], Term]]]
    """Per victim: when it acts, and "no eligible key `u` is older" as a function of
    `u` (the body of the quantified fact, to instantiate: `instances`)."""

    def instances(self, terms: list[Term]) -> list[Term]:
        """The quantified choice facts at `terms` (consequences of `facts`, stated
        ground so that the unbounded check needs no instantiation search)."""
        return [z3.Implies(a, body(t)) for a, body in self.choices for t in terms]


def compose(
    world: World,
    step: Step,
    c: Choice,
    pre: LruState,
    hooks: LruHooks = LRU_HOOKS,
) -> PolicyStep:
    """The LRU's step driven by the manager relation's `step` (module docstring)."""
    p = pre
    facts: list[Term] = []
    victims: list[tuple[Term, Term]] = []
    joined: list[tuple[Term, Term]] = []
    choices: list[tuple[Term, Callable[[Term], Term]]] = []
    if step.op == "reset_cache":
        if hooks.clears:
            p = replace(p, listed=_none_listed(world, pre))
        return PolicyStep(pre, _when(step, p, pre), facts, victims, joined, choices)

    def eligible(u: Term) -> Term:
        return z3.And(pre.listed(u), c.outside(u))

    if step.op == "prepare_store":
        acts = [a for a in step.actors if a.event is CpuEvent.EVICT]
        for j, a in enumerate(acts):
            chosen = [b.key for b in acts[:j]]

            def free(u: Term, chosen: list[Term] = chosen) -> Term:
                return z3.And(eligible(u), *[u != v for v in chosen])

            v = a.key

            def not_older(u: Term, v: Term = v, chosen: list[Term] = chosen) -> Term:
                if hooks.oldest_first:
                    return z3.Implies(free(u, chosen), pre.stamp(v) <= pre.stamp(u))
                return z3.Implies(free(u, chosen), pre.stamp(v) >= pre.stamp(u))

            facts.append(z3.Implies(a.active, z3.And(free(v), world.all_keys(not_older))))
            victims.append((v, a.active))
            choices.append((a.active, not_older))
        for v, acts_ in victims:
            p = hooks.evict(p, v, acts_)
        if isinstance(world, BoundedWorld) and step.need is not None:
            eligible_keys = [eligible(u) for u in range(world.keys)]
            facts.append(supplied_when_enough(step, c, eligible_keys))
    for hook, key, cond in owed_hooks(step):
        p = getattr(hooks, hook)(p, key, cond)
        if hook == "became_evictable":
            joined.append((key, cond))
    if step.op == "touch":
        moved = [(a.key, z3.Or(*[cond for _, cond in a.fired], False)) for a in step.actors]
        p = hooks.touch(p, moved)
    return PolicyStep(pre, p, facts, victims, joined, choices)


def _none_listed(world: World, pre: LruState) -> Fn:
    del pre
    return world.no_keys()


def _when(step: Step, p: LruState, pre: LruState) -> LruState:
    """A refused reset changes nothing."""
    return LruState(
        _select(step.rejected, pre.listed, p.listed),
        p.stamp,
        p.clock,
    )


def _select(cond: Term, a: Fn, b: Fn) -> Fn:
    if isinstance(a, ArrayFn) and isinstance(b, ArrayFn):
        return ArrayFn(z3.If(cond, a.arr, b.arr))
    if isinstance(a, VecFn) and isinstance(b, VecFn):
        return VecFn(tuple(z3.If(cond, x, y) for x, y in zip(a.vals, b.vals, strict=True)))
    raise TypeError("two functions of one world")


# ------------------------------------------------------------------ claims


def invariant(world: World, m: MState, p: LruState) -> dict[str, Term]:
    """The policy's data, clause by clause (module docstring)."""
    one = _one_key(m, p)
    return {
        **{name: world.all_keys(body) for name, body in one.items()},
        "lru_stamps_distinct": world.all_keys(
            lambda a: world.all_keys(lambda b: _distinct(p, a, b))
        ),
    }


def ground(m: MState, p: LruState, terms: list[Term]) -> list[Term]:
    """`invariant`'s clauses at `terms` (each, and each pair): consequences of it,
    stated ground so that a check needs no instantiation search."""
    out = [body(t) for body in _one_key(m, p).values() for t in terms]
    out += [_distinct(p, a, b) for a in terms for b in terms if a is not b]
    return out


def _one_key(m: MState, p: LruState) -> dict[str, Callable[[Term], Term]]:
    return {
        "lru_list_is_the_evictable_set": lambda k: p.listed(k) == evictable(m, k),
        "lru_stamps_below_clock": lambda k: z3.Implies(p.listed(k), p.stamp(k) < p.clock),
    }


def _distinct(p: LruState, a: Term, b: Term) -> Term:
    return z3.Implies(z3.And(p.listed(a), p.listed(b), a != b), p.stamp(a) != p.stamp(b))


def claims(
    world: World, step: Step, c: Choice, ps: PolicyStep, probe: Term | None = None
) -> dict[str, Term]:
    """The operation's policy claims over the policy's data (module docstring).

    With `probe` (an arbitrary key: the unbounded world), "for every key" is said of
    the probe, so a proof for it is one for every key."""

    def every(body: Callable[[Term], Term]) -> Term:
        return world.all_keys(body) if probe is None else body(probe)

    pre, post = ps.pre, ps.post
    out: dict[str, Term] = {}
    outside = c.outside
    if step.op == "prepare_store":
        vs = ps.victims
        out["victims_evictable_outside_batch"] = victims_evictable_outside(step, c, vs)
        out["victims_least_recent_first"] = z3.And(
            *[
                z3.Implies(
                    z3.And(vs[j][1], vs[j + 1][1]), pre.stamp(vs[j][0]) < pre.stamp(vs[j + 1][0])
                )
                for j in range(len(vs) - 1)
            ]
        )

        def older_than_no_victim(u: Term) -> Term:
            spared = z3.And(pre.listed(u), outside(u), *[z3.Or(z3.Not(a), u != v) for v, a in vs])
            return z3.And(
                *[z3.Implies(z3.And(a, spared), pre.stamp(v) < pre.stamp(u)) for v, a in vs]
            )

        out["victims_are_the_least_recent"] = every(older_than_no_victim)
    for i, (k, when) in enumerate(ps.joined):

        def newest(u: Term, k: Term = k, when: Term = when) -> Term:
            return z3.Implies(
                z3.And(when, post.listed(u), u != k, pre.listed(u)),
                post.stamp(u) < post.stamp(k),
            )

        out[f"joined{i}_most_recent"] = every(newest)
    if step.op == "touch" and c.keys:
        k0 = c.keys[0]

        def first_newest(u: Term) -> Term:
            return z3.Implies(
                z3.And(c.n > 0, pre.listed(k0), post.listed(u), u != k0),
                post.stamp(u) < post.stamp(k0),
            )

        out["touch_first_key_most_recent"] = every(first_newest)
    return out
