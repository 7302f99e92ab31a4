"""Bounded Z3 obligations: evictable-list eviction and the list's recency order.

**Eviction** (`eviction.lru.*`). N blocks (N grows with the level), each with a
recency timestamp (distinct Ints), a flag "in the evictable list" and a flag
"protected" (an input key of the `prepare_store` that evicts). The evictable list is
encoded as the implementation keeps it: a sequence of exactly the listed blocks in
timestamp order, least recent first. Eviction of n victims is encoded as the
implementation does it: walk the list from the least-recent end, skip protected
entries, take until n are taken; commit only if all n were found (else `None`, no
change). The claims compare that walk with a declarative statement (ranks by
timestamp), not with another walk:

* `eviction.lru.exact_victims` -- the walk succeeds exactly when at least n listed
  blocks are unprotected; then it takes exactly n of them, all listed and
  unprotected, removes exactly those from the list, and on failure nothing changes.
* `eviction.lru.least_recent` -- the victims are the n least-recent eligible blocks:
  a block is a victim iff it is eligible and fewer than n eligible blocks are older.

* `eviction.lru.order.*` -- the list maintenance steps (append on mark_evictable,
  remove, move-to-end on touch) keep the list in recency order, which the walk
  above assumes.

The slot obligations (`slots.*`, `proofs/z3/slots.py`) run in this group too.

Every obligation has a negative control: eviction that ignores protection, eviction
that walks from the most-recent end, an append at the least-recent end, a remove
that swaps the last entry into the hole, a touch that refreshes in place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import z3

from evictable.proofs.base.records import Outcome
from evictable.proofs.z3.slots import pick as _pick
from evictable.proofs.z3.solver import z3_valid

__all__ = [
    "Blocks",
    "Eviction",
    "ListOps",
    "ListTerms",
    "Walk",
    "check_exact_victims",
    "check_least_recent",
    "check_list_order",
    "evict_walk",
    "list_step",
    "list_terms",
]


# ------------------------------------------------------------------ eviction


@dataclass(frozen=True)
class Walk:
    """How eviction walks the list (the correct walk unless a control breaks it)."""

    from_lru_end: bool = True
    skips_protected: bool = True


@dataclass(frozen=True)
class Blocks:
    """N blocks; the evictable list holds blocks 0 .. length-1 in this order.

    Numbering blocks by list position loses no generality (blocks are symmetric);
    blocks `length .. N-1` are the resident blocks outside the list (pinned or
    pending), with arbitrary timestamps.
    """

    n: int
    protected: list[Any]
    ts: list[Any]
    length: Any  # number of listed blocks
    want: Any  # n victims requested

    def listed(self, i: int) -> Any:
        return i < self.length


def _blocks(n: int) -> tuple[Blocks, list[Any]]:
    b = Blocks(
        n,
        [z3.Bool(f"protected{i}") for i in range(n)],
        [z3.Int(f"ts{i}") for i in range(n)],
        z3.Int("list_len"),
        z3.Int("n_victims"),
    )
    facts = [z3.Distinct(*b.ts), b.length >= 0, b.length <= n, b.want >= 0, b.want <= n]
    # The list is in recency order: least recent (smallest timestamp) first.
    facts.extend(z3.Implies(p + 1 < b.length, b.ts[p] < b.ts[p + 1]) for p in range(n - 1))
    return b, facts


@dataclass(frozen=True)
class Eviction:
    victim: list[Any]  # block i taken by the walk
    success: Any
    listed_after: list[Any]


def evict_walk(b: Blocks, walk: Walk) -> Eviction:
    """The walk: from one end of the list, skip protected, take until `want`."""
    taken = z3.IntVal(0)
    victim = [z3.BoolVal(False)] * b.n
    for q in range(b.n):
        who: Any = q if walk.from_lru_end else b.length - 1 - q
        valid = z3.And(who >= 0, who < b.length) if not walk.from_lru_end else q < b.length
        prot = b.protected[q] if walk.from_lru_end else _pick(b.protected, who)
        eligible = z3.Not(prot) if walk.skips_protected else z3.BoolVal(True)
        take = z3.And(valid, eligible, taken < b.want)
        victim = [
            z3.Or(victim[i], z3.And(take, who == i))
            if not walk.from_lru_end
            else (z3.Or(victim[i], take) if i == q else victim[i])
            for i in range(b.n)
        ]
        taken = taken + z3.If(take, 1, 0)
    success = taken == b.want
    after = [z3.And(b.listed(i), z3.Not(z3.And(success, victim[i]))) for i in range(b.n)]
    return Eviction(victim, success, after)


def _eligible(b: Blocks, i: int) -> Any:
    return z3.And(b.listed(i), z3.Not(b.protected[i]))


def _render_eviction(model: Any, b: Blocks, ev: Eviction, head: str) -> str:
    def val(x: Any) -> Any:
        return model.eval(x, model_completion=True)

    rows = []
    for i in sorted(range(b.n), key=lambda i: val(b.ts[i]).as_long()):
        if z3.is_true(val(b.listed(i))):
            tags = [f"ts={val(b.ts[i])}"]
            if z3.is_true(val(b.protected[i])):
                tags.append("protected")
            if z3.is_true(val(ev.victim[i])):
                tags.append("TAKEN")
            rows.append(f"block {i} ({', '.join(tags)})")
    ok = z3.is_true(val(ev.success))
    return (
        f"evict n={val(b.want)} from list [{'; '.join(rows)}] -> "
        f"{'success' if ok else 'None'}; violated: {head}"
    )


def check_exact_victims(blocks: int, backstop_s: float, walk: Walk = Walk()) -> Outcome:
    """Success iff ≥ n eligible; then exactly n victims, all eligible, and only they leave."""
    b, facts = _blocks(blocks)
    ev = evict_walk(b, walk)
    eligible = z3.Sum([z3.If(_eligible(b, i), 1, 0) for i in range(blocks)])
    chosen = z3.Sum([z3.If(ev.victim[i], 1, 0) for i in range(blocks)])
    claim = z3.And(
        ev.success == (eligible >= b.want),
        z3.Implies(ev.success, chosen == b.want),
        *[z3.Implies(z3.And(ev.success, ev.victim[i]), _eligible(b, i)) for i in range(blocks)],
        *[
            ev.listed_after[i] == z3.And(b.listed(i), z3.Not(z3.And(ev.success, ev.victim[i])))
            for i in range(blocks)
        ],
        *[z3.Implies(z3.Not(ev.success), ev.listed_after[i] == b.listed(i)) for i in range(blocks)],
    )
    return z3_valid(claim, backstop_s, lambda m: _render_eviction(m, b, ev, "exact_victims"), facts)


def check_least_recent(blocks: int, backstop_s: float, walk: Walk = Walk()) -> Outcome:
    """On success, block i is a victim iff eligible with fewer than n older eligible blocks."""
    b, facts = _blocks(blocks)
    ev = evict_walk(b, walk)
    claims = []
    for i in range(blocks):
        older = z3.Sum(
            [
                z3.If(z3.And(_eligible(b, j), b.ts[j] < b.ts[i]), 1, 0)
                for j in range(blocks)
                if j != i
            ]
        )
        claims.append(ev.victim[i] == z3.And(_eligible(b, i), older < b.want))
    claim = z3.Implies(ev.success, z3.And(*claims))
    return z3_valid(claim, backstop_s, lambda m: _render_eviction(m, b, ev, "least_recent"), facts)


# ------------------------------------------------------------------ list order


@dataclass(frozen=True)
class ListOps:
    """How the evictable list is maintained (correct unless a control breaks one)."""

    append_at_mru_end: bool = True  # mark_evictable; False: inserted at the LRU end
    remove_shifts: bool = True  # remove; False: the last entry is swapped into the hole
    touch_moves: bool = True  # touch; False: the timestamp is refreshed in place


@dataclass(frozen=True)
class ListTerms:
    n: int
    length: Any
    ts: list[Any]
    clock: Any

    def ordered(self) -> Any:
        """Recency order: ascending timestamps, all older than the clock."""
        return z3.And(
            self.length >= 0,
            self.length <= self.n,
            *[
                z3.Implies(p + 1 < self.length, self.ts[p] < self.ts[p + 1])
                for p in range(self.n - 1)
            ],
            *[z3.Implies(p < self.length, self.ts[p] < self.clock) for p in range(self.n)],
        )

    def render(self, model: Any) -> str:
        length = model.eval(self.length, model_completion=True).as_long()
        ts = [str(model.eval(self.ts[p], model_completion=True)) for p in range(length)]
        return f"[{', '.join(ts)}]"


def list_terms(prefix: str, n: int) -> ListTerms:
    return ListTerms(
        n,
        z3.Int(f"{prefix}.len"),
        [z3.Int(f"{prefix}.ts{p}") for p in range(n)],
        z3.Int(f"{prefix}.clock"),
    )


def list_step(op: str, pre: ListTerms, post: ListTerms, k: Any, ops: ListOps) -> list[Any]:
    n = pre.n

    def nxt(p: int) -> Any:
        return pre.ts[p + 1] if p + 1 < n else pre.ts[p]

    def prv(p: int) -> Any:
        return pre.ts[p - 1] if p > 0 else pre.ts[p]

    if op == "mark_evictable":
        facts = [pre.length < n, post.length == pre.length + 1, post.clock == pre.clock + 1]
        for p in range(n):
            if ops.append_at_mru_end:
                facts.append(post.ts[p] == z3.If(p == pre.length, pre.clock, pre.ts[p]))
            else:
                facts.append(post.ts[p] == z3.If(p == 0, pre.clock, prv(p)))
        return facts
    facts = [k >= 0, k < pre.length]
    if op == "remove":
        facts += [post.length == pre.length - 1, post.clock == pre.clock]
        last = _pick(pre.ts, pre.length - 1)
        for p in range(n):
            moved = (
                z3.If(p < k, pre.ts[p], nxt(p))
                if ops.remove_shifts
                else z3.If(p == k, last, pre.ts[p])
            )
            facts.append(post.ts[p] == moved)
        return facts
    facts += [post.length == pre.length, post.clock == pre.clock + 1]
    for p in range(n):
        if ops.touch_moves:
            moved = z3.If(p < k, pre.ts[p], z3.If(p + 1 < pre.length, nxt(p), pre.clock))
        else:
            moved = z3.If(p == k, pre.clock, pre.ts[p])
        facts.append(post.ts[p] == moved)
    return facts


def check_list_order(op: str, blocks: int, backstop_s: float, ops: ListOps = ListOps()) -> Outcome:
    """`op` ("mark_evictable" | "remove" | "touch") keeps the list in recency order."""
    pre, post = list_terms("pre", blocks), list_terms("post", blocks)
    k = z3.Int("position")

    def describe(model: Any) -> str:
        at = "" if op == "mark_evictable" else f" at position {model.eval(k)}"
        return (
            f"{op}{at} (clock {model.eval(pre.clock)}): list timestamps {pre.render(model)}"
            f" -> {post.render(model)}; violated: list_in_recency_order"
        )

    return z3_valid(
        post.ordered(), backstop_s, describe, [pre.ordered(), *list_step(op, pre, post, k, ops)]
    )


# ------------------------------------------------------------------ obligations
