"""Z3 obligations for the intrusive free queue (bounded: K blocks, next/prev as arrays).

The queue state is `next`, `prev` (Z3 arrays over node ids), `linked` (array of
Bool) and `count`. Block ids are 0..K-1, the sentinels are `HEAD = K` and
`TAIL = K + 1`, and an unlinked block's links are `NIL = -1`. Every operation is
encoded the way `impl/free_queue.py` performs it (the same stores in the same order),
and each obligation proves, for every well-formed pre-state with up to K blocks:

* `free_queue.wf.<op>` -- the operation keeps the queue well formed (sentinels at
  the ends, link symmetry, membership ⇔ reachable from the head, count = length,
  no cycle: the walk from the head meets the tail after exactly `count` distinct
  blocks) and produces the intended order (e.g. `remove` drops exactly that block
  and keeps the others in order). Bulk operations (`popleft_n`, `append_n`,
  `prepend_n`) for every size up to K.
* `free_queue.iter_blocks_after` -- the walk from a linked cursor (or from the
  head) yields exactly the blocks after it, in order, and then stops.
* `free_queue.cursor_generation` -- a block that leaves and rejoins gets a stamp no
  earlier cursor can hold (stamps stay below the per-queue counter).
* `free_queue.table.<event>.<SRC>-><DST>` -- the GPU table rows of
  `model.lifecycle.GPU_MACHINE`, applied to a real queue through the hook
  `derive_hook` gives (link at the back when hashed / front when not, unlink, or
  nothing), keep "linked ⇔ ref_cnt == 0" together with well-formedness. (The
  abstract table consecution over unboundedly many blocks is `gpu.consecution.*`
  in `proofs/z3/lifecycle.py`; this is its bounded refinement onto the linked list.)

Each obligation has a negative control: the same claim for a deliberately broken
operation (a `remove` that forgets `prev`, an `append` that does not bump the
count, ...), which must give a counterexample.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import z3

from evictable.model.lifecycle import GPU_MACHINE, GpuEvent, Hook, RefGuard, Transition
from evictable.proofs.base.records import Outcome, Status
from evictable.proofs.z3.solver import z3_sat, z3_valid

__all__ = [
    "QState",
    "well_formed",
]

NIL = -1


@dataclass(frozen=True)
class QState:
    """A symbolic queue over K blocks."""

    k: int
    nxt: Any
    prv: Any
    linked: Any
    count: Any

    @property
    def head(self) -> int:
        return self.k

    @property
    def tail(self) -> int:
        return self.k + 1


def fresh(k: int, tag: str) -> QState:
    ii = z3.IntSort()
    return QState(
        k,
        z3.Array(f"next_{tag}", ii, ii),
        z3.Array(f"prev_{tag}", ii, ii),
        z3.Array(f"linked_{tag}", ii, z3.BoolSort()),
        z3.Int(f"count_{tag}"),
    )


def walk(s: QState, start: Any, steps: int) -> list[Any]:
    """[start, next(start), next(next(start)), ...], `steps + 1` terms."""
    out = [start]
    for _ in range(steps):
        out.append(z3.Select(s.nxt, out[-1]))
    return out


def is_block(s: QState, x: Any) -> Any:
    return z3.And(x >= 0, x < s.k)


def order_is(s: QState, c: int, seq: Sequence[Any]) -> Any:
    """With count c, the walk from the head is exactly `seq` (as terms)."""
    w = walk(s, z3.IntVal(s.head), c + 1)
    return z3.And(len(seq) == c, *(w[j + 1] == x for j, x in enumerate(seq)))


def well_formed(s: QState, exact: int | None = None) -> Any:
    """Sentinels, symmetry, membership ⇔ reachable, count = length, no cycle.

    With `exact`, also claims `count == exact` (and spells out only that case).
    """
    k = s.k
    w = walk(s, z3.IntVal(s.head), k + 1)
    cases = []
    for c in range(k + 1) if exact is None else [exact]:
        body = w[1 : c + 1]
        parts = [w[c + 1] == s.tail]
        parts += [is_block(s, x) for x in body]
        if c >= 2:
            parts.append(z3.Distinct(*body))
        parts += [z3.Select(s.prv, w[j + 1]) == w[j] for j in range(c + 1)]
        parts += [z3.Select(s.linked, i) == z3.Or(False, *(x == i for x in body)) for i in range(k)]
        if exact is None:
            cases.append(z3.Implies(s.count == c, z3.And(*parts)))
        else:
            cases.append(z3.And(s.count == c, *parts))
    unlinked_nil = [
        z3.Implies(
            z3.Not(z3.Select(s.linked, i)),
            z3.And(z3.Select(s.nxt, i) == NIL, z3.Select(s.prv, i) == NIL),
        )
        for i in range(k)
    ]
    return z3.And(
        s.count >= 0,
        s.count <= k,
        z3.Select(s.prv, s.head) == NIL,
        z3.Select(s.nxt, s.tail) == NIL,
        *cases,
        *unlinked_nil,
    )


# ------------------------------------------------------------------ operations


def _clear(s: QState, b: Any) -> QState:
    return replace(
        s,
        nxt=z3.Store(s.nxt, b, NIL),
        prv=z3.Store(s.prv, b, NIL),
        linked=z3.Store(s.linked, b, False),
    )


def op_remove(s: QState, b: Any, broken: bool = False) -> QState:
    p, n = z3.Select(s.prv, b), z3.Select(s.nxt, b)
    nxt = z3.Store(s.nxt, p, n)
    prv = s.prv if broken else z3.Store(s.prv, n, p)  # broken: forgets to fix prev
    return _clear(replace(s, nxt=nxt, prv=prv, count=s.count - 1), b)


def op_popleft(s: QState, broken: bool = False) -> tuple[QState, Any]:
    first = z3.Select(s.nxt, s.head)
    n2 = z3.Select(s.nxt, first)
    nxt = z3.Store(s.nxt, s.head, n2)
    prv = s.prv if broken else z3.Store(s.prv, n2, s.head)
    return _clear(replace(s, nxt=nxt, prv=prv, count=s.count - 1), first), first


def op_popleft_n(s: QState, m: int, broken: bool = False) -> tuple[QState, list[Any]]:
    out: list[Any] = []
    node = z3.Select(s.nxt, s.head)
    cur = s
    for _ in range(m):
        out.append(node)
        after = z3.Select(cur.nxt, node)
        cur = _clear(cur, node)
        node = after
    nxt = z3.Store(cur.nxt, s.head, node)
    prv = cur.prv if broken and m > 0 else z3.Store(cur.prv, node, s.head)
    return replace(cur, nxt=nxt, prv=prv, count=s.count - m), out


def op_link_between(
    s: QState, before: Any, after: Any, bs: Sequence[Any], broken: bool = False
) -> QState:
    nxt, prv, linked = s.nxt, s.prv, s.linked
    prev = before
    for b in bs:
        nxt = z3.Store(nxt, prev, b)
        prv = z3.Store(prv, b, prev)
        linked = z3.Store(linked, b, True)
        prev = b
    nxt = z3.Store(nxt, prev, after)
    prv = z3.Store(prv, after, prev)
    count = s.count if broken else s.count + len(bs)  # broken: count not bumped
    return replace(s, nxt=nxt, prv=prv, linked=linked, count=count)


def op_append_n(s: QState, bs: Sequence[Any], broken: bool = False) -> QState:
    return op_link_between(s, z3.Select(s.prv, s.tail), s.tail, bs, broken)


def op_prepend_n(s: QState, bs: Sequence[Any], broken: bool = False) -> QState:
    if broken:  # links after the first block instead of before it
        first = z3.Select(s.nxt, s.head)
        return op_link_between(s, first, z3.Select(s.nxt, first), bs)
    return op_link_between(s, z3.IntVal(s.head), z3.Select(s.nxt, s.head), bs)


# ------------------------------------------------------------------ claims


def _describe(s: QState, post: QState | None = None) -> Callable[[Any], str]:
    def render(model: Any) -> str:
        def order(q: QState) -> str:
            ev = model.eval
            c = ev(q.count, model_completion=True).as_long()
            items = [
                str(ev(x, model_completion=True))
                for x in walk(q, z3.IntVal(q.head), max(0, min(c, q.k)) + 1)[1:]
            ]
            links = ", ".join(
                f"{i}:{ev(z3.Select(q.prv, i), model_completion=True)}<>"
                f"{ev(z3.Select(q.nxt, i), model_completion=True)}"
                for i in range(q.k + 2)
            )
            return f"count={c} walk={items} links(prev<>next)=[{links}]"

        text = "pre: " + order(s)
        if post is not None:
            text += " | post: " + order(post)
        return text

    return render


def _fresh_blocks(s: QState, m: int, tag: str) -> tuple[list[Any], list[Any]]:
    bs = [z3.Int(f"{tag}{j}") for j in range(m)]
    pre = [is_block(s, b) for b in bs] + [z3.Not(z3.Select(s.linked, b)) for b in bs]
    if m >= 2:
        pre.append(z3.Distinct(*bs))
    return bs, pre


def check_wf(op: str, k: int, broken: bool, backstop_s: float) -> Outcome:
    """The operation keeps the queue well formed and yields the intended order.

    One solver query per pre-state length c (and bulk size m), each assuming a
    well-formed pre-state of exactly c blocks.
    """
    s = fresh(k, "pre")
    w = walk(s, z3.IntVal(s.head), k + 1)
    for c in range(k + 1):
        pre_order = w[1 : c + 1]
        cases: list[tuple[list[Any], Any, QState]] = []  # (assumptions, claim, post)
        if op == "popleft" and c >= 1:
            post, got = op_popleft(s, broken)
            cases.append(
                (
                    [],
                    z3.And(
                        got == pre_order[0],
                        order_is(post, c - 1, pre_order[1:]),
                        well_formed(post, c - 1),
                    ),
                    post,
                )
            )
        elif op == "remove":
            b = z3.Int("b")
            post = op_remove(s, b, broken)
            for p in range(c):
                cases.append(
                    (
                        [pre_order[p] == b],
                        z3.And(
                            well_formed(post, c - 1),
                            order_is(post, c - 1, pre_order[:p] + pre_order[p + 1 :]),
                        ),
                        post,
                    )
                )
        elif op == "popleft_n":
            for m in range(c + 1):
                post, out = op_popleft_n(s, m, broken)
                cases.append(
                    (
                        [],
                        z3.And(
                            *(x == y for x, y in zip(out, pre_order, strict=False)),
                            well_formed(post, c - m),
                            order_is(post, c - m, pre_order[m:]),
                        ),
                        post,
                    )
                )
        elif op in ("append", "prepend", "append_n", "prepend_n"):
            sizes = [1] if op in ("append", "prepend") else list(range(0, k - c + 1))
            for m in sizes:
                if c + m > k:
                    continue
                bs, pre = _fresh_blocks(s, m, "b")
                link = op_append_n if op.startswith("append") else op_prepend_n
                post = link(s, bs, broken)
                want = pre_order + bs if op.startswith("append") else bs + pre_order
                cases.append(
                    (pre, z3.And(well_formed(post, c + m), order_is(post, c + m, want)), post)
                )
        for pre, claim, post in cases:
            found = z3_valid(
                claim, backstop_s, _describe(s, post), assumptions=[well_formed(s, c), *pre]
            )
            if found.status is not Status.PROVED:
                return found
    return Outcome(Status.PROVED)


def check_iter(k: int, broken: bool, backstop_s: float) -> Outcome:
    """The walk from a linked cursor (or the head) yields exactly the suffix after it."""
    s = fresh(k, "pre")
    w = walk(s, z3.IntVal(s.head), k + 1)
    cursor = z3.Int("cursor")
    claims = []
    for c in range(k + 1):
        for p in range(c + 1):  # p = 0: no cursor (start at the head)
            start = z3.IntVal(s.head) if p == 0 else cursor
            first = start if broken else z3.Select(s.nxt, start)  # broken: yields the cursor
            ys = [first]
            for _ in range(c - p):
                ys.append(z3.Select(s.nxt, ys[-1]))
            suffix = w[p + 1 : c + 1]
            yielded = z3.And(
                *(y == x for y, x in zip(ys, suffix, strict=False)),
                *(y != s.tail for y in ys[: c - p]),
            )
            at_cursor = z3.BoolVal(True) if p == 0 else w[p] == cursor
            claims.append(
                z3.Implies(z3.And(s.count == c, at_cursor), z3.And(yielded, ys[c - p] == s.tail))
            )
    return z3_valid(z3.And(*claims), backstop_s, _describe(s), assumptions=[well_formed(s)])


def check_generation(k: int, broken: bool, backstop_s: float) -> Outcome:
    """Unlink then relink of b gives it a stamp that differs from any earlier cursor's."""
    gen = z3.Array("gen", z3.IntSort(), z3.IntSort())
    counter = z3.Int("next_generation")
    b, held = z3.Int("b"), z3.Int("cursor_generation")
    stamps_below = z3.And(*(z3.Select(gen, i) < counter for i in range(k)))
    # The cursor was taken while b was linked: it holds b's stamp then.
    pre = [stamps_below, is_block_k(k, b), held == z3.Select(gen, b)]
    # remove(b) leaves stamps alone; append(b) stamps it with the counter.
    new_stamp = z3.Select(gen, b) if broken else counter  # broken: keeps the old stamp
    gen2 = z3.Store(gen, b, new_stamp)
    counter2 = counter if broken else counter + 1
    post_below = z3.And(*(z3.Select(gen2, i) < counter2 for i in range(k)))
    claim = z3.And(z3.Select(gen2, b) != held, post_below)

    def describe(model: Any) -> str:
        ev = model.eval
        return (
            f"b={ev(b)} cursor holds {ev(held)}, stamp after relink "
            f"{ev(z3.Select(gen2, b), model_completion=True)}"
        )

    return z3_valid(claim, backstop_s, describe, assumptions=pre)


def check_nonvacuity(k: int, overfull: bool, backstop_s: float) -> Outcome:
    """Each count 0..K has a well-formed queue (overfull: K + 1, which has none)."""
    counts = [k + 1] if overfull else list(range(k + 1))
    for c in counts:
        s = fresh(k, f"c{c}")
        out = z3_sat([well_formed(s), s.count == c], backstop_s, f"a queue of {c} blocks")
        if out.status is not Status.PROVED:
            return out
    return Outcome(Status.PROVED)


def is_block_k(k: int, x: Any) -> Any:
    return z3.And(x >= 0, x < k)


def _ref_guard(guard: RefGuard, ref: Any) -> Any:
    if guard is RefGuard.EQ_ONE:
        return ref == 1
    if guard is RefGuard.GE_TWO:
        return ref >= 2
    return z3.BoolVal(True)


def check_table(t: Transition, k: int, hook: Hook, backstop_s: float) -> Outcome:
    """Row `t` with queue hook `hook` keeps well-formedness and linked ⇔ ref == 0."""
    s = fresh(k, "pre")
    ref = z3.Array("ref", z3.IntSort(), z3.IntSort())
    hashed = z3.Array("hashed", z3.IntSort(), z3.BoolSort())
    b = z3.Int("b")

    def inv(q: QState, r: Any) -> Any:
        return z3.And(
            well_formed(q),
            *(z3.Select(r, i) >= 0 for i in range(k)),
            *(z3.Select(q.linked, i) == (z3.Select(r, i) == 0) for i in range(k)),
        )

    spec = GPU_MACHINE.spec(t.source)
    rb = z3.Select(ref, b)
    pre = [inv(s, ref), is_block(s, b), _ref_guard(t.guard, rb)]
    if spec.ref_min is not None:
        pre.append(rb >= spec.ref_min)
    if spec.ref_max is not None:
        pre.append(rb <= spec.ref_max)
    if t.update.op == "set":
        new_ref: Any = z3.IntVal(t.update.value)
    elif t.update.op == "add":
        new_ref = rb + t.update.value
    else:
        new_ref = rb
    ref2 = z3.Store(ref, b, new_ref)
    if hook is Hook.FLAG_ON:  # hashed blocks join at the back, others at the front
        back, front = op_append_n(s, [b]), op_prepend_n(s, [b])
        claim = z3.And(
            z3.Implies(z3.Select(hashed, b), inv(back, ref2)),
            z3.Implies(z3.Not(z3.Select(hashed, b)), inv(front, ref2)),
        )
        post = back
    elif hook is Hook.FLAG_OFF:
        if t.event is GpuEvent.ALLOCATE:
            pre.append(b == z3.Select(s.nxt, s.head))  # allocation takes the front
            post, _ = op_popleft(s)
        else:
            post = op_remove(s, b)
        claim = inv(post, ref2)
    else:
        post = s
        claim = inv(s, ref2)
    return z3_valid(claim, backstop_s, _describe(s, post), assumptions=pre)
