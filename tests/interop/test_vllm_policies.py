"""evictable's LRU and ARC inside vLLM 0.33's own `CPUOffloadingManager`.

Every test builds vLLM's real manager through vLLM's policy factory and runs twice:
with vLLM's own policy (the control) and with evictable's (`EvictableLRU`,
`EvictableARC`, loaded out of tree from `evictable.vllm`). The behaviours are the
ones vLLM 0.33's `tests/v1/kv_offload/cpu/test_manager.py` checks for its LRU and
ARC (eviction orders, ghost hits, target adaptation, request-scoped recency, events,
counters, failure atomicity), written here in this project's own words. Left out,
because they measure vLLM-private internals rather than behaviour: the size of the
LRU's lazy heap after pin cycles (`_heap`; the behaviour, that the key is still
evicted, is kept) and how many entries ARC's eviction scan yields (evictable's
eviction does not scan; the victims of that test are kept).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest

pytest.importorskip("vllm")

from vllm.v1.kv_offload.base import (
    LookupResult,
    Medium,
    OffloadKey,
    ReqContext,
    make_offload_key,
)
from vllm.v1.kv_offload.cpu.common import CPUOffloadingMetrics
from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager
from vllm.v1.kv_offload.cpu.policies.base import ChunkStatus
from vllm.v1.kv_offload.cpu.policies.factory import CachePolicyFactory

import evictable.vllm as ev

LRUS = {"vllm": ("lru", None), "evictable": ("EvictableLRU", "evictable.vllm")}
ARCS = {"vllm": ("arc", None), "evictable": ("EvictableARC", "evictable.vllm")}
SIDES = ["vllm", "evictable"]

HIT, MISS, PENDING = LookupResult.HIT, LookupResult.MISS, LookupResult.HIT_PENDING


def K(*ints: int) -> list[OffloadKey]:
    """Keys by number, one KV cache group."""
    return [make_offload_key(str(i).encode(), 0) for i in ints]


def k(i: int) -> OffloadKey:
    return K(i)[0]


def ctx(name: str = "") -> ReqContext:
    return ReqContext(req_id=name)


def build(
    spec: tuple[str, str | None], chunks: int = 4, events: bool = False, **extra: Any
) -> CPUOffloadingManager:
    name, module = spec
    return CPUOffloadingManager(
        num_chunks=chunks,
        cache_policy=name,
        cache_policy_module_path=module,
        enable_events=events,
        **extra,
    )


def lru(side: str, chunks: int = 4, events: bool = False, **extra: Any) -> CPUOffloadingManager:
    return build(LRUS[side], chunks, events, **extra)


def arc(side: str, chunks: int = 4, events: bool = False, **extra: Any) -> CPUOffloadingManager:
    return build(ARCS[side], chunks, events, **extra)


def stored(m: CPUOffloadingManager, keys: list[OffloadKey], c: ReqContext | None = None) -> None:
    c = c or ctx()
    assert m.prepare_store(keys, c) is not None
    m.complete_store(keys, c)


def store_out(m: CPUOffloadingManager, keys: list[OffloadKey], c: ReqContext | None = None) -> Any:
    out = m.prepare_store(keys, c or ctx())
    if out is None:
        return None
    return list(out.keys_to_store), [int(i) for i in out.store_spec.block_ids], out.evicted_keys


def evicted_by(m: CPUOffloadingManager, keys: list[OffloadKey]) -> list[OffloadKey] | None:
    out = m.prepare_store(keys, ctx("pressure"))
    return None if out is None else list(out.evicted_keys)


def events(m: CPUOffloadingManager) -> list[tuple[set[OffloadKey], bool, bool]]:
    got = []
    for e in m.take_events():
        assert e.medium == Medium.CPU
        got.append((set(e.keys), e.removed, e.metadata_only))
    return got


def lists(policy: Any) -> list[list[OffloadKey]]:
    return [list(policy.t1), list(policy.t2), list(policy.b1), list(policy.b2)]


# ------------------------------------------------------------------ loading


def test_the_factory_loads_evictables_policies_out_of_tree() -> None:
    for name in ("EvictableLRU", "EvictableARC"):
        cls = CachePolicyFactory.get_cache_policy_cls(name, "evictable.vllm")
        assert cls is getattr(ev, name)
        assert isinstance(build((name, "evictable.vllm"))._policy, cls)


# ------------------------------------------------------------------ both policies


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("family", ["lru", "arc"])
def test_an_offered_resident_key_is_never_the_victim(side: str, family: str) -> None:
    m = build((LRUS if family == "lru" else ARCS)[side], 4)
    stored(m, K(1, 2))
    m.touch(K(1), ctx())  # 2 is now the least recent
    assert store_out(m, K(2, 3, 4, 5)) == (K(3, 4, 5), [2, 3, 0], K(1))
    m.complete_store(K(2, 3, 4, 5), ctx())
    assert m.lookup(k(2), ctx()) is HIT


@pytest.mark.parametrize("side", SIDES)
def test_an_eviction_is_announced_before_the_store_that_reuses_it(side: str) -> None:
    m = lru(side, 2, events=True)
    stored(m, K(1, 2))
    events(m)
    stored(m, K(3))
    got = events(m)
    assert [removed for _, removed, _ in got] == [True, False]


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("family", ["lru", "arc"])
def test_load_slots_follow_the_order_of_the_keys(side: str, family: str) -> None:
    m = build((LRUS if family == "lru" else ARCS)[side], 4)
    out = m.prepare_store(K(0, 1, 2), ctx())
    assert out is not None
    slot = dict(zip(out.keys_to_store, [int(i) for i in out.store_spec.block_ids], strict=True))
    m.complete_store(K(0, 1, 2), ctx())
    for order in (K(0, 1, 2), K(1, 2, 0)):
        spec = m.prepare_load(order, ctx())
        assert [int(i) for i in spec.block_ids] == [slot[x] for x in order]
        m.complete_load(K(0, 1, 2), ctx())


@pytest.mark.parametrize("side", SIDES)
def test_the_idle_count_follows_every_lifecycle_step(side: str) -> None:
    m = lru(side, 4)

    def count() -> int:
        return int(m._num_evictable_cache_chunks)

    m.prepare_store(K(1, 2, 3), ctx())
    assert count() == 0
    m.complete_store(K(1, 2, 3), ctx())
    assert count() == 3
    m.prepare_load(K(1), ctx())
    m.prepare_load(K(1), ctx())
    assert count() == 2
    m.complete_load(K(1), ctx())
    assert count() == 2
    m.complete_load(K(1), ctx())
    assert count() == 3
    m.prepare_store(K(4, 5, 6), ctx())
    assert count() == 1
    m.complete_store(K(4, 5, 6), ctx(), success=False)
    assert count() == 1
    m.reset_cache()
    assert count() == 0
    stored(m, K(10, 11, 12))
    m.prepare_load(K(10, 11, 12), ctx())
    assert m.prepare_store(K(14, 15), ctx()) is None
    m.complete_load(K(10, 11, 12), ctx())
    assert m.prepare_store(K(14, 15), ctx()) is not None
    assert count() == 2
    m.complete_store(K(14, 15), ctx())
    assert count() == 4


@pytest.mark.parametrize("side", SIDES)
def test_usage_gauges_see_the_policys_chunks(side: str) -> None:
    m = lru(side, 4)
    m.prepare_store(K(1, 2), ctx())
    m.complete_store(K(1, 2), ctx())
    m.prepare_load(K(1), ctx())
    m.prepare_store(K(3), ctx())
    stats = m.get_stats()
    assert stats is not None
    got = stats.reduce()
    assert got[CPUOffloadingMetrics.CPU_CACHE_USAGE_PERC] == pytest.approx(0.5)
    assert got[CPUOffloadingMetrics.CPU_CACHE_WRITE_USAGE_PERC] == pytest.approx(0.25)


@pytest.mark.parametrize("side", SIDES)
def test_a_failed_cleanup_is_not_replayed_for_a_key_a_retry_owns(side: str) -> None:
    m = lru(side, 4, events=True)
    m.prepare_store(K(1, 2), ctx())
    m.complete_store(K(1, 2), ctx(), success=False)
    m.prepare_store(K(1), ctx())  # the retry owns key 1 before the cleanup is drained
    stored(m, K(3))
    drain = iter(m.take_events())
    first = next(drain)
    assert first.removed and first.metadata_only and first.keys == K(2)
    assert list(m.take_events()) == []
    assert [e.keys for e in drain] == [K(3)]


@pytest.mark.parametrize("side", SIDES)
def test_the_store_threshold_does_not_hide_a_ready_reuse(side: str) -> None:
    m = lru(side, 2, store_threshold=2, max_tracker_size=2)
    head, tail, noise1, noise2, new = K(0, 1, 2, 3, 4)
    seed = ctx("seed")
    assert store_out(m, [head, tail], seed)[0] == []
    assert store_out(m, [head, tail], seed)[0] == [head, tail]
    m.complete_store([head, tail], seed)
    m.on_request_finished(seed)
    m.prepare_store([noise1, noise2], ctx("noise"))
    reuse = ctx("reuse")
    skipped = m.stores_skipped_in_current_batch
    assert store_out(m, [tail], reuse)[0] == []
    assert m.stores_skipped_in_current_batch == skipped
    m.on_request_finished(reuse)
    other = ctx("other")
    assert store_out(m, [new], other)[0] == []
    assert store_out(m, [new], other)[2] == [head]


@pytest.mark.parametrize("side", SIDES)
def test_the_policy_receives_the_request_context_of_a_touch(side: str) -> None:
    m = lru(side, 4)
    stored(m, K(1, 2))
    seen: list[tuple[list[OffloadKey], ReqContext]] = []
    inner = m._policy.touch

    def spy(keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        keys = list(keys)
        seen.append((keys, req_context))
        inner(keys, req_context)

    m._policy.touch = spy
    c = ReqContext(req_id="t", kv_transfer_params={"p": 1})
    m.touch(K(1, 2), c)
    assert seen == [(K(1, 2), c)]


@pytest.mark.parametrize("side", SIDES)
def test_finishing_forwards_each_groups_keys_once_with_their_roles(side: str) -> None:
    m = lru(side, 5)
    old = make_offload_key(b"old", 0)
    new0 = make_offload_key(b"new0", 0)
    head1 = make_offload_key(b"head1", 1)
    tail1 = make_offload_key(b"tail1", 1)
    stored(m, [old], ctx("seed"))
    c = ctx("grouped")
    assert m.prepare_store([head1, old, new0], c) is not None
    assert m.prepare_store([new0, head1, tail1], c) is not None
    got: list[Any] = []
    m._policy.on_request_finished = lambda *a: got.append(a)
    m.on_request_finished(c)
    m.on_request_finished(c)
    assert got == [(((old, new0), (head1, tail1)), {new0, head1, tail1}, {old}, c)]


@pytest.mark.parametrize("side", SIDES)
def test_a_refused_store_records_its_access_once_and_reports_its_misses(side: str) -> None:
    m = lru(side, 1)
    resident, candidate = K(1, 2)
    stored(m, [resident])
    pin = ctx("pin")
    m.prepare_load([resident], pin)
    misses: list[Any] = []
    finished: list[Any] = []
    m._policy.on_store_miss = lambda keys, c: misses.append((list(keys), c))
    m._policy.on_request_finished = lambda *a: finished.append(a)
    c = ctx("refused")
    assert m.prepare_store([candidate, resident], c) is None
    assert misses == [([candidate], c)]
    m.on_request_finished(c)
    assert finished == [(((candidate, resident),), set(), {resident}, c)]
    m.complete_load([resident], pin)


# ------------------------------------------------------------------ LRU


@pytest.mark.parametrize("side", SIDES)
def test_lru_the_whole_lifecycle(side: str) -> None:
    m = lru(side, 4, events=True)
    assert store_out(m, K(1, 2)) == (K(1, 2), [0, 1], [])
    assert [m.lookup(x, ctx()) for x in K(1, 2)] == [PENDING, PENDING]
    assert list(m.take_events()) == []
    m.complete_store(K(1, 2), ctx())
    assert events(m) == [({*K(1, 2)}, False, False)]
    assert [m.lookup(x, ctx()) for x in K(1, 2, 3)] == [HIT, HIT, MISS]
    assert store_out(m, K(2, 3, 4, 5)) == (K(3, 4, 5), [2, 3, 0], K(1))
    assert events(m) == [({k(1)}, True, False)]
    assert m.prepare_store(K(1, 6), ctx()) is None
    m.complete_store(K(2, 3, 4, 5), ctx())
    load = ctx("load-2-3")
    assert [int(i) for i in m.prepare_load(K(2, 3), load).block_ids] == [1, 2]
    assert m.prepare_store(K(6, 7, 8), ctx()) is None
    m.complete_load(K(2, 3), load)
    m.on_request_finished(load)  # 2 and 3 are recent now, the head (2) most
    assert store_out(m, K(6, 7, 8)) == (K(6, 7, 8), [2, 0, 3], K(4, 5, 3))
    m.complete_store(K(6, 7, 8), ctx())
    m.touch(K(2, 6, 7), ctx())
    assert store_out(m, K(9)) == (K(9), [3], K(8))
    m.complete_store(K(7, 9), ctx(), success=False)
    assert m.lookup(k(7), ctx()) is HIT and m.lookup(k(9), ctx()) is MISS
    assert events(m) == [
        ({*K(3, 4, 5)}, False, False),
        ({*K(4, 5, 3)}, True, False),
        ({*K(6, 7, 8)}, False, False),
        ({k(8)}, True, False),
        ({k(9)}, True, True),
    ]


@pytest.mark.parametrize("side", SIDES)
def test_lru_a_refused_eviction_changes_nothing(side: str) -> None:
    m = lru(side, 4)
    keys = K(1, 2, 3, 4)
    stored(m, keys)
    assert m._policy.evict(2, set(keys[1:])) is None
    assert all(m.lookup(x, ctx()) is HIT for x in keys)
    got = m._policy.evict(1, set(keys[1:]))
    assert got is not None and [x for x, _ in got] == [keys[0]]


@pytest.mark.parametrize("side", SIDES)
def test_lru_a_key_pinned_and_released_many_times_is_still_evicted(side: str) -> None:
    m = lru(side, 1)
    stored(m, K(1))
    for _ in range(128):
        m.prepare_load(K(1), ctx())
        m.complete_load(K(1), ctx())
    got = m._policy.evict(1, set())
    assert got is not None and [x for x, _ in got] == K(1)


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("finish_first", [False, True])
def test_lru_a_finished_prefix_keeps_its_head_whatever_the_store_completion(
    side: str, finish_first: bool
) -> None:
    m = lru(side, 4)
    c = ctx("prefix")
    assert m.prepare_store(K(1, 2, 3, 4), c) is not None
    if finish_first:
        m.on_request_finished(c)
    m.complete_store(set(K(1, 2, 3, 4)), c)
    if not finish_first:
        m.on_request_finished(c)
    assert evicted_by(m, K(5)) == K(4)


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("finish_first", [False, True])
def test_lru_a_finished_prefix_keeps_its_head_whatever_the_load_completion(
    side: str, finish_first: bool
) -> None:
    m = lru(side, 4)
    stored(m, K(1, 2, 3, 4), ctx("seed"))
    c = ctx("reuse")
    m.prepare_load(K(1, 2, 3, 4), c)
    if finish_first:
        m.on_request_finished(c)
    m.complete_load(set(K(1, 2, 3, 4)), c)
    if not finish_first:
        m.on_request_finished(c)
    assert evicted_by(m, K(5)) == K(4)


@pytest.mark.parametrize("side", SIDES)
def test_lru_a_late_completion_of_an_older_request_stays_older(side: str) -> None:
    m = lru(side, 4)
    old = ctx("old")
    assert m.prepare_store(K(1, 2), old) is not None
    m.on_request_finished(old)
    new = ctx("new")
    stored(m, K(3, 4), new)
    m.on_request_finished(new)
    m.complete_store(K(1, 2), old)
    assert evicted_by(m, K(5)) == K(2)


@pytest.mark.parametrize("side", SIDES)
def test_lru_token_positions_outrank_the_order_of_the_stores(side: str) -> None:
    m = lru(side, 2)
    head, tail = K(1, 2)
    c = ctx("backfill")
    c.set_offload_key_position(head, 16)
    c.set_offload_key_position(tail, 32)
    assert m.prepare_store([tail], c) is not None
    assert m.prepare_store([head], c) is not None
    m.on_request_finished(c)
    m.complete_store({head, tail}, c)
    assert evicted_by(m, K(3)) == [tail]


@pytest.mark.parametrize("side", SIDES)
def test_lru_tails_go_first_in_every_kv_group(side: str) -> None:
    m = lru(side, 4)
    keys = [make_offload_key(f"g{g}-{p}".encode(), g) for g in (0, 1) for p in ("h", "t")]
    c = ctx("groups")
    for key_, pos in zip(keys, (16, 32, 16, 32), strict=True):
        c.set_offload_key_position(key_, pos)
    stored(m, keys, c)
    m.on_request_finished(c)
    got = evicted_by(m, K(10, 11))
    assert got is not None and set(got) == {keys[1], keys[3]}


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("batch", [1, 2, 3])
@pytest.mark.parametrize("reverse", [False, True])
def test_lru_an_unfinished_prefix_loses_only_its_tails(
    side: str, batch: int, reverse: bool
) -> None:
    m = lru(side, 8)
    c = ctx("unfinished")
    groups = [[make_offload_key(str(p).encode(), g) for p in range(3)] for g in range(2)]
    batches = []
    for start in range(0, 3, batch):
        keys = [x for grp in groups for x in grp[start : start + batch]]
        for grp in groups:
            for p in range(start, min(start + batch, 3)):
                c.set_offload_key_position(grp[p], 16 * (p + 1))
        assert m.prepare_store(keys, c) is not None
        batches.append(keys)
        if not reverse:
            m.complete_store(keys, c)
    for keys in reversed(batches) if reverse else ():
        m.complete_store(keys, c)
    got = evicted_by(m, K(10, 11, 12, 13))
    assert got is not None and set(got) == {grp[-1] for grp in groups}
    assert all(m.lookup(x, c) is HIT for grp in groups for x in grp[:-1])


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("how", ["load", "store"])
def test_lru_a_reused_head_outlives_a_new_tail(side: str, how: str) -> None:
    m = lru(side, 4)
    head, middle, tail = K(1, 2, 3)
    seed = ctx("seed")
    stored(m, [head, middle], seed)
    m.on_request_finished(seed)
    c = ctx("reuse")
    for pos, key_ in enumerate((head, middle, tail), 1):
        c.set_offload_key_position(key_, 16 * pos)
    if how == "load":
        m.prepare_load([head, middle], c)
        m.complete_load([middle, head], c)
    else:
        assert m.prepare_store([head, middle], c) is not None
    stored(m, [tail], c)
    got = evicted_by(m, K(10, 11, 12))
    assert got is not None and set(got) == {middle, tail}
    assert m.lookup(head, c) is HIT


@pytest.mark.parametrize("side", SIDES)
def test_lru_a_backfill_is_ordered_by_token_position(side: str) -> None:
    m = lru(side, 3)
    c = ctx("backfill")
    head, middle, tail = K(1, 2, 3)
    for pos, key_ in enumerate((head, middle, tail), 1):
        c.set_offload_key_position(key_, 16 * pos)
    for key_ in (head, tail, middle):
        stored(m, [key_], c)
    assert evicted_by(m, K(4)) == [tail]


@pytest.mark.parametrize("side", SIDES)
def test_lru_a_retried_store_keeps_the_prefix_order(side: str) -> None:
    m = lru(side, 2)
    c = ctx("retry")
    head, tail = K(1, 2)
    c.set_offload_key_position(head, 16)
    c.set_offload_key_position(tail, 32)
    assert m.prepare_store([head], c) is not None
    m.complete_store([head], c, success=False)
    stored(m, [head], c)
    stored(m, [tail], c)
    assert evicted_by(m, K(3)) == [tail]


@pytest.mark.parametrize("side", SIDES)
def test_lru_a_reset_forgets_an_unfinished_requests_rank(side: str) -> None:
    m = lru(side, 2)
    c = ctx("resumed")
    head = k(1)
    c.set_offload_key_position(head, 16)
    stored(m, [head], c)
    m.reset_cache()
    other = ctx("other")
    other.set_offload_key_position(k(9), 16)
    stored(m, K(9), other)
    stored(m, [head], c)
    assert evicted_by(m, K(10)) == K(9)


@pytest.mark.parametrize("side", SIDES)
def test_lru_an_older_request_does_not_demote_a_newer_access(side: str) -> None:
    m = lru(side, 3)
    old = ctx("old")
    pinned, cold, shared = K(1, 2, 3)
    for c, key_, pos in ((old, pinned, 16), (ctx("cold"), cold, 16), (ctx("new"), shared, 32)):
        c.set_offload_key_position(key_, pos)
        stored(m, [key_], c)
    m.prepare_load([pinned], old)
    old.set_offload_key_position(shared, 32)
    m.prepare_load([shared], old)
    m.complete_load([shared], old)
    assert evicted_by(m, K(4)) == [cold]
    m.complete_load([pinned], old)


@pytest.mark.parametrize("side", SIDES)
def test_lru_incremental_stores_read_each_position_a_bounded_number_of_times(side: str) -> None:
    class Counting(ReqContext):  # type: ignore[misc]
        lookups = 0

        def get_offload_key_position(self, key: OffloadKey) -> int | None:
            self.lookups += 1
            got = super().get_offload_key_position(key)
            return None if got is None else int(got)

    keys = K(*range(64))
    m = lru(side, len(keys))
    c = Counting(req_id="incremental")
    for pos, key_ in enumerate(keys, 1):
        c.set_offload_key_position(key_, 16 * pos)
        stored(m, [key_], c)
    assert 0 < c.lookups <= 3 * len(keys)


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize("ready", [False, True])
def test_lru_insertion_alone_orders_positioned_chunks(side: str, ready: bool) -> None:
    cls = CachePolicyFactory.get_cache_policy_cls(*LRUS[side])
    policy = cls(cache_capacity=3)
    c = ctx("insert")
    head, middle, tail = K(1, 2, 3)
    for pos, key_ in enumerate((head, middle, tail), 1):
        c.set_offload_key_position(key_, 16 * pos)
    for chunk_id, key_ in enumerate((head, tail, middle)):
        chunk = ChunkStatus(chunk_id)
        if ready:
            chunk.ref_cnt = 0
        policy.insert(key_, chunk, c)
        if not ready:
            chunk.ref_cnt = 0
            policy.mark_evictable(key_)
    got = policy.evict(2, set())
    assert got is not None and [x for x, _ in got] == [tail, middle]
    assert policy.get(head) is not None


# ------------------------------------------------------------------ ARC


@pytest.mark.parametrize("side", SIDES)
def test_arc_stored_chunks_start_in_t1(side: str) -> None:
    m = arc(side, 4, events=True)
    assert store_out(m, K(1, 2)) == (K(1, 2), [0, 1], [])
    assert [m.lookup(x, ctx()) for x in K(1, 2)] == [PENDING, PENDING]
    assert list(m.take_events()) == []
    m.complete_store(K(1, 2), ctx())
    assert events(m) == [({*K(1, 2)}, False, False)]
    assert [m.lookup(x, ctx()) for x in K(1, 2, 3)] == [HIT, HIT, MISS]
    assert lists(m._policy) == [K(1, 2), [], [], []]


@pytest.mark.parametrize("side", SIDES)
def test_arc_a_second_use_promotes_to_t2(side: str) -> None:
    m = arc(side)
    stored(m, K(1))
    assert k(1) in m._policy.t1 and k(1) not in m._policy.t2
    m.touch(K(1), ctx())
    assert k(1) not in m._policy.t1 and k(1) in m._policy.t2


@pytest.mark.parametrize("side", SIDES)
def test_arc_loading_chunks_are_never_evicted(side: str) -> None:
    m = arc(side, 4)
    assert store_out(m, K(1, 2, 3, 4)) == (K(1, 2, 3, 4), [0, 1, 2, 3], [])
    m.complete_store(K(1, 2, 3, 4), ctx())
    assert [int(i) for i in m.prepare_load(K(2, 3), ctx()).block_ids] == [1, 2]
    assert m.prepare_store(K(5, 6, 7), ctx()) is None
    m.complete_load(K(2, 3), ctx())
    assert store_out(m, K(5, 6, 7))[2] == K(1, 2, 3)


@pytest.mark.parametrize("side", SIDES)
def test_arc_ghost_hits_move_the_target_both_ways(side: str) -> None:
    m = arc(side, 2)
    pol = m._policy
    stored(m, K(1, 2))
    stored(m, K(3))  # evicts 1 into B1
    assert lists(pol) == [K(2, 3), [], K(1), []]
    m.touch(K(1), ctx())  # a B1 hit: T1 should have been larger
    assert pol.target_t1_size == 1
    m.touch(K(3), ctx())  # 3 -> T2
    pol.target_t1_size = 2  # take from T2 next
    stored(m, K(4))
    assert lists(pol)[3] == K(3)
    m.touch(K(3), ctx())  # a B2 hit: T2 should have been larger
    assert pol.target_t1_size == 1


@pytest.mark.parametrize("side", SIDES)
def test_arc_a_low_target_takes_from_t1(side: str) -> None:
    m = arc(side, 4)
    pol = m._policy
    stored(m, K(1, 2, 3, 4))
    m.touch(K(3, 4), ctx())
    assert (len(pol.t1), len(pol.t2)) == (2, 2)
    pol.target_t1_size = 1
    assert store_out(m, K(5))[2] == K(1)
    m.complete_store(K(5), ctx())
    assert k(1) in pol.b1 and k(5) in pol.t1


@pytest.mark.parametrize("side", SIDES)
def test_arc_a_batch_eviction_takes_t1_then_t2_in_order(side: str) -> None:
    m = arc(side, 256)
    pol = m._policy
    keys = K(*range(256))
    stored(m, keys)
    m.touch(keys[128:], ctx())
    pol.target_t1_size = 64
    m.prepare_load([keys[1], keys[254]], ctx())  # pinned
    protected = {keys[0], keys[2], keys[255]}
    t1 = [x for x, c in pol.t1.items() if c.ref_cnt == 0 and x not in protected]
    t2 = [x for x, c in pol.t2.items() if c.ref_cnt == 0 and x not in protected]
    from_t1 = len(pol.t1) - 64 + 1
    got = pol.evict(124, protected)
    assert got is not None and [x for x, _ in got] == t1[:from_t1] + t2[: 124 - from_t1]


@pytest.mark.parametrize("side", SIDES)
def test_arc_an_exhausted_t1_keeps_falling_back_to_t2(side: str) -> None:
    m = arc(side, 8)
    pol = m._policy
    keys = K(*range(8))
    stored(m, keys)
    m.touch(keys[6:], ctx())
    pol.target_t1_size = 4
    t1, t2 = list(pol.t1), list(pol.t2)
    m.prepare_load(t1[3:], ctx())
    got = pol.evict(3, set(t1[1:3]))
    assert got is not None and [x for x, _ in got] == [t1[0], *t2]


CASES = [
    ([], [], [7, 8, 9], [6, 5, 3]),
    ([], [], [7, 8, 9, 10], [6, 5, 3, 4]),
    ([5, 6], [], [7, 8], [3, 4]),
    ([], [5, 6], [7, 8], [3, 4]),
    ([5, 6], [3], [7], [4]),
    ([5, 6], [3], [7, 8], None),
]


@pytest.mark.parametrize("side", SIDES)
@pytest.mark.parametrize(("pinned", "protected", "new", "victims"), CASES)
def test_arc_falls_back_to_t1_when_t2_cannot_give_enough(
    side: str, pinned: list[int], protected: list[int], new: list[int], victims: list[int] | None
) -> None:
    m = arc(side, 4)
    pol = m._policy
    stored(m, K(1, 2, 3, 4))
    stored(m, K(5, 6))
    m.touch(K(1, 2), ctx())  # two B1 hits ...
    m.touch(K(1), ctx())  # ... and a third: the target is 3
    m.touch(K(5, 6), ctx())  # 5 and 6 -> T2
    assert pol.target_t1_size == 3
    assert list(pol.t1) == K(3, 4) and list(pol.t2) == K(6, 5)
    m.prepare_load(K(*pinned), ctx())
    before = [list(view.items()) for view in (pol.t1, pol.t2, pol.b1, pol.b2)]
    out = m.prepare_store(K(*protected, *new), ctx())
    if victims is None:
        assert out is None
        assert [list(view.items()) for view in (pol.t1, pol.t2, pol.b1, pol.b2)] == before
    else:
        assert out is not None and out.keys_to_store == K(*new)
        assert out.evicted_keys == K(*victims)
        m.complete_store(K(*new), ctx())
        assert all(m.lookup(x, ctx()) is HIT for x in K(*new, *pinned, *protected))
    m.complete_load(K(*pinned), ctx())


@pytest.mark.parametrize("side", SIDES)
def test_arc_a_refused_eviction_changes_nothing(side: str) -> None:
    m = arc(side, 4)
    pol = m._policy
    keys = K(0, 1, 2, 3)
    stored(m, keys)
    before = list(pol.t1.items())
    assert pol.evict(2, set(keys[1:])) is None
    assert list(pol.t1.items()) == before
    assert not pol.t2 and not pol.b1 and not pol.b2


@pytest.mark.parametrize("side", SIDES)
def test_arc_ghost_lists_stay_within_the_capacity(side: str) -> None:
    m = arc(side, 2)
    stored(m, K(1, 2))
    for i in range(3, 20):
        stored(m, K(i))
    assert len(m._policy.b1) <= 2 and len(m._policy.b2) <= 2
    assert list(m._policy.b1) == K(16, 17)


@pytest.mark.parametrize("side", SIDES)
def test_arc_touch_moves_keys_to_the_end_of_t2(side: str) -> None:
    m = arc(side, 4)
    stored(m, K(1, 2, 3, 4))
    m.touch(K(3, 4), ctx())
    m.touch(K(1, 3, 4), ctx())
    assert lists(m._policy)[:2] == [K(2), K(4, 3, 1)]
    assert store_out(m, K(5)) == (K(5), [1], K(2))


@pytest.mark.parametrize("side", SIDES)
def test_arc_a_failed_store_leaves_no_trace_but_its_victims_ghost(side: str) -> None:
    m = arc(side, 4)
    pol = m._policy
    stored(m, K(1, 2, 3, 4))
    out = m.prepare_store(K(5), ctx())
    assert out is not None and out.evicted_keys == K(1)
    m.complete_store(K(5), ctx(), success=False)
    assert m.lookup(k(5), ctx()) is MISS
    assert k(5) not in pol.t1 and k(5) not in pol.t2 and k(1) in pol.b1


@pytest.mark.parametrize("side", SIDES)
def test_arc_a_mixed_scenario_keeps_frequent_chunks(side: str) -> None:
    m = arc(side, 4, events=True)
    stored(m, K(1, 2))
    assert store_out(m, K(3, 4, 5))[2] == K(1)
    m.complete_store(K(3, 4, 5), ctx())
    m.touch(K(2, 3), ctx())
    assert lists(m._policy)[:2] == [K(4, 5), K(3, 2)]
    assert store_out(m, K(6))[2] == K(4)
    m.complete_store(K(6), ctx())
    assert m.lookup(k(2), ctx()) is HIT and m.lookup(k(3), ctx()) is HIT
    assert len(list(m.take_events())) == 5


@pytest.mark.parametrize("side", SIDES)
def test_arc_a_reset_forgets_a_requests_earlier_insertions(side: str) -> None:
    m = arc(side, 1)
    pol = m._policy
    resumed = ctx("resumed")
    stored(m, K(1), resumed)
    m.reset_cache()
    replacement = ctx("replacement")
    stored(m, K(1), replacement)
    m.on_request_finished(replacement)
    assert k(1) in pol.t1
    m.prepare_load(K(1), resumed)
    m.complete_load(K(1), resumed)
    m.on_request_finished(resumed)
    assert k(1) in pol.t2


@pytest.mark.parametrize("side", SIDES)
def test_arc_a_request_counts_one_reuse_and_no_insertion(side: str) -> None:
    m = arc(side, 4)
    pol = m._policy
    prefix = K(1, 2, 3, 4)
    seed = ctx("seed")
    stored(m, prefix, seed)
    assert m.prepare_store(prefix, seed) is not None  # offered again by its own request
    m.prepare_load(prefix, seed)  # an internal read of what it inserted
    m.complete_load(prefix, seed)
    m.on_request_finished(seed)
    assert list(pol.t1) == list(reversed(prefix)) and not pol.t2
    reuse = ctx("reuse")
    for _ in range(2):  # a repeated internal pin counts once
        m.prepare_load(prefix, reuse)
        m.complete_load(prefix, reuse)
    m.on_request_finished(reuse)
    assert not pol.t1 and list(pol.t2) == list(reversed(prefix))


@pytest.mark.parametrize("side", SIDES)
def test_arc_a_reuse_wins_over_a_later_reinsertion(side: str) -> None:
    m = arc(side, 1)
    pol = m._policy
    one, two = K(1, 2)
    seed = ctx("seed")
    stored(m, [one], seed)
    m.on_request_finished(seed)
    reuse = ctx("reuse")
    m.prepare_load([one], reuse)
    m.complete_load([one], reuse)
    other = ctx("other")
    stored(m, [two], other)
    m.on_request_finished(other)
    stored(m, [one], reuse)
    m.on_request_finished(reuse)
    assert one not in pol.t1 and list(pol.t2) == [one]


@pytest.mark.parametrize("side", SIDES)
def test_arc_a_ghost_hit_adapts_once_per_request(side: str) -> None:
    m = arc(side, 2)
    pol = m._policy
    keys = K(1, 2, 3)
    seed = ctx("seed")
    stored(m, keys[:2], seed)
    m.on_request_finished(seed)
    make = ctx("ghost")
    out = m.prepare_store([keys[2]], make)
    assert out is not None
    [ghost] = out.evicted_keys
    m.complete_store([keys[2]], make)
    m.on_request_finished(make)
    assert ghost in pol.b1
    residents = [x for x in keys if x != ghost]
    pin = ctx("pin")
    m.prepare_load(residents, pin)
    hit = ctx("hit")
    before = pol.target_t1_size
    assert m.prepare_store([ghost], hit) is None
    after = pol.target_t1_size
    assert after > before
    assert m.prepare_store([ghost], hit) is None
    assert pol.target_t1_size == after
    m.complete_load(residents, pin)
    assert m.prepare_store([ghost], hit) is not None
    assert pol.target_t1_size == after
    m.complete_store([ghost], hit)
    m.on_request_finished(hit)
    assert ghost in pol.t1 and ghost not in pol.t2


@pytest.mark.parametrize("side", SIDES)
def test_arc_a_pending_chunk_seen_again_is_no_frequency_hit(side: str) -> None:
    m = arc(side, 2)
    pol = m._policy
    assert m.prepare_store(K(1), ctx("writer")) is not None
    observer = ctx("observer")
    out = m.prepare_store(K(1), observer)
    assert out is not None and not out.keys_to_store
    m.on_request_finished(observer)
    chunk = pol.get(k(1))
    assert chunk is not None and not chunk.is_ready
    assert k(1) in pol.t1 and k(1) not in pol.t2


# ------------------------------------------------------------------ differential


@pytest.mark.parametrize("family", ["lru", "arc"])
def test_random_serving_traces_match_vllms_policy_call_for_call(family: str) -> None:
    """Random traces (requests over several calls, two KV groups, token positions,
    failed stores, loads, touches, resets, a repeated key) on two real vLLM
    managers, vLLM's policy in one and evictable's in the other: every answer,
    event, counter and policy list is the same after every call."""
    from tests.interop.vllm_traces import run_pair

    spec = (LRUS if family == "lru" else ARCS)["evictable"]
    for seed in range(40):
        assert run_pair(seed, (family, None), spec) is None
