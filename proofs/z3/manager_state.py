"""The CPU manager's whole state as Z3 terms, in two worlds, and its inductive invariant.

A manager state (`MState`) is, per key, the table's three block fields -- `state`,
`ref`, `listed` (in the evictable list) -- and its `slot`; per slot id, its `owner`
(the key holding it) and `pos` (its position on the free stack); the free `stack`
itself with its height `sp`; the high-water mark `hw` (ids `[hw, cap)` are fresh);
the capacity `cap`; and the two counters `num_evictable` and `num_pending`.

Two worlds give those fields a representation (`World`):

* `UNBOUNDED` -- keys are an uninterpreted sort `Key` (any number of keys) and every
  per-key field is a Z3 array over it; slot ids are integers and `cap` is a symbolic
  integer (any number of slots). "For every key" is a quantifier. This is the
  Ivy/EPR-style world of the manager-level proofs (`proofs.z3.manager`).
* `BoundedWorld(keys=M, slots=N)` -- keys are the integers `0..M-1` and every field
  is a tuple of scalar terms (a read at a symbolic index is an `If` chain), `cap` is
  N; "for every key" is a finite conjunction, so counting is possible. Bounded model
  checking (`proofs.z3.bmc`) and the non-vacuity witnesses use it.

`invariant(world, m)` is the named manager-level invariant, each clause a claim of
its own: the table's block invariants and `listed ⇔ READY` for every key, slot
ownership (a resident key's slot is below the high-water mark and its owner is the
key: so slots are owned injectively), the free stack, the partition fresh ⊎ free ⊎
owned of the slot ids, and -- in a bounded world, where counts exist -- residents ≤
capacity and each counter equal to the number of keys in its state. In the
unbounded world capacity follows from the injection `slot` into `[0, hw) ⊆ [0, cap)`
and the counters are proved per operation (`proofs.z3.manager_ops`: the counter's
change equals the change of the count over the keys the operation touched).

The invariant always speaks about the *reference* table (`REFERENCE_MACHINES`), so a
broken table stepping the state is judged by the unbroken specification.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import z3

from evictable.model.lifecycle import CPU_MACHINE, CpuState, Machine
from evictable.proofs.z3.encode import REFERENCE_MACHINES, BlockTerms, inv_term, state_sort
from evictable.proofs.z3.terms import both, ite

__all__ = [
    "UNBOUNDED",
    "BoundedWorld",
    "Fn",
    "MState",
    "UnboundedWorld",
    "World",
    "block",
    "in_states",
    "initial_facts",
    "invariant",
    "resident",
]

Term = Any

REFERENCE = REFERENCE_MACHINES[CPU_MACHINE.name]
SS = state_sort(REFERENCE)


def in_states(machine: Machine, term: Term, pick: Callable[[Any], bool]) -> Term:
    """`term` is one of `machine`'s states whose spec satisfies `pick`."""
    ss = state_sort(machine)
    return z3.Or(*[term == ss.consts[s.state] for s in machine.states if pick(s)], False)


def resident(machine: Machine, term: Term) -> Term:
    """The state `term` is declared resident (holds a slot) by `machine`."""
    return in_states(machine, term, lambda s: s.resident)


# ------------------------------------------------------------------ functions


class Fn(Protocol):
    """A function as terms: read at an index, update at an index when a condition holds."""

    def __call__(self, index: Term) -> Term: ...

    def set(self, index: Term, value: Term, when: Term = True) -> Fn: ...

    def equals(self, other: Fn) -> Term: ...


@dataclass(frozen=True)
class ArrayFn:
    """A Z3 array (unbounded domain)."""

    arr: Term

    def __call__(self, index: Term) -> Term:
        return z3.Select(self.arr, index)

    def set(self, index: Term, value: Term, when: Term = True) -> ArrayFn:
        if when is True:
            return ArrayFn(z3.Store(self.arr, index, value))
        return ArrayFn(z3.If(when, z3.Store(self.arr, index, value), self.arr))

    def equals(self, other: Fn) -> Term:
        if not isinstance(other, ArrayFn):
            raise TypeError("an array compares only with an array")
        return self.arr == other.arr


@dataclass(frozen=True)
class VecFn:
    """A function on `0..len-1` as one scalar term per index (a bounded domain)."""

    vals: tuple[Term, ...]
    _read: dict[int, tuple[Term, Term]] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )
    """The chains built for symbolic indexes, by the index object's identity (the
    index is kept with its chain, so an identity is never reused for another)."""

    def __call__(self, index: Term) -> Term:
        if isinstance(index, int):
            return self.vals[index]
        seen = self._read.get(id(index))
        if seen is not None and seen[0] is index:
            return seen[1]
        out = self.vals[-1]
        for i in range(len(self.vals) - 2, -1, -1):
            out = ite(_eq(index, i), self.vals[i], out)
        self._read[id(index)] = (index, out)
        return out

    def set(self, index: Term, value: Term, when: Term = True) -> VecFn:
        if when is True:
            when = z3.BoolVal(True)
        return VecFn(
            tuple(
                ite(both(when, _eq(index, i)), value, v) if _may(index, i) else v
                for i, v in enumerate(self.vals)
            )
        )

    def equals(self, other: Fn) -> Term:
        if not isinstance(other, VecFn):
            raise TypeError("a vector compares only with a vector")
        return z3.And(*[a == b for a, b in zip(self.vals, other.vals, strict=True)])


def _eq(index: Term, i: int) -> Term:
    return z3.BoolVal(index == i) if isinstance(index, int) else index == i


def _may(index: Term, i: int) -> bool:
    return not isinstance(index, int) or index == i


# ------------------------------------------------------------------ the state


@dataclass(frozen=True)
class MState:
    """One manager state as terms (see the module docstring)."""

    state: Fn
    ref: Fn
    listed: Fn
    slot: Fn
    owner: Fn
    stack: Fn
    pos: Fn
    sp: Term
    hw: Term
    cap: Term
    num_evictable: Term
    num_pending: Term

    def counter(self, name: str) -> Term:
        return {"num_evictable": self.num_evictable, "num_pending": self.num_pending}[name]

    def free_slots(self) -> Term:
        """The slots a store can take: the fresh ones and the free stack's."""
        return self.cap - self.hw + self.sp

    def same_as(self, other: MState) -> Term:
        """Every field equal: nothing observable changed."""
        fns = ("state", "ref", "listed", "slot", "owner", "stack", "pos")
        ints = ("sp", "hw", "num_evictable", "num_pending")
        return z3.And(
            *[getattr(self, f).equals(getattr(other, f)) for f in fns],
            *[getattr(self, f) == getattr(other, f) for f in ints],
        )


def block(m: MState, key: Term) -> BlockTerms:
    """The table's view of one key: its state, ref count and list membership."""
    return BlockTerms(m.state(key), m.ref(key), m.listed(key))


# ------------------------------------------------------------------ worlds


class World(Protocol):
    """How keys and slots are represented, and what "every" means."""

    name: str
    bounded: bool

    def key(self, name: str) -> Term: ...
    def key_facts(self, key: Term) -> Term: ...
    def fresh(self, prefix: str) -> MState: ...
    def all_keys(self, body: Callable[[Term], Term]) -> Term: ...
    def any_key(self, body: Callable[[Term], Term]) -> Term: ...
    def all_slots(self, cap: Term, body: Callable[[Term], Term]) -> Term: ...
    def key_index(self, model: Any, key: Term) -> int: ...
    def no_keys(self) -> Fn: ...
    def key_set(self, name: str) -> Fn: ...


class UnboundedWorld:
    """Keys of an uninterpreted sort, slot ids unbounded integers, `cap` symbolic."""

    name = "unbounded"
    bounded = False

    def __init__(self) -> None:
        self.sort = z3.DeclareSort("Key")
        self._seen: dict[str, int] = {}

    def key(self, name: str) -> Term:
        return z3.Const(name, self.sort)

    def key_facts(self, key: Term) -> Term:
        return z3.BoolVal(True)

    def fresh(self, prefix: str) -> MState:
        k, i = self.sort, z3.IntSort()

        def arr(name: str, dom: Any, rng: Any) -> ArrayFn:
            return ArrayFn(z3.Array(f"{prefix}.{name}", dom, rng))

        return MState(
            arr("state", k, SS.sort),
            arr("ref", k, i),
            arr("listed", k, z3.BoolSort()),
            arr("slot", k, i),
            arr("owner", i, k),
            arr("stack", i, i),
            arr("pos", i, i),
            z3.Int(f"{prefix}.sp"),
            z3.Int(f"{prefix}.hw"),
            z3.Int("cap"),
            z3.Int(f"{prefix}.num_evictable"),
            z3.Int(f"{prefix}.num_pending"),
        )

    def all_keys(self, body: Callable[[Term], Term]) -> Term:
        x = z3.Const("k", self.sort)
        return z3.ForAll([x], body(x))

    def any_key(self, body: Callable[[Term], Term]) -> Term:
        x = z3.Const("k", self.sort)
        return z3.Exists([x], body(x))

    def all_slots(self, cap: Term, body: Callable[[Term], Term]) -> Term:
        s = z3.Int("s")
        return z3.ForAll([s], z3.Implies(z3.And(s >= 0, s < cap), body(s)))

    def key_index(self, model: Any, key: Term) -> int:
        text = str(model.eval(key, model_completion=True))
        return self._seen.setdefault(text, len(self._seen))

    def no_keys(self) -> Fn:
        """The empty set of keys (a key -> Bool array, false everywhere)."""
        return ArrayFn(z3.K(self.sort, z3.BoolVal(False)))

    def key_set(self, name: str) -> Fn:
        """Any set of keys (a fresh key -> Bool array)."""
        return ArrayFn(z3.Array(name, self.sort, z3.BoolSort()))


UNBOUNDED = UnboundedWorld()


class BoundedWorld:
    """Keys `0..keys-1` and slot ids `0..slots-1`, every field a tuple of scalars
    (`all_slots` ranges over the slot ids whatever bound it is given)."""

    bounded = True

    def __init__(self, keys: int, slots: int, arrays: bool = False) -> None:
        self.keys = keys
        self.slots = slots
        self.arrays = arrays
        self.name = f"{keys} keys, {slots} slots"

    def key(self, name: str) -> Term:
        return z3.Int(name)

    def key_facts(self, key: Term) -> Term:
        return z3.And(key >= 0, key < self.keys)

    def fresh(self, prefix: str) -> MState:
        m, n = self.keys, self.slots

        def vec(name: str, size: int, make: Callable[[str], Term]) -> Fn:
            if self.arrays:
                rng = make("x").sort()
                return ArrayFn(z3.Array(f"{prefix}.{name}", z3.IntSort(), rng))
            return VecFn(tuple(make(f"{prefix}.{name}{i}") for i in range(size)))

        return MState(
            vec("state", m, lambda s: z3.Const(s, SS.sort)),
            vec("ref", m, z3.Int),
            vec("listed", m, z3.Bool),
            vec("slot", m, z3.Int),
            vec("owner", n, z3.Int),
            vec("stack", n, z3.Int),
            vec("pos", n, z3.Int),
            z3.Int(f"{prefix}.sp"),
            z3.Int(f"{prefix}.hw"),
            z3.IntVal(n),
            z3.Int(f"{prefix}.num_evictable"),
            z3.Int(f"{prefix}.num_pending"),
        )

    def all_keys(self, body: Callable[[Term], Term]) -> Term:
        return z3.And(*[body(i) for i in range(self.keys)])

    def any_key(self, body: Callable[[Term], Term]) -> Term:
        return z3.Or(*[body(i) for i in range(self.keys)])

    def all_slots(self, cap: Term, body: Callable[[Term], Term]) -> Term:
        return z3.And(*[body(s) for s in range(self.slots)])

    def key_index(self, model: Any, key: Term) -> int:
        if isinstance(key, int):
            return key
        return int(model.eval(key, model_completion=True).as_long())

    def no_keys(self) -> Fn:
        """The empty set of keys."""
        if self.arrays:
            return ArrayFn(z3.K(z3.IntSort(), z3.BoolVal(False)))
        return VecFn(tuple(z3.BoolVal(False) for _ in range(self.keys)))

    def key_set(self, name: str) -> Fn:
        """Any set of keys."""
        if self.arrays:
            return ArrayFn(z3.Array(name, z3.IntSort(), z3.BoolSort()))
        return VecFn(tuple(z3.Bool(f"{name}{i}") for i in range(self.keys)))


# ------------------------------------------------------------------ the invariant


def _count(world: BoundedWorld, m: MState, test: Callable[[Term], Term]) -> Term:
    return z3.Sum([z3.If(test(i), 1, 0) for i in range(world.keys)])


def invariant(world: World, m: MState, counting: bool = True) -> dict[str, Term]:
    """The manager-level invariant, clause by clause (see the module docstring).

    `counting=False` leaves out the clauses that exist only in a bounded world
    (capacity and counters as counts)."""
    ready = SS.consts[CpuState.READY]

    def res(k: Term) -> Term:
        return resident(REFERENCE, m.state(k))

    def free(s: Term) -> Term:
        p = m.pos(s)
        return z3.And(p >= 0, p < m.sp, m.stack(p) == s)

    def owned(s: Term) -> Term:
        o = m.owner(s)
        return z3.And(res(o), m.slot(o) == s)

    out = {
        "blocks": world.all_keys(lambda k: inv_term(REFERENCE, SS, block(m, k))),
        "listed_iff_ready": world.all_keys(lambda k: m.listed(k) == (m.state(k) == ready)),
        "slot_below_high_water": world.all_keys(
            lambda k: z3.Implies(res(k), z3.And(m.slot(k) >= 0, m.slot(k) < m.hw))
        ),
        "slots_owned_injectively": world.all_keys(
            lambda k: z3.Implies(res(k), m.owner(m.slot(k)) == k)
        ),
        "free_stack": z3.And(
            m.sp >= 0,
            world.all_slots(
                m.sp,
                lambda i: z3.Implies(
                    i < m.sp,
                    z3.And(m.stack(i) >= 0, m.stack(i) < m.hw, m.pos(m.stack(i)) == i),
                ),
            ),
        ),
        "slot_partition": z3.And(
            m.hw >= 0,
            m.hw <= m.cap,
            world.all_slots(m.cap, lambda s: _exactly_one(s >= m.hw, free(s), owned(s))),
        ),
    }
    if isinstance(world, BoundedWorld):
        out["owners_are_keys"] = world.all_slots(m.cap, lambda s: world.key_facts(m.owner(s)))
        if not counting:
            return out
        out["capacity"] = z3.And(_count(world, m, res) <= m.cap, m.sp <= m.cap)
        for name, state in REFERENCE.counters.items():
            c = SS.consts[state]

            def in_state(k: Term, c: Term = c) -> Term:
                return m.state(k) == c

            out[f"{name}_counts"] = m.counter(name) == _count(world, m, in_state)
    return out


def _exactly_one(*xs: Term) -> Term:
    return z3.Sum([z3.If(x, 1, 0) for x in xs]) == 1


def initial_facts(world: World, m: MState, machine: Machine = CPU_MACHINE) -> list[Term]:
    """A freshly constructed manager: every key in an initial state (list membership its
    flag), every slot fresh, the counters 0 (derived from `machine`'s initial states)."""
    ss = state_sort(machine)

    def start(k: Term) -> Term:
        return z3.Or(
            *[
                z3.And(m.state(k) == ss.consts[s], m.listed(k) == machine.spec(s).flag)
                for s in machine.initial
            ]
        )

    facts = [
        world.all_keys(start),
        m.hw == 0,
        m.sp == 0,
        m.cap >= 0,
        m.num_evictable == 0,
        m.num_pending == 0,
    ]
    if isinstance(world, BoundedWorld):
        facts.append(world.all_slots(m.cap, lambda s: world.key_facts(m.owner(s))))
    return facts


def conj(terms: Sequence[Term]) -> Term:
    return z3.And(*terms) if terms else z3.BoolVal(True)
