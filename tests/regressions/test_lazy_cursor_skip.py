"""The skip: ref-count-only cursor validation misses blocks (found by the explorer).

Trace A (the shortest, 4 calls): the cursor block itself is taken, gets new
content and is freed again; it rejoins at the back with ref_cnt 0, the walk
resumes *after* it, and its new content is never visited.

Trace B (7 calls): the cursor block jumps over a hashed block on its way to the
back; the jumped-over block sits before the cursor, never visited, and the next
allocation evicts it without it ever being offloaded.

Trace C (13 calls): the same through a prefix hit -- the cursor rests on a block
already offloaded, a request hits its prefix (`touch`) and finishes (`free`), and
the block rejoins behind a block that still needs offloading.

Against the model with `validation="refcount"` both violate scan completeness;
against the model with generation validation and against `impl` they do not.

Trace D (4 calls) is why the pool refuses to cache a free block: a block freed
without a hash joins at the front, before the cursor, and hashing it there in
place leaves content behind the cursor that no cursor-based scan (generation
validation included) ever visits. Its last call now raises on model and impl.
"""

from __future__ import annotations

import re
from collections.abc import Hashable

import pytest

from evictable.impl.block_pool import BlockPool
from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.model.block_pool import ModelBlockPool
from evictable.model.errors import InvalidArgumentError
from evictable.model.lazy_offload import (
    ModelLazyOffload,
    Validation,
    check_scan,
    inv_scan_complete,
    no_stall_bound,
)
from evictable.model.types import BlockId
from evictable.proofs.explore.lazy import (
    Action,
    Bounds,
    apply,
    apply_impl,
    explore,
    invariants_check,
)

SHORTEST = [
    Action("step", (1,)),  # visits block 1 (no hash): cursor on block 1
    Action("get_new_blocks", (1,)),  # block 1 allocated: ref 1
    Action("cache", (1, "a")),  # new content, hash 'a'
    Action("free", (1,)),  # ref 0 again, hashed: rejoins at the back
]

JUMPED_OVER = [
    Action("get_new_blocks", (1,)),
    Action("cache", (1, "a")),
    Action("free", (1,)),  # queue [2 3 1:a]
    Action("step", (1,)),  # visits block 2 (no hash): cursor on block 2
    Action("get_new_blocks", (1,)),  # block 2 allocated
    Action("cache", (2, "b")),
    Action("free", (2,)),  # queue [3 1:a 2:b]: block 2 jumped over block 1
]

PREFIX_HIT = [
    Action("get_new_blocks", (1,)),
    Action("cache", (1, "a")),
    Action("free", (1,)),  # queue [2 3 1:a]
    Action("step", (1,)),  # visits 2
    Action("step", (1,)),  # visits 3
    Action("step", (1,)),  # selects block 1 ('a')
    Action("complete", (1,)),  # 'a' offloaded; block 1 back in the queue
    Action("get_new_blocks", (1,)),  # block 2 allocated
    Action("cache", (2, "b")),
    Action("free", (2,)),  # queue [3 1:a 2:b]
    Action("step", (1,)),  # visits block 1 (already offloaded): cursor on block 1
    Action("touch", (1,)),  # a request hits prefix 'a': block 1 leaves the queue
    Action("free", (1,)),  # the request ends: block 1 back, behind block 2
]
"""Trace C (13 calls), the everyday case: a prefix hit on the cursor block."""

SKIP_BOUNDS = Bounds(num_blocks=3, window=1, hashes=("a",), max_ref=1, capacities=(1,))
"""The bounds the shortest traces below were found at (fixed: the verification
levels' bounds may grow)."""


FREE_BLOCK_HASHED_IN_PLACE = [
    Action("get_new_blocks", (1,)),  # block 1 in use
    Action("step", (1,)),  # visits block 2 (no hash): cursor on block 2
    Action("free", (1,)),  # no hash: block 1 rejoins at the front, before the cursor
    Action("cache", (1, "a")),  # hashed in place while free: refused by the pool
]
"""Trace D (4 calls): what a pool accepting a free block would allow."""


def _model(validation: Validation) -> ModelLazyOffload:
    return ModelLazyOffload(ModelBlockPool(4), 1, validation)


def _run_model(trace: list[Action], validation: Validation) -> ModelLazyOffload:
    m = _model(validation)
    for a in trace:
        apply(m, a)
    return m


def _run_impl(trace: list[Action]) -> tuple[BlockPool, LazyOffloadScanner]:
    pool = BlockPool(4)
    box = [1]
    scanner = LazyOffloadScanner(pool, 1, lambda: box[0])
    for a in trace:
        apply_impl(pool, scanner, a, box)
        scanner.check_invariants()
        pool.check_invariants()
    return pool, scanner


def test_explorer_finds_the_shortest_skip_for_refcount_validation() -> None:
    found = explore(
        SKIP_BOUNDS,
        Validation.REFCOUNT,
        invariants_check(("scan_complete",), pool_too=False),
    )
    assert found.violation is not None
    assert found.actions == SHORTEST
    m = _run_model(SHORTEST, Validation.REFCOUNT)
    assert not inv_scan_complete(m.view())


def test_refcount_validation_never_offloads_the_cursor_blocks_new_content() -> None:
    m = _run_model(SHORTEST, Validation.REFCOUNT)
    assert not inv_scan_complete(m.view())
    for _ in range(4):
        assert m.step(1) == []  # the walk resumes after block 1: nothing there
    assert m.offloaded == set() and not m.in_flight


def test_refcount_validation_skips_the_jumped_over_block_until_it_is_evicted() -> None:
    m = _run_model(JUMPED_OVER, Validation.REFCOUNT)
    assert m.pool.free_queue.order == [3, 1, 2]
    assert not inv_scan_complete(m.view())
    assert m.step(1) == []  # resumes after block 2, at the back
    # Allocation pops blocks 3 and 1: block 1's content 'a' is evicted, never offloaded.
    assert m.pool.get_new_blocks(2) == [BlockId(3), BlockId(1)]
    assert "a" not in m.offloaded and not m.in_flight


def test_refcount_validation_skips_the_block_behind_a_prefix_hit_cursor() -> None:
    m = _run_model(PREFIX_HIT, Validation.REFCOUNT)
    assert m.pool.free_queue.order == [3, 2, 1]
    assert not inv_scan_complete(m.view())
    for _ in range(no_stall_bound(3, 1)):
        assert m.step(1) == []
    assert "b" not in m.offloaded and not m.in_flight


def test_generation_validation_keeps_scan_completeness_on_every_trace() -> None:
    for trace, hashed in ((SHORTEST, [1]), (JUMPED_OVER, [1, 2]), (PREFIX_HIT, [2])):
        m = _model(Validation.GENERATION)
        for a in trace:
            apply(m, a)
            assert check_scan(m.view()) == []
        # Restarted from the front: within the no-stall bound every hashed block is taken.
        taken = [b for _ in range(no_stall_bound(3, 1)) for b in m.step(1)]
        assert taken == hashed


def test_impl_restarts_from_the_front_and_offloads_the_skipped_block() -> None:
    pool, scanner = _run_impl(JUMPED_OVER)
    assert scanner.step() == []  # stale cursor: restart at the front, block 3 (no hash)
    selected = scanner.step()
    assert [b.block_id for b in selected] == [1]
    scanner.complete(selected)
    assert scanner.is_offloaded("a")
    assert [b.block_id for b in pool.get_new_blocks(2)] == [3, 2]  # 'a' was saved first
    scanner.check_invariants()


def test_impl_offloads_the_block_behind_a_prefix_hit_cursor() -> None:
    _pool, scanner = _run_impl(PREFIX_HIT)
    taken = [b.block_id for _ in range(no_stall_bound(3, 1)) for b in scanner.step()]
    assert taken == [2]
    scanner.check_invariants()


def test_impl_offloads_the_cursor_blocks_new_content() -> None:
    _pool, scanner = _run_impl(SHORTEST)
    assert [b.block_id for b in scanner.step()] == []  # front: block 2 (no hash)
    scanner.check_invariants()
    assert [b.block_id for b in scanner.step()] == []  # block 3 (no hash)
    assert [b.block_id for b in scanner.step()] == [1]  # block 1, content 'a'


def test_every_lazy_obligation_is_proved_and_every_control_caught_at_quick_level() -> None:
    from evictable.proofs.base.records import run_all
    from evictable.proofs.obligations.explore_lazy_cursor import obligations

    results = run_all(obligations("quick"))
    assert {r.name for r in results} >= {
        "lazy.scan_complete",
        "lazy.scan_complete~neg",
        "lazy.no_stall~neg",
        "lazy.no_stall.queue_unlink~neg",
        "lazy.z3.pool_ops_keep_scan_complete~neg",
    }
    assert [(r.name, r.status.value) for r in results if not r.ok] == []
    skip = next(r for r in results if r.name == "lazy.scan_complete~neg")
    assert re.search(r"pool.free_blocks\(\[pool.blocks\[\d\]\]\)", skip.counterexample)


def test_pool_refuses_the_last_call_of_a_free_block_hashed_in_place() -> None:
    *legal, last = FREE_BLOCK_HASHED_IN_PLACE
    m = _run_model(legal, Validation.GENERATION)
    before = (m.pool.snapshot(), m.snapshot())
    with pytest.raises(InvalidArgumentError, match="cannot cache a free block: block 1 "):
        apply(m, last)
    assert (m.pool.snapshot(), m.snapshot()) == before
    assert check_scan(m.view()) == []
    pool, scanner = _run_impl(legal)
    before_impl = (pool.snapshot(), scanner.snapshot())
    with pytest.raises(InvalidArgumentError, match="cannot cache a free block: block 1 "):
        apply_impl(pool, scanner, last)
    assert (pool.snapshot(), scanner.snapshot()) == before_impl


def test_explorer_finds_a_skip_if_the_pool_hashed_free_blocks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without the pool's rule even generation validation loses scan completeness."""
    checked = ModelBlockPool.cache_block

    def hashes_free_blocks_too(
        self: ModelBlockPool, block_id: BlockId, block_hash: Hashable
    ) -> None:
        if self.ref_cnt(block_id) > 0 or block_id == 0 or block_id in self.block_hash:
            checked(self, block_id, block_hash)
            return
        self.block_hash[block_id] = block_hash
        self.cached.setdefault(block_hash, []).append(block_id)

    monkeypatch.setattr(ModelBlockPool, "cache_block", hashes_free_blocks_too)
    found = explore(
        SKIP_BOUNDS,
        Validation.GENERATION,
        invariants_check(("scan_complete",), pool_too=False),
    )
    assert found.violation is not None and found.actions == FREE_BLOCK_HASHED_IN_PLACE
    monkeypatch.undo()
    clean = explore(
        SKIP_BOUNDS,
        Validation.GENERATION,
        invariants_check(("scan_complete",), pool_too=False),
    )
    assert clean.violation is None and not clean.truncated
