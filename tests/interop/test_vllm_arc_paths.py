"""`EvictableARC`'s two eviction paths against vLLM 0.33's own `ARCCachePolicy`.

`EvictableARC.evict` walks the two idle rings directly while no idle node sits in
a late ring or a heap, and merges rings and heaps otherwise (`arc_index.select`);
evicted nodes are reused by later inserts. Random policy-level traces (stores,
commits, failed stores, pins and unpins out of order, touches, store misses,
finished requests, evictions of several chunks with protected keys) run on both
policies; after every call the answers and the four lists and the target are the
same, the idle indexes are well formed, and where the direct walk was taken the
merged one chooses the same victims.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

pytest.importorskip("vllm")

from vllm.v1.kv_offload.base import OffloadKey, ReqContext, make_offload_key
from vllm.v1.kv_offload.cpu.policies.arc import ARCCachePolicy
from vllm.v1.kv_offload.cpu.policies.base import ChunkStatus

from evictable.vllm import EvictableARC


def key(i: int) -> OffloadKey:
    return make_offload_key(str(i).encode(), 0)


def lists(policy: Any) -> tuple[Any, ...]:
    return (list(policy.t1), list(policy.t2), list(policy.b1), list(policy.b2))


class Pair:
    """vLLM's ARC and ours, each with its own chunks, driven call for call."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.theirs = ARCCachePolicy(capacity)
        self.ours = EvictableARC(capacity)
        self.chunks: dict[OffloadKey, tuple[ChunkStatus, ChunkStatus]] = {}
        self.req = ReqContext(req_id="r")
        self.rings = self.merged = 0

    def refs(self, ref: int) -> list[OffloadKey]:
        return [k for k, (c, _) in self.chunks.items() if c.ref_cnt == ref]

    def set_ref(self, k: OffloadKey, ref: int) -> None:
        for chunk in self.chunks[k]:
            chunk.ref_cnt = ref

    def both(self, hook: str, *args: Any) -> Any:
        theirs = getattr(self.theirs, hook)(*args)
        ours = getattr(self.ours, hook)(*args)
        return theirs, ours

    def evict(self, n: int, protected: set[OffloadKey]) -> None:
        ours = self.ours
        one, two = ours.idle1, ours.idle2
        direct = not (one.marked or two.marked) and one.late.next is one.late
        direct = direct and two.late.next is two.late
        if direct:
            self.rings += 1
            assert ours._select_rings(n, protected) == ours._select(n, protected)
        else:
            self.merged += 1
        theirs, mine = self.both("evict", n, protected)
        assert (theirs is None) is (mine is None)
        if theirs is None:
            return
        assert [k for k, _ in theirs] == [k for k, _ in mine]
        for k, chunk in mine:
            assert chunk is self.chunks.pop(k)[1]

    def store(self, new: list[OffloadKey], rng: random.Random) -> None:
        self.both("on_store_miss", new, self.req)
        need = len(self.chunks) + len(new) - self.capacity
        if need > 0:
            resident = list(self.chunks)
            protected = set(rng.sample(resident, min(len(resident), rng.randrange(3))))
            before = dict(self.chunks)
            self.evict(need, protected | set(new))
            if len(self.chunks) == len(before):  # refused
                return
        for k in new:
            pair = (ChunkStatus(len(self.chunks)), ChunkStatus(len(self.chunks)))
            self.chunks[k] = pair
            self.theirs.insert(k, pair[0], self.req)
            self.ours.insert(k, pair[1], self.req)

    def step(self, rng: random.Random, fresh: int) -> int:
        op = rng.randrange(9)
        if op <= 2:
            n = rng.choice((1, 1, 2, 3))
            self.store([key(fresh + i) for i in range(n)], rng)
            return fresh + n
        if op == 3 and self.refs(-1):  # commits, oldest first or in any order
            pending = self.refs(-1)
            done = pending[:2] if rng.random() < 0.5 else rng.sample(pending, 1)
            for k in done:
                self.set_ref(k, 0)
                self.both("mark_evictable", k)
        elif op == 4 and self.refs(-1):  # a failed store
            k = rng.choice(self.refs(-1))
            del self.chunks[k]
            self.both("remove", k)
        elif op == 5 and self.refs(0):  # a load starts
            k = rng.choice(self.refs(0))
            self.set_ref(k, 1)
            self.both("mark_non_evictable", k)
        elif op == 6 and self.refs(1):  # a load ends
            k = rng.choice(self.refs(1))
            self.set_ref(k, 0)
            self.both("mark_evictable", k)
        elif op == 7:
            known = list(self.chunks) + list(self.theirs.b1) + list(self.theirs.b2)
            if known:
                self.both("touch", rng.sample(known, min(len(known), 3)), self.req)
        elif op == 8 and self.chunks:
            keys = rng.sample(list(self.chunks), min(len(self.chunks), 4))
            reused = {k for k in keys if rng.random() < 0.5}
            self.both("on_request_finished", (tuple(keys),), set(keys) - reused, reused, self.req)
        return fresh


@pytest.mark.parametrize("seed", range(30))
def test_both_eviction_paths_match_vllms_arc_call_for_call(seed: int) -> None:
    rng = random.Random(seed)
    pair = Pair(capacity=rng.choice((3, 5, 8)))
    fresh = 0
    for _ in range(300):
        fresh = pair.step(rng, fresh)
        theirs, ours = pair.theirs, pair.ours
        assert lists(theirs) == lists(ours)
        assert theirs.target_t1_size == ours.target_t1_size
        ours.idle1.check("t1", ours.nodes1, False)
        ours.idle2.check("t2", ours.nodes2, True)
    assert pair.rings > 0


def test_the_merged_walk_is_exercised() -> None:
    merged = 0
    for seed in range(30):
        rng = random.Random(seed)
        pair = Pair(capacity=rng.choice((3, 5, 8)))
        fresh = 0
        for _ in range(300):
            fresh = pair.step(rng, fresh)
        merged += pair.merged
    assert merged > 0
