"""The parts of a manager call as Z3 terms: which event each operation sends
(`OPS`, `event_of`), the deliberately broken relations (`Variant`), a call's free
inputs (`Choice`), the keys that act in it (`Actor`), the call as a relation
(`Step`), and what the table does with one key and one event (the first matching
row fires; no row and no tolerated no-op is a refusal).

`proofs.z3.manager_ops` builds a call's relation from these and re-exports them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from evictable.model.lifecycle import CpuEvent, Machine, Transition
from evictable.model.machine import Hook, derive_hook
from evictable.proofs.z3.counter_rules import CounterRule, counters_after
from evictable.proofs.z3.encode import BlockTerms, HookFn
from evictable.proofs.z3.manager_state import REFERENCE, SS, MState, World

__all__ = [
    "MANAGER",
    "OPS",
    "Actor",
    "Choice",
    "Step",
    "Variant",
    "choice",
    "event_of",
    "fires",
    "matches",
    "rejects",
    "rows",
]

Term = Any

OPS: tuple[str, ...] = (
    "prepare_store",
    "complete_store.success",
    "complete_store.failure",
    "prepare_load",
    "complete_load",
    "touch",
    "reset_cache",
)
"""The public operations that change state (`lookup` and `take_events` do not)."""

_EVENT: dict[str, CpuEvent] = {
    "prepare_store": CpuEvent.STORE_BEGIN,
    "complete_store.success": CpuEvent.STORE_COMMIT,
    "complete_store.failure": CpuEvent.STORE_ABORT,
    "prepare_load": CpuEvent.LOAD_BEGIN,
    "complete_load": CpuEvent.LOAD_END,
    "touch": CpuEvent.TOUCH,
    "reset_cache": CpuEvent.RESET,
}
"""The event each operation sends to the keys it is given (or, for reset, holds)."""


def event_of(op: str) -> CpuEvent:
    """The event `op` sends to its keys (`OPS` names the operations)."""
    return _EVENT[op]


@dataclass(frozen=True)
class Variant:
    """A manager relation with one deliberate mistake (the default has none)."""

    hook: HookFn | None = None
    """A broken hook derivation (None: the table's `derive_hook`)."""
    keeps_slot_on: frozenset[str] = frozenset()
    """Operations whose keys leave residency without pushing their slot."""
    protects_input: bool = True
    atomic: bool = True
    """False: `prepare_load` / `complete_load` handle their keys one call at a time."""
    touch_lists: bool = False
    """True: `touch` puts every resident key it is given in the evictable list."""
    reset_clears_stack: bool = True
    victims_listed: bool = True
    """False: the policy's victims are keys that are *not* listed (a vacuous control)."""
    counters: CounterRule = field(default=lambda op, ne, np_, n: counters_after(op, ne, np_, n))
    """How the counters are updated (`counters_after`, or a rule that forgets an update)."""
    ignores_free_stack: bool = False
    """True: `prepare_store` counts only fresh slots as free, so it evicts although
    freed slots exist (a drifted relation: the code reuses the freed slots)."""
    victim_shortfall: int = 0
    """`prepare_store` takes this many victims fewer than it needs (a broken eviction
    fold: its store fold then runs out of slots)."""
    hook_from: int = 0
    """With `hook`: the broken hook applies to the keys a call acts on from this
    position on (0, 1, ...), the table's derivation before it (a relation that breaks
    only long batches: the fold lemma's step, at any position, must refute it)."""
    drops_from: int | None = None
    """`relation` leaves out the keys of a batch from this index on when it walks them
    to act (a relation whose own loop drops a key position: the agreement of
    `relation` with the lemma's fold must refute it)."""
    evicts_when_refused: bool = False
    """`prepare_store` takes its victims even when the call is refused (a duplicate or
    a rejected key): a refused call that changes the state, which the lemma's exit
    (`rejected_changes_nothing`) must refute."""
    duplicates_until: int | None = None
    """The duplicate check compares a key with the keys met before it only at the
    positions below this one (a check that skips long batches' later positions: the
    fold lemma's step must refute it)."""


MANAGER = Variant()


@dataclass(frozen=True)
class Choice:
    """An operation's free inputs: up to B batch keys (the first `n` are the batch),
    the policy's candidate victims, and whether the policy supplied them."""

    keys: tuple[Term, ...]
    n: Term
    victims: tuple[Term, ...]
    supplied: Term

    def outside(self, u: Term) -> Term:
        """`u` is none of the batch's keys (the first `n`)."""
        return z3.And(*[z3.Implies(self.n > i, u != k) for i, k in enumerate(self.keys)])


def choice(world: World, prefix: str, batch: int) -> tuple[Choice, list[Term]]:
    """Fresh inputs for one call with at most `batch` keys, and their range facts."""
    keys = tuple(world.key(f"{prefix}.key{i}") for i in range(batch))
    victims = tuple(world.key(f"{prefix}.victim{j}") for j in range(batch))
    n = z3.Int(f"{prefix}.n")
    facts = [n >= 0, n <= batch, *[world.key_facts(k) for k in keys + victims]]
    return Choice(keys, n, victims, z3.Bool(f"{prefix}.supplied")), facts


@dataclass(frozen=True)
class Actor:
    """One key acting in a call: its event, whether it acts, and the rows it may fire."""

    key: Term
    event: CpuEvent
    active: Term
    pre: BlockTerms
    post: BlockTerms
    fired: tuple[tuple[Transition, Term], ...]
    slot_before: Term
    slot_after: Term


@dataclass
class Step:
    """One call as a relation (see the module docstring)."""

    op: str
    pre: MState
    post: MState
    facts: list[Term]
    rejected: Term
    actors: list[Actor]
    branches: dict[str, Term] = field(default_factory=dict)
    claims: dict[str, Term] = field(default_factory=dict)
    duplicate: Term = field(default_factory=lambda: z3.BoolVal(False))
    """The call repeats a key (and is refused for it)."""
    refused: tuple[Term, ...] = ()
    """Per batch position: the table refuses that key's event (input order)."""
    need: Term | None = None
    """`prepare_store`: the victims needed (keys to store minus free slots; may be
    <= 0), which the policy relations (`proofs.z3.policy_*`) use to decide supply."""


def owed_hooks(step: Step) -> Iterator[tuple[str, Term, Term]]:
    """The policy hooks the call's acting keys owe, in the model manager's order: (the
    hook's name -- `became_evictable`, `became_pinned`, `stored` or `aborted` --, the
    key, when it fires). A fired row owes the hook `derive_hook` derives, a STORE_BEGIN
    `stored`, a STORE_ABORT `aborted`; a victim (EVICT) owes none: the policy removes
    its victims itself."""
    for a in step.actors:
        if a.event is CpuEvent.EVICT:
            continue
        for t, cond in a.fired:
            h = derive_hook(REFERENCE, t)
            if h is Hook.FLAG_ON:
                yield "became_evictable", a.key, cond
            elif h is Hook.FLAG_OFF:
                yield "became_pinned", a.key, cond
            if t.event is CpuEvent.STORE_BEGIN:
                yield "stored", a.key, cond
            elif t.event is CpuEvent.STORE_ABORT:
                yield "aborted", a.key, cond


def supplied_when_enough(step: Step, c: Choice, eligible: Sequence[Term]) -> Term:
    """A `prepare_store` the table accepts gets victims from the policy exactly when at
    least the victims needed are `eligible` (one term per key)."""
    if step.need is None:
        raise ValueError(f"{step.op} needs no victims")
    refused = z3.Or(step.duplicate, *step.refused)
    count = z3.Sum([z3.If(e, 1, 0) for e in eligible])
    return z3.Implies(z3.And(z3.Not(refused), step.need > 0), c.supplied == (count >= step.need))


# ------------------------------------------------------------------ one key, one event


def rows(machine: Machine, event: CpuEvent) -> list[Transition]:
    return [t for t in machine.transitions if t.event is event]


def matches(machine: Machine, event: CpuEvent, b: BlockTerms) -> list[tuple[Transition, Term]]:
    """Each row of `event` with the condition that it is the first to match `b`."""
    out: list[tuple[Transition, Term]] = []
    earlier: Term = z3.BoolVal(False)
    for t in rows(machine, event):
        guard = t.guard.holds(b.ref)  # polymorphic: True, or a Z3 term
        here = z3.And(b.state == SS.consts[t.source], z3.BoolVal(guard) if guard is True else guard)
        out.append((t, z3.And(here, z3.Not(earlier))))
        earlier = z3.Or(earlier, here)
    return out


def fires(machine: Machine, event: CpuEvent, b: BlockTerms) -> Term:
    return z3.Or(*[c for _, c in matches(machine, event, b)], False)


def _ignored(machine: Machine, event: CpuEvent, b: BlockTerms) -> Term:
    return z3.Or(*[b.state == SS.consts[s] for s, e in machine.ignored if e is event], False)


def rejects(machine: Machine, event: CpuEvent, b: BlockTerms) -> Term:
    """The table refuses `event` for `b`: no row fires and the pair is not ignored
    (a rejection, or a pair the table forgot, which `step` refuses too)."""
    return z3.And(z3.Not(fires(machine, event, b)), z3.Not(_ignored(machine, event, b)))
