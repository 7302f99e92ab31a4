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

What links the folds (facts about the one list of batch keys, assumed by the parts,
not proved by Z3: `STORE_ASSUMPTIONS`, printed with the record; `agreement` of
`proofs.z3.manager_fold` holds them for calls of up to its batch, where the lemma's
walk `iterate_store` is the relation): the eviction and store folds read the meet
fold's end -- its set of input keys, its `count`, its refusal
(`victims_accepted_by_the_table` is proved per victim, so the call's refusal is the
meet fold's) and its length, which is also the number of victim positions (`choice`
gives one per batch key); the store fold walks the same keys again, so a key it
reaches inside the batch is an input key not acted on yet when the call is accepted
(the meet fold's `accepted_keys_distinct`), and `left`, the keys to store among the
positions from the current one on, starts at `count` (the same `stores` over the same
positions) and is at least the current key's own term.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import z3

from evictable.model.lifecycle import CpuState, Machine
from evictable.proofs.z3.counter_rules import CallCounts
from evictable.proofs.z3.manager_call import Actor, Choice, Variant
from evictable.proofs.z3.manager_fold_parts import Part, all_zero, same_key, symbolic_counts
from evictable.proofs.z3.manager_render import render_key, value
from evictable.proofs.z3.manager_state import (
    REFERENCE,
    SS,
    Fn,
    MState,
    World,
    invariant,
)
from evictable.proofs.z3.manager_steps import (
    Fold,
    FoldState,
    start,
    store_goes,
    stores,
    victim_refused_by_table,
    victims_go,
    victims_needed,
)

__all__ = ["STORE_ASSUMPTIONS", "STORE_PARTS", "iterate_store", "store_parts"]

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

STORE_ASSUMPTIONS: tuple[str, ...] = (
    "an accepted call was accepted by every key met so far (its fate is its refusal after "
    "the last key; refusal only grows, proved: rejected_only_grows)",
    "the eviction and store folds read the meet fold's end: its input keys, its count of "
    "keys to store (between 0 and the batch length), its refusal; one victim position per "
    "batch key",
    "the store fold walks the meet fold's keys again: a key it reaches inside the batch is "
    "an input key, not acted on yet when the call is accepted; the keys to store from its "
    "position on are at least its own",
)
"""What `prepare_store`'s lemma assumes of the one list of batch keys (module docstring)."""


def _post(variant: Variant, pre: MState, cur: MState, counts: CallCounts) -> MState:
    ne, np_ = variant.counters(OP, pre.num_evictable, pre.num_pending, counts)
    return replace(cur, num_evictable=ne, num_pending=np_)


class _StoreLemma:
    """`prepare_store`'s lemma in one world: the call's pre-state and inputs, the meet
    fold's result (the set of input keys, the count of keys to store, the refusal, the
    batch length) and a symbolic fold state."""

    def __init__(self, machine: Machine, variant: Variant, world: World) -> None:
        self.machine, self.variant, self.world = machine, variant, world
        self.pre = world.fresh("pre")
        self.inv_pre = list(invariant(world, self.pre, counting=False).values())
        self.inputs = world.key_set("inputs")
        self.count = z3.Int("count")
        self.refused = z3.Bool("refused")
        self.n = z3.Int("n")
        """The batch length (the call's `n`)."""
        self.length = z3.Int("length")
        """The positions walked: the batch keys offered, at least `n`; as many victim
        positions (`choice` gives one per batch key)."""
        self.supplied = z3.Bool("supplied")
        self.need, self.wanted = victims_needed(variant, self.pre, self.count)
        self.goes = store_goes(self.refused, self.count, self.need, self.supplied)
        self.taking = victims_go(
            variant, self.goes, self.refused, self.count, self.need, self.supplied
        )
        """Whether the victims are taken (the call carried out, unless the variant)."""
        self.evicting = z3.And(self.taking, self.need > 0)
        self.state = FoldState(
            cur=world.fresh("cur"),
            seen=self.inputs,
            rejected=self.refused,
            met=self.length,
            count=self.count,
            taken=world.key_set("victims"),
            victim_at=z3.Int("position"),
            acted_at=z3.Int("position"),
            counts=symbolic_counts("counts"),
            ghost={name: z3.Int(f"ghost.{name}") for name in REFERENCE.counters},
        )
        self.met = [self.count >= 0, self.count <= self.n, self.n <= self.length]
        """The meet fold's end (its invariant at position `length`)."""
        if world.bounded:
            cur = self.state.cur
            self.met += [*self.inv_pre, *[m.sp <= m.cap for m in (self.pre, cur)]]
        """(The steps assume the pre-state's invariant only in a finite world, where a
        counterexample then starts from a reachable-looking state; and there the free
        stack holds at most `cap` ids, a pigeonhole its clause, over the slot ids only,
        does not give. The finite world only seeks counterexamples: the unbounded world,
        where neither is assumed by a step, proves.)"""

    # ---------------------------------------------------------------- shared clauses

    def common(self, s: FoldState) -> dict[str, Term]:
        """The clauses of both acting folds' invariants: the manager-level invariant of
        the state so far, the ghosts, a call not carried out changing nothing, and no
        key out of slots."""
        out = dict(invariant(self.world, s.cur, counting=False))
        post = _post(self.variant, self.pre, s.cur, s.counts)
        for name in REFERENCE.counters:
            out[f"{name}_tracks_count"] = (
                post.counter(name) - self.pre.counter(name) == s.ghost[name]
            )
        out["nothing_changed_unless_carried_out"] = z3.Implies(
            z3.Not(self.goes),
            z3.And(
                s.cur.same_as(self.pre), all_zero(s.counts), *[g == 0 for g in s.ghost.values()]
            ),
        )
        out["no_key_ran_out_of_slots"] = z3.Not(s.exhausted)
        return out

    def evict_inv(self, s: FoldState) -> dict[str, Term]:
        """`EvictInv`, clause by clause."""
        pre, w, wanted, position = self.pre, self.world, self.wanted, s.victim_at
        victims = s.taken if s.taken is not None else w.no_keys()
        counts = s.counts
        taken = z3.If(self.evicting, z3.If(position < wanted, position, wanted), 0)
        return {
            **self.common(s),
            "keys_not_evicted_unchanged": w.all_keys(
                lambda x: z3.Implies(z3.Not(victims(x)), same_key(s.cur, pre, x))
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
            "victims_slots_freed": z3.And(s.cur.hw == pre.hw, s.cur.sp == pre.sp + counts.victims),
            "no_victim_refused": z3.Not(s.victim_refused),
        }

    def store_inv(self, s: FoldState, done: Fn, left: Term) -> dict[str, Term]:
        """`StoreInv`, clause by clause."""
        pre, w = self.pre, self.world
        return {
            **self.common(s),
            "input_keys_not_stored_unchanged": w.all_keys(
                lambda x: z3.Implies(
                    z3.And(self.inputs(x), z3.Not(done(x))), same_key(s.cur, pre, x)
                )
            ),
            "free_slots_cover_the_keys_left": z3.And(
                left >= 0, z3.Implies(self.goes, left <= s.cur.free_slots())
            ),
            "position_within_the_batch": s.acted_at >= 0,
        }

    def _fold(self, s: FoldState) -> Fold:
        return Fold(self.world, self.machine, self.variant, OP, self.pre, "fold", s)

    # ---------------------------------------------------------------- meet

    def meet_init(self) -> Part:
        s, n = start(self.world, self.pre), z3.Int("n")
        claims = {"count_within_positions": z3.And(s.count >= 0, s.count <= s.met, s.count <= n)}
        return claims, [*self.inv_pre, n >= 0], lambda _m: f"{OP}: the meet fold's start"

    def meet_step(self) -> Part:
        w, pre = self.world, self.pre
        s = FoldState(
            cur=pre,
            seen=w.key_set("seen"),
            rejected=z3.Bool("rejected_before"),
            duplicated=z3.Bool("duplicated_before"),
            met=z3.Int("position"),
            count=z3.Int("met.count"),
        )
        accepted, key, n = z3.Bool("accepted"), w.key("key"), z3.Int("n")
        fold = self._fold(s)
        fold.meet(key, n)
        after = fold.state
        claims = {
            "count_within_positions": z3.And(
                after.count >= 0, after.count <= after.met, after.count <= n
            ),
            "rejected_only_grows": z3.Implies(s.rejected, after.rejected),
            "accepted_keys_distinct": z3.Implies(z3.And(accepted, s.met < n), z3.Not(s.seen(key))),
        }
        facts = [
            s.count >= 0,
            s.count <= s.met,
            s.count <= n,
            s.met >= 0,
            n >= 0,
            w.key_facts(key),
            z3.Implies(accepted, z3.Not(after.rejected)),  # assumed: the call's fate
        ]

        def describe(model: Any) -> str:
            met = z3.is_true(model.eval(s.seen(key), model_completion=True))
            return (
                f"{OP}, meeting the key at position {value(model, s.met)} "
                f"({'met before' if met else 'new'}): {render_key(model, pre, key)}"
            )

        return claims, facts, describe

    # ---------------------------------------------------------------- evict

    def evict_init(self) -> Part:
        s = replace(start(self.world, self.pre), seen=self.inputs)
        claims = self.evict_inv(s)
        return claims, [*self.inv_pre, *self.met], lambda _m: f"{OP}: the eviction fold's start"

    def _numbers(self, model: Any) -> str:
        return (
            f"keys to store {value(model, self.count)}, need {value(model, self.need)}, "
            f"victims wanted {value(model, self.wanted)}, carried out "
            f"{z3.is_true(model.eval(self.goes, model_completion=True))}"
        )

    def evict_step(self) -> Part:
        w, pre, s, machine = self.world, self.pre, self.state, self.machine
        victim = w.key("victim")
        fold = self._fold(s)
        use = fold.check_victim(victim, self.need, self.wanted, self.supplied)
        active = z3.And(self.taking, use)
        fold.take_victim(victim, active)
        after = fold.state
        claims = {
            **self.evict_inv(after),
            "victims_accepted_by_the_table": z3.Not(
                victim_refused_by_table(machine, pre, victim, use)
            ),
            "victims_are_ready": z3.Implies(active, pre.state(victim) == SS.consts[CpuState.READY]),
            "input_keys_not_evicted": z3.Implies(active, z3.Not(self.inputs(victim))),
            "only_the_acting_key_changes": w.all_keys(
                lambda x: z3.Implies(x != victim, same_key(after.cur, s.cur, x))
            ),
        }
        facts = [
            *self.met,
            *self.evict_inv(s).values(),
            w.key_facts(victim),
            *fold.facts,  # the policy's contract for a victim it supplies
        ]

        def describe(model: Any) -> str:
            taken = z3.is_true(model.eval(active, model_completion=True))
            return (
                f"{OP}, the victim at position {value(model, s.victim_at)} "
                f"({'taken' if taken else 'not taken'}; {self._numbers(model)}): before the "
                f"call {render_key(model, pre, victim)}, so far {render_key(model, s.cur, victim)}"
                f" -> {render_key(model, after.cur, victim)}"
            )

        return claims, facts, describe

    # ---------------------------------------------------------------- store

    def store_init(self) -> Part:
        s = replace(self.state, acted_at=z3.IntVal(0))
        evicted = replace(self.state, victim_at=self.length)
        claims = self.store_inv(s, self.world.no_keys(), self.count)
        facts = [*self.inv_pre, *self.met, *self.evict_inv(evicted).values()]

        def describe(model: Any) -> str:
            return (
                f"{OP}: the store fold's start ({self._numbers(model)}; free slots "
                f"{value(model, s.cur.free_slots())} after "
                f"{value(model, s.counts.victims)} victims)"
            )

        return claims, facts, describe

    def store_step(self) -> Part:
        w, pre, s, machine = self.world, self.pre, self.state, self.machine
        done, left = w.key_set("done"), z3.Int("left")
        key, n = w.key("key"), self.n
        inside = s.acted_at < n
        term = z3.If(stores(machine, pre, key, inside), 1, 0)
        fold = self._fold(s)
        active = fold.act_key(key, n, self.goes)
        after = fold.state
        claims = {
            **self.store_inv(after, done.set(key, z3.BoolVal(True), inside), left - term),
            "only_the_acting_key_changes": w.all_keys(
                lambda x: z3.Implies(x != key, same_key(after.cur, s.cur, x))
            ),
        }
        facts = [
            *self.met,
            *self.store_inv(s, done, left).values(),
            w.key_facts(key),
            z3.Implies(inside, self.inputs(key)),  # assumed: a batch key, met before
            z3.Implies(z3.And(self.goes, inside), z3.Not(done(key))),  # assumed: not acted yet
            left - term >= 0,  # assumed: `left` counts this key's term among the rest
            *fold.facts,
        ]

        def describe(model: Any) -> str:
            acts = z3.is_true(model.eval(active, model_completion=True))
            return (
                f"{OP}, one more key to store ({'stores' if acts else 'does not store'}; "
                f"keys left {value(model, left)}, free slots "
                f"{value(model, s.cur.free_slots())}; {self._numbers(model)}): before "
                f"the call {render_key(model, pre, key)}, so far {render_key(model, s.cur, key)}"
                f" -> {render_key(model, after.cur, key)}"
            )

        return claims, facts, describe

    # ---------------------------------------------------------------- exit

    def exit(self) -> Part:
        pre, s = self.pre, self.state
        post = _post(self.variant, pre, s.cur, s.counts)
        claims = {
            **invariant(self.world, post, counting=False),
            "rejected_changes_nothing": z3.Implies(self.refused, post.same_as(pre)),
            **{
                f"{n}_tracks_count": post.counter(n) - pre.counter(n) == s.ghost[n]
                for n in REFERENCE.counters
            },
        }
        done, left = self.world.key_set("done"), z3.Int("left")
        facts = [*self.inv_pre, *self.met, *self.store_inv(s, done, left).values()]
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


def iterate_store(
    world: World, machine: Machine, variant: Variant, pre: MState, c: Choice, prefix: str
) -> tuple[MState, Term, list[Term], list[Actor]]:
    """The lemma's walk of one `prepare_store` call: its keys met, its victims checked
    and taken, its keys stored, each step on a fresh `Fold` from the state the last
    one left (as the lemma's parts take it)."""
    s = start(world, pre)
    for i, k in enumerate(c.keys):
        fold = Fold(world, machine, variant, OP, pre, f"{prefix}.meet{i}", s)
        fold.meet(k, c.n)
        s = fold.state
    need, wanted = victims_needed(variant, pre, s.count)
    goes = store_goes(s.rejected, s.count, need, c.supplied)
    taking = victims_go(variant, goes, s.rejected, s.count, need, c.supplied)
    facts: list[Term] = []
    actors: list[Actor] = []
    for j, v in enumerate(c.victims):
        fold = Fold(world, machine, variant, OP, pre, f"{prefix}.v{j}", s)
        use = fold.check_victim(v, need, wanted, c.supplied)
        fold.take_victim(v, z3.And(taking, use))
        facts += fold.facts
        actors += fold.actors
        s = fold.state
    for i, k in enumerate(c.keys):
        fold = Fold(world, machine, variant, OP, pre, f"{prefix}.k{i}", s)
        fold.act_key(k, c.n, goes)
        facts += fold.facts
        actors += fold.actors
        s = fold.state
    rejected = z3.Or(s.rejected, s.victim_refused)
    return _post(variant, pre, s.cur, s.counts), rejected, facts, actors
