"""Smoke test of bench/bench_free_queue.py: the contenders do the same work; run(quick) works."""

from __future__ import annotations

from bench.bench_free_queue import _hand_walk, run
from evictable.impl.free_queue import FreeKVCacheBlockQueue, KVCacheBlock


def test_hand_walk_visits_what_iter_blocks_after_visits() -> None:
    q = FreeKVCacheBlockQueue([KVCacheBlock(i) for i in range(6)])
    blocks = q.get_all_free_blocks()
    for start in blocks:
        assert list(_hand_walk(start, q.fake_free_list_tail)) == list(q.iter_blocks_after(start))


def test_quick_run_reports_every_ratio() -> None:
    out = run(quick=True)
    for name in ("popleft+append", "remove+append", "popleft_n(8)+append_n", "pool_cycle"):
        assert out[name]["impl_over_model"] > 0
    assert out["walk"]["iter_cost_over_hand_generator"] > 0
    assert len(out["table"]["rows"]) == 6
