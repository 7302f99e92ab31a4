"""Bounded observation: a corrupted intrusive list is reported, never walked forever.

Every walk of the LRU's evictable ring and of the free queue's list is bounded by the
structure's own size and checks back links; a cycle, a link that does not point
back or a dangling link raises `InvariantViolationError`.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable

import pytest

from evictable.impl.block import BlockStatus
from evictable.impl.free_queue import FreeKVCacheBlockQueue, KVCacheBlock
from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.policies.lru import LRUCachePolicy
from evictable.model.errors import InvariantViolationError


def _ring(n: int) -> tuple[LRUCachePolicy, list[BlockStatus]]:
    """An LRU policy with `n` evictable keys 0..n-1, least recent first."""
    policy = LRUCachePolicy(n)
    records = []
    for i in range(n):
        block = BlockStatus(i)
        policy.insert(i, block)
        block.ref_cnt = 0
        policy.mark_evictable(i)
        records.append(block)
    return policy, records


def _cycle(records: list[BlockStatus]) -> None:
    """The last record links forward to the second: a cycle that skips the sentinel."""
    records[-1].next = records[1]


def _bad_back_link(records: list[BlockStatus]) -> None:
    records[1].prev = records[2]


def _dangling(records: list[BlockStatus]) -> None:
    records[1].next = None


LRU_WALKS: dict[str, Callable[[LRUCachePolicy], object]] = {
    "listed": lambda p: list(p.listed()),
    "snapshot": LRUCachePolicy.snapshot,
    "check_invariants": LRUCachePolicy.check_invariants,
    "checkpoint": LRUCachePolicy.checkpoint,
    "pickle": lambda p: pickle.dumps(p),
    "deepcopy": copy.deepcopy,
    "clear": LRUCachePolicy.clear,
}


@pytest.mark.parametrize("corrupt", [_cycle, _bad_back_link, _dangling])
@pytest.mark.parametrize("walk", sorted(LRU_WALKS))
def test_every_walk_of_a_broken_lru_ring_raises(
    walk: str, corrupt: Callable[[list[BlockStatus]], None]
) -> None:
    policy, records = _ring(4)
    corrupt(records)
    with pytest.raises(InvariantViolationError) as err:
        LRU_WALKS[walk](policy)
    assert "lru_list_exact" in err.value.names or "evictable_iff_idle" in err.value.names


def test_evict_over_a_cycle_of_protected_keys_raises() -> None:
    policy, records = _ring(3)
    records[2].next = records[0]  # 0 -> 1 -> 2 -> 0, the sentinel never met again
    with pytest.raises(InvariantViolationError, match="cycle"):
        policy.evict(1, {0, 1, 2})


def test_a_manager_over_a_broken_ring_reports_instead_of_hanging() -> None:
    m = CPUOffloadingManager(3)
    m.prepare_store(["a", "b", "c"])
    m.complete_store(["a", "b", "c"])
    ring = m._policy.ring  # type: ignore[attr-defined]
    ring.prev.next = ring.next.next  # c -> b: the walk would circle b, c forever
    for observe in (m.snapshot, m.check_invariants, m.reset_cache):
        with pytest.raises(InvariantViolationError):
            observe()


def test_a_well_formed_ring_walks_as_before() -> None:
    policy, records = _ring(4)
    assert list(policy.listed()) == records
    assert policy.snapshot().evictable == (0, 1, 2, 3)
    policy.check_invariants()


def _queue(n: int) -> tuple[FreeKVCacheBlockQueue, list[KVCacheBlock]]:
    blocks = [KVCacheBlock(i) for i in range(n)]
    return FreeKVCacheBlockQueue(blocks), blocks


QUEUE_WALKS: dict[str, Callable[[FreeKVCacheBlockQueue], object]] = {
    "get_all_free_blocks": FreeKVCacheBlockQueue.get_all_free_blocks,
    "snapshot": FreeKVCacheBlockQueue.snapshot,
    "check_invariants": FreeKVCacheBlockQueue.check_invariants,
    "iteration": lambda q: list(q.iter_blocks_after(None)),
}


def _q_cycle(blocks: list[KVCacheBlock]) -> None:
    blocks[-1].next_free_block = blocks[1]
    blocks[1].prev_free_block = blocks[-1]


def _q_bad_back_link(blocks: list[KVCacheBlock]) -> None:
    blocks[2].prev_free_block = blocks[0]


def _q_dangling(blocks: list[KVCacheBlock]) -> None:
    blocks[1].next_free_block = None


@pytest.mark.parametrize(
    ("walk", "corrupt"),
    [
        (w, c)
        for w in sorted(QUEUE_WALKS)
        for c in (_q_cycle, _q_bad_back_link, _q_dangling)
        # A lazy walk follows forward links only: it sees cycles, not back links.
        if not (w == "iteration" and c is not _q_cycle)
    ],
)
def test_every_walk_of_a_broken_free_list_raises(
    walk: str, corrupt: Callable[[list[KVCacheBlock]], None]
) -> None:
    q, blocks = _queue(4)
    corrupt(blocks)
    with pytest.raises(InvariantViolationError):
        QUEUE_WALKS[walk](q)


def test_a_walk_past_the_count_raises() -> None:
    q, _ = _queue(3)
    q.num_free_blocks = 2  # the list is well formed but longer than the count says
    with pytest.raises(InvariantViolationError, match="num_free_blocks=2"):
        q.get_all_free_blocks()
    with pytest.raises(InvariantViolationError):
        list(q.iter_blocks_after(None))


def test_a_well_formed_queue_walks_as_before() -> None:
    q, blocks = _queue(4)
    assert q.get_all_free_blocks() == blocks
    assert list(q.iter_blocks_after(blocks[1])) == blocks[2:]
    assert list(q.iter_blocks_after(blocks[3])) == []
    q.check_invariants()


def _unbounded_walk_ends(start: object, end: object, attr: str, limit: int = 10_000) -> bool:
    """Whether following `attr` links from `start` reaches `end` (an unbounded walk
    would loop forever when it does not)."""
    node = getattr(start, attr)
    for _ in range(limit):
        if node is end:
            return True
        node = getattr(node, attr)
    return False


def test_the_seeded_broken_touch_makes_a_ring_an_unbounded_walk_never_leaves() -> None:
    from evictable.proofs.controls.catalogue import by_name

    m = by_name("touch_without_unlink").factory(3, "lru", False)
    m.prepare_store(["a", "b"])
    m.complete_store(["a", "b"])
    m.touch(["b"])  # b is already the most recent: it links to itself
    ring = m._policy.ring
    assert not _unbounded_walk_ends(ring, ring, "next")
    with pytest.raises(InvariantViolationError):
        m.snapshot()


def test_the_seeded_prepend_makes_a_free_list_an_unbounded_walk_never_leaves() -> None:
    from evictable.proofs.controls.catalogue import by_name

    blocks = [KVCacheBlock(i) for i in range(3)]
    q = by_name("prepend_trusts_own_blocks").factory(blocks)
    q.prepend_n([blocks[1]])  # linked twice: the list now has a cycle
    assert not _unbounded_walk_ends(q.fake_free_list_head, q.fake_free_list_tail, "next_free_block")
    with pytest.raises(InvariantViolationError):
        q.snapshot()
