"""One shape of the manager relation, as the refinement oracle uses it.

A *shape* is an operation of `z3.manager_ops.relation` in one finite world: `keys`
keys (numbered; the last one never in a call, so always absent), `slots` slots and
batches of up to `batch` keys. `build_shape` builds the relation once with a
symbolic pre-state and symbolic inputs and keeps a solver holding it; a concrete
call is then one check under assumptions, each a literal cached per (field, value).

That what the relation admits is the *only* thing it admits is shown once per
operation and batch bound, in the unbounded world (`functional`: two outcomes of one
pre-state and one input agree on every field a snapshot shows, on the refusal and on
the reply), and for a longer call on that call alone (`Shape.unique`).

The fields, by name (`pre_values` / `observed_values` read them off a snapshot):

* per key `k`: `state[k]`, `ref[k]` (0 when not resident), `listed[k]` (in the
  policy's evictable view; READY when the policy reports none), `slot[k]` (-1 when
  not resident);
* per slot id `s` (pre-state only): `owner[s]` (the key holding it, else the absent
  key), `pos[s]` (its place on the free stack, else -1);
* `stack[i]` (the free stack bottom to top, -1 above its height), `free stack
  height`, `high-water mark`, `num_evictable`, `num_pending`.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import z3

from evictable.model.lifecycle import CPU_MACHINE, CpuState, Machine
from evictable.model.types import ManagerSnapshot, evictable_view
from evictable.proofs.base.records import HANG_BACKSTOP_S
from evictable.proofs.refine.policy_shape import PolicyPart, arc_part, literal, lru_part
from evictable.proofs.z3.manager_ops import MANAGER, Choice, Step, Variant, choice, relation
from evictable.proofs.z3.manager_state import (
    SS,
    UNBOUNDED,
    BoundedWorld,
    MState,
    World,
    invariant,
    resident,
)
from evictable.proofs.z3.policy_arc import ARC_HOOKS, ArcHooks
from evictable.proofs.z3.policy_lru import LRU_HOOKS, LruHooks
from evictable.proofs.z3.solver import check, ground_solver, solver, unknown

__all__ = [
    "FUNCTIONAL_BATCH",
    "Shape",
    "build_shape",
    "functional",
    "observed_values",
    "pre_values",
]

Term = Any


@dataclass
class Shape:
    """The relation of one operation in one finite world (see the module docstring)."""

    op: str
    machine: Machine
    world: BoundedWorld
    slots: int
    batch: int
    pre: MState
    choice: Choice
    step: Step
    solver: Any
    observed: dict[str, Term]
    """The post-state's observed fields, by name."""
    pre_terms: dict[str, Term]
    invariant: dict[str, Term]
    """The proved invariant's clauses, of the pre-state."""
    variant: Variant = MANAGER
    policy: PolicyPart | None = None
    """The policy's relation composed with the manager's (`refine.policy_shape`)."""
    _twin: Term | None = None
    _literals: dict[tuple[str, Any], Term] = field(default_factory=dict)
    _slots_of_keys: dict[int, Term] = field(default_factory=dict)

    def _literal(self, terms: dict[str, Term], name: str, value: Any) -> Term:
        key = (name, value) if terms is self.observed else (f"pre.{name}", value)
        lit = self._literals.get(key)
        if lit is None:
            lit = _equals(terms[name], value)
            self._literals[key] = lit
        return lit

    def pre_literals(self, values: dict[str, Any]) -> list[Term]:
        """The pre-state fixed to `values` (`pre_values`)."""
        return [self._literal(self.pre_terms, n, values[n]) for n in self.pre_terms]

    def post_literals(self, values: dict[str, Any]) -> list[Term]:
        """The observed post-state fixed to `values` (`observed_values`; the policy's
        fields as its part says: `PolicyPart.post_literals`)."""
        part = self.policy
        if part is None:
            return [self._literal(self.observed, n, values[n]) for n in self.observed]
        mine = [
            self._literal(self.observed, n, values[n])
            for n in self.observed
            if n not in part.observed
        ]
        return mine + part.post_literals({n: values[n] for n in part.observed})

    def input_literals(
        self,
        keys: Sequence[Hashable],
        victims: Sequence[Hashable],
        supplied: bool,
        index: dict[Hashable, int],
        with_victims: bool = True,
    ) -> list[Term] | None:
        """The call's inputs: its batch, the policy's victims and whether it supplied
        them (padding with the absent key); None when a key is outside the world.
        `with_victims=False`: the batch only (the policy's choice left free)."""
        absent = self.world.keys - 1
        ids = [index.get(k, -1) for k in keys]
        vids = [index.get(v, -1) for v in victims]
        if any(not 0 <= i < absent for i in ids + vids):
            return None
        c = self.choice
        n = len(keys)
        out = [self._input(("n", n), operator.eq, c.n, n)]
        for i in range(self.batch):
            k = ids[i] if i < len(ids) else absent
            out.append(self._input(("key", i, k), operator.eq, c.keys[i], k))
        if not with_victims:
            return out
        for j in range(self.batch):
            v = vids[j] if j < len(vids) else absent
            out.append(self._input(("victim", j, v), operator.eq, c.victims[j], v))
        out.append(self._input(("supplied", supplied), literal, c.supplied, supplied))
        return out

    def _input(self, name: tuple[Any, ...], build: Callable[..., Term], *args: Any) -> Term:
        """The input literal `name`, `build(*args)` the first time only."""
        key = ("input", name)
        lit = self._literals.get(key)
        if lit is None:
            lit = self._literals[key] = build(*args)
        return lit

    def unique(self, literals: list[Term]) -> bool:
        """Whether the relation admits only one outcome of the call `literals` fix
        (its pre-state and inputs): a second step of the same call, in the same
        solver, cannot differ from the first anywhere a snapshot or reply shows."""
        if self._twin is None:
            twin = relation(
                self.world, self.machine, self.op, self.pre, self.choice, "twin", self.variant
            )
            self._twin = _differs(self.world, self.step, twin, self.choice)[0]
            self.solver.add(*twin.facts)
        r = check(self.solver, *literals, self._twin)
        if r == z3.unknown:
            raise RuntimeError(
                f"{self.op}: uniqueness was not decided: {unknown(self.solver).detail}"
            )
        return bool(r == z3.unsat)

    def slot_of_key(self, i: int) -> Term:
        """The slot the post-state gives the call's `i`-th key."""
        if i not in self._slots_of_keys:
            self._slots_of_keys[i] = self.step.post.slot(self.choice.keys[i])
        return self._slots_of_keys[i]


def _equals(term: Term, value: Any) -> Term:
    if isinstance(value, float):
        return term == z3.RealVal(str(Fraction(value)))
    if isinstance(value, bool):
        return term if value else z3.Not(term)
    if isinstance(value, CpuState):
        return term == SS.consts[value]
    return term == value


# ------------------------------------------------------------------ building


def _inputs(batch: int, prefix: str) -> Choice:
    return Choice(
        tuple(z3.Int(f"{prefix}.key{i}") for i in range(batch)),
        z3.Int(f"{prefix}.n"),
        tuple(z3.Int(f"{prefix}.victim{j}") for j in range(batch)),
        z3.Bool(f"{prefix}.supplied"),
    )


def observables(world: BoundedWorld, slots: int, m: MState) -> dict[str, Term]:
    """The fields of `m` a snapshot shows, by name (don't-cares masked)."""
    out: dict[str, Term] = {}
    for k in range(world.keys):
        res = resident(CPU_MACHINE, m.state(k))
        out[f"state[{k}]"] = m.state(k)
        out[f"ref[{k}]"] = z3.If(res, m.ref(k), 0)
        out[f"listed[{k}]"] = m.listed(k)
        out[f"slot[{k}]"] = z3.If(res, m.slot(k), -1)
    for i in range(slots):
        out[f"stack[{i}]"] = z3.If(i < m.sp, m.stack(i), -1)
    out["free stack height"] = m.sp
    out["high-water mark"] = m.hw
    out["num_evictable"] = m.num_evictable
    out["num_pending"] = m.num_pending
    return out


def _pre_terms(world: BoundedWorld, m: MState) -> dict[str, Term]:
    out: dict[str, Term] = {}
    for k in range(world.keys):
        out[f"state[{k}]"] = m.state(k)
        out[f"ref[{k}]"] = m.ref(k)
        out[f"listed[{k}]"] = m.listed(k)
        out[f"slot[{k}]"] = m.slot(k)
    for s in range(world.slots):
        out[f"owner[{s}]"] = m.owner(s)
        out[f"pos[{s}]"] = m.pos(s)
        out[f"stack[{s}]"] = m.stack(s)
    out["free stack height"] = m.sp
    out["high-water mark"] = m.hw
    out["num_evictable"] = m.num_evictable
    out["num_pending"] = m.num_pending
    out["capacity"] = m.cap
    return out


def _reply_terms(step: Step, c: Choice) -> list[Term]:
    """What the reply is made of: each actor acting, each input key's post slot."""
    return [
        *[a.active for a in step.actors],
        *[step.post.slot(k) for k in c.keys],
        *step.branches.values(),
        step.duplicate,
        *step.refused,
    ]


def build_shape(
    machine: Machine,
    variant: Variant,
    op: str,
    keys: int,
    slots: int,
    batch: int,
    policy: str | None = None,
    hooks: LruHooks = LRU_HOOKS,
    arc_hooks: ArcHooks = ARC_HOOKS,
) -> Shape:
    """The relation of `op` over `keys` keys, `slots` slots and batches of up to
    `batch` keys, with a solver holding it (its functionality is `functional`'s);
    with `policy` "lru", the LRU's hook relations (`hooks`) composed with it."""
    world = BoundedWorld(keys=keys, slots=max(slots, 1))
    pre = replace(world.fresh("pre"), cap=z3.Int("pre.capacity"))
    c = _inputs(batch, "call")
    step = relation(world, machine, op, pre, c, "step", variant)
    s = ground_solver(HANG_BACKSTOP_S)
    s.add(*step.facts)
    observed = observables(world, slots, step.post)
    pre_terms = _pre_terms(world, pre)
    inv = invariant(world, pre)
    part = None
    if policy == "lru":
        part = lru_part(world, step, c, pre, hooks)
    elif policy == "arc":
        part = arc_part(world, step, c, pre, arc_hooks)
    if part is not None:
        s.add(*part.facts)
        observed.update(part.observed)
        pre_terms.update(part.pre_terms)
        inv = part.invariant
    elif policy is not None:
        raise ValueError(f"no relation of the policy {policy!r}")
    return Shape(
        op,
        machine,
        world,
        slots,
        batch,
        pre,
        c,
        step,
        s,
        observed,
        pre_terms,
        inv,
        variant,
        part,
    )


def _differs(world: World, a: Step, b: Step, c: Choice) -> tuple[Term, dict[str, Term]]:
    """Two steps of one call differ somewhere a snapshot or a reply shows: at a key
    `k0` or a stack place `i0` chosen by the solver, in a scalar, or in the reply."""
    k0, i0 = world.key("diff.k0"), z3.Int("diff.i0")

    def shown(m: MState) -> dict[str, Term]:
        res = resident(CPU_MACHINE, m.state(k0))
        return {
            "state": m.state(k0),
            "ref": z3.If(res, m.ref(k0), 0),
            "listed": m.listed(k0),
            "slot": z3.If(res, m.slot(k0), -1),
            "free stack": z3.If(z3.And(i0 >= 0, i0 < m.sp), m.stack(i0), -1),
            "free stack height": m.sp,
            "high-water mark": m.hw,
            "num_evictable": m.num_evictable,
            "num_pending": m.num_pending,
        }

    mine, theirs = shown(a.post), shown(b.post)
    diffs = {n: mine[n] != theirs[n] for n in mine}
    diffs["refusal"] = a.rejected != b.rejected
    diffs["reply"] = z3.Or(
        *[x != y for x, y in zip(_reply_terms(a, c), _reply_terms(b, c), strict=True)]
    )
    return z3.And(world.key_facts(k0), z3.Or(*diffs.values())), diffs


FUNCTIONAL_BATCH = 4
"""The batch bound of `functional`'s proof (cost grows steeply above it, 31 s at 8
for `prepare_store`); a longer call is shown to have one outcome on its own
(`Shape.unique`)."""


def functional(machine: Machine, variant: Variant, op: str, batch: int) -> str | None:
    """Z3 shows, over keys of an uninterpreted sort and any number of slots, that
    `op`'s relation admits at most one outcome -- post-state as a snapshot shows it,
    refusal and reply -- for any pre-state and any input of up to `batch` keys. None
    when it is so; else which fields two outcomes of one call may differ in."""
    world = UNBOUNDED
    pre = world.fresh("pre")
    c, facts = choice(world, "call", batch)
    a = relation(world, machine, op, pre, c, "step", variant)
    b = relation(world, machine, op, pre, c, "twin", variant)
    differ, diffs = _differs(world, a, b, c)
    s = solver(HANG_BACKSTOP_S)
    s.add(*facts, *a.facts, *b.facts, differ)
    r = check(s)
    if r == z3.unsat:
        return None
    if r == z3.unknown:
        raise RuntimeError(f"{op}: functionality was not decided: {unknown(s).detail}")
    model = s.model()
    free = [n for n, t in diffs.items() if z3.is_true(model.eval(t, model_completion=True))]
    return (
        f"{op} with batches of up to {batch} keys: the relation admits two outcomes of one "
        f"call, which differ in {', '.join(free) or 'the reply'}"
    )


# ------------------------------------------------------------------ concrete values


def pre_values(
    snap: ManagerSnapshot, index: dict[Hashable, int], keys: int, slots: int
) -> dict[str, Any]:
    """`snap` as values of a shape's pre-state fields (keys numbered by `index`, slot
    ids up to the shape's `slots`, at least the manager's capacity)."""
    out = observed_values(snap, index, keys, slots)
    absent = keys - 1
    owners = {e.slot: index[e.key] for e in snap.blocks}
    positions = {s: i for i, s in enumerate(snap.free_stack)}
    height = len(snap.free_stack)
    for k in range(keys):
        out[f"slot[{k}]"] = max(out[f"slot[{k}]"], 0)
    out["capacity"] = snap.num_blocks
    for s in range(max(slots, 1)):
        out[f"owner[{s}]"] = owners.get(s, absent)
        out[f"pos[{s}]"] = positions.get(s, -1)
        out[f"stack[{s}]"] = snap.free_stack[s] if s < height else 0
    return out


def observed_values(
    snap: ManagerSnapshot, index: dict[Hashable, int], keys: int, slots: int
) -> dict[str, Any]:
    """`snap` as values of a shape's observed fields (keys numbered by `index`)."""
    view = evictable_view(snap.policy)
    entries = {index[e.key]: e for e in snap.blocks}
    names = {i: k for k, i in index.items()}
    out: dict[str, Any] = {}
    for k in range(keys):
        e = entries.get(k)
        state = e.state if e is not None else CpuState.ABSENT
        out[f"state[{k}]"] = state
        out[f"ref[{k}]"] = e.ref_cnt if e is not None else 0
        if view is None:
            out[f"listed[{k}]"] = state is CpuState.READY
        else:
            out[f"listed[{k}]"] = k in names and names[k] in view
        out[f"slot[{k}]"] = e.slot if e is not None else -1
    for i in range(slots):
        out[f"stack[{i}]"] = snap.free_stack[i] if i < len(snap.free_stack) else -1
    out["free stack height"] = len(snap.free_stack)
    out["high-water mark"] = snap.high_water
    out["num_evictable"] = snap.num_evictable
    out["num_pending"] = snap.num_pending
    return out
