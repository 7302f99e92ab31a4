"""The exhaustive explorer of the free queue and the block pool (`proofs.explore.gpu`)."""

from __future__ import annotations

import pytest

from evictable.proofs.base.records import Kind, Status, run_one
from evictable.proofs.controls.gpu import SEEDED_POOLS, SEEDED_QUEUES
from evictable.proofs.explore.gpu import (
    PoolBounds,
    PoolSubject,
    QueueBounds,
    QueueSubject,
    explore_gpu,
    trace_text,
)
from evictable.proofs.obligations.explore_gpu import obligations

QUEUE = QueueBounds(first=1, second=0, unlinked=1)
POOL = PoolBounds(blocks=2, max_ref=1)


def test_every_state_of_two_queues_agrees_with_the_model() -> None:
    run = explore_gpu(QueueSubject(QUEUE))
    assert run.ok, trace_text(run)
    assert run.states > 50 and run.transitions > 20 * run.states and run.depth >= 4


def test_every_state_of_a_pool_agrees_with_the_model() -> None:
    run = explore_gpu(PoolSubject(POOL))
    assert run.ok, trace_text(run)
    assert run.states > 50 and run.transitions > 20 * run.states


def test_figures_do_not_depend_on_the_number_of_workers() -> None:
    one = explore_gpu(QueueSubject(QUEUE), workers=1)
    two = explore_gpu(QueueSubject(QUEUE), workers=2)
    assert (one.states, one.transitions, one.depth) == (two.states, two.transitions, two.depth)


@pytest.mark.parametrize("name", sorted(SEEDED_QUEUES))
def test_finds_every_seeded_queue_with_a_short_trace(name: str) -> None:
    run = explore_gpu(QueueSubject(QUEUE, SEEDED_QUEUES[name]))
    assert run.found is not None, f"{name} slipped through"
    assert 1 <= len(run.path) <= 6, trace_text(run)


@pytest.mark.parametrize("name", sorted(SEEDED_POOLS))
def test_finds_every_seeded_pool_with_a_short_trace(name: str) -> None:
    run = explore_gpu(PoolSubject(POOL, SEEDED_POOLS[name]))
    assert run.found is not None, f"{name} slipped through"
    assert 1 <= len(run.path) <= 6, trace_text(run)


def test_a_failed_call_that_kills_a_live_iterator_is_seen_through_the_probe() -> None:
    run = explore_gpu(QueueSubject(QUEUE, SEEDED_QUEUES["failed_call_counts_as_change"]))
    assert run.found is not None and str(run.path[-1]) == "next(it)", trace_text(run)


def test_obligations_are_explored_with_their_controls_refuted() -> None:
    obs = {ob.name: ob for ob in obligations("quick")}
    assert set(obs) == {"explore.free_queue", "explore.block_pool"}
    for ob in obs.values():
        assert ob.kind is Kind.EXPLORED and ob.bounds
        claim, control = run_one(ob)
        assert claim.status is Status.PROVED, claim.counterexample
        assert control.status is Status.REFUTED, control.counterexample
