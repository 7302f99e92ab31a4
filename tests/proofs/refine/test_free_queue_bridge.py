"""Refinement bridge, at random on larger queues: the Z3 queue operations of
proofs/z3/free_queue.py, evaluated on concrete queues, do exactly what impl/free_queue.py
does, and every real queue satisfies the Z3 well-formedness predicate. (`evictable
verify` runs the exhaustive form on small queues: `bridge.free_queue`.)
"""

from __future__ import annotations

from typing import Any

import z3
from hypothesis import given
from hypothesis import strategies as st

from evictable.impl.free_queue import FreeKVCacheBlockQueue, KVCacheBlock
from evictable.proofs.refine.bridges import encode_queue, ground_queue
from evictable.proofs.z3.free_queue import (
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
    """The concrete queue as Z3 arrays (ground terms), as `bridge.free_queue` encodes it."""
    return encode_queue(q, blocks, K)


def ground(s: QState) -> tuple[Any, ...]:
    return ground_queue(s, K)


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
