"""A long lock-step run over few keys: what only many steps reach.

Hypothesis ends a stateful example after a few hundred steps (its choice buffer is
bounded), so the conformance engine never sees what a policy does after thousands
of calls on the same few keys -- ARC's heaps, for one, are compacted only after
dozens of stale entries piled up. `long_run` drives the same `LockStep` (the same
comparator, the same checks after every step) from a seeded `random.Random` for as
many steps as asked, over `keys` keys and `num_blocks` blocks, with a call mix
heavy in touches and short loads. A divergence is shrunk by replay
(`lockstep.shrink`) and reported with its trace and the seed that reproduces it.

`proofs.base.profiles` gives each policy its long-run size (`PolicyProfile.long_run`).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from evictable.model.lifecycle import CpuState
from evictable.model.types import Key
from evictable.proofs.base.faults import PLAN
from evictable.proofs.base.protocol import Factory
from evictable.proofs.lockstep.inputs import KEYS, Call
from evictable.proofs.lockstep.manager import ConformanceFailure, LockStep, Start, Step, replay
from evictable.proofs.lockstep.shrink import REPLAYS, shrink

__all__ = [
    "LongRun",
    "long_run",
]


_P, _R, _L = CpuState.PENDING, CpuState.READY, CpuState.LOADING


@dataclass(frozen=True)
class LongRun:
    """The outcome of one long run."""

    policy: str
    seed: int
    steps: int
    seconds: float
    failure: ConformanceFailure | None = None

    @property
    def ok(self) -> bool:
        return self.failure is None

    def text(self) -> str:
        head = (
            f"long run [{self.policy}] seed {self.seed}: {self.steps} steps, "
            f"{self.seconds:.1f}s -> {'passed' if self.ok else 'FAILED'}"
        )
        return head if self.failure is None else f"{head}\n{self.failure.text()}"


def _pick(rnd: random.Random, pool: list[Key], most: int) -> list[Key]:
    return rnd.sample(pool, min(len(pool), rnd.randint(1, most))) if pool else []


REGIMES: tuple[tuple[str, float], ...] = (
    ("touch", 0.25),
    ("churn", 0.25),
    ("loads", 0.2),
    ("pins", 0.3),
)
"""The run alternates regimes of `REGIME_STEPS` steps: a touch storm (stale entries
pile up in a policy's indexes until they are compacted), churn (stores of new keys:
evictions, which read those indexes), loads (short pins and releases), and pin
waves (every idle key pinned at once, all released in a shuffled order, then some
touched: records come back idle out of recency order, so an index that keeps them
sorted must set them aside, and the touches leave those entries stale)."""

REGIME_STEPS = 150


def _next_call(lock: LockStep, rnd: random.Random, keys: tuple[Key, ...], regime: str) -> Call:
    """One call of the regime's mix (a reset now and then, whatever the regime)."""
    pending, ready = lock.keys_in(_P), lock.keys_in(_R)
    loading = lock.keys_in(_L)
    resident = pending + ready + loading
    roll = rnd.random()
    if roll < 0.002:
        return Call.plain("reset_cache")
    if roll < 0.02:
        return Call.plain("take_events")
    if pending and roll < 0.3:
        return Call.keys("complete_store", _pick(rnd, pending, 2), success=rnd.random() < 0.9)
    if regime == "touch":
        if ready and roll < 0.35:  # a long batch with repeats: many moves in one call
            return Call.keys("touch", rnd.choices(ready, k=rnd.randint(8, 48)))
        return Call.keys("touch", _pick(rnd, ready or list(keys), 3))
    if regime == "pins":
        if ready and roll < 0.45:
            return Call.keys("prepare_load", rnd.sample(ready, len(ready)))
        if loading and roll < 0.8:
            wave = rnd.sample(loading, len(loading))
            if roll > 0.75:  # the wave with a key that is not loading at its end: refused whole
                wave.append(rnd.choice([k for k in keys if k not in loading] or wave))
            return Call.keys("complete_load", wave)
        if not ready:
            return Call.keys("prepare_store", _pick(rnd, list(keys), 3))
        return Call.keys("touch", _pick(rnd, ready, 4))
    if regime == "churn":
        absent = [k for k in keys if k not in resident]
        return Call.keys("prepare_store", _pick(rnd, absent or list(keys), 2))
    if loading and roll < 0.1:
        # A bad batch now and then: a loading key and one that is not (refused whole).
        other = [k for k in keys if k not in loading]
        return Call.keys("complete_load", [*_pick(rnd, loading, 1), *_pick(rnd, other, 1)])
    if loading and (roll < 0.6 or not ready):
        return Call.keys("complete_load", _pick(rnd, loading, 2))
    if ready or loading:
        return Call.keys("prepare_load", _pick(rnd, ready + loading, 2))
    return Call.keys("prepare_store", _pick(rnd, list(keys), 2))


def long_run(
    factory: Factory,
    policy: str,
    steps: int,
    seed: int = 0,
    keys: int = 4,
    num_blocks: int = 3,
    shrink_replays: int = REPLAYS,
) -> LongRun:
    """`steps` calls on model and implementation in lock-step (see the module doc)."""
    rnd = random.Random(seed)
    pool = KEYS[:keys]
    lock = LockStep(factory, policy, None, PLAN)
    start = time.perf_counter()
    try:
        lock.apply(Start(num_blocks, rnd.random() < 0.5, False))
        names, weights = zip(*REGIMES, strict=True)
        regime = "churn"
        for i in range(steps):
            if i % REGIME_STEPS == 0:
                regime = rnd.choices(names, weights)[0]
            lock.apply(Step(_next_call(lock, rnd, pool, regime)))
    except ConformanceFailure as found:

        def probe(actions: object) -> ConformanceFailure | None:
            return replay(factory, policy, None, PLAN, actions)  # type: ignore[arg-type]

        failure, _ = shrink(probe, found, shrink_replays)
        return LongRun(policy, seed, lock.step_no, time.perf_counter() - start, failure)
    return LongRun(policy, seed, lock.step_no, time.perf_counter() - start)


# ------------------------------------------------------------------ obligations
