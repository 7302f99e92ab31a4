"""The `lmcache-0.5` profile wired through the engines, without LMCache: contracts, policy
names, bounds, the reference model, and LMCache's own calls in the conformance engine
(the profile's model against itself: no finding)."""

from __future__ import annotations

import pytest

from evictable.model.lmcache05 import Lmcache05Manager
from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.contract import Contract, ContractError, Inputs, resolve
from evictable.proofs.base.cpu_contract import make_model
from evictable.proofs.base.profiles import check_bounds, policies_of
from evictable.proofs.lockstep.conformance import PROFILE_RULES, run_conformance
from evictable.proofs.lockstep.lmcache_rules import LmcacheRules

LMC = Contract(profile="lmcache-0.5", inputs=Inputs(duplicates=False, malformed=False))


def _model_factory(num_blocks: int, policy: str, enable_events: bool) -> Lmcache05Manager:
    return Lmcache05Manager(num_blocks, policy, enable_events)


def test_rejects_safety_contract_under_the_lmcache_profile() -> None:
    with pytest.raises(ContractError, match="exact contract only"):
        resolve(_model_factory, profile="lmcache-0.5", mode="safety")


def test_policy_names_and_bounds_follow_the_profile() -> None:
    assert policies_of("lmcache-0.5") == ["lru", "fifo", "mru", "lfu"]
    assert "fifo" not in policies_of("seed")
    bounds = check_bounds("lfu", "lmcache-0.5")
    bounds.check()
    assert bounds.policy == "lfu" and bounds.keys > bounds.slots
    Bounds(policy="mru").check()


def test_make_model_builds_the_lmcache_model() -> None:
    assert isinstance(make_model(LMC, 2, "fifo", False), Lmcache05Manager)
    assert PROFILE_RULES["lmcache-0.5"] is LmcacheRules


@pytest.mark.parametrize("policy", ["lru", "lfu"])
def test_the_profiles_model_conforms_to_itself_with_lmcaches_calls(policy: str) -> None:
    record = run_conformance(_model_factory, policy, 25, 30, seed=0, contract=LMC)
    assert record.ok, record.reason
