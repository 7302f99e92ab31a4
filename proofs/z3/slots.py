"""Bounded Z3 obligations: the slot partition fresh ⊎ free ⊎ owned.

N slot ids (N grows with the level) split into fresh (`[high_water, N)`), free (on
a LIFO stack) and owned, disjointly. Allocation takes a fresh id first (ascending
from the high-water mark), then pops the free stack; freeing pushes; reset makes
every id fresh. `slots.partition.<step>` proves each step keeps the partition (and
allocation never hands out an owned id); `slots.lifo_reuse` proves that the last
freed id is the next one reused once the fresh ids are used up.

Negative controls: an allocator that forgets to advance the high-water mark (it
hands out the same id twice), a free that forgets to push, a reset that keeps the
stack, an allocator that reuses the oldest freed id (FIFO).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import z3

from evictable.proofs.base.records import Kind, Obligation, Outcome
from evictable.proofs.z3.solver import z3_valid

__all__ = [
    "Allocator",
    "SlotTerms",
    "alloc_step",
    "bind",
    "check_lifo_reuse",
    "check_slot_step",
    "free_step",
    "pick",
    "reset_step",
    "slot_terms",
]


def pick(values: Sequence[Any], index: Any) -> Any:
    """values[index] for a symbolic index (an If chain; index assumed in range)."""
    out = values[-1]
    for i in range(len(values) - 2, -1, -1):
        out = z3.If(index == i, values[i], out)
    return out


def bind(
    name: str,
    statement: str,
    check: Callable[..., Outcome],
    good: dict[str, Any],
    bad: dict[str, Any],
    control: str,
    bounds: str,
) -> Obligation:
    """A bounded obligation running `check(**good)`, with `check(**bad)` as its
    negative control."""

    def run(kw: dict[str, Any], backstop_s: float) -> Outcome:
        return check(backstop_s=backstop_s, **kw)

    return Obligation(
        name,
        statement,
        partial(run, good),
        partial(run, bad),
        control,
        kind=Kind.BOUNDED,
        bounds=bounds,
    )


@dataclass(frozen=True)
class Allocator:
    """The slot allocator's steps (correct unless a control breaks one)."""

    bumps_high_water: bool = True
    pops_top: bool = True  # LIFO; False pops the bottom of the stack (FIFO)
    pushes_on_free: bool = True
    reset_clears_stack: bool = True


@dataclass(frozen=True)
class SlotTerms:
    n: int
    high: Any
    sp: Any
    stack: list[Any]
    owned: list[Any]

    def in_stack(self, s: int) -> Any:
        return z3.Or(*[z3.And(k < self.sp, self.stack[k] == s) for k in range(self.n)])

    def partition(self) -> Any:
        """fresh [high, N) ⊎ free stack ⊎ owned = [0, N), disjointly."""
        n = self.n
        parts = [self.high >= 0, self.high <= n, self.sp >= 0, self.sp <= n]
        for k in range(n):
            parts.append(
                z3.Implies(k < self.sp, z3.And(self.stack[k] >= 0, self.stack[k] < self.high))
            )
            parts.extend(
                z3.Implies(z3.And(k < self.sp, j < self.sp), self.stack[k] != self.stack[j])
                for j in range(k)
            )
        for s in range(n):
            parts.append(
                z3.If(
                    s >= self.high,
                    z3.And(z3.Not(self.owned[s]), z3.Not(self.in_stack(s))),
                    self.owned[s] != self.in_stack(s),
                )
            )
        return z3.And(*parts)

    def render(self, model: Any) -> str:
        def v(x: Any) -> Any:
            return model.eval(x, model_completion=True)

        sp = v(self.sp).as_long()
        stack = [v(self.stack[k]).as_long() for k in range(max(0, min(sp, self.n)))]
        owned = [s for s in range(self.n) if z3.is_true(v(self.owned[s]))]
        return f"{{high_water={v(self.high)}, free_stack={stack}, owned={owned}}}"


def slot_terms(prefix: str, n: int) -> SlotTerms:
    return SlotTerms(
        n,
        z3.Int(f"{prefix}.high"),
        z3.Int(f"{prefix}.sp"),
        [z3.Int(f"{prefix}.stack{k}") for k in range(n)],
        [z3.Bool(f"{prefix}.owned{s}") for s in range(n)],
    )


def alloc_step(pre: SlotTerms, post: SlotTerms, alloc: Allocator) -> tuple[list[Any], Any]:
    """Allocate one slot (fresh first, then the free stack); returns (facts, slot)."""
    n = pre.n
    fresh = pre.high < n
    top = pre.stack[0] if not alloc.pops_top else pick(pre.stack, pre.sp - 1)
    slot = z3.If(fresh, pre.high, top)
    facts = [
        z3.Or(fresh, pre.sp > 0),  # something to hand out
        post.high == z3.If(fresh, pre.high + (1 if alloc.bumps_high_water else 0), pre.high),
        post.sp == z3.If(fresh, pre.sp, pre.sp - 1),
    ]
    for k in range(n):
        if alloc.pops_top:
            facts.append(post.stack[k] == pre.stack[k])
        else:  # FIFO: the remaining entries shift down by one when popping
            shifted = pre.stack[k + 1] if k + 1 < n else pre.stack[k]
            facts.append(post.stack[k] == z3.If(fresh, pre.stack[k], shifted))
    facts.extend(post.owned[s] == z3.Or(pre.owned[s], slot == s) for s in range(n))
    return facts, slot


def free_step(pre: SlotTerms, post: SlotTerms, slot: Any, alloc: Allocator) -> list[Any]:
    n = pre.n
    facts = [slot >= 0, slot < n, pick(pre.owned, slot), post.high == pre.high]
    if alloc.pushes_on_free:
        facts.append(post.sp == pre.sp + 1)
        facts.extend(post.stack[k] == z3.If(pre.sp == k, slot, pre.stack[k]) for k in range(n))
    else:
        facts.append(post.sp == pre.sp)
        facts.extend(post.stack[k] == pre.stack[k] for k in range(n))
    facts.extend(post.owned[s] == z3.And(pre.owned[s], slot != s) for s in range(n))
    return facts


def reset_step(pre: SlotTerms, post: SlotTerms, alloc: Allocator) -> list[Any]:
    facts = [post.high == 0, post.sp == (0 if alloc.reset_clears_stack else pre.sp)]
    facts.extend(post.stack[k] == pre.stack[k] for k in range(pre.n))
    facts.extend(z3.Not(post.owned[s]) for s in range(pre.n))
    return facts


def check_slot_step(
    step: str, slots: int, backstop_s: float, alloc: Allocator = Allocator()
) -> Outcome:
    """`step` ("alloc" | "free" | "reset") keeps the partition; alloc hands an unowned id."""
    pre, post = slot_terms("pre", slots), slot_terms("post", slots)
    extra = z3.BoolVal(True)
    slot: Any = None
    if step == "alloc":
        facts, slot = alloc_step(pre, post, alloc)
        extra = z3.And(slot >= 0, slot < slots, z3.Not(pick(pre.owned, slot)))
    elif step == "free":
        slot = z3.Int("freed")
        facts = free_step(pre, post, slot, alloc)
    else:
        facts = reset_step(pre, post, alloc)

    def describe(model: Any) -> str:
        which = "" if slot is None else f" slot {model.eval(slot, model_completion=True)}"
        broken = (
            "slot_partition"
            if z3.is_false(model.eval(post.partition(), model_completion=True))
            else "handed out an owned slot"
        )
        return (
            f"{step}{which}: pre {pre.render(model)} -> post {post.render(model)}; "
            f"violated: {broken}"
        )

    return z3_valid(
        z3.And(post.partition(), extra), backstop_s, describe, [pre.partition(), *facts]
    )


def check_lifo_reuse(slots: int, backstop_s: float, alloc: Allocator = Allocator()) -> Outcome:
    """With no fresh id left, freeing id s and then allocating hands out s again."""
    pre, mid, post = slot_terms("pre", slots), slot_terms("mid", slots), slot_terms("post", slots)
    freed = z3.Int("freed")
    facts = [pre.partition(), pre.high == slots, *free_step(pre, mid, freed, alloc)]
    more, got = alloc_step(mid, post, alloc)

    def describe(model: Any) -> str:
        return (
            f"free slot {model.eval(freed)} then alloc from {mid.render(model)} -> slot "
            f"{model.eval(got, model_completion=True)}; violated: lifo_reuse"
        )

    return z3_valid(got == freed, backstop_s, describe, facts + more)
