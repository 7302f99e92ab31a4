"""Refinement bridge: the Z3 queue operations of proofs/z3/free_queue.py, evaluated on
concrete queues, do exactly what impl/free_queue.py does (so the proofs speak about
the code that runs), and every real queue satisfies the Z3 well-formedness predicate.
"""

from __future__ import annotations

from typing import Any

import z3
from hypothesis import given
from hypothesis import strategies as st

from evictable.impl.free_queue import FreeKVCacheBlockQueue, KVCacheBlock
from evictable.proofs.z3.free_queue import (
    NIL,
    QState,
    op_append_n,
    op_popleft,
    op_popleft_n,
    op_prepend_n,
    op_remove,
    well_formed,
)

K = 5


def encode(q: FreeKVCacheBlockQueue, blocks: list[KVCacheBlock]) -> QState:
    """The concrete queue as Z3 arrays (ground terms)."""

    def node_id(b: KVCacheBlock | None) -> int:
        if b is None:
            return NIL
        if b is q.fake_free_list_head:
            return K
        if b is q.fake_free_list_tail:
            return K + 1
        return b.block_id

    nodes = [*blocks, q.fake_free_list_head, q.fake_free_list_tail]
    nxt: Any = z3.K(z3.IntSort(), z3.IntVal(NIL))
    prv: Any = z3.K(z3.IntSort(), z3.IntVal(NIL))
    linked: Any = z3.K(z3.IntSort(), z3.BoolVal(False))
    for i, b in enumerate(nodes):
        nxt = z3.Store(nxt, i, node_id(b.next_free_block))
        prv = z3.Store(prv, i, node_id(b.prev_free_block))
        if i < K:
            linked = z3.Store(linked, i, b.owner is q)
    return QState(K, nxt, prv, linked, z3.IntVal(q.num_free_blocks))


def ground(s: QState) -> tuple[list[int], list[int], list[bool], int]:
    def val(t: Any) -> Any:
        v = z3.simplify(t)
        return z3.is_true(v) if z3.is_bool(v) else v.as_long()

    return (
        [val(z3.Select(s.nxt, i)) for i in range(K + 2)],
        [val(z3.Select(s.prv, i)) for i in range(K + 2)],
        [val(z3.Select(s.linked, i)) for i in range(K)],
        val(s.count),
    )


queues = st.permutations(range(K)).flatmap(
    lambda perm: st.integers(0, K).map(lambda n: list(perm[:n]))
)


def build(order: list[int]) -> tuple[FreeKVCacheBlockQueue, list[KVCacheBlock]]:
    blocks = [KVCacheBlock(i) for i in range(K)]
    return FreeKVCacheBlockQueue([blocks[i] for i in order]), blocks


@given(queues)
def test_real_queues_are_well_formed_in_z3(order: list[int]) -> None:
    q, blocks = build(order)
    assert z3.is_true(z3.simplify(well_formed(encode(q, blocks))))


@given(queues, st.data())
def test_z3_operations_match_the_implementation(order: list[int], data: st.DataObject) -> None:
    q, blocks = build(order)
    pre = encode(q, blocks)
    unlinked = [i for i in range(K) if i not in order]
    ops = ["append_n", "prepend_n"] + (["popleft", "remove", "popleft_n"] if order else [])
    op = data.draw(st.sampled_from(ops))
    if op == "popleft":
        post, _ = op_popleft(pre)
        q.popleft()
    elif op == "remove":
        b = data.draw(st.sampled_from(order))
        post = op_remove(pre, z3.IntVal(b))
        q.remove(blocks[b])
    elif op == "popleft_n":
        m = data.draw(st.integers(0, len(order)))
        post, _ = op_popleft_n(pre, m)
        q.popleft_n(m)
    else:
        bs = data.draw(
            st.permutations(unlinked).flatmap(
                lambda p: st.integers(0, len(p)).map(lambda n: list(p[:n]))
            )
        )
        link = op_append_n if op == "append_n" else op_prepend_n
        post = link(pre, [z3.IntVal(b) for b in bs])
        getattr(q, op)([blocks[b] for b in bs])
    assert ground(post) == ground(encode(q, blocks)), op
