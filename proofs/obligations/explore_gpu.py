"""`explore.free_queue`, `explore.block_pool`: every reachable state of the GPU side
explored, the implementation in lock-step, each with seeded broken implementations.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, Outcome, Status, proved, refuted
from evictable.proofs.controls.gpu import SEEDED_POOLS, SEEDED_QUEUES
from evictable.proofs.explore.engine import Result
from evictable.proofs.explore.gpu import (
    POOL_BOUNDS,
    QUEUE_BOUNDS,
    PoolSubject,
    QueueSubject,
    explore_gpu,
    trace_text,
)
from evictable.proofs.explore.gpu_scan import (
    Act,
)
from evictable.proofs.explore.replay_subject import ReplaySubject


def _figures(run: Result[Act]) -> str:
    return (
        f"{run.states} states, {run.transitions} transitions, depth {run.depth}, {run.seconds:.2f}s"
    )


def _claim(*makes: Callable[[], ReplaySubject[Any, Act]]) -> Callable[[float], Outcome]:
    """Every subject explored without a failure (figures of each, `; `-joined)."""

    def check(_backstop_s: float) -> Outcome:
        figures = []
        for make in makes:
            run = explore_gpu(make())
            if run.found is not None:
                return refuted(trace_text(run))
            if not run.complete:
                return Outcome(Status.UNKNOWN, f"incomplete: {_figures(run)}")
            figures.append(_figures(run))
        return proved("; ".join(figures))

    return check


def _controls(
    makes: Mapping[str, Callable[[], ReplaySubject[Any, Act]]],
) -> Callable[[float], Outcome]:
    """Refuted only when every seeded variant is caught."""

    def check(_backstop_s: float) -> Outcome:
        caught = []
        for name, make in makes.items():
            run = explore_gpu(make())
            if run.found is None:
                return proved(f"{name} was not caught: {_figures(run)}")
            caught.append(f"{name} ({len(run.path)} calls): {run.found.reason.splitlines()[0]}")
        return refuted("\n".join(caught))

    return check


def obligations(level: Level) -> list[Obligation]:
    """`explore.free_queue` and `explore.block_pool`, each with every seeded broken
    variant of `proofs.controls.gpu` as its negative control."""
    qb, pb = QUEUE_BOUNDS[level], POOL_BOUNDS[level]
    queues = {name: partial(QueueSubject, qb, f) for name, f in SEEDED_QUEUES.items()}
    pools = {name: partial(PoolSubject, pb, f) for name, f in SEEDED_POOLS.items()}
    return [
        Obligation(
            name="explore.free_queue",
            statement=(
                "every reachable state of two free queues with a cursor and an iterator "
                "agrees with the model on every call (results, errors, all-or-nothing, "
                "iterator invalidation, stale cursors)"
            ),
            check=_claim(partial(QueueSubject, qb)),
            negative=_controls(queues),
            negative_statement=f"each of {len(queues)} seeded broken queues is caught",
            tags=("explore", "gpu"),
            kind=Kind.EXPLORED,
            bounds=qb.describe(),
        ),
        Obligation(
            name="explore.block_pool",
            statement=(
                "every reachable state of a block pool with a cursor and an iterator on "
                "its free queue agrees with the model on every call"
            ),
            check=_claim(
                partial(PoolSubject, pb), partial(PoolSubject, replace(pb, caching=False))
            ),
            negative=_controls(pools),
            negative_statement=f"each of {len(pools)} seeded broken pools is caught",
            tags=("explore", "gpu"),
            kind=Kind.EXPLORED,
            bounds=pb.describe() + "; the same with caching off",
        ),
    ]
