"""The counter obligations are proved and a missed counter update is refuted."""

from __future__ import annotations

import pytest

from evictable.model.lifecycle import (
    CPU_MACHINE,
    GPU_MACHINE,
    CpuEvent,
    Machine,
    Transition,
    counter_delta,
)
from evictable.proofs.obligations import Status
from evictable.proofs.z3 import counters
from tests.obligation_checks import TIMEOUT_S, assert_proved, refuted_control

OBLIGATIONS = {ob.name: ob for ob in counters.obligations("quick")}


def test_every_declared_counter_has_an_unbounded_and_a_batch_obligation() -> None:
    for m in (CPU_MACHINE, GPU_MACHINE):
        for name in m.counters:
            assert f"{m.name}.counters.{name}" in OBLIGATIONS
            assert f"{m.name}.counters.{name}.batch" in OBLIGATIONS


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_obligation_is_proved(name: str) -> None:
    assert_proved(OBLIGATIONS[name])


@pytest.mark.parametrize("name", sorted(OBLIGATIONS))
def test_negative_control_gives_a_counterexample(name: str) -> None:
    assert "violated: counter_matches" in refuted_control(OBLIGATIONS[name])


def _missed_on_load_end(machine: Machine, t: Transition) -> dict[str, int]:
    d = counter_delta(machine, t)
    if t.event is CpuEvent.LOAD_END:
        d["num_evictable"] = 0  # the seeded bug: load end to ref 0 not counted
    return d


def test_missed_evictable_increment_on_load_end_is_named() -> None:
    outcome = counters.check_counter_step(
        CPU_MACHINE, "num_evictable", TIMEOUT_S, _missed_on_load_end
    )
    assert outcome.status is Status.COUNTEREXAMPLE
    assert (
        "transition load_end LOADING->READY (delta num_evictable +0, but #READY "
        "changes by +1)" in outcome.counterexample
    )


def test_batch_counterexample_lists_the_offending_block_first() -> None:
    outcome = counters.check_counter_batch(
        CPU_MACHINE, "num_evictable", 3, TIMEOUT_S, _missed_on_load_end
    )
    assert outcome.status is Status.COUNTEREXAMPLE
    first_block = outcome.counterexample.split("; block ")[1]
    assert "load_end LOADING->READY" in first_block


def test_batch_size_grows_with_level() -> None:
    assert counters.BLOCKS["quick"] < counters.BLOCKS["default"] <= counters.BLOCKS["thorough"]
