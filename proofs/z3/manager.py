"""Manager-level Z3 obligations: an inductive invariant over an unbounded key sort.

The per-block lifecycle proofs (`proofs.z3.lifecycle`) reduce to one block at a
time. The bugs of real managers live one level up -- in batches, in evictions, in
which hook a call makes for which key, in slots and counters -- so these obligations
speak about the whole manager (`proofs.z3.manager_state`: state, ref, listed, slot
per key of an uninterpreted `Key` sort; owner, stack position per slot id; the free
stack, the high-water mark, the counters) and about each public operation as a
relation over a batch of keys (`proofs.z3.manager_ops`), built from the table.

* `manager.initiation` -- a fresh manager satisfies the invariant.
* `manager.consecution.<op>` -- for every operation (`prepare_store`,
  `complete_store.success` / `.failure`, `prepare_load`, `complete_load`, `touch`,
  `reset_cache`): from any state satisfying the invariant, with any number of keys
  and slots and any batch of up to B keys, the post-state satisfies the invariant
  (`listed ⇔ READY` and the block invariants for every key; slots owned injectively;
  the free stack; fresh ⊎ free ⊎ owned) and the operation's claims hold (a rejected
  call changes nothing; an accepted call's keys are distinct; slots never run out;
  victims are READY and no input key; each counter changes by the change of its
  count). For every batch length (`proofs.z3.manager_fold`, the fold lemma; for
  `prepare_store` a part per fold, `proofs.z3.manager_fold_store`); `reset_cache`
  takes no batch. (A relation the lemma does not cover -- a non-atomic control -- is
  proved for batches of up to B keys.)
* `manager.nonvacuity` -- every branch of every operation (each rejection, an
  eviction, a None return, an ignored key, duplicates, an accepted call of B
  distinct keys that all act) happens from some state satisfying the invariant, so
  no claim above holds vacuously.
* `manager.rows` -- every row of the table fires in some operation from some state
  satisfying the invariant: a row the manager can never execute is a dead row.

The table is looked up in `model.lifecycle` when `obligations` is called (a test
may patch a broken one in); the invariant is always the reference table's.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import z3

from evictable.model.lifecycle import Machine
from evictable.proofs.base.records import (
    Outcome,
    Status,
    aimed,
    proved,
    refuted,
)
from evictable.proofs.z3.manager_fold import LemmaCache, check_fold, folds
from evictable.proofs.z3.manager_ops import (
    MANAGER,
    OPS,
    Step,
    Variant,
    choice,
    relation,
)
from evictable.proofs.z3.manager_render import render_key, render_stack, render_step, value
from evictable.proofs.z3.manager_state import (
    UNBOUNDED,
    BoundedWorld,
    World,
    initial_facts,
    invariant,
)
from evictable.proofs.z3.solver import Witness, check, refute_claims, solver, z3_valid

__all__ = [
    "BATCH",
    "SEARCH_BATCH",
    "check_consecution",
    "check_initiation",
    "check_nonvacuity",
    "check_rows",
    "consecution_query",
    "counterexample_world",
    "decide",
    "failed_claims",
    "finite_witness",
    "render_key",
    "render_step",
    "search_consecution",
    "unbounded_in_batch",
    "witness_world",
]

BATCH: dict[str, int] = {"quick": 2, "default": 3, "thorough": 4}
"""B, the most keys in one call, per level (keys and slots are unbounded)."""


def witness_world(batch: int) -> BoundedWorld:
    """Where satisfiability witnesses for calls of up to `batch` keys are sought (a
    witness anywhere is a witness): room for the batch and one key more, a slot per
    batch key."""
    return BoundedWorld(keys=batch + 1, slots=batch)


def unbounded_in_batch(op: str, variant: Variant = MANAGER) -> bool:
    """`manager.consecution.<op>` holds for every batch length when proved: the fold
    lemma covers it, or it takes no batch (`reset_cache`)."""
    return op == "reset_cache" or folds(op, variant)


Term = Any


# ------------------------------------------------------------------ checks


def failed_claims(
    claims: dict[str, Term], assumptions: list[Term], backstop_s: float, witness: Witness
) -> Outcome:
    """All claims at once (quantified: the unbounded world; `witness`, the same query's
    assumptions in a finite world, shows them satisfiable); a failure is re-checked
    claim by claim to name the ones that fail."""
    claims = dict(aimed(claims))  # a control's targets only, when it names some
    whole = z3_valid(z3.And(*claims.values()), backstop_s, lambda _m: "", assumptions, witness)
    if whole.status is not Status.COUNTEREXAMPLE:
        return whole
    failed = [
        name
        for name, claim in claims.items()
        if z3_valid(claim, backstop_s, lambda _m: "", assumptions).status is Status.COUNTEREXAMPLE
    ]
    return refuted(f"(unbounded world); violated: {', '.join(failed) or '(together)'}")


Query = tuple[dict[str, Term], list[Term], Callable[[Any], str]]
"""A claim set, its assumptions, and how to render a counterexample model."""


def counterexample_world(batch: int, slots: int | None = None) -> BoundedWorld:
    """A finite world for counterexamples to calls of up to `batch` keys: (unless
    given) a slot per batch key and one more; room for the batch, a victim and one key
    more, and at least one key more than slots (so every slot can be owned while a key
    is absent: an eviction is possible)."""
    n = batch + 1 if slots is None else slots
    return BoundedWorld(keys=max(batch + 2, n + 1), slots=n)


def _search(query: Query, backstop_s: float) -> Outcome | None:
    """A counterexample in a finite world (every claim quantifier-free there, so the
    failing ones are read off the model), None when there is none, or `unknown`."""
    claims, assumptions, describe = query
    out = refute_claims(
        claims, assumptions, backstop_s, "the finite-world search", describe, search=True
    )
    return None if out.status is Status.PROVED else out


Make = Callable[[World, int], Query]
"""Builds a check's query in a world, for calls of up to the given number of keys."""


def decide(
    make: Make,
    batch: int,
    backstop_s: float,
    lemma: Callable[[float], Outcome] | None = None,
    search_batch: int | None = None,
) -> Outcome:
    """One strategy, bounded by work alone: search a finite world for a counterexample
    (quantifier-free, so Z3 answers fast and the model names the failing claims) with
    calls of up to `search_batch` keys (default `batch`), in a world of `batch + 1`
    slots (`counterexample_world`); if there is none, prove the claim -- by `lemma`
    (for every batch length) when given, else in the unbounded world for calls of up
    to `batch` keys (where a counterexample that needs a longer batch than the search's
    shows too, by its failing claims). Each query runs under the rlimit.

    A counterexample in a finite world is one in the unbounded world too: its keys
    and slots are some of the unboundedly many, the others absent and fresh. (A finite
    world's own clauses -- counts, capacity -- are assumed there, not claimed.)
    """
    sb = batch if search_batch is None else search_batch
    found = _search(make(counterexample_world(sb, batch + 1), sb), backstop_s)
    if found is not None:
        return found
    if lemma is not None:
        return lemma(backstop_s)
    claims, assumptions, _ = make(UNBOUNDED, batch)
    return failed_claims(claims, assumptions, backstop_s, finite_witness(make, batch))


def finite_witness(make: Make, batch: int) -> Witness:
    """The assumptions of `make`'s query in a finite world (`counterexample_world`):
    a model of them is a model of the unbounded query's (`solver.Witness`)."""
    return lambda: make(counterexample_world(batch, batch + 1), batch)[1]


SEARCH_BATCH = 1
"""The finite search of a consecution claim uses calls of this many keys (in a world
of B + 1 slots): at B keys it costs 15-80 s a query on this machine (complete_store
.failure, prepare_store). It is the fast path to a readable counterexample only; the
proof covers every batch length (the fold lemma, which searches a finite world of its
own first) or, for a relation the lemma does not cover, B keys in the unbounded world,
which names the failing claims of a longer call."""


def _initiation_query(machine: Machine, world: World) -> Query:
    m = world.fresh("init")

    def describe(model: Any) -> str:
        return (
            f"initial state: high_water {value(model, m.hw)}, free stack {render_stack(model, m)}, "
            f"capacity {value(model, m.cap)}"
        )

    return invariant(world, m, not world.bounded), initial_facts(world, m, machine), describe


def check_initiation(machine: Machine, backstop_s: float) -> Outcome:
    """A fresh manager (every key initial, every slot fresh, counters 0) satisfies Inv."""
    return decide(lambda w, _b: _initiation_query(machine, w), 0, backstop_s)


def consecution_query(
    machine: Machine,
    op: str,
    batch: int,
    variant: Variant,
    world: World,
    only: Callable[[str], bool] | None = None,
) -> Query:
    """The claims of `op`'s consecution in `world` (those `only` keeps), its assumptions
    (the invariant before, the relation) and a renderer for a counterexample."""
    pre = world.fresh("pre")
    c, facts = choice(world, "in", batch)
    step = relation(world, machine, op, pre, c, "op", variant)
    assumptions = [*invariant(world, pre).values(), *facts, *step.facts]
    claims = {**invariant(world, step.post, counting=False), **step.claims}
    if only is not None:
        claims = {name: claim for name, claim in claims.items() if only(name)}
    return claims, assumptions, lambda m: render_step(m, world, step)


def search_consecution(
    machine: Machine, op: str, batch: int, backstop_s: float, variant: Variant = MANAGER
) -> Outcome | None:
    """A counterexample to `op`'s consecution in the finite world for calls of `batch`
    keys, or None (no proof: only `check_consecution` proves)."""
    world = counterexample_world(batch)
    return _search(consecution_query(machine, op, batch, variant, world), backstop_s)


def check_consecution(
    machine: Machine,
    op: str,
    batch: int,
    backstop_s: float,
    variant: Variant = MANAGER,
    cache: LemmaCache | None = None,
) -> Outcome:
    """`op` keeps the invariant and its own claims, from any state satisfying it: for
    every batch length where `unbounded_in_batch` says so, else for batches of up to
    `batch` keys and searched at `batch + 1` (`decide`). `cache`: shared by a
    record's claim and controls (`manager_fold.check_fold`)."""

    def make(w: World, b: int) -> Query:
        return consecution_query(machine, op, b, variant, w)

    if folds(op, variant):
        lemma = partial(check_fold, machine, op, variant=variant, cache=cache)
        return decide(make, batch, backstop_s, lemma, SEARCH_BATCH)
    return decide(make, batch, backstop_s, search_batch=SEARCH_BATCH)


class _Witnesses:
    """One solver per premise set; each branch is checked under it (push / pop)."""

    def __init__(self, premises: list[Term], backstop_s: float) -> None:
        self.solver = solver(backstop_s)
        self.solver.add(*premises)

    def sat(self, branch: Term) -> Any:
        s = self.solver
        s.push()
        s.add(branch)
        try:
            return check(s)
        finally:
            s.pop()


def _witness_steps(
    machine: Machine, batch: int, variant: Variant, world: World
) -> list[tuple[Step, list[Term]]]:
    out = []
    for op in OPS:
        pre = world.fresh(f"{op}.pre")
        c, facts = choice(world, f"{op}.in", batch)
        step = relation(world, machine, op, pre, c, f"{op}.op", variant)
        out.append((step, [*invariant(world, pre).values(), *facts, *step.facts]))
    return out


def check_nonvacuity(
    machine: Machine,
    batch: int,
    backstop_s: float,
    variant: Variant = MANAGER,
    world: World | None = None,
) -> Outcome:
    """Every branch of every operation but its row firings (`check_rows`) has a witness
    (among them an accepted call of `batch` distinct keys that all act)."""
    world = world if world is not None else witness_world(batch)
    for step, premises in _witness_steps(machine, batch, variant, world):
        witnesses = _Witnesses(premises, backstop_s)
        for name, branch in step.branches.items():
            if name.startswith("fires "):
                continue
            r = witnesses.sat(branch)
            if r == z3.unknown:
                return Outcome(Status.UNKNOWN, f"{step.op}: '{name}' is undecided")
            if r != z3.sat:
                return refuted(
                    f"{step.op}: branch '{name}' never happens from a state satisfying the "
                    "invariant (vacuous)"
                )
    return proved()


def check_rows(
    machine: Machine,
    batch: int,
    backstop_s: float,
    variant: Variant = MANAGER,
    world: World | None = None,
) -> Outcome:
    """Every row of `machine` fires in some operation from a state satisfying Inv."""
    world = world if world is not None else witness_world(batch)
    witnessed: set[str] = set()
    undecided: list[str] = []
    for step, premises in _witness_steps(machine, batch, variant, world):
        witnesses = _Witnesses(premises, backstop_s)
        for name, branch in step.branches.items():
            if not name.startswith("fires ") or name in witnessed:
                continue
            r = witnesses.sat(branch)
            if r == z3.sat:
                witnessed.add(name)
            elif r == z3.unknown:
                undecided.append(name)
    dead = [
        t
        for t in machine.transitions
        if f"fires {t.event.value} {t.source.name}->{t.target.name}" not in witnessed
    ]
    if undecided and dead:
        return Outcome(Status.UNKNOWN, f"undecided: {', '.join(undecided)}")
    if dead:
        rows = ", ".join(f"{t.event.value} {t.source.name}->{t.target.name}" for t in dead)
        return refuted(f"dead rows: no operation fires {rows} from a state satisfying Inv")
    return proved(f"{len(machine.transitions)} rows fired")


# ------------------------------------------------------------------ controls
