"""The probes and the no-shared-table engines: each holds on the implementation and
catches its negative control."""

from __future__ import annotations

import pytest

from evictable.impl.free_queue import FreeKVCacheBlockQueue
from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.policies.factory import PolicyRegistry, create_policy, known_policies
from evictable.proofs.base.own_table import OwnTableManager, PlainPolicyManager, own_table_name
from evictable.proofs.base.profiles import profile
from evictable.proofs.controls.contract import (
    OwnTableKeepsAborted,
    TrustsPolicyVictims,
    events_checked_first,
    register_unchecked,
)
from evictable.proofs.controls.gpu import SEEDED_QUEUES
from evictable.proofs.controls.policies import EvictionIgnoresProtected
from evictable.proofs.explore.manager import CONTROL_BOUNDS, explore
from evictable.proofs.lockstep.policy_probe import policy_probe
from evictable.proofs.lockstep.probes import (
    LIAR,
    construct_probe,
    evict_contract_probe,
    registry_probe,
)
from evictable.proofs.lockstep.queue_probes import queue_probe


def test_the_own_table_variant_shares_no_table() -> None:
    assert own_table_name("arc") == "arc+own"
    assert create_policy("arc+own", 2).shared_table() is None


@pytest.mark.parametrize("factory", [OwnTableManager, PlainPolicyManager])
def test_the_explorer_holds_with_a_policy_that_shares_no_table(factory: object) -> None:
    bounds = profile("lru").explore["quick"]
    assert explore(bounds, factory, workers=1).ok  # type: ignore[arg-type]


def test_the_explorer_catches_an_own_table_that_keeps_aborted_keys() -> None:
    assert explore(CONTROL_BOUNDS, OwnTableKeepsAborted, workers=1).failure is not None


def test_constructor_probe_holds_and_catches_the_wrong_argument_order() -> None:
    assert construct_probe(CPUOffloadingManager) is None
    assert construct_probe(events_checked_first) is not None


def test_evict_contract_probe_holds_and_catches_a_trusting_manager() -> None:
    before = known_policies()
    assert evict_contract_probe(CPUOffloadingManager) is None
    assert evict_contract_probe(TrustsPolicyVictims) is not None
    assert known_policies() == before  # the scripted liar was never registered
    assert LIAR not in before


def test_registry_probe_holds_and_catches_a_registry_without_checks() -> None:
    before = known_policies()
    assert registry_probe() is None
    assert registry_probe(PolicyRegistry()) is None
    assert registry_probe(PolicyRegistry) is None
    found = registry_probe(register_unchecked)
    assert found is not None and found.startswith("register_policy with an empty name")
    assert known_policies() == before  # the probe registers nothing globally


def test_queue_probe_holds_and_catches_an_iterator_that_ends_silently() -> None:
    assert queue_probe(FreeKVCacheBlockQueue) is None
    assert queue_probe(SEEDED_QUEUES["iterator_ends_silently"]) is not None


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_policy_probe_holds_on_the_built_in_policies(policy: str) -> None:
    assert policy_probe(policy, runs=20) is None


def test_policy_probe_catches_an_eviction_that_ignores_protected_keys() -> None:
    assert policy_probe("lru", EvictionIgnoresProtected) is not None
