"""Benchmark workloads for the CPU offloading manager: keys, the trace, the set-up.

Everything here is generated *before* timing starts:

* keys are `bytes`, vLLM's `OffloadKey` layout: 32 hash bytes followed by a 4-byte
  big-endian group index (`make_offload_key`; one group per batch of 16 keys). They are
  hashed once up front (CPython caches a bytes object's hash), so no contender
  pays for first-time hashing inside its timed loop;
* the trace is a list of steps; one step is a batch of 16 stores and 4 loads:
  `prepare_store(B)`, `complete_store(B)`, `prepare_load(L)`, `complete_load(L)`,
  where `B` is 16 fresh keys and `L` is 4 keys of the previous step's batch (still
  resident whatever the policy, as long as at least `MIN_EVICTABLE` blocks are
  idle). A step is 16 + 16 + 4 + 4 = 40 block operations: each key in each call
  counts one;
* the set-up fills a manager to capacity and pins a fraction of its blocks: a
  pinned block is LOADING, its `prepare_load` never completed. The pinned blocks
  are the oldest ones. That is the steady state of any long run: idle blocks are
  evicted and replaced while pinned ones stay, so the pinned blocks end up at the
  least-recent end, where a manager that scans for idle blocks walks over them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "BATCH_LOADS",
    "BATCH_STORES",
    "MIN_EVICTABLE",
    "OPS_PER_STEP",
    "Factory",
    "FillTimeout",
    "Manager",
    "Step",
    "Trace",
    "fill",
    "fill_timed",
    "label",
    "make_keys",
    "make_trace",
    "pinned_indices",
    "run_steps",
    "stepper",
]

BATCH_STORES = 16
BATCH_LOADS = 4
OPS_PER_STEP = 2 * BATCH_STORES + 2 * BATCH_LOADS
"""Block operations per step: each key in each of the four calls counts one."""

MIN_EVICTABLE = 3 * BATCH_STORES
"""Idle blocks the trace needs: one batch of victims plus the previous batch and its loads."""

HASH_BYTES = 32
FILL_CHUNK = 4096


class Manager(Protocol):
    """The part of the manager API the trace drives (docs/semantics.md, "The CPU manager")."""

    def prepare_store(self, keys: Sequence[Any]) -> Any: ...
    def complete_store(self, keys: Sequence[Any], success: bool = True) -> Any: ...
    def prepare_load(self, keys: Sequence[Any]) -> Any: ...
    def complete_load(self, keys: Sequence[Any]) -> Any: ...


Factory = Callable[[int], Manager]
"""Builds an empty manager of `n` blocks."""


def label(n: int) -> str:
    """A size as the tables print it: 1K, 64K, 1M (or the plain number)."""
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20}M"
    if n >= 1024 and n % 1024 == 0:
        return f"{n >> 10}K"
    return str(n)


def make_keys(n: int, seed: int, group_base: int = 0) -> list[bytes]:
    """`n` distinct keys: 32 pseudo-random hash bytes + a 4-byte group index.

    Keys `16*g .. 16*g+15` share group index `group_base + g`. Deterministic in `seed`.
    Every key is hashed once here (the hash is cached in the bytes object).
    """
    rng = random.Random(seed)
    raw = rng.randbytes(HASH_BYTES * n)
    keys = [
        raw[i * HASH_BYTES : (i + 1) * HASH_BYTES]
        + (group_base + i // BATCH_STORES).to_bytes(4, "big")
        for i in range(n)
    ]
    if len(set(keys)) != n:  # 256-bit random collisions: not in this universe
        raise RuntimeError("generated keys collide; change the seed")
    return keys


@dataclass(frozen=True)
class Step:
    """One batch: store `stores` (16 fresh keys), then load and release `loads` (4 keys)."""

    stores: list[bytes]
    loads: list[bytes]


@dataclass(frozen=True)
class Trace:
    """A fill set-up and the steps that follow it.

    `fill_keys` fill the manager to capacity (oldest first); `pinned` is the set of
    fill-key indices left LOADING; `steps` run after the fill.
    """

    num_blocks: int
    pinned_fraction: float
    fill_keys: list[bytes]
    pinned: list[int]
    steps: list[Step]

    @property
    def num_pinned(self) -> int:
        return len(self.pinned)


def pinned_indices(num_blocks: int, fraction: float) -> list[int]:
    """Indices of the fill keys to pin: the oldest `int(fraction * num_blocks)`.

    Raises ValueError if fewer than `MIN_EVICTABLE` blocks would stay idle (the
    first step loads from the newest fill keys, and every step evicts a batch).
    """
    count = int(fraction * num_blocks)
    if count < 0 or count > num_blocks - MIN_EVICTABLE:
        raise ValueError(
            f"cannot pin {count} of {num_blocks} blocks: the trace needs "
            f"{MIN_EVICTABLE} idle blocks"
        )
    return list(range(count))


def make_trace(num_blocks: int, pinned_fraction: float, num_steps: int, seed: int = 7) -> Trace:
    """The fill, the pinned set and `num_steps` steps for a manager of `num_blocks` slots."""
    fill_keys = make_keys(num_blocks, seed)
    fresh = make_keys(num_steps * BATCH_STORES, seed + 1, group_base=num_blocks)
    pinned = pinned_indices(num_blocks, pinned_fraction)
    steps: list[Step] = []
    previous = fill_keys[-BATCH_STORES:]
    for s in range(num_steps):
        batch = fresh[s * BATCH_STORES : (s + 1) * BATCH_STORES]
        stride = BATCH_STORES // BATCH_LOADS
        loads = [previous[1 + i * stride] for i in range(BATCH_LOADS)]
        steps.append(Step(batch, loads))
        previous = batch
    return Trace(num_blocks, pinned_fraction, fill_keys, pinned, steps)


class FillTimeout(RuntimeError):
    """The fill did not finish within its time limit (the manager is too slow at this size)."""


def fill(
    manager: Manager, trace: Trace, limit_s: float | None = None, chunk: int = FILL_CHUNK
) -> None:
    """Store every fill key (committed), then pin the chosen ones (loads never completed).

    With `limit_s`, raise `FillTimeout` once that many seconds have passed (checked
    between chunks of `chunk` keys).
    """
    deadline = None if limit_s is None else time.perf_counter() + limit_s

    def check_time() -> None:
        if deadline is not None and time.perf_counter() > deadline:
            raise FillTimeout(f"fill of {trace.num_blocks} blocks took over {limit_s:.0f}s")

    keys = trace.fill_keys
    for start in range(0, len(keys), chunk):
        part = keys[start : start + chunk]
        out = manager.prepare_store(part)
        if out is None or len(out.keys_to_store) != len(part):
            raise RuntimeError("fill: the manager refused to store into free slots")
        manager.complete_store(part)
        check_time()
    pinned = [keys[i] for i in trace.pinned]
    for start in range(0, len(pinned), chunk):
        manager.prepare_load(pinned[start : start + chunk])
        check_time()


def run_steps(manager: Manager, steps: Sequence[Step]) -> None:
    """Run the steps; this is the timed loop (no allocation beyond the manager's own)."""
    prepare_store = manager.prepare_store
    complete_store = manager.complete_store
    prepare_load = manager.prepare_load
    complete_load = manager.complete_load
    for step in steps:
        if prepare_store(step.stores) is None:
            raise RuntimeError("trace: prepare_store could not evict enough blocks")
        complete_store(step.stores)
        prepare_load(step.loads)
        complete_load(step.loads)


def stepper(manager: Manager, steps: Sequence[Step]) -> Callable[[int], None]:
    """`run(units)`: the next `units` steps of the trace on this manager."""
    pos = 0

    def run(units: int) -> None:
        nonlocal pos
        if pos + units > len(steps):
            raise RuntimeError(f"trace exhausted: {pos + units} > {len(steps)} steps")
        run_steps(manager, steps[pos : pos + units])
        pos += units

    return run


def fill_timed(
    factory: Factory, n: int, trace: Trace, limit_s: float | None = None
) -> tuple[Manager, float]:
    """A new manager of `n` blocks, filled (`fill`), and the seconds it took."""
    t0 = time.perf_counter()
    manager = factory(n)
    fill(manager, trace, limit_s=limit_s, chunk=1024)
    return manager, time.perf_counter() - t0
