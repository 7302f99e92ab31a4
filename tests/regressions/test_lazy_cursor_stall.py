"""The stall: ref-count-only cursor validation stops making progress (found by the explorer).

Trace C (5 calls): the cursor block is unlinked from the free queue without a ref
change (a queue-level `remove`, outside the pool API: through the pool every
unlink raises the ref count). Its ref_cnt is 0, so vLLM's rule keeps the cursor;
the walk from an unlinked block yields nothing, at this step and every later one,
even after new blocks are freed into the queue.

Trace A continued (pool API only): after the skip the cursor sits at the back and
the blocks it jumped over are never reached, however many steps run with no pool
mutation.

Against the model with `validation="refcount"` no step makes progress; against
the model with generation validation and against `impl`, every block that needs
offloading is taken within ceil(len(queue)/window) + 1 steps.
"""

from __future__ import annotations

from dataclasses import replace

from evictable.impl.block_pool import BlockPool
from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.model.block_pool import ModelBlockPool
from evictable.model.lazy_offload import ModelLazyOffload, StartKind, Validation, no_stall_bound
from evictable.model.types import BlockId
from evictable.proofs.explore.lazy import (
    Action,
    Bounds,
    apply,
    apply_impl,
    explore,
    no_stall_check,
    stall_run,
)
from tests.regressions.test_lazy_cursor_skip import JUMPED_OVER

UNLINKED_CURSOR = [
    Action("get_new_blocks", (1,)),
    Action("cache", (1, "a")),
    Action("free", (1,)),  # queue [2 3 1:a]
    Action("step", (1,)),  # visits block 2 (no hash): cursor on block 2
    Action("queue_unlink", (2,)),  # block 2 leaves the queue, ref_cnt stays 0
]

STALL_BOUNDS = Bounds(num_blocks=3, window=1, hashes=("a",), max_ref=1, capacities=(1,))
"""The bounds the shortest trace above was found at (fixed: the verification
levels' bounds may grow)."""


def _run_model(trace: list[Action], validation: Validation) -> ModelLazyOffload:
    m = ModelLazyOffload(ModelBlockPool(4), 1, validation)
    for a in trace:
        apply(m, a)
    return m


def _literal_stall(m: ModelLazyOffload) -> str | None:
    if m.start().kind is not StartKind.NOWHERE:
        return None
    return no_stall_check(m)


def test_explorer_finds_the_stall_for_refcount_validation() -> None:
    bounds = replace(STALL_BOUNDS, queue_unlink=True)
    found = explore(bounds, Validation.REFCOUNT, _literal_stall)
    assert found.violation is not None
    assert found.actions == UNLINKED_CURSOR


def test_refcount_validation_stalls_for_good_on_an_unlinked_cursor() -> None:
    m = _run_model(UNLINKED_CURSOR, Validation.REFCOUNT)
    assert m.start().kind is StartKind.NOWHERE
    ok, _ = stall_run(m)
    assert not ok
    for _ in range(no_stall_bound(len(m.pool.free_queue.order), 1)):
        assert m.step(1) == []
    # Even a block freed into the queue afterwards is never reached.
    (b,) = m.pool.get_new_blocks(1)
    m.pool.cache_block(b, "c")
    m.pool.free_blocks([b])
    for _ in range(5):
        assert m.step(1) == []
    assert not m.offloaded and not m.in_flight


def test_refcount_validation_strands_the_blocks_a_cursor_jumped_over() -> None:
    m = _run_model(JUMPED_OVER, Validation.REFCOUNT)
    ok, lines = stall_run(m)
    assert not ok and lines[-1] == "never visited: [1, 2]"


def test_generation_validation_makes_progress_after_both_traces() -> None:
    for trace in (UNLINKED_CURSOR, JUMPED_OVER):
        m = _run_model(trace, Validation.GENERATION)
        assert m.start().kind is StartKind.FRONT
        ok, _ = stall_run(m)
        assert ok
        taken = [
            b for _ in range(no_stall_bound(len(m.pool.free_queue.order), 1)) for b in m.step(1)
        ]
        assert BlockId(1) in taken


def test_impl_recovers_from_a_cursor_unlinked_with_ref_zero() -> None:
    pool = BlockPool(4)
    box = [1]
    scanner = LazyOffloadScanner(pool, 1, lambda: box[0])
    for a in UNLINKED_CURSOR:
        apply_impl(pool, scanner, a, box)
    assert pool.blocks[2].ref_cnt == 0 and pool.blocks[2].owner is None
    taken = [
        b.block_id
        for _ in range(no_stall_bound(pool.get_num_free_blocks(), 1))
        for b in scanner.step()
    ]
    assert taken == [1]
    scanner.check_invariants()
