"""The fold lemma: a call's consecution for batches of any length, not only up to B.

A call is a fold of the steps of `proofs.z3.manager_steps` over its keys: every key
*met* (`Fold.meet`: a duplicate, or a key the table rejects in the call's
pre-state, refuses the whole call), then -- if the call is accepted -- every key
*acts* (`Fold.act_key`: its row, its slot, what it adds to the counts, the change of
each counter's count). This module proves, in the unbounded world (any number of
keys and slots), three parts about **one step of those very methods**, taken from a
symbolic intermediate state (`FoldState`) at a symbolic position:

* **init** -- from a state satisfying the manager-level invariant, the fold's start
  satisfies the fold invariant `FoldInv`;
* **step** -- from *any* intermediate state satisfying `FoldInv` (any position, any
  set of keys met, any counts so far, any batch length `n`), one more key met and
  acted on keeps `FoldInv`; on the way, the refusal only grows
  (`rejected_only_grows`), an accepted batch key is new (`accepted_keys_distinct`),
  a key that does not act changes nothing, only the acting key changes, and no key
  runs out of slots;
* **exit** -- any state satisfying `FoldInv` ends the call with the operation's
  claims: the invariant after it, each counter changed by the change of its count,
  and a rejected call changing nothing.

`FoldInv(pre, S)`: the manager-level invariant holds of the state so far; every key
not met yet is as it was before the call; each counter, if the call ended now, would
have changed by exactly the change of its count so far (the ghost); a call not
carried out has changed nothing; the positions of the two folds agree and no key
has run out of slots. By induction on the number of keys these give every claim of
`manager.consecution.<op>` for batches of any length.

**The relation is the lemma's fold.** `relation` walks a batch with the same steps;
`iterate` is this module's own walk (a fresh `Fold` per step, threading the state,
exactly as the lemma's step takes it). `agreement` proves, in a finite world, that the
two give the same post-state and the same refusal for every call of up to
`AGREEMENT_BATCH` keys from any state satisfying the invariant: a relation whose
walk drops, repeats or changes a key at some position is refuted there, and one
whose *step* misbehaves at some position is refuted by the lemma's step, which
holds at every position.

**Assumptions** (`ASSUMPTIONS`, printed with the records): the step assumes that an
accepted call was accepted by every key met so far -- true because the call's fate
is decided by its refusal after the last key (`goes = not rejected`, the
definition in `relation`, held by `agreement`) and refusal only grows (the step's
own claim); the exit assumes that definition.

`prepare_store` folds three times (its keys met, its victims, its keys stored): its
parts are `proofs.z3.manager_fold_store`'s, checked here like the others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import z3

from evictable.model.lifecycle import Machine
from evictable.proofs.base.records import Outcome, Status, proved
from evictable.proofs.z3.counter_rules import CallCounts
from evictable.proofs.z3.manager_call import Actor, Choice, choice
from evictable.proofs.z3.manager_fold_parts import (
    Part,
    all_zero,
    same_counts,
    same_key,
    symbolic_counts,
)
from evictable.proofs.z3.manager_fold_store import STORE_ASSUMPTIONS, iterate_store, store_parts
from evictable.proofs.z3.manager_ops import MANAGER, Variant, relation
from evictable.proofs.z3.manager_render import render_key, render_step
from evictable.proofs.z3.manager_state import (
    REFERENCE,
    UNBOUNDED,
    BoundedWorld,
    MState,
    World,
    invariant,
    resident,
)
from evictable.proofs.z3.manager_steps import Fold, FoldState, start
from evictable.proofs.z3.solver import Witness, decided, ground_solver, refute_claims

__all__ = [
    "AGREEMENT_BATCH",
    "ASSUMPTIONS",
    "FOLD_OPS",
    "LemmaCache",
    "Walk",
    "agreement",
    "check_fold",
    "folds",
    "iterate",
]

Term = Any

FOLD_OPS: tuple[str, ...] = (
    "prepare_store",
    "complete_store.success",
    "complete_store.failure",
    "prepare_load",
    "complete_load",
    "touch",
)
"""The operations whose consecution the fold lemma proves for any batch length."""

AGREEMENT_BATCH = 3
"""`relation` is held equal to the lemma's walk for calls of up to this many keys:
three, so that a key position other than the first two is among them."""

ASSUMPTIONS: dict[str, tuple[str, ...]] = {
    op: (
        "an accepted call was accepted by every key met so far: the call's fate is its "
        "refusal after the last key (relation's definition, held by the agreement) and "
        "refusal only grows (proved: rejected_only_grows)",
        f"relation walks its batch as the lemma does: held for calls of up to "
        f"{AGREEMENT_BATCH} keys (the agreement), assumed for longer ones",
    )
    for op in FOLD_OPS
    if op != "prepare_store"
}
ASSUMPTIONS["prepare_store"] = (
    *STORE_ASSUMPTIONS,
    f"relation walks its batch as the lemma does: held for calls of up to {AGREEMENT_BATCH} "
    "keys (the agreement), assumed for longer ones",
)
"""Per operation: the facts its lemma assumes and does not prove (docs/proofs.md)."""


@dataclass(frozen=True)
class Walk:
    """The lemma's walk of one call: the post-state, the refusal, the facts defining
    them and the steps that may act (victims first, then keys), in order."""

    post: MState
    rejected: Term
    facts: list[Term]
    actors: list[Actor]


def folds(op: str, variant: Variant) -> bool:
    """The lemma applies: one of `FOLD_OPS`, with a relation that is the fold alone (an
    atomic one, no listing after the fold)."""
    return op in FOLD_OPS and variant.atomic and not variant.touch_lists


def _post(variant: Variant, op: str, pre: MState, cur: MState, counts: CallCounts) -> MState:
    """The call's post-state from the fold's last state: its counters updated."""
    ne, np_ = variant.counters(op, pre.num_evictable, pre.num_pending, counts)
    return replace(cur, num_evictable=ne, num_pending=np_)


class _Lemma:
    """One operation's lemma in one world: the pre-state, the call's fate (`goes`), a
    symbolic fold state, and the three parts (`init`, `step`, `exit`)."""

    def __init__(self, machine: Machine, op: str, variant: Variant, world: World) -> None:
        self.machine, self.op, self.variant, self.world = machine, op, variant, world
        self.pre = world.fresh("pre")
        self.goes = z3.Bool("accepted")
        self.state = FoldState(
            cur=world.fresh("cur"),
            seen=world.key_set("seen"),
            rejected=z3.Bool("rejected_before"),
            duplicated=z3.Bool("duplicated_before"),
            met=z3.Int("position"),
            acted_at=z3.Int("position"),
            counts=symbolic_counts("counts"),
            ghost={name: z3.Int(f"ghost.{name}") for name in REFERENCE.counters},
        )
        self.inv_pre = list(invariant(world, self.pre, counting=False).values())

    def fold_inv(self, s: FoldState) -> dict[str, Term]:
        """`FoldInv` of a fold state, clause by clause."""
        pre, w = self.pre, self.world
        out = dict(invariant(w, s.cur, counting=False))
        out["keys_not_met_unchanged"] = w.all_keys(
            lambda x: z3.Implies(z3.Not(s.seen(x)), same_key(s.cur, pre, x))
        )
        post = _post(self.variant, self.op, pre, s.cur, s.counts)
        for name in REFERENCE.counters:
            change = post.counter(name) - pre.counter(name)
            out[f"{name}_tracks_count"] = change == s.ghost[name]
        out["nothing_changed_unless_carried_out"] = z3.Implies(
            z3.Not(self.goes),
            z3.And(s.cur.same_as(pre), all_zero(s.counts), *[g == 0 for g in s.ghost.values()]),
        )
        out["positions_agree"] = z3.And(s.met >= 0, s.acted_at == s.met)
        out["no_key_ran_out_of_slots"] = z3.Not(s.exhausted)
        return out

    def init(self) -> Part:
        """The fold's start (nothing met or counted, the state as it was) satisfies it."""
        claims = self.fold_inv(start(self.world, self.pre))
        return claims, self.inv_pre, lambda _m: f"{self.op}: the fold's start"

    def step(self) -> Part:
        """One more position, met and acted on, from any fold state satisfying FoldInv."""
        op, w, pre, s = self.op, self.world, self.pre, self.state
        key, n = w.key("key"), z3.Int("n")
        fold = Fold(w, self.machine, self.variant, op, pre, "fold", s)
        fold.meet(key, n)
        active = fold.act_key(key, n, self.goes)
        after = fold.state
        same_ghost = [after.ghost[g] == s.ghost[g] for g in s.ghost]
        claims = {
            **self.fold_inv(after),
            "rejected_only_grows": z3.Implies(s.rejected, after.rejected),
            "inactive_key_changes_nothing": z3.Implies(
                z3.Not(active),
                z3.And(after.cur.same_as(s.cur), same_counts(after.counts, s.counts), *same_ghost),
            ),
            "only_the_acting_key_changes": w.all_keys(
                lambda x: z3.Implies(x != key, same_key(after.cur, s.cur, x))
            ),
        }
        if op != "touch":
            claims["accepted_keys_distinct"] = z3.Implies(
                z3.And(self.goes, s.met < n), z3.Not(s.seen(key))
            )
        facts = [
            *self.inv_pre,
            *self.fold_inv(s).values(),
            w.key_facts(key),
            n >= 0,
            z3.Implies(self.goes, z3.Not(after.rejected)),  # assumed: the call's fate
            *fold.facts,
        ]

        def describe(model: Any) -> str:
            met = z3.is_true(model.eval(s.seen(key), model_completion=True))
            pos = model.eval(s.met, model_completion=True)
            acts = z3.is_true(model.eval(active, model_completion=True))
            return (
                f"{op}, one more key at position {pos} ({'met before' if met else 'new'}, "
                f"{'acts' if acts else 'does not act'}): before the call "
                f"{render_key(model, pre, key)}, so far {render_key(model, s.cur, key)} -> "
                f"{render_key(model, after.cur, key)}"
            )

        return claims, facts, describe

    def exit(self) -> Part:
        """Any fold state satisfying FoldInv ends the call with the operation's claims."""
        pre, s = self.pre, self.state
        post = _post(self.variant, self.op, pre, s.cur, s.counts)
        claims = {
            **invariant(self.world, post, counting=False),
            "rejected_changes_nothing": z3.Implies(s.rejected, post.same_as(pre)),
            **{
                f"{n}_tracks_count": post.counter(n) - pre.counter(n) == s.ghost[n]
                for n in REFERENCE.counters
            },
        }
        facts = [
            *self.inv_pre,
            *self.fold_inv(s).values(),
            self.goes == z3.Not(s.rejected),  # assumed: the call's fate (relation's definition)
        ]
        return claims, facts, lambda _m: f"{self.op}: the call ends"


# ------------------------------------------------------------------ the lemma's own walk


def iterate(
    world: World,
    machine: Machine,
    op: str,
    pre: MState,
    c: Choice,
    prefix: str,
    variant: Variant = MANAGER,
) -> Walk:
    """The lemma's walk of a call (`c`): its steps one after another, each on a fresh
    `Fold` from the state the last one left (as the lemma's step takes it)."""
    if op == "prepare_store":
        return Walk(*iterate_store(world, machine, variant, pre, c, prefix))
    facts: list[Term] = []
    fate = start(world, pre)
    for i, k in enumerate(c.keys):  # the refusal after the last key decides the call
        fold = Fold(world, machine, variant, op, pre, f"{prefix}.meet{i}", fate)
        fold.meet(k, c.n)
        fate = fold.state
    goes = z3.Not(fate.rejected)
    s = start(world, pre)
    actors: list[Actor] = []
    for i, k in enumerate(c.keys):
        fold = Fold(world, machine, variant, op, pre, f"{prefix}.k{i}", s)
        fold.meet(k, c.n)
        fold.act_key(k, c.n, goes)
        facts += fold.facts
        actors += fold.actors
        s = fold.state
    return Walk(_post(variant, op, pre, s.cur, s.counts), s.rejected, facts, actors)


def _same_actors(a: list[Actor], b: list[Actor]) -> Term:
    """The two walks act on the same keys, in the same order (what the policy
    relations are driven by: a `touch` changes no manager field); a step one walk
    lacks is one that does not act."""

    def acts(xs: list[Actor], i: int) -> tuple[Term, Term | None]:
        return (xs[i].active, xs[i].key) if i < len(xs) else (z3.BoolVal(False), None)

    out = []
    for i in range(max(len(a), len(b))):
        (ax, ak), (bx, bk) = acts(a, i), acts(b, i)
        same = ax == bx
        if ak is not None and bk is not None:
            same = z3.And(same, z3.Implies(ax, ak == bk))
        out.append(same)
    return z3.And(*out) if out else z3.BoolVal(True)


def _same_state(world: World, a: MState, b: MState) -> Term:
    """`a` and `b` agree on every field, a ref count where the key is resident (a row
    that leaves residency leaves the ref unconstrained: `encode.transition_term`)."""
    fns = ("state", "listed", "slot", "owner", "stack", "pos")
    ints = ("sp", "hw", "num_evictable", "num_pending")
    return z3.And(
        *[getattr(a, f).equals(getattr(b, f)) for f in fns],
        *[getattr(a, f) == getattr(b, f) for f in ints],
        world.all_keys(lambda k: z3.Implies(resident(REFERENCE, a.state(k)), a.ref(k) == b.ref(k))),
    )


def _agreement_part(machine: Machine, op: str, variant: Variant, batch: int) -> Part:
    """`relation` and `iterate` of one call of up to `batch` keys, from any state
    satisfying the invariant, in a finite world: the same post-state and refusal."""
    world = BoundedWorld(keys=batch + 2, slots=batch + 1)
    pre = world.fresh("pre")
    c, in_facts = choice(world, "in", batch)
    step = relation(world, machine, op, pre, c, "rel", variant)
    walk = iterate(world, machine, op, pre, c, "lem", variant)
    claims = {
        "same_post_state": _same_state(world, step.post, walk.post),
        "same_refusal": step.rejected == walk.rejected,
        "same_keys_act": _same_actors(step.actors, walk.actors),
    }
    assumptions = [*invariant(world, pre).values(), *in_facts, *step.facts, *walk.facts]

    def describe(model: Any) -> str:
        return f"relation: {render_step(model, world, step)}"

    return claims, assumptions, describe


def agreement(machine: Machine, op: str, backstop_s: float, variant: Variant = MANAGER) -> Outcome:
    """`relation` is the lemma's walk for calls of up to `AGREEMENT_BATCH` keys."""
    claims, assumptions, describe = _agreement_part(machine, op, variant, AGREEMENT_BATCH)
    out = refute_claims(
        claims,
        assumptions,
        backstop_s,
        f"the agreement of relation with the fold lemma ({op})",
        lambda model: f"relation differs from the lemma's fold: {describe(model)}",
        new_solver=ground_solver,  # two walks of definitions: solved away first
    )
    return _named(out, "agreement/")


def _named(out: Outcome, prefix: str) -> Outcome:
    """`out` with its violated claims named after the part they belong to."""
    return replace(out, violated=tuple(f"{prefix}{v}" for v in out.violated))


# ------------------------------------------------------------------ checking the lemma


SEARCH_WORLD = BoundedWorld(keys=3, slots=3)
"""Where a counterexample to a part of the lemma is first sought (quantifier-free: a
model names the failing claims); a counterexample there is one in the unbounded
world (its keys and slots are some of the unboundedly many)."""


def _search(part: Part, what: str, backstop_s: float) -> Outcome | None:
    claims, assumptions, describe = part
    out = refute_claims(
        claims,
        assumptions,
        backstop_s,
        f"the fold lemma's {what} (finite world)",
        lambda model: f"fold lemma, {what}: {describe(model)}",
        search=True,
    )
    return None if out.status is Status.PROVED else _named(out, f"fold lemma, {what}/")


def _prove(part: Part, what: str, backstop_s: float, witness: Witness) -> Outcome:
    claims, assumptions, _ = part
    out = refute_claims(
        claims,
        assumptions,
        backstop_s,
        f"the fold lemma's {what}",
        lambda _model: f"fold lemma, {what}: a counterexample in the unbounded world only",
        witness,
    )
    return _named(out, f"fold lemma, {what}/")


def _assumptions_of(part: Part) -> Witness:
    """The finite part's assumptions, as the unbounded part's vacuity witness."""
    return lambda: part[1]


def _parts(
    machine: Machine, op: str, variant: Variant, world: World
) -> dict[str, Callable[[], Part]]:
    """The lemma's parts for `op` in `world`, in the order they are checked."""
    if op == "prepare_store":  # three folds: `proofs.z3.manager_fold_store`
        return store_parts(machine, variant, world)
    lemma = _Lemma(machine, op, variant, world)
    return {"init": lemma.init, "step": lemma.step, "exit": lemma.exit}


LemmaCache = dict[tuple[str, Variant], list[tuple[Machine, Outcome]]]
"""The lemma's verdicts by what it reads (the operation, the variant's steps, and the
table, compared by value): a record's claim and its controls whose steps are the
claim's (a walk control) share one lemma run when they share a cache."""


def check_fold(
    machine: Machine,
    op: str,
    backstop_s: float,
    variant: Variant = MANAGER,
    cache: LemmaCache | None = None,
) -> Outcome:
    """`op`'s consecution for batches of any length: each part of the lemma is searched
    for a counterexample in a finite world and proved in the unbounded one (once per
    `cache`, for the steps a variant has); then `relation` is held to the lemma's walk
    (`agreement`)."""
    if not folds(op, variant):
        raise ValueError(f"the fold lemma does not cover {op} with this relation")
    lemma = _lemma(machine, op, steps_of(variant), backstop_s, {} if cache is None else cache)
    if lemma.status is not Status.PROVED:
        return lemma
    agreed = agreement(machine, op, backstop_s, variant)
    if agreed.status is not Status.PROVED:
        return agreed
    return proved(
        f"{lemma.detail}; relation = the lemma's walk for calls of <= {AGREEMENT_BATCH} "
        "keys (agreement)"
    )


def steps_of(variant: Variant) -> Variant:
    """What the lemma reads of a variant: everything but how `relation` walks the
    batch (`drops_from`), which only the agreement sees."""
    return replace(variant, drops_from=None)


def _lemma(
    machine: Machine, op: str, variant: Variant, backstop_s: float, cache: LemmaCache
) -> Outcome:
    known = cache.setdefault((op, variant), [])
    for table, out in known:
        if table == machine:
            return out
    out = _check_lemma(machine, op, variant, backstop_s)
    if out.status in (Status.PROVED, Status.COUNTEREXAMPLE):  # decided: keep it
        known.append((machine, out))
    return out


def _check_lemma(machine: Machine, op: str, variant: Variant, backstop_s: float) -> Outcome:
    finite = _parts(machine, op, variant, SEARCH_WORLD)
    whole = _parts(machine, op, variant, UNBOUNDED)
    for what, part in finite.items():
        searched = part()
        found = _search(searched, what, backstop_s)
        if found is not None:
            return found
        out = decided(
            partial(_prove, whole[what](), what, backstop_s, _assumptions_of(searched)),
            f"the fold lemma's {what}",
        )
        if out.status is not Status.PROVED:
            return out
    return proved(f"fold lemma: {', '.join(finite)} proved (any batch length)")
