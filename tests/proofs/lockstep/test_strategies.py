"""`call_sequences()` goes somewhere: loads, ends of loads, stores that evict, stores
that need room while a block is pinned -- the states where managers go wrong -- with
the frequencies the strategies' docstring states (measured here, over 1,000
sequences of a fixed seed: work, not time)."""

from __future__ import annotations

import statistics
from collections import Counter

from hypothesis import given, settings

from evictable.model.lifecycle import CpuState
from evictable.model.manager import ModelManager
from evictable.proofs.base.compare import invoke
from evictable.proofs.lockstep.inputs import Call
from evictable.proofs.lockstep.strategies import call_sequences


def reached(calls: list[Call], num_blocks: int = 3) -> set[str]:
    """What a sequence reaches on the model of a manager of `num_blocks` blocks."""
    model = ModelManager(num_blocks, "lru", False)
    out: set[str] = set()
    for call in calls:
        snap = model.snapshot()
        pinned = any(e.state is CpuState.LOADING for e in snap.blocks)
        args, kwargs = call.build()
        got = invoke(getattr(model, call.method), *args, **kwargs)
        if got.raised:
            continue
        if call.method == "prepare_load" and got.value:
            out.add("load")
        if call.method == "complete_load" and args[0]:
            out.add("load end")
        if call.method == "prepare_store":
            new = [k for k in dict.fromkeys(args[0]) if k not in {e.key for e in snap.blocks}]
            if len(new) > snap.num_blocks - len(snap.blocks):
                out.add("store that needs room")
                if pinned:
                    out.add("store that needs room while a block is pinned")
            if got.value is not None and got.value.evicted_keys:
                out.add("store that evicts")
    return out


def measure(n: int = 1000) -> tuple[Counter[str], list[int]]:
    seen: Counter[str] = Counter()
    lengths: list[int] = []

    @settings(max_examples=n, derandomize=True, database=None, deadline=None)
    @given(call_sequences())
    def draw(calls: list[Call]) -> None:
        lengths.append(len(calls))
        seen.update(reached(calls))

    draw()
    return seen, lengths


def test_call_sequences_reach_loads_evictions_and_pinned_victims() -> None:
    seen, lengths = measure()
    n = len(lengths)
    share = {what: seen[what] / n for what in seen}
    assert share["load"] >= 0.7, share
    assert share["load end"] >= 0.5, share
    assert share["store that evicts"] >= 0.55, share
    assert share["store that needs room while a block is pinned"] >= 0.45, share
    assert statistics.median(lengths) >= 12, statistics.median(lengths)


if __name__ == "__main__":  # prints the figures the strategies' docstring states
    counts, sizes = measure()
    for what, k in sorted(counts.items()):
        print(f"{what}: {k / len(sizes):.0%}")
    print(f"median length {statistics.median(sizes)} calls, over {len(sizes)} sequences")
