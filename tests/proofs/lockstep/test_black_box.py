"""Black-box mode: which classes of bug it sees through the API, and which need a snapshot.

A black box is observed through `lookup` of every key of the engine's pool, the
results and errors of every call (events included: `take_events` is a call) and,
where exposed, the counters. A bug shows there only once it changes one of those:

* **seen at once** -- an atomicity break that changes a lookup or a counter (a leaked
  pin drops `num_evictable`), a wrong lookup, a counter drift, a slot handed out
  twice (slot ids are results);
* **seen later, by a symptom** -- a hidden-state bug that only a later call exposes:
  a leaked pin without counters (a store that finds no victim, a load end that
  should have failed), a slot lost by a failed store (a store refused too early);
* **needs a snapshot** -- an internal inconsistency no call exposes within the run's
  horizon: ARC ghost lists that are never trimmed, a counter when no counter is
  exposed.
"""

from __future__ import annotations

from typing import Any

import pytest

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.base.compare import Kind
from evictable.proofs.base.contract import Contract, Mode
from evictable.proofs.base.protocol import BLACK_BOX_API
from evictable.proofs.controls import ARC_BUGS, SEEDED_BUGS, SeededBug
from evictable.proofs.lockstep.conformance import run_conformance

WHITE = Contract(Mode.SAFETY)
BLACK = Contract(Mode.SAFETY, black_box=True)
RUN: dict[str, Any] = {"examples": 80, "steps": 30, "seed": 1, "inject_faults": False}


class PublicOnly:
    """A manager seen through its public calls only: no snapshot, no counters."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name in BLACK_BOX_API:
            return getattr(self._inner, name)
        raise AttributeError(name)


def public_only(bug: SeededBug) -> Any:
    def factory(num_blocks: int, policy: str, enable_events: bool) -> PublicOnly:
        return PublicOnly(bug.factory(num_blocks, policy, enable_events))

    return factory


def _bug(name: str) -> tuple[SeededBug, str]:
    for bug in SEEDED_BUGS:
        if bug.name == name:
            return bug, "lru"
    return next(b for b in ARC_BUGS if b.name == name), "arc"


def _found(factory: Any, policy: str, contract: Contract) -> dict[Kind, int]:
    record = run_conformance(factory, policy, contract=contract, **RUN)
    assert record.status != "error", record.text()
    return {f.kind: f.calls for f in record.findings}


def test_a_black_box_needs_no_snapshot_and_no_counters() -> None:
    record = run_conformance(
        lambda n, p, e: PublicOnly(CPUOffloadingManager(n, p, e)), "lru", contract=BLACK, **RUN
    )
    assert record.ok, record.text()
    assert (
        run_conformance(
            lambda n, p, e: PublicOnly(CPUOffloadingManager(n, p, e)), "lru", 5, 5
        ).status
        == "error"
    )


def test_seen_at_once_a_leaked_pin_through_the_counters() -> None:
    bug, policy = _bug("non_atomic_prepare_load")
    white = _found(bug.factory, policy, WHITE)
    black = _found(bug.factory, policy, BLACK)
    assert white[Kind.LEAKED_PIN] == black[Kind.LEAKED_PIN] == 3


def test_seen_later_a_leaked_pin_without_counters() -> None:
    bug, policy = _bug("non_atomic_prepare_load")
    black = _found(public_only(bug), policy, BLACK)
    assert black and Kind.LEAKED_PIN not in black  # only its consequences show
    assert min(black.values()) > 3  # a longer trace than with a snapshot


def test_seen_later_a_slot_lost_by_a_failed_store() -> None:
    bug, policy = _bug("failed_store_keeps_slot")
    assert _found(bug.factory, policy, WHITE) == {Kind.SLOT: 2}
    black = _found(bug.factory, policy, BLACK)
    assert Kind.SLOT not in black and Kind.STORE_VERDICT in black
    assert black[Kind.STORE_VERDICT] > 2


def test_a_counter_drift_needs_the_counters() -> None:
    bug, policy = _bug("counter_drift_on_eviction")
    assert Kind.ACCOUNTING in _found(bug.factory, policy, BLACK)
    assert _found(public_only(bug), policy, BLACK) == {}


@pytest.mark.parametrize("name", ["ghosts_never_trimmed"])
def test_an_internal_inconsistency_needs_a_snapshot(name: str) -> None:
    bug, policy = _bug(name)
    assert Kind.INVARIANT in _found(bug.factory, policy, WHITE)
    assert _found(bug.factory, policy, BLACK) == {}
