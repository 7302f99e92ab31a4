"""The tiering key relations in Z3, over unboundedly many keys and parties.

docs/proofs.md, "Tiering key relations", is the reader's account. Nothing here restates
a chunk rule: the steps are built from `model.tiering_chunk.CHUNK_RULES` (who may make a
chunk event, what it does to the chunk's owners and to the acting party) and, for the
chunk's lifecycle state, ref count and evictable flag, from the CPU table's rows
(`proofs.z3.encode.transition_term` on `model.lifecycle.CPU_MACHINE`). Both come in as
arguments, so a control passes a broken copy.

The state (`TState`) is a function of an uninterpreted `TKey` sort and an uninterpreted
`TParty` sort (a request's stores and loads, a staged promotion, a job: any party that
owns or pins a chunk):

* per key: the chunk's CPU state `st`, ref count `ref`, evictable flag `lst`, slot
  `slot`, whether the open lookup hold reported it HIT (`hit`), and two ghost counts:
  `npo` (its pending owners) and `npin` (its pins) -- a sum over the unbounded party
  sort kept as a count that moves with each party's entry;
* per (party, key): the chunk's pending ownerships `po` and pins `pin` by that party
  (the chunk's owner lists, as multiplicities), and the party's own side: its live
  claims `claim` (an outstanding GPU store, a staged promotion, a promotion job's key),
  the slot it recorded for the claim `jslot`, and the pins it holds `live` (a request's
  loads, a cascade or peer-store job's keys).

A step (`Step`) is one row of one rule: a party `o` makes the rule's event on a key
`k0` (a whole-cache event, `WHOLE_CACHE`, steps every key by its row), or a lookup hold
reports `k0` HIT (`lookup`), or closes (`close`). The relations over this state are in
`proofs.z3.tiering_relations`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import z3

from evictable.model.lifecycle import CpuEvent, CpuState, Machine, State
from evictable.model.tiering_chunk import (
    WHOLE_CACHE,
    ChunkGuard,
    ChunkRule,
    OnChunk,
    OnParty,
)
from evictable.proofs.z3.encode import (
    BlockTerms,
    StateSort,
    state_sort,
    step_term,
    transition_label,
    transition_term,
)

__all__ = [
    "Step",
    "TState",
    "fresh_state",
    "initial_state",
    "is_state",
    "key_sort",
    "party_sort",
    "readable",
    "render",
    "steps",
]

Term = Any
KeyFn = Callable[[Term], Term]
PairFn = Callable[[Term, Term], Term]

_SORTS: dict[str, Any] = {}


def key_sort() -> Any:
    """The uninterpreted sort of keys (unboundedly many)."""
    return _SORTS.setdefault("key", z3.DeclareSort("TKey"))


def party_sort() -> Any:
    """The uninterpreted sort of parties that own or pin chunks (unboundedly many)."""
    return _SORTS.setdefault("party", z3.DeclareSort("TParty"))


@dataclass(frozen=True)
class TState:
    """The tiering state as functions of keys and (party, key) pairs (module doc)."""

    st: KeyFn
    ref: KeyFn
    lst: KeyFn
    slot: KeyFn
    hit: KeyFn
    npo: KeyFn
    npin: KeyFn
    po: PairFn
    pin: PairFn
    claim: PairFn
    jslot: PairFn
    live: PairFn

    def block(self, k: Term) -> BlockTerms:
        return BlockTerms(self.st(k), self.ref(k), self.lst(k))


_KEY_FIELDS = {"st": None, "ref": z3.IntSort, "lst": z3.BoolSort, "slot": z3.IntSort}
_GHOSTS = {"hit": z3.BoolSort, "npo": z3.IntSort, "npin": z3.IntSort}
_PAIRS = ("po", "pin", "claim", "jslot", "live")


def fresh_state(ss: StateSort, prefix: str) -> TState:
    """Any state: every field an uninterpreted function named after `prefix`."""
    k, p = key_sort(), party_sort()
    fields: dict[str, Any] = {}
    for name, sort in {**_KEY_FIELDS, **_GHOSTS}.items():
        fields[name] = z3.Function(f"{prefix}.{name}", k, ss.sort if sort is None else sort())
    for name in _PAIRS:
        fields[name] = z3.Function(f"{prefix}.{name}", p, k, z3.IntSort())
    return TState(**fields)


def initial_state(machine: Machine, ss: StateSort, prefix: str) -> tuple[TState, list[Term]]:
    """A fresh cache: every key in an initial state of the CPU table with its flag (ref
    its minimum where it is resident), no owner, pin, claim or hit."""
    s = fresh_state(ss, prefix)
    zero_k: KeyFn = lambda _k: z3.IntVal(0)  # noqa: E731
    zero_p: PairFn = lambda _p, _k: z3.IntVal(0)  # noqa: E731
    init = replace(
        s,
        hit=lambda _k: z3.BoolVal(False),
        npo=zero_k,
        npin=zero_k,
        po=zero_p,
        pin=zero_p,
        claim=zero_p,
        live=zero_p,
    )
    x = z3.Const("x", key_sort())
    starts = []
    for state in machine.initial:
        spec = machine.spec(state)
        parts = [s.st(x) == ss.consts[state], s.lst(x) == spec.flag]
        if spec.resident and spec.ref_min is not None:
            parts.append(s.ref(x) == spec.ref_min)
        starts.append(z3.And(*parts))
    return init, [z3.ForAll([x], z3.Or(*starts))]


def is_state(ss: StateSort, s: TState, k: Term, state: State) -> Term:
    """Key `k`'s chunk is in `state`."""
    return s.st(k) == ss.consts[state]


def readable(m: Machine) -> tuple[CpuState, ...]:
    """The states a pin can be taken in (the sources of the CPU table's load_begin rows):
    a lookup reports such a chunk HIT."""
    return tuple(
        t.source
        for t in m.transitions
        if t.event is CpuEvent.LOAD_BEGIN and isinstance(t.source, CpuState)
    )


# ------------------------------------------------------------------ the steps


@dataclass(frozen=True)
class Step:
    """One step: its name, what it assumes of the pre-state and its parameters, the
    post-state, and (for a step claim) the key it acts on and the rule it applies."""

    name: str
    rule: ChunkRule | None
    pre: TState
    post: TState
    assumptions: tuple[Term, ...]
    key: Term


def _set_key(f: KeyFn, k0: Term, v: Term) -> KeyFn:
    return lambda k: z3.If(k == k0, v, f(k))


def _set_pair(f: PairFn, p0: Term, k0: Term, v: Term) -> PairFn:
    return lambda p, k: z3.If(z3.And(p == p0, k == k0), v, f(p, k))


def _clear_key(f: PairFn, k0: Term) -> PairFn:
    return lambda p, k: z3.If(k == k0, z3.IntVal(0), f(p, k))


def _less(v: Term) -> Term:
    return z3.If(v > 0, v - 1, v)


def _guard(g: ChunkGuard, s: TState, o: Term, k0: Term) -> Term:
    if g is ChunkGuard.OWNER:
        return s.po(o, k0) > 0
    if g is ChunkGuard.HOLDER:
        return s.pin(o, k0) > 0
    if g is ChunkGuard.UNPROTECTED:
        return z3.Not(s.hit(k0))
    return z3.BoolVal(True)


def _on_chunk(e: OnChunk, pre: TState, post: TState, o: Term, o2: Term, k0: Term) -> TState:
    """The chunk's owners after the event (`post` already has its CPU fields)."""
    if e is OnChunk.SET_OWNER:
        return replace(
            post,
            po=_set_pair(pre.po, o, k0, pre.po(o, k0) + 1),
            npo=_set_key(pre.npo, k0, pre.npo(k0) + 1),
        )
    if e is OnChunk.HAND_OVER:
        moved = _set_pair(pre.po, o, k0, pre.po(o, k0) - 1)
        return replace(post, po=_set_pair(moved, o2, k0, pre.po(o2, k0) + 1))
    if e is OnChunk.CLEAR_OWNERS:
        return replace(post, po=_clear_key(pre.po, k0), npo=_set_key(pre.npo, k0, z3.IntVal(0)))
    if e is OnChunk.ADD_PIN:
        return replace(
            post,
            pin=_set_pair(pre.pin, o, k0, pre.pin(o, k0) + 1),
            npin=_set_key(pre.npin, k0, pre.npin(k0) + 1),
        )
    if e is OnChunk.REMOVE_PIN:
        return replace(
            post,
            pin=_set_pair(pre.pin, o, k0, _less(pre.pin(o, k0))),
            npin=_set_key(pre.npin, k0, pre.npin(k0) - z3.If(pre.pin(o, k0) > 0, 1, 0)),
        )
    if e is OnChunk.CLEAR_ALL:
        zero = z3.IntVal(0)
        return replace(
            post,
            po=_clear_key(pre.po, k0),
            pin=_clear_key(pre.pin, k0),
            npo=_set_key(pre.npo, k0, zero),
            npin=_set_key(pre.npin, k0, zero),
        )
    return post


def _on_party(e: OnParty, pre: TState, post: TState, o: Term, o2: Term, k0: Term) -> TState:
    """The acting party's side after the event."""
    if e is OnParty.CLAIM:
        return replace(
            post,
            claim=_set_pair(pre.claim, o, k0, pre.claim(o, k0) + 1),
            jslot=_set_pair(pre.jslot, o, k0, post.slot(k0)),
        )
    if e is OnParty.PASS_CLAIM:
        gone = _set_pair(pre.claim, o, k0, _less(pre.claim(o, k0)))
        return replace(
            post,
            claim=_set_pair(gone, o2, k0, pre.claim(o2, k0) + 1),
            jslot=_set_pair(pre.jslot, o2, k0, pre.jslot(o, k0)),
        )
    if e is OnParty.END_CLAIM:
        return replace(post, claim=_set_pair(pre.claim, o, k0, _less(pre.claim(o, k0))))
    if e is OnParty.HOLD:
        return replace(post, live=_set_pair(pre.live, o, k0, pre.live(o, k0) + 1))
    if e is OnParty.RELEASE:
        return replace(post, live=_set_pair(pre.live, o, k0, _less(pre.live(o, k0))))
    if e is OnParty.DROP_ALL:
        return replace(post, claim=_clear_key(pre.claim, k0), live=_clear_key(pre.live, k0))
    return post


def _one_key(m: Machine, ss: StateSort, rule: ChunkRule, pre: TState) -> list[Step]:
    """The steps of a one-key rule: party `o` makes the event on key `k0`, one step per
    CPU row of its event (one step when it makes none)."""
    o, o2 = z3.Const("o", party_sort()), z3.Const("o2", party_sort())
    k0 = z3.Const("k0", key_sort())
    rows = [t for t in m.transitions if rule.cpu is not None and t.event is rule.cpu]
    out = []
    for t in rows if rule.cpu is not None else [None]:
        label = f"{rule.event.value} ({transition_label(t)})" if t else rule.event.value
        assumptions = [_guard(rule.guard, pre, o, k0)]
        post = pre
        if t is not None:
            st1 = z3.Const(f"{rule.event.value}.st1", ss.sort)
            ref1 = z3.Int(f"{rule.event.value}.ref1")
            lst1 = z3.Bool(f"{rule.event.value}.lst1")
            assumptions.append(transition_term(m, t, pre.block(k0), BlockTerms(st1, ref1, lst1)))
            post = replace(
                post,
                st=_set_key(pre.st, k0, st1),
                ref=_set_key(pre.ref, k0, ref1),
                lst=_set_key(pre.lst, k0, lst1),
            )
        if rule.on_chunk is OnChunk.SET_OWNER:  # an allocation: the chunk's new slot
            post = replace(post, slot=_set_key(pre.slot, k0, z3.Int(f"{rule.event.value}.slot")))
        if rule.on_party is OnParty.PASS_CLAIM:  # the party's new job: a fresh id
            assumptions += [o2 != o, pre.claim(o2, k0) == 0, pre.po(o2, k0) == 0]
        post = _on_chunk(rule.on_chunk, pre, post, o, o2, k0)
        post = _on_party(rule.on_party, pre, post, o, o2, k0)
        out.append(Step(label, rule, pre, post, tuple(assumptions), k0))
    return out


def _whole(m: Machine, ss: StateSort, rule: ChunkRule, pre: TState) -> Step:
    """A whole-cache rule: every key steps by its row (or its ignored pair) at once; no
    lookup hold is open (the event is a call of its own)."""
    nxt = fresh_state(ss, rule.event.value)
    x = z3.Const("x", key_sort())
    event = rule.cpu if rule.cpu is not None else CpuEvent.RESET
    post = replace(pre, st=nxt.st, ref=nxt.ref, lst=nxt.lst)
    assumptions = [
        z3.ForAll([x], step_term(m, event, pre.block(x), nxt.block(x))),
        z3.ForAll([x], z3.Not(pre.hit(x))),
    ]
    zero_k: KeyFn = lambda _k: z3.IntVal(0)  # noqa: E731
    zero_p: PairFn = lambda _p, _k: z3.IntVal(0)  # noqa: E731
    if rule.on_chunk is OnChunk.CLEAR_ALL:
        post = replace(post, po=zero_p, pin=zero_p, npo=zero_k, npin=zero_k)
    if rule.on_party is OnParty.DROP_ALL:
        post = replace(post, claim=zero_p, live=zero_p)
    return Step(rule.event.value, rule, pre, post, tuple(assumptions), x)


def _hold(m: Machine, ss: StateSort, pre: TState) -> list[Step]:
    """A lookup hold: reports a readable key HIT (`lookup`), or closes (`close`)."""
    k0 = z3.Const("k0", key_sort())
    is_readable = z3.Or(*[is_state(ss, pre, k0, st) for st in readable(m)], False)
    lookup = replace(pre, hit=_set_key(pre.hit, k0, z3.Or(pre.hit(k0), is_readable)))
    close = replace(pre, hit=lambda _k: z3.BoolVal(False))
    return [
        Step("lookup (HIT)", None, pre, lookup, (), k0),
        Step("close (the hold)", None, pre, close, (), k0),
    ]


def steps(m: Machine, rules: Sequence[ChunkRule], pre: TState) -> list[Step]:
    """Every step from `pre`: each row of each rule, the hold's lookups and close."""
    ss = state_sort(m)
    out: list[Step] = []
    for rule in rules:
        if rule.event in WHOLE_CACHE:
            out.append(_whole(m, ss, rule, pre))
        else:
            out.extend(_one_key(m, ss, rule, pre))
    return out + _hold(m, ss, pre)


# ------------------------------------------------------------------ rendering


def render(model: Any, ss: StateSort, s: TState, k: Term) -> str:
    """One key's chunk as `model` has it: state, ref, pending owners, pins, hit."""

    def ev(t: Term) -> Any:
        return model.eval(t, model_completion=True)

    state = ss.decode(ev(s.st(k)))
    return (
        f"{{state={state.name}, ref={ev(s.ref(k))}, owners={ev(s.npo(k))}, "
        f"pins={ev(s.npin(k))}, hit={ev(s.hit(k))}}}"
    )
