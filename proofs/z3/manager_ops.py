"""Each public operation of the CPU manager as a Z3 relation over a batch of keys.

`relation(world, machine, op, pre, choice)` returns a `Step`: the post-state, the
facts that define it, whether the call was rejected, the keys that acted, named
*branches* (what the call did: which table row fired for some key, which rejection
refused it, whether it evicted, ...) and the operation's own *claims* (below).

What each key does is the table's business: for the event an operation sends to a
key, the first row whose source and guard match fires (`encode.transition_term`:
target, ref update, and the list effect of the derived hook); a key for which no
row fires is left as it is when the table ignores the pair and refuses the whole
call when the table rejects it. What the manager adds, and this module states:

* **which keys get which event**: `prepare_store` sends `evict` to the policy's
  victims and then `store_begin` to the input keys that fire it (computed before
  the evictions); `complete_store` sends `store_commit` / `store_abort`,
  `prepare_load` `load_begin`, `complete_load` `load_end`, `touch` `touch` to its
  keys; `reset_cache` sends `reset` to every resident key;
* **all-or-nothing**: duplicate keys (except for `touch`) or a rejected key refuse
  the whole call, which then changes nothing; `prepare_store` returns None, with no
  change, when more victims are needed than the policy supplies;
* **victims** (the policy's contract): distinct listed keys, none of them an input
  key, as many as `need = #keys to store - #free slots`;
* **slots**: a key whose row enters residency takes a slot -- a fresh one (the
  high-water mark, ascending) while there is one, else the top of the free stack --
  and a key whose row leaves residency pushes its slot, in the order the keys act;
  `reset_cache` makes every slot fresh;
* **counters**, as the implementation updates them by hand (`impl/manager.py`):
  `prepare_store` `num_evictable -= #victims`, `num_pending += #stored`;
  `complete_store` `num_pending -= #acted` (and on success `num_evictable +=
  #acted`); `prepare_load` `num_evictable -= #keys at ref 0`; `complete_load`
  `num_evictable += #keys at ref 1`; `reset_cache` both 0 (`proofs.z3.counter_rules`).

An operation's claims: a rejected call changes nothing; slots never run out while
keys enter residency; `prepare_store`'s victims are READY (so the table's `evict`
rejections are never met) and none is an input key; and each counter changes by
exactly the change of the number of keys in its state over the keys that acted
(with every other key unchanged, this keeps counter = count for any number of keys).

`Variant` describes a deliberately broken relation (a negative control, a seeded
bug of `proofs.controls` restated as a relation); the default is the manager.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import z3

from evictable.model.lifecycle import CpuEvent, CpuState, Machine
from evictable.proofs.z3.counter_rules import CallCounts
from evictable.proofs.z3.encode import transition_label, transition_term
from evictable.proofs.z3.manager_call import (
    MANAGER,
    OPS,
    Actor,
    Choice,
    Step,
    Variant,
    choice,
    event_of,
    fires,
    matches,
    rejects,
    rows,
)
from evictable.proofs.z3.manager_state import (
    REFERENCE,
    SS,
    MState,
    World,
    block,
    conj,
    resident,
)
from evictable.proofs.z3.manager_steps import (
    Fold,
    FoldState,
    acting,
    evicts,
    store_goes,
    stores,
    victim_contract,
    victim_refused_by_table,
    victims_go,
    victims_needed,
)

__all__ = [
    "MANAGER",
    "OPS",
    "Actor",
    "Choice",
    "Fold",
    "FoldState",
    "Step",
    "Variant",
    "acting",
    "choice",
    "event_of",
    "evicts",
    "relation",
    "store_goes",
    "stores",
    "victim_contract",
    "victim_refused_by_table",
    "victims_needed",
]

Term = Any

# ------------------------------------------------------------------ the operations


def relation(
    world: World,
    machine: Machine,
    op: str,
    pre: MState,
    c: Choice,
    prefix: str = "step",
    variant: Variant = MANAGER,
) -> Step:
    """The relation of `op` from `pre` with inputs `c` (see the module docstring): the
    steps of `proofs.z3.manager_steps` over the batch, in order -- every key met, then
    (`prepare_store`) every victim checked and taken, then every key acted on. Nothing
    here looks at one key: that is the steps' (the fold lemma proves them at any
    position, and holds this walk equal to its own: `manager_fold`)."""
    if op == "reset_cache":
        return _reset(world, machine, pre, prefix, variant)
    fold = Fold(world, machine, variant, op, pre, prefix)
    refused = tuple(fold.meet(k, c.n) for k in c.keys)
    keys = c.keys if variant.drops_from is None else c.keys[: variant.drops_from]
    branches: dict[str, Term] = {}
    claims: dict[str, Term] = {}
    if op == "prepare_store":
        count = fold.state.count
        need, wanted = victims_needed(variant, pre, count)
        wanted_at = [fold.check_victim(v, need, wanted, c.supplied) for v in c.victims]
        rejected = z3.Or(fold.state.rejected, fold.state.victim_refused)
        goes = store_goes(rejected, count, need, c.supplied)
        taking = victims_go(variant, goes, rejected, count, need, c.supplied)
        for v, use in zip(c.victims, wanted_at, strict=True):
            fold.take_victim(v, z3.And(taking, use))
        for k in keys:
            fold.act_key(k, c.n, goes)
        victims = fold.actors[: len(c.victims)]
        inputs = fold.state.seen
        claims["victims_accepted_by_the_table"] = z3.Not(fold.state.victim_refused)
        claims["victims_are_ready"] = conj(
            [z3.Implies(a.active, pre.state(a.key) == SS.consts[CpuState.READY]) for a in victims]
        )
        claims["input_keys_not_evicted"] = conj(
            [z3.Implies(a.active, z3.Not(inputs(a.key))) for a in victims]
        )
        branches["evicts a victim"] = z3.And(goes, need > 0)
        branches["reuses a freed slot"] = z3.And(goes, count > pre.cap - pre.hw, pre.sp > 0)
        branches["returns None: no victims supplied"] = z3.And(
            z3.Not(rejected), count > 0, need > 0, z3.Not(c.supplied)
        )
        branches["nothing to store"] = z3.And(z3.Not(rejected), c.n > 0, count == 0)
    else:
        rejected = fold.state.rejected
        goes = z3.Not(rejected)
        if variant.atomic or op not in ("prepare_load", "complete_load"):
            for k in keys:
                fold.act_key(k, c.n, goes)
        else:  # key by key: the keys before the first refused one stay changed
            for i, k in enumerate(keys):
                dup = fold.state.duplicated
                fold.act(k, z3.And(c.n > i, z3.Not(dup), z3.Not(z3.Or(*refused[: i + 1]))))
        if op.startswith("complete_store"):
            event = event_of(op)
            branches["ignores a key"] = z3.And(
                goes,
                z3.Or(
                    *[
                        z3.And(c.n > i, z3.Not(fires(machine, event, block(pre, k))))
                        for i, k in enumerate(c.keys)
                    ],
                    False,
                ),
            )
        if op == "touch" and variant.touch_lists:
            cur = fold.state.cur
            listed = cur.listed
            for a in fold.actors:
                listed = listed.set(
                    a.key, True, z3.And(a.active, resident(REFERENCE, pre.state(a.key)))
                )
            fold.state = replace(fold.state, cur=replace(cur, listed=listed))
    counts = fold.state.counts
    ne, np_ = variant.counters(op, pre.num_evictable, pre.num_pending, counts)
    post = replace(fold.state.cur, num_evictable=ne, num_pending=np_)
    step = Step(
        op,
        pre,
        post,
        fold.facts,
        rejected,
        fold.actors,
        branches,
        claims,
        fold.state.duplicated,
        refused,
    )
    if op == "prepare_store":
        step.need = need
    _common(step, machine, c, fold.state)
    return step


def _distinct(c: Choice) -> Term:
    """The first `n` keys are pairwise distinct (stated apart from `_duplicates`)."""
    b = len(c.keys)
    return conj(
        [z3.Implies(j < c.n, c.keys[i] != c.keys[j]) for i in range(b) for j in range(i + 1, b)]
    )


def _acted_all(step: Step, c: Choice) -> list[Term]:
    """Every key of the call acted (its row fired): an accepted batch of B keys that
    all do something, not one of ignored keys."""
    event = event_of(step.op)
    mine = [a for a in step.actors if a.event is event]
    return [z3.Or(*[fc for _, fc in a.fired], False) for a in mine[: len(c.keys)]]


def _common(step: Step, machine: Machine, c: Choice, end: FoldState) -> None:
    """The branches and claims every fold operation has."""
    event = event_of(step.op)
    in_batch = [c.n > i for i in range(len(c.keys))]
    for t in rows(machine, event):
        step.branches[f"fires {transition_label(t)}"] = z3.Or(
            *[fc for a in step.actors if a.event is event for tt, fc in a.fired if tt is t], False
        )
    if step.op == "prepare_store":
        for t in rows(machine, CpuEvent.EVICT):
            step.branches[f"fires {transition_label(t)}"] = z3.Or(
                *[
                    fc
                    for a in step.actors
                    if a.event is CpuEvent.EVICT
                    for tt, fc in a.fired
                    if tt is t
                ],
                False,
            )
    for r in machine.rejections:
        if r.event is event:
            step.branches[f"rejects {event.value} on {r.state.name}"] = z3.And(
                step.rejected,
                z3.Or(
                    *[
                        z3.And(in_batch[i], step.pre.state(k) == SS.consts[r.state])
                        for i, k in enumerate(c.keys)
                    ],
                    False,
                ),
            )
    if step.op != "touch":
        step.branches["rejects duplicate keys"] = z3.And(step.rejected, z3.Not(_distinct(c)))
        step.claims["accepted_keys_distinct"] = z3.Implies(z3.Not(step.rejected), _distinct(c))
    step.branches[f"accepts {len(c.keys)} distinct keys that all act"] = z3.And(
        z3.Not(step.rejected), c.n == len(c.keys), _distinct(c), *_acted_all(step, c)
    )
    step.claims["rejected_changes_nothing"] = z3.Implies(step.rejected, step.post.same_as(step.pre))
    step.claims["slots_never_run_out"] = z3.Not(end.exhausted)
    for name in REFERENCE.counters:
        change = step.post.counter(name) - step.pre.counter(name)
        step.claims[f"{name}_tracks_count"] = change == end.ghost[name]


def _reset(world: World, machine: Machine, pre: MState, prefix: str, variant: Variant) -> Step:
    """`reset_cache`: every resident key takes its `reset` row; every slot fresh."""
    event = CpuEvent.RESET
    post0 = world.fresh(prefix)

    def res(k: Term) -> Term:
        return resident(machine, pre.state(k))

    rejected = world.any_key(lambda k: z3.And(res(k), rejects(machine, event, block(pre, k))))
    goes = z3.Not(rejected)

    def per_key(k: Term) -> Term:
        b, a = block(pre, k), block(post0, k)
        same = z3.And(a.state == b.state, a.ref == b.ref, a.in_list == b.in_list)
        moved = z3.And(goes, res(k), fires(machine, event, b))
        taken = [
            z3.Implies(z3.And(goes, res(k), cond), transition_term(machine, t, b, a, variant.hook))
            for t, cond in matches(machine, event, b)
        ]
        return z3.And(*taken, z3.Implies(z3.Not(moved), same))

    counters = variant.counters("reset_cache", pre.num_evictable, pre.num_pending, CallCounts())
    post = replace(
        post0,
        slot=pre.slot,
        owner=pre.owner,
        stack=pre.stack,
        pos=pre.pos,
        sp=z3.If(goes, 0 if variant.reset_clears_stack else pre.sp, pre.sp),
        hw=z3.If(goes, 0, pre.hw),
        num_evictable=z3.If(goes, counters[0], pre.num_evictable),
        num_pending=z3.If(goes, counters[1], pre.num_pending),
    )
    facts = [world.all_keys(per_key)]
    step = Step("reset_cache", pre, post, facts, rejected, [])
    for index, t in enumerate(rows(machine, event)):

        def fired_at(k: Term, index: int = index) -> Term:
            return z3.And(goes, res(k), matches(machine, event, block(pre, k))[index][1])

        step.branches[f"fires {transition_label(t)}"] = world.any_key(fired_at)
    step.claims["rejected_changes_nothing"] = z3.Implies(rejected, post.same_as(pre))
    for name, state in REFERENCE.counters.items():
        target = SS.consts[state]

        def elsewhere(k: Term, target: Term = target) -> Term:
            return post.state(k) != target

        step.claims[f"{name}_tracks_count"] = z3.And(
            z3.Implies(goes, z3.And(post.counter(name) == 0, world.all_keys(elsewhere))),
            z3.Implies(rejected, post.counter(name) == pre.counter(name)),
        )
    return step
