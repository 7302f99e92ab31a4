"""The benchmark's scanning ARC does the same work as `ARCCachePolicy` (same victims,
same lists and target), so the ratios in bench/results/arc.json compare like with like."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bench.bench_arc import ScanningArc, _filled
from evictable.impl.block import BlockStatus
from evictable.impl.policies.arc import ARCCachePolicy
from evictable.impl.policies.base import CachePolicy

_OPS = st.lists(
    st.tuples(
        st.sampled_from(("store", "commit", "load", "unload", "touch", "evict")),
        st.integers(0, 7),
        st.integers(1, 3),
    ),
    max_size=80,
)


@given(capacity=st.integers(1, 5), ops=_OPS)
def test_scanning_arc_matches_the_fast_one(capacity: int, ops: list[tuple[str, int, int]]) -> None:
    sides: list[tuple[CachePolicy, dict[int, BlockStatus]]] = [
        (ARCCachePolicy(capacity), {}),
        (ScanningArc(capacity), {}),
    ]
    for op, key, n in ops:
        answers = []
        for policy, blocks in sides:
            block = blocks.get(key)
            if op == "store" and block is None and len(blocks) < capacity:
                blocks[key] = policy.record_class(key)
                policy.insert(key, blocks[key])
            elif op == "commit" and block is not None and block.ref_cnt == -1:
                block.ref_cnt = 0
                policy.mark_evictable(key)
            elif op == "load" and block is not None and block.ref_cnt >= 0:
                block.ref_cnt += 1
                if block.ref_cnt == 1:
                    policy.mark_non_evictable(key)
            elif op == "unload" and block is not None and block.ref_cnt >= 1:
                block.ref_cnt -= 1
                if block.ref_cnt == 0:
                    policy.mark_evictable(key)
            elif op == "touch":
                policy.touch([key, (key + n) % 8])
            elif op == "evict":
                victims = policy.evict(n, frozenset({key}))
                for k, _ in victims or ():
                    del blocks[k]  # type: ignore[arg-type]
                answers.append(None if victims is None else [k for k, _ in victims])
        assert len(set(map(repr, answers))) <= 1
        assert sides[0][0].snapshot() == sides[1][0].snapshot()


def test_filled_cache_pins_the_least_recent_entries() -> None:
    for cls in (ARCCachePolicy, ScanningArc):
        policy = _filled(cls, 10, 0.9)
        victims = policy.evict(1, frozenset())
        assert victims is not None and [k for k, _ in victims] == [9]
        assert policy.evict(1, frozenset()) is None
