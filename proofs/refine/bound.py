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
  owned ids): the encoded allocation, free and reset (`slots.alloc_step`, `_free`,
  `_reset`) give the state `impl.slots.SlotAllocator` leaves (and, for allocation,
  the id it and `ModelManager.take_slot` hand out).

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


def check_slots(n: int, cls: type[SlotAllocator] = SlotAllocator) -> Outcome:
    """The encoded allocation, free and reset give the state `cls` leaves."""
    cases = 0
    for high, stack in _slot_states(n):
        check_deadline("bound.slots")
        owned = [s for s in range(high) if s not in stack]
        steps: list[tuple[str, int | None]] = [("reset", None)]
        steps += [("free", s) for s in owned]
        if high < n or stack:
            steps.append(("alloc", None))
        for step, freed in steps:
            cases += 1
            pre, facts = _pre(n, high, stack)
            post = sl.slot_terms("post", n)
            alloc = cls(n)
            alloc.high_water, alloc.freed = high, list(stack)
            handed: list[int] = []
            if step == "alloc":
                more, slot = sl.alloc_step(pre, post, sl.Allocator())
                handed = alloc.take(1)
                manager = ModelManager(n)
                manager.high_water, manager.free_stack = high, [SlotId(s) for s in stack]
                handed.append(int(manager.take_slot()))
            elif step == "free":
                more, slot = sl.free_step(pre, post, z3.IntVal(freed), sl.Allocator()), None
                alloc.release([freed]) if freed is not None else None
            else:
                more, slot = sl.reset_step(pre, post, sl.Allocator()), None
                alloc.reset()
            model = _solve(facts + more)
            if model is None:
                return refuted(f"{step} from high_water={high} stack={list(stack)}: no post-state")
            want = _read(model, post)
            got = (alloc.high_water, list(alloc.freed))
            want_slot = [_val(model, slot)] * 2 if slot is not None else []
            if got != want or handed != want_slot:
                what = f" slot {freed}" if freed is not None else ""
                return refuted(
                    f"{step}{what} from high_water={high}, free stack {list(stack)}: the "
                    f"encoding gives high_water={want[0]}, stack {want[1]}"
                    f"{', id ' + str(want_slot[0]) if want_slot else ''}; the code gives "
                    f"high_water={got[0]}, stack {got[1]}"
                    f"{', ids (impl, model) ' + str(handed) if handed else ''}"
                )
    return proved(f"{cases} (state, step) inputs")


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
