"""Free queue and block pool: impl against the model, and the cost of `iter_blocks_after`.

Three groups, each timed side by side (bench/timing.py: interleaved rounds, paired
ratios of CPU-time rates):

* queue operations (`popleft`+`append`, `remove`+`append` at random positions,
  `popleft_n`+`append_n` of 8) on a queue of N blocks: impl vs model;
* a full allocate / cache / free cycle of the block pool (4 blocks per request,
  half of them hashed): impl vs model;
* a walk of W blocks after a cursor, reading each block's hash:
  `iter_blocks_after(cursor)` vs a hand-written generator that follows
  `next_free_block` with no checks (vLLM's shape), and vs the same loop written
  inline. The target is `iter_blocks_after` within 1.2x of the hand-written walk.

`python -m bench.bench_free_queue [--quick]` writes bench/results/free_queue.json;
`evictable bench --only free_queue` runs `run(quick)` through bench/runner.py.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from bench.runner import standalone
from bench.timing import Contender, Measurement, interleaved, paired_ratio
from evictable.impl.block_pool import BlockPool
from evictable.impl.free_queue import FreeKVCacheBlockQueue, KVCacheBlock
from evictable.model.block_pool import ModelBlockPool
from evictable.model.free_queue import ModelFreeQueue
from evictable.model.types import BlockId

__all__ = ["main", "run"]


def _queues(n: int) -> tuple[FreeKVCacheBlockQueue, ModelFreeQueue]:
    return (
        FreeKVCacheBlockQueue([KVCacheBlock(i) for i in range(n)]),
        ModelFreeQueue([BlockId(i) for i in range(n)]),
    )


def _queue_ops(n: int) -> dict[str, dict[str, Contender]]:
    impl_q, model_q = _queues(n)
    blocks = impl_q.get_all_free_blocks()
    rng = random.Random(7)
    picks = [rng.randrange(n) for _ in range(4096)]

    def impl_cycle(units: int) -> None:
        q = impl_q
        for _ in range(units):
            q.append(q.popleft())

    def model_cycle(units: int) -> None:
        q = model_q
        for _ in range(units):
            q.append(q.popleft())

    def impl_remove(units: int) -> None:
        q = impl_q
        for u in range(units):
            b = blocks[picks[u & 4095]]
            q.remove(b)
            q.append(b)

    def model_remove(units: int) -> None:
        q = model_q
        for u in range(units):
            b = BlockId(picks[u & 4095])
            q.remove(b)
            q.append(b)

    def impl_bulk(units: int) -> None:
        q = impl_q
        for _ in range(units):
            q.append_n(q.popleft_n(8))

    def model_bulk(units: int) -> None:
        q = model_q
        for _ in range(units):
            q.append_n(q.popleft_n(8))

    return {
        "popleft+append": {
            "impl": Contender("impl", impl_cycle, 2),
            "model": Contender("model", model_cycle, 2),
        },
        "remove+append": {
            "impl": Contender("impl", impl_remove, 2),
            "model": Contender("model", model_remove, 2),
        },
        "popleft_n(8)+append_n": {
            "impl": Contender("impl", impl_bulk, 16),
            "model": Contender("model", model_bulk, 16),
        },
    }


def _pool_cycle(n: int) -> dict[str, Contender]:
    impl_pool, model_pool = BlockPool(n), ModelBlockPool(n)
    counter = [0, 0]

    def impl_run(units: int) -> None:
        pool = impl_pool
        for _ in range(units):
            got = pool.get_new_blocks(4)
            counter[0] += 1
            pool.cache_block(got[0], counter[0])
            pool.cache_block(got[1], -counter[0])
            pool.free_blocks(got)

    def model_run(units: int) -> None:
        pool = model_pool
        for _ in range(units):
            got = pool.get_new_blocks(4)
            counter[1] += 1
            pool.cache_block(got[0], counter[1])
            pool.cache_block(got[1], -counter[1])
            pool.free_blocks(got)

    return {"impl": Contender("impl", impl_run, 3), "model": Contender("model", model_run, 3)}


def _hand_walk(start: KVCacheBlock, tail: KVCacheBlock) -> Iterator[KVCacheBlock]:
    """What a scanner without `iter_blocks_after` writes: follow the links, no checks."""
    node = start.next_free_block
    while node is not None and node is not tail:
        yield node
        node = node.next_free_block


def _walks(n: int, window: int) -> dict[str, Contender]:
    q, _ = _queues(n)
    blocks = q.get_all_free_blocks()
    for b in blocks[::2]:
        b.block_hash = b.block_id
    tail = q.fake_free_list_tail
    starts = [blocks[i] for i in range(0, max(1, n - window), max(1, (n - window) // 64))]
    cursors = [q.cursor_for(b) for b in starts]
    k = len(starts)

    def via_iter(units: int) -> None:
        for u in range(units):
            seen = 0
            for b in q.iter_blocks_after(cursors[u % k]):
                if b.block_hash is not None:
                    seen += 1

    def via_hand_generator(units: int) -> None:
        for u in range(units):
            seen = 0
            for b in _hand_walk(starts[u % k], tail):
                if b.block_hash is not None:
                    seen += 1

    def via_inline(units: int) -> None:
        for u in range(units):
            seen = 0
            node = starts[u % k].next_free_block
            while node is not None and node is not tail:
                if node.block_hash is not None:
                    seen += 1
                node = node.next_free_block

    return {
        "iter_blocks_after": Contender("iter_blocks_after", via_iter, window),
        "hand_generator": Contender("hand_generator", via_hand_generator, window),
        "hand_inline": Contender("hand_inline", via_inline, window),
    }


def _measure(
    contenders: dict[str, Contender], reps: int, target_s: float
) -> dict[str, Measurement]:
    return interleaved(
        list(contenders.values()), reps, target_s=target_s, warm_s=target_s, max_units=10**6
    )


_OPS = (
    ("popleft+append", "popleft\n+ append"),
    ("remove+append", "remove\n+ append"),
    ("popleft_n(8)+append_n", "popleft_n(8)\n+ append_n"),
    ("pool_cycle", "pool allocate,\ncache, free (4)"),
)
_WALKS = (
    ("iter_blocks_after", "impl iter_blocks_after"),
    ("hand_generator", "hand-written generator"),
    ("hand_inline", "hand-written inline loop"),
)


def _bounds(m: dict[str, Any]) -> tuple[float, float]:
    return m["min_ops_per_s"], m["max_ops_per_s"]


def _plots(out: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The queue and pool operations (impl vs model), and the walk (its three forms)."""
    series: dict[str, list[float | None]] = {}
    errors: dict[str, list[list[float | None]]] = {}
    for side in ("impl", "model"):
        ms = [out[key][side] for key, _ in _OPS]
        series[side] = [m["median_ops_per_s"] for m in ms]
        errors[side] = [[_bounds(m)[0] for m in ms], [_bounds(m)[1] for m in ms]]
    ops = {
        "kind": "bar",
        "title": f"free queue and block pool, {out['num_blocks']:,} blocks "
        "(median, bars: min–max over rounds)",
        "xlabel": "operation (one op = one call of the named pair or cycle)",
        "ylabel": "operations per CPU second (log scale)",
        "log_y": True,
        "x": [shown for _, shown in _OPS],
        "series": series,
        "errors": errors,
    }
    walk = out["walk"]  # in millions of blocks per second
    wseries = {shown: [walk[key]["median_ops_per_s"] / 1e6] for key, shown in _WALKS}
    werrors = {
        shown: [[_bounds(walk[key])[0] / 1e6], [_bounds(walk[key])[1] / 1e6]]
        for key, shown in _WALKS
    }
    walks = {
        "kind": "bar",
        "title": "walking the free queue after a cursor (median, bars: min–max)",
        "xlabel": "walk over 256 queued blocks",
        "ylabel": "million blocks visited per CPU second",
        "log_y": False,
        "x": ["iter_blocks_after vs hand-written walks"],
        "series": wseries,
        "errors": werrors,
    }
    return ops, {"walk": walks}


def run(quick: bool) -> dict[str, Any]:
    """Run every group; rates in ops per CPU second, ratios as paired medians."""
    n = 1_000 if quick else 10_000
    reps = 3 if quick else 9
    target_s = 0.01 if quick else 0.08
    out: dict[str, Any] = {"num_blocks": n, "reps": reps}
    rows: list[list[str]] = []
    for name, pair in _queue_ops(n).items():
        res = _measure(pair, reps, target_s)
        ratio = paired_ratio(res, "impl", "model")
        out[name] = {
            "impl": res["impl"].as_dict(),
            "model": res["model"].as_dict(),
            "impl_over_model": ratio,
        }
        rows.append(
            [name, f"{res['impl'].median:,.0f}", f"{res['model'].median:,.0f}", f"{ratio:.1f}x"]
        )
    res = _measure(_pool_cycle(n), reps, target_s)
    ratio = paired_ratio(res, "impl", "model")
    out["pool_cycle"] = {
        "impl": res["impl"].as_dict(),
        "model": res["model"].as_dict(),
        "impl_over_model": ratio,
    }
    rows.append(
        [
            "pool alloc/cache/free (4)",
            f"{res['impl'].median:,.0f}",
            f"{res['model'].median:,.0f}",
            f"{ratio:.1f}x",
        ]
    )
    # The walk: the suffix after each start is the rest of the queue, so a "window"
    # here is a full walk to the tail; the queue is sized so that it is `window` long.
    window = 256
    res = _measure(_walks(window + 64, window), reps, target_s)
    slow_gen = paired_ratio(res, "hand_generator", "iter_blocks_after")
    slow_inline = paired_ratio(res, "hand_inline", "iter_blocks_after")
    out["walk"] = {name: m.as_dict() for name, m in res.items()}
    out["walk"]["iter_cost_over_hand_generator"] = slow_gen
    out["walk"]["iter_cost_over_hand_inline"] = slow_inline
    out["walk"]["target_cost_ratio"] = 1.2
    rows.append(
        [
            "walk: iter_blocks_after",
            f"{res['iter_blocks_after'].median:,.0f}",
            f"{res['hand_generator'].median:,.0f}",
            f"{slow_gen:.2f}x cost",
        ]
    )
    rows.append(
        [
            "walk: vs inline loop",
            f"{res['iter_blocks_after'].median:,.0f}",
            f"{res['hand_inline'].median:,.0f}",
            f"{slow_inline:.2f}x cost",
        ]
    )
    out["table"] = {
        "columns": ["operation", "impl ops/s", "model (or hand) ops/s", "ratio"],
        "rows": rows,
    }
    out["plot"], out["extra_plots"] = _plots(out)
    out["notes"] = [
        "queue/pool rows: ratio = impl speed / model speed (paired median)",
        "walk rows: ratio = cost of iter_blocks_after / cost of the hand-written walk "
        "(target < 1.2x against the hand-written generator)",
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    """This benchmark alone: see `bench.runner.standalone`."""
    return standalone("free_queue", run, __doc__.split("\n")[0], argv)


if __name__ == "__main__":
    raise SystemExit(main())
