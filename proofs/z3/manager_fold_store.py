"""The fold lemma of `prepare_store`: its consecution for batches of any length.

`manager_ops.relation` runs a `prepare_store` call as three folds over lists of
unbounded length: it *meets* every input key (`Fold.meet`: a duplicate or a key the
table rejects refuses the call; the keys to store -- `stores`, judged on the call's
pre-state -- are counted), then the victims the policy supplies *act* (`Fold.act`
with `evict`: the first `wanted = max(0, need)` of them, `need` = keys to store minus
free slots), then the keys to store *act* (`Fold.act` with `store_begin`, each
taking a slot). This module takes one step of each of those folds -- the very same
`meet` and `act`, and the relation's own rules for the count, `need`, the victims
taken and the policy's contract (`manager_ops.stores`, `victims_needed`, `evicts`,
`store_goes`, `victim_contract`) -- from any intermediate state satisfying the
fold's invariant, and proves in the unbounded world (any number of keys, slots,
batch keys and victims):

* **meet** -- init: nothing met, nothing counted; step: one more key met keeps
  `0 <= count <= position` (the count of keys to store so far), the refusal only
  grows and an accepted key is new (`accepted_keys_distinct`).
* **evict** -- init: from the meet fold's end (`0 <= count <= length`) the state as
  it was satisfies `EvictInv`; step: one more victim position keeps it, and a taken
  victim is accepted by the table, READY and no input key.
  `EvictInv`: the manager-level invariant of the state so far; every key not among
  the victims so far as it was before the call; no victim so far is an input key;
  the victims taken so far are `min(position, wanted)` when the call evicts (none
  otherwise), nothing stored; the high-water mark as before and the free stack
  higher by the victims taken (each pushed its slot); each counter's change so far
  equal to its count's (the ghost); a call not carried out has changed nothing.
* **store** -- init: the eviction fold's end (a victim position per batch key, as
  `choice` makes them: so `wanted` were taken) satisfies `StoreInv` with `left =
  count`; step: one more batch key (one not acted on yet: the meet fold proved the
  keys of an accepted call distinct), with `left` at least its own term (`left` is
  the number of keys to store among the positions from this one on), keeps it, and
  no key runs out of slots. `StoreInv`: the invariant of the state so far; every
  input key not acted on yet as it was; the victims taken `wanted` (when the call
  evicts); `stored = count - left` (when carried out); the **measure**: `left >= 0`
  and the free slots (fresh and stacked) at least `left`; the ghosts; a call not
  carried out has changed nothing.
* **exit** -- any state satisfying `StoreInv` ends the call with the invariant, each
  counter changed by the change of its count, and a rejected call changing nothing.

What links the folds (facts about the one list of batch keys, assumed, not proved by
Z3): the eviction and store folds read the meet fold's end -- its set of input keys,
its `count`, its refusal (`victims_accepted_by_the_table` is proved per victim, so the
call's refusal is the meet fold's) and its length, which is also the number of victim
positions (`choice` gives one per batch key); the store fold walks the same keys
again, so a key it reaches is an input key not acted on yet when the call is accepted
(the meet fold's `accepted_keys_distinct`), and `left`, the keys to store among the
positions from the current one on, starts at `count` (the same `stores` over the same
positions) and is at least the current key's own term.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

import z3

from evictable.model.lifecycle import CpuEvent, CpuState, Machine
from evictable.proofs.z3.counter_rules import CallCounts
from evictable.proofs.z3.manager_fold_parts import Part, all_zero, same_key, symbolic_counts
from evictable.proofs.z3.manager_ops import (
    Fold,
    Variant,
    evicts,
    store_goes,
    stores,
    victim_contract,
    victim_refused_by_table,
    victims_needed,
)
from evictable.proofs.z3.manager_render import render_key, value
from evictable.proofs.z3.manager_state import (
    REFERENCE,
    SS,
    Fn,
    MState,
    World,
    invariant,
)

__all__ = ["STORE_PARTS", "store_parts"]

Term = Any

OP = "prepare_store"

STORE_PARTS: tuple[str, ...] = (
    "meet init",
    "meet step",
    "evict init",
    "evict step",
    "store init",
    "store step",
    "exit",
)
"""The parts of `prepare_store`'s lemma, in the order they are checked."""


class _StoreLemma:
    """`prepare_store`'s lemma in one world: the call's pre-state and inputs, the meet
    fold's result (the set of input keys, the count of keys to store, the refusal, the
    batch length) and a symbolic fold state."""

    def __init__(self, machine: Machine, variant: Variant, world: World) -> None:
        self.machine, self.variant, self.world = machine, variant, world
        self.pre = world.fresh("pre")
        self.cur = world.fresh("cur")
        self.counts = symbolic_counts("counts")
        self.ghost = {name: z3.Int(f"ghost.{name}") for name in REFERENCE.counters}
        self.inv_pre = list(invariant(world, self.pre, counting=False).values())
        self.inputs = world.key_set("inputs")
        self.count = z3.Int("count")
        self.refused = z3.Bool("refused")
        self.length = z3.Int("length")
        self.supplied = z3.Bool("supplied")
        self.need, self.wanted = victims_needed(variant, self.pre, self.count)
        self.goes = store_goes(self.refused, self.count, self.need, self.supplied)
        self.evicting = z3.And(self.goes, self.need > 0)
        self.met = [self.count >= 0, self.count <= self.length]
        """The meet fold's end (its invariant at position `length`)."""
        if world.bounded:
            self.met += [*self.inv_pre, *[m.sp <= m.cap for m in (self.pre, self.cur)]]
        """(The steps assume the pre-state's invariant only in a finite world, where a
        counterexample then starts from a reachable-looking state; and there the free
        stack holds at most `cap` ids, a pigeonhole its clause, over the slot ids only,
        does not give. The finite world only seeks counterexamples: the unbounded world,
        where neither is assumed by a step, proves.)"""

    # ---------------------------------------------------------------- shared clauses

    def post(self, cur: MState, counts: CallCounts) -> MState:
        pre = self.pre
        ne, np_ = self.variant.counters(OP, pre.num_evictable, pre.num_pending, counts)
        values = {f.name: getattr(cur, f.name) for f in fields(MState)}
        values.update(num_evictable=ne, num_pending=np_)
        return MState(**values)

    def common(self, cur: MState, counts: CallCounts, ghost: dict[str, Term]) -> dict[str, Term]:
        """The clauses of both acting folds' invariants: the manager-level invariant of
        the state so far, the ghosts, and a call not carried out changing nothing."""
        out = dict(invariant(self.world, cur, counting=False))
        post = self.post(cur, counts)
        for name in REFERENCE.counters:
            out[f"{name}_tracks_count"] = post.counter(name) - self.pre.counter(name) == ghost[name]
        out["nothing_changed_unless_carried_out"] = z3.Implies(
            z3.Not(self.goes),
            z3.And(cur.same_as(self.pre), all_zero(counts), *[g == 0 for g in ghost.values()]),
        )
        return out

    def evict_inv(
        self,
        cur: MState,
        victims: Fn,
        counts: CallCounts,
        ghost: dict[str, Term],
        position: Term,
    ) -> dict[str, Term]:
        """`EvictInv`, clause by clause."""
        pre, w, wanted = self.pre, self.world, self.wanted
        taken = z3.If(self.evicting, z3.If(position < wanted, position, wanted), 0)
        return {
            **self.common(cur, counts, ghost),
            "keys_not_evicted_unchanged": w.all_keys(
                lambda x: z3.Implies(z3.Not(victims(x)), same_key(cur, pre, x))
            ),
            "victims_not_input_keys": w.all_keys(
                lambda x: z3.Implies(victims(x), z3.Not(self.inputs(x)))
            ),
            "victims_taken_so_far": z3.And(
                position >= 0,
                counts.victims == taken,
                counts.stored == 0,
                counts.acted == 0,
                counts.pinned == 0,
                counts.unpinned == 0,
            ),
            "victims_slots_freed": z3.And(cur.hw == pre.hw, cur.sp == pre.sp + counts.victims),
        }

    def store_inv(
        self, cur: MState, done: Fn, counts: CallCounts, ghost: dict[str, Term], left: Term
    ) -> dict[str, Term]:
        """`StoreInv`, clause by clause."""
        pre, w = self.pre, self.world
        return {
            **self.common(cur, counts, ghost),
            "input_keys_not_stored_unchanged": w.all_keys(
                lambda x: z3.Implies(z3.And(self.inputs(x), z3.Not(done(x))), same_key(cur, pre, x))
            ),
            "counts_so_far": z3.And(
                counts.victims == z3.If(self.evicting, self.wanted, 0),
                counts.stored == z3.If(self.goes, self.count - left, 0),
                counts.acted == 0,
                counts.pinned == 0,
                counts.unpinned == 0,
            ),
            "free_slots_cover_the_keys_left": z3.And(
                left >= 0, z3.Implies(self.goes, left <= cur.free_slots())
            ),
        }

    def _fold(self, cur: MState, seen: Fn, counts: CallCounts, ghost: dict[str, Term]) -> Fold:
        return Fold(
            self.world, self.machine, self.variant, OP, self.pre, cur, "fold", seen,
            counts=counts, ghost=dict(ghost),
        )  # fmt: skip

    def _zero(self) -> tuple[CallCounts, dict[str, Term]]:
        zero = CallCounts(*(z3.IntVal(0) for _ in fields(CallCounts)))
        return zero, {name: z3.IntVal(0) for name in REFERENCE.counters}

    # ---------------------------------------------------------------- meet

    def meet_init(self) -> Part:
        zero = z3.IntVal(0)
        claims = {"count_within_positions": z3.And(zero >= 0, zero <= zero)}
        return claims, self.inv_pre, lambda _m: f"{OP}: the meet fold's start"

    def meet_step(self) -> Part:
        w, pre, machine = self.world, self.pre, self.machine
        seen = w.key_set("seen")
        count, position = z3.Int("met.count"), z3.Int("position")
        before, accepted = z3.Bool("rejected_before"), z3.Bool("accepted")
        key = w.key("key")
        fold = Fold(w, machine, self.variant, OP, pre, pre, "fold", seen)
        fold.rejected = before
        fold.meet(key, z3.BoolVal(True), CpuEvent.STORE_BEGIN, position)
        to_store = stores(machine, pre, key, z3.BoolVal(True))
        after = count + z3.If(to_store, 1, 0)
        claims = {
            "count_within_positions": z3.And(after >= 0, after <= position + 1),
            "rejected_only_grows": z3.Implies(before, fold.rejected),
            "accepted_keys_distinct": z3.Implies(accepted, z3.Not(seen(key))),
        }
        facts = [
            count >= 0,
            count <= position,
            position >= 0,
            w.key_facts(key),
            z3.Implies(accepted, z3.Not(fold.rejected)),  # an accepted call: accepted so far
        ]

        def describe(model: Any) -> str:
            met = z3.is_true(model.eval(seen(key), model_completion=True))
            return (
                f"{OP}, meeting the key at position {value(model, position)} "
                f"({'met before' if met else 'new'}): {render_key(model, pre, key)}"
            )

        return claims, facts, describe

    # ---------------------------------------------------------------- evict

    def evict_init(self) -> Part:
        zero, none = self._zero()
        claims = self.evict_inv(self.pre, self.world.no_keys(), zero, none, z3.IntVal(0))
        return claims, [*self.inv_pre, *self.met], lambda _m: f"{OP}: the eviction fold's start"

    def _numbers(self, model: Any) -> str:
        return (
            f"keys to store {value(model, self.count)}, need {value(model, self.need)}, "
            f"victims wanted {value(model, self.wanted)}, carried out "
            f"{z3.is_true(model.eval(self.goes, model_completion=True))}"
        )

    def evict_step(self) -> Part:
        w, pre, cur, machine = self.world, self.pre, self.cur, self.machine
        victims = w.key_set("victims")
        position = z3.Int("position")
        victim = w.key("victim")
        use = evicts(self.need, self.wanted, self.supplied, position)
        active = z3.And(self.goes, use)
        fold = self._fold(cur, self.inputs, self.counts, self.ghost)
        fold.act(victim, active, CpuEvent.EVICT)
        after = fold.cur
        contract = victim_contract(
            self.variant, pre, victim, [z3.Not(victims(victim))], [z3.Not(self.inputs(victim))]
        )
        claims = {
            **self.evict_inv(
                after,
                victims.set(victim, z3.BoolVal(True), use),
                fold.counts,
                fold.ghost,
                position + 1,
            ),
            "victims_accepted_by_the_table": z3.Not(
                victim_refused_by_table(machine, pre, victim, use)
            ),
            "victims_are_ready": z3.Implies(active, pre.state(victim) == SS.consts[CpuState.READY]),
            "input_keys_not_evicted": z3.Implies(active, z3.Not(self.inputs(victim))),
            "only_the_acting_key_changes": w.all_keys(
                lambda x: z3.Implies(x != victim, same_key(after, cur, x))
            ),
            "slots_never_run_out": z3.Not(fold.exhausted),
        }
        facts = [
            *self.met,
            *self.evict_inv(cur, victims, self.counts, self.ghost, position).values(),
            w.key_facts(victim),
            z3.Implies(use, contract),  # the policy's contract
            *fold.facts,
        ]

        def describe(model: Any) -> str:
            taken = z3.is_true(model.eval(active, model_completion=True))
            return (
                f"{OP}, the victim at position {value(model, position)} "
                f"({'taken' if taken else 'not taken'}; {self._numbers(model)}): before the "
                f"call {render_key(model, pre, victim)}, so far {render_key(model, cur, victim)}"
                f" -> {render_key(model, after, victim)}"
            )

        return claims, facts, describe

    # ---------------------------------------------------------------- store

    def store_init(self) -> Part:
        victims = self.world.key_set("victims")
        claims = self.store_inv(self.cur, self.world.no_keys(), self.counts, self.ghost, self.count)
        facts = [
            *self.inv_pre,
            *self.met,
            *self.evict_inv(self.cur, victims, self.counts, self.ghost, self.length).values(),
        ]

        def describe(model: Any) -> str:
            return (
                f"{OP}: the store fold's start ({self._numbers(model)}; free slots "
                f"{value(model, self.cur.free_slots())} after "
                f"{value(model, self.counts.victims)} victims)"
            )

        return claims, facts, describe

    def store_step(self) -> Part:
        w, pre, cur, machine = self.world, self.pre, self.cur, self.machine
        done = w.key_set("done")
        left = z3.Int("left")
        key = w.key("key")
        to_store = stores(machine, pre, key, z3.BoolVal(True))
        term = z3.If(to_store, 1, 0)
        active = z3.And(self.goes, to_store)
        fold = self._fold(cur, self.inputs, self.counts, self.ghost)
        fold.act(key, active, CpuEvent.STORE_BEGIN)
        after = fold.cur
        claims = {
            **self.store_inv(
                after, done.set(key, z3.BoolVal(True)), fold.counts, fold.ghost, left - term
            ),
            "only_the_acting_key_changes": w.all_keys(
                lambda x: z3.Implies(x != key, same_key(after, cur, x))
            ),
            "slots_never_run_out": z3.Not(fold.exhausted),
        }
        facts = [
            *self.met,
            *self.store_inv(cur, done, self.counts, self.ghost, left).values(),
            w.key_facts(key),
            self.inputs(key),  # a batch key
            z3.Implies(self.goes, z3.Not(done(key))),  # not acted on yet (meet: distinct)
            left - term >= 0,  # `left` counts this key's term among the rest
            *fold.facts,
        ]

        def describe(model: Any) -> str:
            acts = z3.is_true(model.eval(active, model_completion=True))
            return (
                f"{OP}, one more key to store ({'stores' if acts else 'does not store'}; "
                f"keys left {value(model, left)}, free slots "
                f"{value(model, cur.free_slots())}; {self._numbers(model)}): before "
                f"the call {render_key(model, pre, key)}, so far {render_key(model, cur, key)}"
                f" -> {render_key(model, after, key)}"
            )

        return claims, facts, describe

    # ---------------------------------------------------------------- exit

    def exit(self) -> Part:
        pre, cur, counts, ghost = self.pre, self.cur, self.counts, self.ghost
        post = self.post(cur, counts)
        claims = {
            **invariant(self.world, post, counting=False),
            "rejected_changes_nothing": z3.Implies(self.refused, post.same_as(pre)),
            **{
                f"{n}_tracks_count": post.counter(n) - pre.counter(n) == ghost[n]
                for n in REFERENCE.counters
            },
        }
        done, left = self.world.key_set("done"), z3.Int("left")
        facts = [
            *self.inv_pre,
            *self.met,
            *self.store_inv(cur, done, counts, ghost, left).values(),
        ]
        return claims, facts, lambda _m: f"{OP}: the call ends"


def store_parts(machine: Machine, variant: Variant, world: World) -> dict[str, Callable[[], Part]]:
    """The parts of `prepare_store`'s lemma in `world` (`STORE_PARTS`), each built when
    called."""
    lemma = _StoreLemma(machine, variant, world)
    return {
        "meet init": lemma.meet_init,
        "meet step": lemma.meet_step,
        "evict init": lemma.evict_init,
        "evict step": lemma.evict_step,
        "store init": lemma.store_init,
        "store step": lemma.store_step,
        "exit": lemma.exit,
    }
