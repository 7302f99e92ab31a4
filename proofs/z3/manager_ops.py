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

from dataclasses import dataclass, field, fields, replace
from typing import Any

import z3

from evictable.model.lifecycle import CpuEvent, CpuState, Machine
from evictable.proofs.z3.counter_rules import CallCounts
from evictable.proofs.z3.encode import BlockTerms, transition_label, transition_term
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
    Fn,
    MState,
    World,
    block,
    conj,
    resident,
)

__all__ = [
    "MANAGER",
    "OPS",
    "Actor",
    "Choice",
    "Fold",
    "Step",
    "Variant",
    "acting",
    "choice",
    "event_of",
    "relation",
]

Term = Any

# ------------------------------------------------------------------ the fold


def _counted(op: str, event: CpuEvent, active: Term, before: BlockTerms) -> dict[str, Term]:
    """What one acting key adds to the call's counts (`CallCounts`), from its state
    before the call (`impl/manager.py` counts the same keys: the victims, the keys
    stored or acted on, the keys a load takes from ref 0 or brings back to it)."""
    if event is CpuEvent.EVICT:
        return {"victims": active}
    if event is CpuEvent.STORE_BEGIN:
        return {"stored": active}
    if op.startswith("complete_store"):
        return {"acted": active}
    if event is CpuEvent.LOAD_BEGIN:
        return {"pinned": z3.And(active, before.ref == 0)}
    if event is CpuEvent.LOAD_END:
        return {"unpinned": z3.And(active, before.ref == 1)}
    return {}


def _zero_counts() -> CallCounts:
    return CallCounts(*(z3.IntVal(0) for _ in fields(CallCounts)))


@dataclass
class Fold:
    """The intermediate state while a call meets its keys and they act, one after the
    other: the manager state so far (`cur`); the keys met so far (`seen`) and whether
    one of them refuses the call (`rejected`: a duplicate or a key the table rejects,
    judged on the call's pre-state); what the acting keys add to the counts; per
    counter, the change of its count so far (`ghost`: each step changes one key, so
    the sum of the steps' changes is the change of the count); and whether a key found
    no slot (`exhausted`). `relation` unrolls it over a bounded batch; the fold lemma
    (`proofs.z3.manager_fold`) takes one step of it from any intermediate state."""

    world: World
    machine: Machine
    variant: Variant
    op: str
    pre: MState
    cur: MState
    prefix: str
    seen: Fn
    rejected: Term = field(default_factory=lambda: z3.BoolVal(False))
    duplicated: Term = field(default_factory=lambda: z3.BoolVal(False))
    counts: CallCounts = field(default_factory=_zero_counts)
    ghost: dict[str, Term] = field(
        default_factory=lambda: {name: z3.IntVal(0) for name in REFERENCE.counters}
    )
    facts: list[Term] = field(default_factory=list)
    actors: list[Actor] = field(default_factory=list)
    exhausted: Term = field(default_factory=lambda: z3.BoolVal(False))

    def meet(self, key: Term, in_batch: Term, event: CpuEvent, position: Term) -> Term:
        """Validate the key at `position` (before any key acts): a duplicate of a key
        met before it (not for `touch`, which takes duplicates) or a key the table
        rejects refuses the whole call. Returns whether the table rejects this key."""
        dup = z3.BoolVal(False) if self.op == "touch" else _duplicates(self.seen, key, position)
        refused = z3.And(in_batch, rejects(self.machine, event, block(self.pre, key)))
        self.duplicated = z3.Or(self.duplicated, z3.And(in_batch, dup))
        self.rejected = z3.Or(self.rejected, z3.And(in_batch, dup), refused)
        self.seen = self.seen.set(key, z3.BoolVal(True), in_batch)
        return refused

    def act(self, key: Term, active: Term, event: CpuEvent) -> None:
        """`key` takes its row for `event` (when `active`), with the slot effects."""
        i = len(self.actors)
        cur, machine = self.cur, self.machine
        pre = block(cur, key)
        post = BlockTerms(
            z3.Const(f"{self.prefix}.a{i}.state", SS.sort),
            z3.Int(f"{self.prefix}.a{i}.ref"),
            z3.Bool(f"{self.prefix}.a{i}.listed"),
        )
        fired = [(t, z3.And(active, c)) for t, c in matches(machine, event, pre)]
        moved = z3.Or(*[c for _, c in fired], False)
        for t, c in fired:
            self.facts.append(
                z3.Implies(c, transition_term(machine, t, pre, post, self.variant.hook))
            )
        self.facts.append(
            z3.Implies(
                z3.Not(moved),
                z3.And(post.state == pre.state, post.ref == pre.ref, post.in_list == pre.in_list),
            )
        )

        def res(s: Any) -> bool:
            return machine.spec(s).resident

        enter = z3.Or(*[c for t, c in fired if not res(t.source) and res(t.target)], False)
        leave = z3.Or(*[c for t, c in fired if res(t.source) and not res(t.target)], False)
        slot_before = cur.slot(key)
        stack, pos, sp, hw = cur.stack, cur.pos, cur.sp, cur.hw
        if self.op not in self.variant.keeps_slot_on:
            stack = stack.set(sp, slot_before, leave)
            pos = pos.set(slot_before, sp, leave)
            sp = sp + z3.If(leave, 1, 0)
        fresh = hw < cur.cap
        taken = z3.If(fresh, hw, stack(sp - 1))
        self.exhausted = z3.Or(self.exhausted, z3.And(enter, z3.Not(fresh), sp <= 0))
        hw = hw + z3.If(z3.And(enter, fresh), 1, 0)
        sp = sp - z3.If(z3.And(enter, z3.Not(fresh)), 1, 0)
        slot_fn = cur.slot.set(key, taken, enter)
        self.cur = replace(
            cur,
            state=cur.state.set(key, post.state, moved),
            ref=cur.ref.set(key, post.ref, moved),
            listed=cur.listed.set(key, post.in_list, moved),
            slot=slot_fn,
            owner=cur.owner.set(taken, key, enter),
            stack=stack,
            pos=pos,
            sp=sp,
            hw=hw,
        )
        adds = _counted(self.op, event, active, block(self.pre, key))
        self.counts = replace(
            self.counts,
            **{f: getattr(self.counts, f) + z3.If(c, 1, 0) for f, c in adds.items()},
        )
        for name, state in REFERENCE.counters.items():
            s = SS.consts[state]
            change = z3.If(self.cur.state(key) == s, 1, 0) - z3.If(cur.state(key) == s, 1, 0)
            self.ghost[name] = self.ghost[name] + change
        self.actors.append(
            Actor(key, event, active, pre, post, tuple(fired), slot_before, slot_fn(key))
        )


def _count(xs: list[Term]) -> Term:
    return z3.Sum([z3.If(x, 1, 0) for x in xs]) if xs else z3.IntVal(0)


def _duplicates(seen: Fn, key: Term, position: Term) -> Term:
    """The key at `position` repeats a key met before it (`seen`)."""
    del position  # every position is compared
    return seen(key)


def acting(op: str, machine: Machine, pre: MState, key: Term, in_batch: Term, goes: Term) -> Term:
    """Whether a key of an accepted (`goes`) call acts: `complete_store` acts on the
    keys whose row fires (the PENDING ones) and ignores the others; `prepare_load`,
    `complete_load` and `touch` act on every key. (`prepare_store` decides per key in
    `relation`: the absent keys, after the victims.)"""
    if op.startswith("complete_store"):
        return z3.And(goes, in_batch, fires(machine, event_of(op), block(pre, key)))
    return z3.And(goes, in_batch)


# ------------------------------------------------------------------ prepare_store's rules
# (used by `relation` and by prepare_store's fold lemma, `proofs.z3.manager_fold_store`)


def stores(machine: Machine, pre: MState, key: Term, in_batch: Term) -> Term:
    """A key of a `prepare_store` batch is one to store: its `store_begin` row fires
    in the call's pre-state (judged before any key acts)."""
    return z3.And(in_batch, fires(machine, CpuEvent.STORE_BEGIN, block(pre, key)))


def victims_needed(variant: Variant, pre: MState, count: Term) -> tuple[Term, Term]:
    """`need` = the keys to store minus the free slots (fresh ones and the free stack;
    may be <= 0) and the number of victims the call takes, `max(0, need)` (fewer by
    the variant's `victim_shortfall`)."""
    free = pre.cap - pre.hw + (0 if variant.ignores_free_stack else pre.sp)
    need = count - free
    short = variant.victim_shortfall
    return need, z3.If(need > 0, need - short if short else need, 0)


def evicts(need: Term, wanted: Term, supplied: Term, position: Term) -> Term:
    """The victim at `position` (0, 1, ...) of the policy's list is taken."""
    return z3.And(need > 0, supplied, position < wanted)


def victim_refused_by_table(machine: Machine, pre: MState, victim: Term, taken: Term) -> Term:
    """A taken victim whose `evict` the table refuses (which refuses the call)."""
    return z3.And(taken, rejects(machine, CpuEvent.EVICT, block(pre, victim)))


def store_goes(rejected: Term, count: Term, need: Term, supplied: Term) -> Term:
    """A `prepare_store` call is carried out: not refused, something to store, and the
    victims supplied if any are needed."""
    return z3.And(z3.Not(rejected), count > 0, z3.Or(need <= 0, supplied))


def victim_contract(
    variant: Variant, pre: MState, victim: Term, new: list[Term], outside: list[Term]
) -> Term:
    """The policy's contract for one victim it supplies: `new` (distinct from the
    victims before it), listed, and `outside` (no input key; the variant may drop it)."""
    ok = [*new, pre.listed(victim) if variant.victims_listed else z3.Not(pre.listed(victim))]
    if variant.protects_input:
        ok += outside
    return conj(ok)


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
    """The relation of `op` from `pre` with inputs `c` (see the module docstring)."""
    if op == "reset_cache":
        return _reset(world, machine, pre, prefix, variant)
    fold = Fold(world, machine, variant, op, pre, pre, prefix, world.no_keys())
    event = event_of(op)
    batch = len(c.keys)
    in_batch = [c.n > i for i in range(batch)]
    blocks = [block(pre, k) for k in c.keys]
    refused = [fold.meet(k, in_batch[i], event, i) for i, k in enumerate(c.keys)]
    branches: dict[str, Term] = {}
    claims: dict[str, Term] = {}
    if op == "prepare_store":
        to_store = [stores(machine, pre, k, in_batch[i]) for i, k in enumerate(c.keys)]
        count = _count(to_store)
        need, wanted = victims_needed(variant, pre, count)
        use = [evicts(need, wanted, c.supplied, j) for j in range(batch)]
        victim_refused = [
            victim_refused_by_table(machine, pre, v, use[j]) for j, v in enumerate(c.victims)
        ]
        rejected = z3.Or(fold.rejected, *victim_refused)
        goes = store_goes(rejected, count, need, c.supplied)
        for j, v in enumerate(c.victims):
            new = [v != c.victims[i] for i in range(j)]
            outside = [z3.Implies(in_batch[i], v != k) for i, k in enumerate(c.keys)]
            fold.facts.append(z3.Implies(use[j], victim_contract(variant, pre, v, new, outside)))
        for j, v in enumerate(c.victims):
            fold.act(v, z3.And(goes, use[j]), CpuEvent.EVICT)
        for i, k in enumerate(c.keys):
            fold.act(k, z3.And(goes, to_store[i]), event)
        victims = fold.actors[:batch]
        claims["victims_accepted_by_the_table"] = z3.Not(z3.Or(*victim_refused, False))
        claims["victims_are_ready"] = conj(
            [z3.Implies(a.active, pre.state(a.key) == SS.consts[CpuState.READY]) for a in victims]
        )
        claims["input_keys_not_evicted"] = conj(
            [
                z3.Implies(z3.And(a.active, in_batch[i]), a.key != k)
                for a in victims
                for i, k in enumerate(c.keys)
            ]
        )
        branches["evicts a victim"] = z3.And(goes, need > 0)
        branches["reuses a freed slot"] = z3.And(goes, count > pre.cap - pre.hw, pre.sp > 0)
        branches["returns None: no victims supplied"] = z3.And(
            z3.Not(rejected), count > 0, need > 0, z3.Not(c.supplied)
        )
        branches["nothing to store"] = z3.And(z3.Not(rejected), c.n > 0, count == 0)
    else:
        rejected = fold.rejected
        goes = z3.Not(rejected)
        for i, k in enumerate(c.keys):
            if variant.atomic or op not in ("prepare_load", "complete_load"):
                active = acting(op, machine, pre, k, in_batch[i], goes)
            else:  # key by key: the keys before the first refused one stay changed
                active = z3.And(
                    in_batch[i], z3.Not(fold.duplicated), z3.Not(z3.Or(*refused[: i + 1]))
                )
            fold.act(k, active, event)
        if op.startswith("complete_store"):
            branches["ignores a key"] = z3.And(
                goes,
                z3.Or(
                    *[
                        z3.And(in_batch[i], z3.Not(fires(machine, event, blocks[i])))
                        for i in range(batch)
                    ],
                    False,
                ),
            )
        if op == "touch" and variant.touch_lists:
            cur = fold.cur
            listed = cur.listed
            for a, k in zip(fold.actors, c.keys, strict=True):
                listed = listed.set(k, True, z3.And(a.active, resident(REFERENCE, pre.state(k))))
            fold.cur = replace(cur, listed=listed)
    ne, np_ = variant.counters(op, pre.num_evictable, pre.num_pending, fold.counts)
    post = replace(fold.cur, num_evictable=ne, num_pending=np_)
    step = Step(
        op,
        pre,
        post,
        fold.facts,
        rejected,
        fold.actors,
        branches,
        claims,
        fold.duplicated,
        tuple(refused),
    )
    if op == "prepare_store":
        step.need = need
    _common(step, machine, c, in_batch, fold)
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


def _common(step: Step, machine: Machine, c: Choice, in_batch: list[Term], fold: Fold) -> None:
    """The branches and claims every fold operation has."""
    event = event_of(step.op)
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
    step.claims["slots_never_run_out"] = z3.Not(fold.exhausted)
    for name in REFERENCE.counters:
        change = step.post.counter(name) - step.pre.counter(name)
        step.claims[f"{name}_tracks_count"] = change == fold.ghost[name]


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
