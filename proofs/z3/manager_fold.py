"""The fold lemma: a call's consecution for batches of any length, not only up to B.

`manager_ops.relation` runs a call as a fold over its keys (`Fold`): every key is
*met* first (`meet`: a duplicate of a key met before it, or a key the table rejects
in the call's pre-state, refuses the whole call), then, if the call is accepted,
every key *acts* in turn (`act`: its row, its slot, what it adds to the counts, the
change of each counter's count). `relation` unrolls that fold over a batch of at most
B keys; this module takes **one step of the very same fold** (`meet` and `act` of
`manager_ops`, called here on symbolic intermediate states) and proves, in the
unbounded world (any number of keys and slots):

* **init** -- from a state satisfying the manager-level invariant, the fold's start
  (nothing met, nothing counted, the state as it was) satisfies the fold invariant
  `FoldInv`;
* **step** -- from *any* intermediate fold state satisfying `FoldInv` (any position,
  any set of keys met, any counts so far), one more key met and acted on keeps
  `FoldInv`; on the way, the refusal only grows (`rejected_only_grows`: so an
  accepted call passed every key's own check), an accepted key is new
  (`accepted_keys_distinct`), a key that does not act changes nothing, only the
  acting key changes, and no key runs out of slots;
* **exit** -- any fold state satisfying `FoldInv` ends the call with the operation's
  claims: the invariant after it, each counter changed by the change of its count,
  and a rejected call changing nothing.

`FoldInv(pre, F)`: the manager-level invariant holds of the state so far; every key
not met yet is as it was before the call; and each counter, if the call ended now
(`counters_after` of the counts so far), would have changed by exactly the change of
its count so far (the ghost, a sum of one-key changes). By induction on the number
of keys these three give every claim of `manager.consecution.<op>` for batches of any
length -- and the duplicate check and the rejection are the fold's own (`meet`), so a
duplicate check that skips some position is a counterexample to the step at that
position, whatever B is.

Applies to `complete_store.success` / `.failure`, `prepare_load`, `complete_load` and
`touch`, for an atomic relation, and to `prepare_store` (`FOLD_OPS`), which folds
twice more after meeting its keys -- the victims, whose number is unbounded too, then
the keys to store, with the keys still to store against the free slots as the fold's
measure: its lemma has a part per fold (`proofs.z3.manager_fold_store`), checked
here like the others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from typing import Any

import z3

from evictable.model.lifecycle import Machine
from evictable.proofs.base.records import Outcome, Status, proved
from evictable.proofs.z3.counter_rules import CallCounts
from evictable.proofs.z3.manager_fold_parts import (
    Part,
    all_zero,
    same_counts,
    same_key,
    symbolic_counts,
)
from evictable.proofs.z3.manager_fold_store import store_parts
from evictable.proofs.z3.manager_ops import MANAGER, Fold, Variant, acting, event_of
from evictable.proofs.z3.manager_render import render_key
from evictable.proofs.z3.manager_state import (
    REFERENCE,
    UNBOUNDED,
    BoundedWorld,
    Fn,
    MState,
    World,
    invariant,
)
from evictable.proofs.z3.solver import refute_claims

__all__ = ["FOLD_OPS", "check_fold", "folds"]

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


def folds(op: str, variant: Variant) -> bool:
    """The lemma applies: one of `FOLD_OPS`, with a relation that is the fold alone (an
    atomic one, no listing after the fold)."""
    return op in FOLD_OPS and variant.atomic and not variant.touch_lists


_FIELDS = tuple(f.name for f in fields(MState))


class _Lemma:
    """One operation's lemma in one world: the pre-state, a symbolic fold state, and
    the three parts (`init`, `step`, `exit`)."""

    def __init__(self, machine: Machine, op: str, variant: Variant, world: World) -> None:
        self.machine, self.op, self.variant, self.world = machine, op, variant, world
        self.pre = world.fresh("pre")
        self.cur = world.fresh("cur")
        self.seen = world.key_set("seen")
        self.position = z3.Int("position")
        self.counts = symbolic_counts("counts")
        self.ghost = {name: z3.Int(f"ghost.{name}") for name in REFERENCE.counters}
        self.inv_pre = list(invariant(world, self.pre, counting=False).values())

    def post(self, cur: MState, counts: CallCounts) -> MState:
        pre = self.pre
        ne, np_ = self.variant.counters(self.op, pre.num_evictable, pre.num_pending, counts)
        values = {f: getattr(cur, f) for f in _FIELDS}
        values.update(num_evictable=ne, num_pending=np_)
        return MState(**values)

    def fold_inv(
        self, cur: MState, seen: Fn, counts: CallCounts, ghost: dict[str, Term]
    ) -> dict[str, Term]:
        """`FoldInv` of a fold state, clause by clause."""
        pre, w = self.pre, self.world
        out = dict(invariant(w, cur, counting=False))
        out["keys_not_met_unchanged"] = w.all_keys(
            lambda x: z3.Implies(z3.Not(seen(x)), same_key(cur, pre, x))
        )
        post = self.post(cur, counts)
        for name in REFERENCE.counters:
            change = post.counter(name) - pre.counter(name)
            out[f"{name}_tracks_count"] = change == ghost[name]
        return out

    def init(self) -> Part:
        """The fold's start (nothing met or counted, the state as it was) satisfies it."""
        zero = CallCounts(*(z3.IntVal(0) for _ in fields(CallCounts)))
        none = {name: z3.IntVal(0) for name in REFERENCE.counters}
        claims = self.fold_inv(self.pre, self.world.no_keys(), zero, none)
        return claims, self.inv_pre, lambda _m: f"{self.op}: the fold's start"

    def step(self) -> Part:
        """One more key, met and acted on, from any fold state satisfying FoldInv."""
        op, machine, w, pre, cur, seen = (
            self.op,
            self.machine,
            self.world,
            self.pre,
            self.cur,
            self.seen,
        )
        event = event_of(op)
        key = w.key("key")
        goes = z3.Bool("accepted")
        before = z3.Bool("rejected_before")
        fold = Fold(
            w, machine, self.variant, op, pre, cur, "fold", seen,
            counts=self.counts, ghost=dict(self.ghost),
        )  # fmt: skip
        fold.rejected = before
        fold.meet(key, z3.BoolVal(True), event, self.position)
        active = acting(op, machine, pre, key, z3.BoolVal(True), goes)
        fold.act(key, active, event)
        after = fold.cur
        same_ghost = [fold.ghost[n] == self.ghost[n] for n in self.ghost]
        claims = {
            **self.fold_inv(after, fold.seen, fold.counts, fold.ghost),
            "rejected_only_grows": z3.Implies(before, fold.rejected),
            "inactive_key_changes_nothing": z3.Implies(
                z3.Not(active),
                z3.And(after.same_as(cur), same_counts(fold.counts, self.counts), *same_ghost),
            ),
            "only_the_acting_key_changes": w.all_keys(
                lambda x: z3.Implies(x != key, same_key(after, cur, x))
            ),
            "slots_never_run_out": z3.Not(fold.exhausted),
        }
        if op != "touch":
            claims["accepted_keys_distinct"] = z3.Implies(goes, z3.Not(seen(key)))
        facts = [
            *self.inv_pre,
            *self.fold_inv(cur, seen, self.counts, self.ghost).values(),
            w.key_facts(key),
            self.position >= 0,
            z3.Implies(goes, z3.Not(fold.rejected)),  # an accepted call: accepted so far
            *fold.facts,
        ]

        def describe(model: Any) -> str:
            met = z3.is_true(model.eval(seen(key), model_completion=True))
            pos = model.eval(self.position, model_completion=True)
            acts = z3.is_true(model.eval(active, model_completion=True))
            return (
                f"{op}, one more key at position {pos} ({'met before' if met else 'new'}, "
                f"{'acts' if acts else 'does not act'}): before the call "
                f"{render_key(model, pre, key)}, so far {render_key(model, cur, key)} -> "
                f"{render_key(model, after, key)}"
            )

        return claims, facts, describe

    def exit(self) -> Part:
        """Any fold state satisfying FoldInv ends the call with the operation's claims."""
        pre, cur, counts, ghost = self.pre, self.cur, self.counts, self.ghost
        rejected = z3.Bool("rejected")
        post = self.post(cur, counts)
        claims = {
            **invariant(self.world, post, counting=False),
            "rejected_changes_nothing": z3.Implies(rejected, post.same_as(pre)),
            **{
                f"{n}_tracks_count": post.counter(n) - pre.counter(n) == ghost[n]
                for n in REFERENCE.counters
            },
        }
        nothing = [ghost[n] == 0 for n in ghost]
        facts = [
            *self.inv_pre,
            *self.fold_inv(cur, self.seen, counts, ghost).values(),
            # a rejected call: no key acted (inactive keys change nothing, step above)
            z3.Implies(rejected, z3.And(cur.same_as(pre), all_zero(counts), *nothing)),
        ]
        return claims, facts, lambda _m: f"{self.op}: the call ends"


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
    )
    return None if out.status is Status.PROVED else out


def _prove(part: Part, what: str, backstop_s: float) -> Outcome:
    claims, assumptions, _ = part
    return refute_claims(
        claims,
        assumptions,
        backstop_s,
        f"the fold lemma's {what}",
        lambda _model: f"fold lemma, {what}: a counterexample in the unbounded world only",
    )


def _parts(
    machine: Machine, op: str, variant: Variant, world: World
) -> dict[str, Callable[[], Part]]:
    """The lemma's parts for `op` in `world`, in the order they are checked."""
    if op == "prepare_store":  # three folds: `proofs.z3.manager_fold_store`
        return store_parts(machine, variant, world)
    lemma = _Lemma(machine, op, variant, world)
    return {"init": lemma.init, "step": lemma.step, "exit": lemma.exit}


def check_fold(machine: Machine, op: str, backstop_s: float, variant: Variant = MANAGER) -> Outcome:
    """`op`'s consecution for batches of any length: each part of the lemma is searched
    for a counterexample in a finite world, then proved in the unbounded one."""
    if not folds(op, variant):
        raise ValueError(f"the fold lemma does not cover {op} with this relation")
    finite = _parts(machine, op, variant, SEARCH_WORLD)
    whole = _parts(machine, op, variant, UNBOUNDED)
    for what, part in finite.items():
        found = _search(part(), what, backstop_s)
        if found is not None:
            return found
        out = _prove(whole[what](), what, backstop_s)
        if out.status is not Status.PROVED:
            return out
    return proved(f"fold lemma: {', '.join(finite)} proved (any batch length)")
