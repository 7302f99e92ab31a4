"""The eviction and slot encodings, evaluated on concrete inputs against the code.

`proofs/z3/eviction.py` and `proofs/z3/slots.py` prove properties of *encodings* of
the evictable-list eviction, the list's maintenance and the slot allocator. These
obligations tie each encoding to the code it stands for: over every input within a
bound, the encoding -- evaluated on the concrete input (Z3 solves for its post-state,
which the encoding determines) -- gives exactly what the model's and the
implementation's own code give. So a bug planted in the code is seen by the proofs'
encodings, not only by the conformance runs:

* `bound.eviction.lru` -- every evictable list of up to N keys, every protected set,
  every number of victims: the encoded walk (`eviction.evict_walk`) and
  `model.lru.ModelLru.evict` and `impl.policies.lru.LRUCachePolicy.evict` agree on
  success, the victims and the list left.
* `bound.eviction.lru.order` -- every list of up to N keys and every position: the
  encoded `mark_evictable` / remove / `touch` (`eviction.list_step`) give the list
  order the model and the implementation leave.
* `bound.slots` -- every allocator state of N ids (high-water mark, free stack,
  owned ids): the encoded allocation, free and reset (`slots.alloc_step`,
  `free_step`, `reset_step`) give the state `impl.slots.SlotAllocator` leaves; and
  the manager's bulk path, `take(count, released)` after releasing up to two owned
  ids in each order and for every count the free ids allow, leaves what the
  encoding's frees of the released ids and `count` allocations leave, handing out
  the ids the encoding gives (and `ModelManager.take_slot` gives, one at a time).

Negative controls: each plants the bugs the encoding's own negative controls
describe into the implementation (`proofs.controls.encodings`); every one must be
caught.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from typing import Any

import z3

from evictable.impl.block import BlockStatus
from evictable.impl.policies.arc import ARCCachePolicy
from evictable.impl.policies.lru import LRUCachePolicy
from evictable.impl.slots import SlotAllocator
from evictable.model.lru import ModelLru
from evictable.model.manager import ModelManager
from evictable.model.types import SlotId
from evictable.proofs.base.records import (
    HANG_BACKSTOP_S,
    Outcome,
    check_deadline,
    proved,
    refuted,
)
from evictable.proofs.explore import arc_search
from evictable.proofs.explore.arc_impl import ImplArc
from evictable.proofs.refine.arc import relation_edge_check
from evictable.proofs.z3 import eviction as ev
from evictable.proofs.z3 import slots as sl
from evictable.proofs.z3.arc import RELATIONS
from evictable.proofs.z3.solver import check, solver, unknown

__all__ = [
    "check_lru_eviction",
    "check_lru_order",
    "check_slots",
]


Term = Any


def _val(model: Any, term: Term) -> Any:
    v = model.eval(term, model_completion=True)
    return z3.is_true(v) if z3.is_bool(v) else v.as_long()


def _solve(facts: list[Term]) -> Any:
    s = solver(HANG_BACKSTOP_S)
    s.add(*facts)
    r = check(s)
    if r == z3.unknown:
        raise RuntimeError(f"concrete facts were not decided: {unknown(s).counterexample}")
    if r != z3.sat:
        return None
    return s.model()


def _lru(cls: type[LRUCachePolicy], length: int) -> LRUCachePolicy:
    """An LRU of class `cls` whose evictable list is the keys 0..length-1, least recent
    first (built with the base class's own methods, whatever `cls` overrides)."""
    policy = cls(max(length, 1))
    for key in range(length):
        block = BlockStatus(key)
        LRUCachePolicy.insert(policy, key, block)
        block.ref_cnt = 0
        LRUCachePolicy.mark_evictable(policy, key)
    return policy


def _ints(keys: Iterable[Any]) -> list[int]:
    return [int(k) for k in keys]


def _listed(policy: LRUCachePolicy) -> list[int]:
    return _ints(b.key for b in policy.listed())


# ------------------------------------------------------------------ eviction


def _encoded_eviction(length: int, protected: frozenset[int], want: int) -> tuple[bool, set[int]]:
    b = ev.Blocks(
        length,
        [z3.BoolVal(i in protected) for i in range(length)],
        [z3.IntVal(i) for i in range(length)],
        z3.IntVal(length),
        z3.IntVal(want),
    )
    out = ev.evict_walk(b, ev.Walk())
    success = bool(z3.is_true(z3.simplify(out.success)))
    return success, {i for i in range(length) if z3.is_true(z3.simplify(out.victim[i]))}


def _subsets(items: range) -> Iterator[frozenset[int]]:
    for size in range(len(items) + 1):
        for c in itertools.combinations(items, size):
            yield frozenset(c)


def check_lru_eviction(keys: int, cls: type[LRUCachePolicy] = LRUCachePolicy) -> Outcome:
    """The encoded walk, the model's eviction and `cls`'s agree on every input."""
    cases = 0
    for length in range(keys + 1):
        check_deadline("bound.eviction.lru")
        for protected in _subsets(range(length)):
            for want in range(length + 2):
                cases += 1
                success, victims = _encoded_eviction(length, protected, want)
                left = [k for k in range(length) if not (success and k in victims)]
                model = ModelLru(max(length, 1))
                model.evictable = list(range(length))
                m = model.evict(want, protected, lambda _k: 0)
                impl = _lru(cls, length)
                i = impl.evict(want, protected)
                got: dict[str, tuple[bool, set[int], list[int]]] = {
                    "model": (m is not None, set(_ints(m or ())), _ints(model.evictable)),
                    "impl": (i is not None, set(_ints(k for k, _ in i or ())), _listed(impl)),
                }
                for who, answer in got.items():
                    if answer != (success, victims if success else set(), left):
                        return refuted(
                            f"evict({want}, protected={sorted(protected)}) from the list "
                            f"{list(range(length))}: the encoding gives "
                            f"{'victims ' + str(sorted(victims)) if success else 'None'} and "
                            f"list {left}, the {who} gives "
                            f"{'victims ' + str(sorted(answer[1])) if answer[0] else 'None'} "
                            f"and list {answer[2]}"
                        )
    return proved(f"{cases} (list, protected, n) inputs")


# ------------------------------------------------------------------ list order


def _encoded_list(op: str, length: int, position: int) -> list[int] | None:
    """The list timestamps the encoding gives after `op` on the list 0..length-1
    (timestamps = keys; the clock, `length`, stamps the moved or added key)."""
    n = length + 1
    pre, post = ev.list_terms("pre", n), ev.list_terms("post", n)
    facts = [
        pre.length == length,
        pre.clock == length,
        *[pre.ts[p] == (p if p < length else 100 + p) for p in range(n)],
        *ev.list_step(op, pre, post, z3.IntVal(position), ev.ListOps()),
    ]
    model = _solve(facts)
    if model is None:
        return None
    return [_val(model, post.ts[p]) for p in range(_val(model, post.length))]


def _coded_list(op: str, length: int, position: int, cls: type[LRUCachePolicy]) -> list[list[int]]:
    """The list after `op`, as the model and `cls` leave it, in timestamps: each key
    keeps its own (its value), the key added or touched gets the clock (`length`)."""
    model = ModelLru(length + 1)
    model.evictable = list(range(length))
    impl = _lru(cls, length)
    if op == "mark_evictable":
        model.mark_evictable(length)
        block = BlockStatus(length)
        impl.insert(length, block)
        block.ref_cnt = 0
        impl.mark_evictable(length)
    elif op == "remove":
        model.mark_non_evictable(position)
        impl.mark_non_evictable(position)
    else:
        model.touch([position], lambda _k: 0)
        impl.touch([position])
    moved = length if op == "mark_evictable" else position

    def stamps(keys: list[int]) -> list[int]:
        return [length if k == moved and op != "remove" else k for k in keys]

    return [stamps(_ints(model.evictable)), stamps(_listed(impl))]


def check_lru_order(keys: int, cls: type[LRUCachePolicy] = LRUCachePolicy) -> Outcome:
    """The encoded list maintenance gives the order the model and `cls` leave."""
    cases = 0
    for length in range(keys + 1):
        check_deadline("bound.eviction.lru.order")
        for op in ("mark_evictable", "remove", "touch"):
            for position in range(length) if op != "mark_evictable" else (0,):
                cases += 1
                want = _encoded_list(op, length, position)
                for who, got in zip(
                    ("model", "impl"), _coded_list(op, length, position, cls), strict=True
                ):
                    if got != want:
                        at = "" if op == "mark_evictable" else f" at position {position}"
                        return refuted(
                            f"{op}{at} on the list {list(range(length))}: the encoding leaves "
                            f"timestamps {want}, the {who} leaves {got}"
                        )
    return proved(f"{cases} (list, operation) inputs")


# ------------------------------------------------------------------ slots


def _slot_states(n: int) -> Iterator[tuple[int, tuple[int, ...]]]:
    """Every (high-water mark, free stack bottom to top) of `n` ids."""
    for high in range(n + 1):
        for size in range(high + 1):
            yield from ((high, p) for p in itertools.permutations(range(high), size))


def _pre(n: int, high: int, stack: tuple[int, ...]) -> tuple[sl.SlotTerms, list[Term]]:
    pre = sl.slot_terms("pre", n)
    facts = [
        pre.high == high,
        pre.sp == len(stack),
        *[pre.stack[k] == (stack[k] if k < len(stack) else 0) for k in range(n)],
        *[pre.owned[s] == (s < high and s not in stack) for s in range(n)],
    ]
    return pre, facts


def _read(model: Any, s: sl.SlotTerms) -> tuple[int, list[int]]:
    sp = _val(model, s.sp)
    return _val(model, s.high), [_val(model, s.stack[k]) for k in range(sp)]


def _bulk_takes(n: int, high: int, stack: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
    """The `released` orders of a bulk take from this state: none, or up to two of the
    owned ids in each order (what a `prepare_store` that evicts hands back)."""
    owned = [s for s in range(high) if s not in stack]
    for size in range(min(2, len(owned)) + 1):
        yield from itertools.permutations(owned, size)


def _encoded_take(
    pre: sl.SlotTerms, n: int, released: tuple[int, ...], count: int
) -> tuple[list[Term], sl.SlotTerms, list[Term]]:
    """`take(count, released)` as the encoding's steps: a free of each released id in
    order, then `count` allocations (facts, post-state, the ids handed out)."""
    facts: list[Term] = []
    at = pre
    for i, s in enumerate(released):
        nxt = sl.slot_terms(f"r{i}", n)
        facts += sl.free_step(at, nxt, z3.IntVal(s), sl.Allocator())
        at = nxt
    handed: list[Term] = []
    for j in range(count):
        nxt = sl.slot_terms(f"t{j}", n)
        more, slot = sl.alloc_step(at, nxt, sl.Allocator())
        facts += more
        handed.append(slot)
        at = nxt
    return facts, at, handed


def _slot_cases(n: int) -> Iterator[tuple[int, tuple[int, ...], str, Any]]:
    """Every (high-water mark, free stack, step, argument) `check_slots` judges."""
    for high, stack in _slot_states(n):
        owned = [s for s in range(high) if s not in stack]
        yield high, stack, "reset", None
        yield from ((high, stack, "free", s) for s in owned)
        for released in _bulk_takes(n, high, stack):
            free = n - high + len(stack) + len(released)
            yield from ((high, stack, "take", (count, released)) for count in range(1, free + 1))


def check_slots(n: int, cls: type[SlotAllocator] = SlotAllocator) -> Outcome:
    """The encoded allocation, free and reset give the state `cls` leaves; a bulk
    `take(count, released)` (the manager's path) gives what the encoding's frees and
    `count` allocations give, and the ids `ModelManager.take_slot` hands out."""
    cases = 0
    for high, stack, step, arg in _slot_cases(n):
        check_deadline("bound.slots")
        cases += 1
        pre, facts = _pre(n, high, stack)
        alloc = cls(n)
        alloc.high_water, alloc.freed = high, list(stack)
        handed: list[int] = []
        model_ids: list[int] = []
        slots: list[Term] = []
        what = step
        if step == "take":
            count, released = arg
            more, post, slots = _encoded_take(pre, n, released, count)
            handed = alloc.take(count, released)
            manager = ModelManager(n)
            manager.high_water = high
            manager.free_stack = [SlotId(s) for s in (*stack, *released)]
            model_ids = [int(manager.take_slot()) for _ in range(count)]
            what = f"take({count}, released={list(released)})"
        elif step == "free":
            post = sl.slot_terms("post", n)
            more = sl.free_step(pre, post, z3.IntVal(arg), sl.Allocator())
            alloc.release([arg])
            what = f"free slot {arg}"
        else:
            post = sl.slot_terms("post", n)
            more = sl.reset_step(pre, post, sl.Allocator())
            alloc.reset()
        model = _solve(facts + more)
        if model is None:
            return refuted(f"{what} from high_water={high} stack={list(stack)}: no post-state")
        want = _read(model, post)
        want_ids = [_val(model, t) for t in slots]
        got = (alloc.high_water, list(alloc.freed))
        if got != want or handed != want_ids or model_ids != want_ids:
            ids = (
                f", ids {want_ids}; the code gives ids {handed} (impl), {model_ids} (model) and"
                if slots
                else "; the code gives"
            )
            return refuted(
                f"{what} from high_water={high}, free stack {list(stack)}: the encoding "
                f"gives high_water={want[0]}, stack {want[1]}{ids} high_water={got[0]}, "
                f"stack {got[1]}"
            )
    return proved(f"{cases} (state, step) inputs, bulk takes of every count included")


# ------------------------------------------------------------------ ARC


def check_arc(
    worlds: tuple[tuple[int, int], ...], impl: type[ARCCachePolicy] = ARCCachePolicy
) -> Outcome:
    """The implementation's ARC steps satisfy the per-key relations of `z3.arc`."""
    adapter = type(f"ImplArc_{impl.__name__}", (ImplArc,), {"impl_class": impl})
    figures = []
    for capacity, keys in worlds:
        report = arc_search.explore(
            capacity, keys, edge_check=relation_edge_check(RELATIONS), cls=adapter
        )
        if report.violation is not None:
            return refuted(f"N={capacity}: {report.counterexample()}")
        figures.append(f"N={capacity}: {report.states} states, {report.edges} transitions")
    return proved("; ".join(figures))


# ------------------------------------------------------------------ obligations
