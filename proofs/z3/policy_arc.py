"""ARC's own state as Z3 state, driven by hook relations, composed with the manager.

docs/semantics.md, "ARC", is the normative text; `model.arc.ModelArc` its executable
reference. The state (`ArcState`) is, per key, membership in T1, T2, B1, B2 and in
the idle view (the keys the policy was told are evictable: `mark_evictable` /
`mark_non_evictable`), a recency stamp within its resident list (T1's or T2's order)
and within its ghost list, and the adaptive `target` (a real). The victims of a
`prepare_store` are the ones ARC's selection picks (`_choose`: T1's or T2's least
recent eligible entry by the target and the T1 counter, with the T1 fallback), and
the ghost trim keeps each ghost list's `N` most recent -- so these relations bind
membership, the idle view, the target and every list's order. They are a finite
world's (`BoundedWorld`): list sizes are counts.

Hooks (`ArcHooks`; semantics "ARC"):

* `stored` (Insert): the key joins T1 (most recent) and stops being a ghost;
* `aborted` (Remove): it leaves T1/T2 and the idle view, and is no ghost;
* `became_evictable` / `became_pinned`: the idle view gains / loses the key;
* `touch` (keys last to first): in T1 and not PENDING -> T2, in T1 and PENDING or
  in T2 -> the same list, most recent either way; a B1 hit sets
  `target := min(target + max(1, |B2|/|B1|), N)`, a B2 hit `target := max(target -
  max(1, |B1|/|B2|), 0)` (the terms of `proofs.z3.arc`, whose encoding is checked
  against the model's functions by `arc.z3.target_encoding_matches_model`);
* `evict`: the victims are the ones `_choose` picks from the state before the call;
  each leaves its list and the idle view and becomes the most recent ghost of B1
  (from T1) or B2 (from T2); then each ghost list is trimmed to N;
* `clear`: every list and the idle view empty, target 0.

`invariant`: the idle view is the evictable set (resident, ref 0); T1 and T2
disjoint and together the residents; B1 and B2 disjoint and not resident;
`0 <= target <= N`; `|B1| <= N` and `|B2| <= N`; resident stamps distinct within
T1 and within T2 and below their clock, ghost stamps distinct within a list and below
the ghost clock. `claims`: a prepare_store's
victims are evictable keys outside the batch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import z3

from evictable.model.lifecycle import CpuEvent, CpuState
from evictable.proofs.z3.arc import b1_hit_term, b2_hit_term
from evictable.proofs.z3.manager_call import Choice, Step, owed_hooks, supplied_when_enough
from evictable.proofs.z3.manager_state import (
    REFERENCE,
    SS,
    BoundedWorld,
    MState,
    VecFn,
    resident,
)
from evictable.proofs.z3.policy_lru import evictable, victims_evictable_outside

__all__ = [
    "ARC_HOOKS",
    "ArcHooks",
    "ArcState",
    "ArcStep",
    "claims",
    "compose",
    "fresh",
    "invariant",
]

Term = Any


@dataclass(frozen=True)
class ArcState:
    """ARC's state as terms (module docstring)."""

    t1: VecFn
    t2: VecFn
    b1: VecFn
    b2: VecFn
    idle: VecFn
    target: Term
    gstamp: VecFn
    """A ghost's recency within its ghost list (larger is more recent)."""
    gclock: Term
    """Above every ghost's stamp."""
    rstamp: VecFn
    """A resident's recency within its list, T1 or T2 (larger is more recent)."""
    rclock: Term
    """Above every resident's stamp."""


def fresh(world: BoundedWorld, prefix: str) -> ArcState:
    def vec(name: str) -> VecFn:
        return VecFn(tuple(z3.Bool(f"{prefix}.arc.{name}{i}") for i in range(world.keys)))

    return ArcState(
        vec("t1"),
        vec("t2"),
        vec("b1"),
        vec("b2"),
        vec("idle"),
        z3.Real(f"{prefix}.arc.target"),
        VecFn(tuple(z3.Int(f"{prefix}.arc.gstamp{i}") for i in range(world.keys))),
        z3.Int(f"{prefix}.arc.gclock"),
        VecFn(tuple(z3.Int(f"{prefix}.arc.rstamp{i}") for i in range(world.keys))),
        z3.Int(f"{prefix}.arc.rclock"),
    )


def _ghost(p: ArcState, k: Term, when: Term) -> ArcState:
    """`k` becomes (or stays) a ghost at its list's most-recent end."""
    stamp = p.gstamp.set(k, p.gclock, when)
    if not isinstance(stamp, VecFn):
        raise TypeError("a finite world's function")
    return replace(p, gstamp=stamp, gclock=p.gclock + z3.If(when, 1, 0))


def _recent(p: ArcState, k: Term, when: Term) -> ArcState:
    """`k` goes to its list's most-recent end (T1's or T2's)."""
    stamp = p.rstamp.set(k, p.rclock, when)
    if not isinstance(stamp, VecFn):
        raise TypeError("a finite world's function")
    return replace(p, rstamp=stamp, rclock=p.rclock + z3.If(when, 1, 0))


def _count(f: VecFn) -> Term:
    return z3.Sum([z3.If(v, 1, 0) for v in f.vals])


def _set(f: VecFn, key: Term, value: bool, when: Term) -> VecFn:
    out = f.set(key, z3.BoolVal(value), when)
    if not isinstance(out, VecFn):
        raise TypeError("a finite world's function")
    return out


Hook1 = Callable[[ArcState, Term, Term], ArcState]


def _insert(p: ArcState, k: Term, when: Term) -> ArcState:
    p = replace(
        p,
        t1=_set(p.t1, k, True, when),
        b1=_set(p.b1, k, False, when),
        b2=_set(p.b2, k, False, when),
    )
    return _recent(p, k, when)


def _remove(p: ArcState, k: Term, when: Term) -> ArcState:
    return replace(
        p,
        t1=_set(p.t1, k, False, when),
        t2=_set(p.t2, k, False, when),
        idle=_set(p.idle, k, False, when),
    )


def _idle(p: ArcState, k: Term, when: Term) -> ArcState:
    return replace(p, idle=_set(p.idle, k, True, when))


def _busy(p: ArcState, k: Term, when: Term) -> ArcState:
    return replace(p, idle=_set(p.idle, k, False, when))


def _b2_hit(target: Term, b1: Term, b2: Term) -> Term:
    return b2_hit_term(target, b1, b2)


@dataclass(frozen=True)
class ArcHooks:
    """The hook relations (the default is the semantics; a control breaks one)."""

    stored: Hook1 = _insert
    aborted: Hook1 = _remove
    became_evictable: Hook1 = _idle
    became_pinned: Hook1 = _busy
    b2_hit: Callable[[Term, Term, Term], Term] = _b2_hit
    trims: frozenset[str] = frozenset({"b1", "b2"})
    """The ghost lists trimmed to N after an eviction (a control leaves one out, or
    both: `GhostsNeverTrimmed`)."""
    clears_idle: bool = True
    least_recent: bool = True
    """False: each round of the victims' choice takes its list's most recent eligible
    entry (a control)."""
    touch_reorders: bool = True
    """False: a touched resident keeps its place in its list (a control)."""


ARC_HOOKS = ArcHooks()


@dataclass
class ArcStep:
    pre: ArcState
    post: ArcState
    facts: list[Term]
    victims: list[tuple[Term, Term]]


def compose(
    world: BoundedWorld,
    step: Step,
    c: Choice,
    pre: ArcState,
    cap: Term,
    hooks: ArcHooks = ARC_HOOKS,
) -> ArcStep:
    """ARC's step driven by the manager relation's `step` (module docstring)."""
    p = pre
    facts: list[Term] = []
    victims: list[tuple[Term, Term]] = []
    if step.op == "reset_cache":
        no = VecFn(tuple(z3.BoolVal(False) for _ in range(world.keys)))
        go = z3.Not(step.rejected)
        cleared = ArcState(
            no,
            no,
            no,
            no,
            no if hooks.clears_idle else pre.idle,
            z3.RealVal(0),
            pre.gstamp,
            pre.gclock,
            pre.rstamp,
            pre.rclock,
        )

        def pick(x: VecFn, y: VecFn) -> VecFn:
            return VecFn(tuple(z3.If(go, a, b) for a, b in zip(x.vals, y.vals, strict=True)))

        post = ArcState(
            pick(cleared.t1, pre.t1),
            pick(cleared.t2, pre.t2),
            pick(cleared.b1, pre.b1),
            pick(cleared.b2, pre.b2),
            pick(cleared.idle, pre.idle),
            z3.If(go, cleared.target, pre.target),
            pre.gstamp,
            pre.gclock,
            pre.rstamp,
            pre.rclock,
        )
        return ArcStep(pre, post, facts, victims)
    if step.op == "prepare_store":
        outside = c.outside
        chosen = [(a.key, a.active) for a in step.actors if a.event is CpuEvent.EVICT]
        facts += _choose(world, pre, chosen, outside, hooks.least_recent)
        for a in step.actors:
            if a.event is not CpuEvent.EVICT:
                continue
            v = a.key
            facts.append(
                z3.Implies(a.active, z3.And(pre.idle(v), z3.Or(pre.t1(v), pre.t2(v)), outside(v)))
            )
            victims.append((v, a.active))
            from_t1 = z3.And(a.active, p.t1(v))
            from_t2 = z3.And(a.active, p.t2(v))
            p = replace(
                p,
                t1=_set(p.t1, v, False, from_t1),
                t2=_set(p.t2, v, False, from_t2),
                b1=_set(p.b1, v, True, from_t1),
                b2=_set(p.b2, v, True, from_t2),
                idle=_set(p.idle, v, False, a.active),
            )
            p = _ghost(p, v, a.active)
        if "b1" in hooks.trims:
            p = replace(p, b1=_trim(p.b1, p.gstamp, cap))
        if "b2" in hooks.trims:
            p = replace(p, b2=_trim(p.b2, p.gstamp, cap))
        if step.need is not None:  # evict fails exactly when too few keys are eligible
            eligible = [
                z3.And(pre.idle(u), z3.Or(pre.t1(u), pre.t2(u)), outside(u))
                for u in range(world.keys)
            ]
            facts.append(supplied_when_enough(step, c, eligible))
    for hook, key, cond in owed_hooks(step):
        p = getattr(hooks, hook)(p, key, cond)
    if step.op == "touch":
        pending = SS.consts[CpuState.PENDING]
        for a in reversed(step.actors):
            k = a.key
            moved = z3.Or(*[cond for _, cond in a.fired], False)
            in_t1, in_t2 = z3.And(moved, p.t1(k)), z3.And(moved, p.t2(k))
            promote = z3.And(in_t1, step.pre.state(k) != pending)
            hit1 = z3.And(moved, z3.Not(p.t1(k)), z3.Not(p.t2(k)), p.b1(k))
            hit2 = z3.And(moved, z3.Not(p.t1(k)), z3.Not(p.t2(k)), z3.Not(p.b1(k)), p.b2(k))
            n1, n2 = _count(p.b1), _count(p.b2)
            target = z3.If(
                hit1,
                b1_hit_term(p.target, n1, n2, cap),
                z3.If(hit2, hooks.b2_hit(p.target, n1, n2), p.target),
            )
            p = replace(
                p, t1=_set(p.t1, k, False, promote), t2=_set(p.t2, k, True, promote), target=target
            )
            if hooks.touch_reorders:
                p = _recent(p, k, z3.Or(in_t1, in_t2))
            p = _ghost(p, k, z3.Or(hit1, hit2))
    return ArcStep(pre, p, facts, victims)


def _choose(
    world: BoundedWorld,
    pre: ArcState,
    victims: list[tuple[Term, Term]],
    outside: Callable[[Term], Term],
    least_recent: bool = True,
) -> list[Term]:
    """The victims (key, acts), in the order chosen, are the ones ARC's selection
    picks (semantics "ARC", Evict): a counter starts at |T1| (every T1 entry); each
    round takes, among the eligible entries (idle, outside the batch, not taken
    before), T1's least recent when the counter is at least int(target) and T1 has
    one, else T2's least recent, else T1's (the fallback); a T1 pick lowers the
    counter. Selection reads the state before the call (nothing changes until every
    victim is chosen)."""
    keys = range(world.keys)
    counter = _count(pre.t1)
    floor = z3.ToInt(pre.target)
    out: list[Term] = []
    eligible = [z3.And(pre.idle(u), outside(u)) for u in keys]  # before any victim is taken
    earlier: list[tuple[Term, Term]] = []
    for v, acts in victims:
        stamp = pre.rstamp(v)
        mine = z3.And(pre.idle(v), outside(v), *[z3.Not(z3.And(a, w == v)) for w, a in earlier])
        earlier.append((v, acts))
        taken = [z3.And(acts, v == u) for u in keys]

        def first(
            lst: VecFn,
            stamp: Term = stamp,
            mine: Term = mine,
            v: Term = v,
            eligible: list[Term] = eligible,
        ) -> Term:
            def before(u: int) -> Term:
                return stamp <= pre.rstamp(u) if least_recent else stamp >= pre.rstamp(u)

            return z3.And(
                lst(v),
                mine,
                *[z3.Implies(z3.And(lst(u), eligible[u]), before(u)) for u in keys],
            )

        def some(lst: VecFn, eligible: list[Term] = eligible) -> Term:
            return z3.Or(*[z3.And(lst(u), eligible[u]) for u in keys])

        from_t1 = first(pre.t1)
        rule = z3.If(
            z3.And(counter >= floor, some(pre.t1)),
            from_t1,
            z3.If(some(pre.t2), first(pre.t2), from_t1),
        )
        out.append(z3.Implies(acts, rule))
        counter = counter - z3.If(z3.And(acts, pre.t1(v)), 1, 0)
        eligible = [z3.And(e, z3.Not(t)) for e, t in zip(eligible, taken, strict=True)]
    return out


def _trim(f: VecFn, stamp: VecFn, cap: Term) -> VecFn:
    """The ghost list trimmed from its least-recent end to `cap` ghosts: a ghost stays
    when fewer than `cap` ghosts of its list are more recent."""
    n = len(f.vals)

    def newer(k: int) -> Term:
        return z3.Sum(
            [z3.If(z3.And(f.vals[u], stamp.vals[u] > stamp.vals[k]), 1, 0) for u in range(n)]
        )

    return VecFn(tuple(z3.And(f.vals[k], newer(k) < cap) for k in range(n)))


def invariant(world: BoundedWorld, m: MState, p: ArcState) -> dict[str, Term]:
    """ARC's data, clause by clause (module docstring)."""
    keys = range(world.keys)

    def res(k: int) -> Term:
        return resident(REFERENCE, m.state(k))

    return {
        "arc_idle_is_the_evictable_set": z3.And(*[p.idle(k) == evictable(m, k) for k in keys]),
        "arc_t1_t2_partition_residents": z3.And(
            *[
                z3.And(z3.Not(z3.And(p.t1(k), p.t2(k))), z3.Or(p.t1(k), p.t2(k)) == res(k))
                for k in keys
            ]
        ),
        "arc_ghosts_disjoint_not_resident": z3.And(
            *[
                z3.And(
                    z3.Not(z3.And(p.b1(k), p.b2(k))),
                    z3.Implies(z3.Or(p.b1(k), p.b2(k)), z3.Not(res(k))),
                )
                for k in keys
            ]
        ),
        "arc_target_within_0_capacity": z3.And(p.target >= 0, p.target <= z3.ToReal(m.cap)),
        "arc_ghosts_bounded": z3.And(_count(p.b1) <= m.cap, _count(p.b2) <= m.cap),
        "arc_ghost_stamps_below_clock": _below(keys, p.b1, p.b2, p.gstamp, p.gclock),
        "arc_resident_stamps_below_clock": _below(keys, p.t1, p.t2, p.rstamp, p.rclock),
        "arc_resident_stamps_distinct": _distinct(keys, p.t1, p.t2, p.rstamp),
        "arc_ghost_stamps_distinct": _distinct(keys, p.b1, p.b2, p.gstamp),
    }


def _below(keys: range, one: VecFn, two: VecFn, stamp: VecFn, clock: Term) -> Term:
    """Every key of the two lists has a stamp below the clock."""
    return z3.And(*[z3.Implies(z3.Or(one(k), two(k)), stamp(k) < clock) for k in keys])


def _distinct(keys: range, one: VecFn, two: VecFn, stamp: VecFn) -> Term:
    """Two keys of the same list (`one` or `two`) have distinct stamps."""
    return z3.And(
        *[
            z3.Implies(z3.Or(z3.And(one(a), one(b)), z3.And(two(a), two(b))), stamp(a) != stamp(b))
            for a in keys
            for b in keys
            if a < b
        ]
    )


def claims(world: BoundedWorld, step: Step, c: Choice, ps: ArcStep) -> dict[str, Term]:
    """A prepare_store's victims are evictable keys outside the batch; after a touch,
    its first key, if it was resident, is the most recent of its list (keys are walked
    last to first)."""
    if step.op == "touch" and c.keys:
        first, pre, post = c.keys[0], ps.pre, ps.post

        def behind(u: int) -> Term:
            same = z3.Or(z3.And(post.t1(u), post.t1(first)), z3.And(post.t2(u), post.t2(first)))
            return z3.Implies(z3.And(same, first != u), post.rstamp(u) < post.rstamp(first))

        was_resident = z3.And(c.n >= 1, z3.Or(pre.t1(first), pre.t2(first)))
        return {
            "arc_touched_first_most_recent": z3.Implies(
                was_resident, z3.And(*[behind(u) for u in range(world.keys)])
            )
        }
    if step.op != "prepare_store":
        return {}
    return {"victims_evictable_outside_batch": victims_evictable_outside(step, c, ps.victims)}
