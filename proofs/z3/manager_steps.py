"""One key at a time: the steps every manager call is made of, as Z3 terms.

A call of the CPU manager walks its keys (and, for `prepare_store`, the policy's
victims) in order. What one key does is written here **once**, as a method of `Fold`
acting on an explicit intermediate state (`FoldState`):

* `meet` -- validate the next key before any key acts (a duplicate of a key met
  before, or a key the table rejects in the call's pre-state, refuses the whole call;
  `prepare_store` also counts the keys it will store);
* `check_victim` / `take_victim` -- `prepare_store`'s next victim: is it wanted
  (`evicts`), the policy's contract for it, does the table accept its `evict`; then
  it leaves residency (pushing its slot);
* `act` -- the next key takes its table row for the call's event (with the slot it
  enters or leaves), when it acts: `act_key` decides that for every operation but
  `prepare_store`, `store_key` for `prepare_store`'s keys.

Every position a step depends on is part of the state as a *term* (`met`,
`victim_at`, `acted_at`), never a Python index: so the same method, run on a
symbolic state at a symbolic position, is one step of a fold over a batch of any
length. Two things are built from these steps, and from nothing else:

* `manager_ops.relation` -- a call over a bounded batch: one `Fold`, its keys met,
  then its victims, then its keys acted on (what BMC, the policy relations and the
  refinement oracle evaluate on the code);
* the fold lemma (`manager_fold`, `manager_fold_store`) -- one step of each fold
  from *any* state satisfying the fold's invariant, at any position, in the
  unbounded world; and its own iteration of those steps (`manager_fold.iterate`),
  which a finite-world check holds equal to `relation` (`manager_fold.agreement`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

import z3

from evictable.model.lifecycle import CpuEvent, Machine
from evictable.proofs.z3.counter_rules import CallCounts
from evictable.proofs.z3.encode import BlockTerms, transition_term
from evictable.proofs.z3.manager_call import (
    Actor,
    Variant,
    event_of,
    fires,
    matches,
    rejects,
)
from evictable.proofs.z3.manager_state import (
    REFERENCE,
    SS,
    Fn,
    MState,
    World,
    block,
    conj,
)

__all__ = [
    "Fold",
    "FoldState",
    "acting",
    "evicts",
    "start",
    "store_goes",
    "stores",
    "victim_contract",
    "victim_refused_by_table",
    "victims_go",
    "victims_needed",
    "zero_counts",
]

Term = Any


def zero_counts() -> CallCounts:
    return CallCounts(*(z3.IntVal(0) for _ in fields(CallCounts)))


def _no_ghost() -> dict[str, Term]:
    return {name: z3.IntVal(0) for name in REFERENCE.counters}


@dataclass(frozen=True)
class FoldState:
    """A call's intermediate state, after some of its steps.

    `cur` is the manager state so far. The meet fold keeps the batch keys met (`seen`),
    whether one of them refuses the call (`rejected`; `duplicated` when a repeat did),
    how many positions it passed (`met`: the next key's position; the key is in the
    batch when `met < n`, the batch's length) and, for `prepare_store`,
    how many of them are keys to store (`count`). The eviction fold keeps the victims
    taken (`taken`), the victim positions passed (`victim_at`) and whether the table
    refused a wanted victim (`victim_refused`). The acting folds keep how many keys
    they offered (`acted_at`), what the acting keys add to the call's counts
    (`counts`), per counter the change of its count so far (`ghost`: each step changes
    one key, so the sum of the steps' changes is the change of the count), and whether
    a key found no slot (`exhausted`)."""

    cur: MState
    seen: Fn
    rejected: Term = field(default_factory=lambda: z3.BoolVal(False))
    duplicated: Term = field(default_factory=lambda: z3.BoolVal(False))
    met: Term = field(default_factory=lambda: z3.IntVal(0))
    count: Term = field(default_factory=lambda: z3.IntVal(0))
    taken: Fn | None = None
    victim_at: Term = field(default_factory=lambda: z3.IntVal(0))
    victim_refused: Term = field(default_factory=lambda: z3.BoolVal(False))
    acted_at: Term = field(default_factory=lambda: z3.IntVal(0))
    counts: CallCounts = field(default_factory=zero_counts)
    ghost: dict[str, Term] = field(default_factory=_no_ghost)
    exhausted: Term = field(default_factory=lambda: z3.BoolVal(False))


def start(world: World, pre: MState) -> FoldState:
    """A call's state before its first step: the manager as it was, nothing met."""
    return FoldState(cur=pre, seen=world.no_keys(), taken=world.no_keys())


# ------------------------------------------------------------------ prepare_store's rules


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


def victims_go(
    variant: Variant, goes: Term, rejected: Term, count: Term, need: Term, supplied: Term
) -> Term:
    """Whether a `prepare_store` call takes its victims: when it is carried out
    (`goes`); the variant `evicts_when_refused` takes them although the call is
    refused."""
    if not variant.evicts_when_refused:
        return goes
    return z3.And(count > 0, z3.Or(need <= 0, supplied))


def victim_contract(
    variant: Variant, pre: MState, victim: Term, new: list[Term], outside: list[Term]
) -> Term:
    """The policy's contract for one victim it supplies: `new` (distinct from the
    victims before it), listed, and `outside` (no input key; the variant may drop it)."""
    ok = [*new, pre.listed(victim) if variant.victims_listed else z3.Not(pre.listed(victim))]
    if variant.protects_input:
        ok += outside
    return conj(ok)


def acting(op: str, machine: Machine, pre: MState, key: Term, in_batch: Term, goes: Term) -> Term:
    """Whether a key of an accepted (`goes`) call acts: `complete_store` acts on the
    keys whose row fires (the PENDING ones) and ignores the others; `prepare_load`,
    `complete_load` and `touch` act on every key; `prepare_store` on its keys to
    store (`stores`)."""
    if op == "prepare_store":
        return z3.And(goes, stores(machine, pre, key, in_batch))
    if op.startswith("complete_store"):
        return z3.And(goes, in_batch, fires(machine, event_of(op), block(pre, key)))
    return z3.And(goes, in_batch)


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


# ------------------------------------------------------------------ the fold


def _duplicates(seen: Fn, key: Term, position: Term) -> Term:
    """The key at `position` repeats a key met before it (`seen`)."""
    del position  # every position is compared
    return seen(key)


class Fold:
    """A call's steps from a state (`FoldState`; a new call's start by default).

    The methods change `state` and add the facts that define the terms they make
    (`facts`: the rows each acting key may take) and, per key or victim that may
    act, an `Actor`. `prefix` names the terms; two folds made for one query need
    different prefixes."""

    def __init__(
        self,
        world: World,
        machine: Machine,
        variant: Variant,
        op: str,
        pre: MState,
        prefix: str,
        state: FoldState | None = None,
    ) -> None:
        self.world, self.machine, self.variant, self.op = world, machine, variant, op
        self.pre, self.prefix = pre, prefix
        self.state = state if state is not None else start(world, pre)
        self.facts: list[Term] = []
        self.actors: list[Actor] = []

    @property
    def cur(self) -> MState:
        return self.state.cur

    # ---------------------------------------------------------------- meet

    def meet(self, key: Term, n: Term) -> Term:
        """Validate the next key (position `met`; in the batch when `met < n`) before
        any key acts: a duplicate of a key met before it (not for `touch`, which takes
        duplicates) or a key the table rejects refuses the whole call. Returns whether
        the table rejects this key."""
        s, event = self.state, event_of(self.op)
        in_batch = s.met < n
        until = self.variant.duplicates_until
        dup = (
            z3.BoolVal(False)
            if self.op == "touch"
            else z3.And(
                in_batch,
                _duplicates(s.seen, key, s.met),
                z3.BoolVal(True) if until is None else s.met < until,
            )
        )
        refused = z3.And(in_batch, rejects(self.machine, event, block(self.pre, key)))
        to_store = (
            stores(self.machine, self.pre, key, in_batch)
            if self.op == "prepare_store"
            else z3.BoolVal(False)
        )
        self.state = replace(
            s,
            seen=s.seen.set(key, z3.BoolVal(True), in_batch),
            rejected=z3.Or(s.rejected, dup, refused),
            duplicated=z3.Or(s.duplicated, dup),
            met=s.met + 1,
            count=s.count + z3.If(to_store, 1, 0),
        )
        return refused

    # ---------------------------------------------------------------- victims

    def check_victim(self, victim: Term, need: Term, wanted: Term, supplied: Term) -> Term:
        """The next victim of the policy's list (position `victim_at`): whether it is
        taken (returned), the policy's contract for it when it is (a fact: new among
        the victims taken, listed, no input key), and whether the table refuses its
        `evict` (which refuses the call)."""
        s = self.state
        taken = s.taken if s.taken is not None else self.world.no_keys()
        use = evicts(need, wanted, supplied, s.victim_at)
        self.facts.append(
            z3.Implies(
                use,
                victim_contract(
                    self.variant,
                    self.pre,
                    victim,
                    [z3.Not(taken(victim))],
                    [z3.Not(s.seen(victim))],
                ),
            )
        )
        self.state = replace(
            s,
            taken=taken.set(victim, z3.BoolVal(True), use),
            victim_at=s.victim_at + 1,
            victim_refused=z3.Or(
                s.victim_refused, victim_refused_by_table(self.machine, self.pre, victim, use)
            ),
        )
        return use

    def take_victim(self, victim: Term, active: Term) -> None:
        """The victim leaves residency when `active` (a wanted victim of a call carried
        out), pushing its slot."""
        self._row(victim, active, CpuEvent.EVICT, None)

    # ---------------------------------------------------------------- keys

    def act_key(self, key: Term, n: Term, goes: Term) -> Term:
        """The next key of an accepted (`goes`) call takes its row, when it acts
        (`acting`; in the batch when `acted_at < n`). Returns whether it acts."""
        in_batch = self.state.acted_at < n
        active = acting(self.op, self.machine, self.pre, key, in_batch, goes)
        self.act(key, active)
        return active

    def act(self, key: Term, active: Term) -> None:
        """The next key takes its row for the call's event when `active`."""
        position = self.state.acted_at
        self._row(key, active, event_of(self.op), position)
        self.state = replace(self.state, acted_at=position + 1)

    def _row(self, key: Term, active: Term, event: CpuEvent, position: Term | None) -> None:
        """`key` takes its row for `event` (when `active`), with the slot effects; a
        key taking no row stays as it is. `position` selects a variant's positional
        hook (`Variant.hook_from`)."""
        s = self.state
        cur, machine, variant = s.cur, self.machine, self.variant
        i = len(self.actors)
        pre = block(cur, key)
        post = BlockTerms(
            z3.Const(f"{self.prefix}.a{i}.state", SS.sort),
            z3.Int(f"{self.prefix}.a{i}.ref"),
            z3.Bool(f"{self.prefix}.a{i}.listed"),
        )
        fired = [(t, z3.And(active, c)) for t, c in matches(machine, event, pre)]
        moved = z3.Or(*[c for _, c in fired], False)
        for t, c in fired:
            if variant.hook is None or position is None or variant.hook_from == 0:
                hooked = [(c, variant.hook)]
            else:  # the variant's hook from a position on, the table's before it
                late = position >= variant.hook_from
                hooked = [(z3.And(c, late), variant.hook), (z3.And(c, z3.Not(late)), None)]
            for when, hook in hooked:
                self.facts.append(z3.Implies(when, transition_term(machine, t, pre, post, hook)))
        self.facts.append(
            z3.Implies(
                z3.Not(moved),
                z3.And(post.state == pre.state, post.ref == pre.ref, post.in_list == pre.in_list),
            )
        )

        def res(st: Any) -> bool:
            return machine.spec(st).resident

        enter = z3.Or(*[c for t, c in fired if not res(t.source) and res(t.target)], False)
        leave = z3.Or(*[c for t, c in fired if res(t.source) and not res(t.target)], False)
        slot_before = cur.slot(key)
        stack, pos, sp, hw = cur.stack, cur.pos, cur.sp, cur.hw
        if self.op not in variant.keeps_slot_on:
            stack = stack.set(sp, slot_before, leave)
            pos = pos.set(slot_before, sp, leave)
            sp = sp + z3.If(leave, 1, 0)
        fresh = hw < cur.cap
        taken = z3.If(fresh, hw, stack(sp - 1))
        exhausted = z3.Or(s.exhausted, z3.And(enter, z3.Not(fresh), sp <= 0))
        hw = hw + z3.If(z3.And(enter, fresh), 1, 0)
        sp = sp - z3.If(z3.And(enter, z3.Not(fresh)), 1, 0)
        slot_fn = cur.slot.set(key, taken, enter)
        after = replace(
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
        counts = replace(
            s.counts,
            **{f: getattr(s.counts, f) + z3.If(c, 1, 0) for f, c in adds.items()},
        )
        ghost = dict(s.ghost)
        for name, state in REFERENCE.counters.items():
            st = SS.consts[state]
            ghost[name] = (
                ghost[name]
                + z3.If(after.state(key) == st, 1, 0)
                - z3.If(cur.state(key) == st, 1, 0)
            )
        self.state = replace(s, cur=after, counts=counts, ghost=ghost, exhausted=exhausted)
        self.actors.append(
            Actor(key, event, active, pre, post, tuple(fired), slot_before, slot_fn(key))
        )
