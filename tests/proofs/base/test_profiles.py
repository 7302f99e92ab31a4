"""The verification profiles of the policies (`evictable.proofs.base.profiles`)."""

from __future__ import annotations

import pytest

from evictable.impl.policies import factory
from evictable.impl.policies.lru import LRUCachePolicy
from evictable.model.errors import InvalidArgumentError
from evictable.model.lru import ModelLru
from evictable.model.manager import MODEL_POLICIES
from evictable.proofs.base import profiles as policies
from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.levels import LEVELS


def test_every_verified_policy_has_a_profile_for_every_level() -> None:
    assert policies.verified_policies() == ["lru", "arc"]
    for name in policies.verified_policies():
        p = policies.profile(name)
        assert set(p.explore) == set(LEVELS)
        assert p.check.policy == name


def test_rejects_a_profile_missing_a_level_and_registers_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(factory, "_registered", dict(factory._registered))
    b = Bounds(policy="lru2")
    with pytest.raises(InvalidArgumentError, match="thorough"):
        policies.register_verified_policy(
            "lru2",
            ModelLru,
            type("L2", (LRUCachePolicy,), {}),
            explore={"quick": b, "default": b},
            check=b,
        )
    assert "lru2" not in factory.known_policies() and "lru2" not in MODEL_POLICIES
    with pytest.raises(policies.MissingProfileError):
        policies.profile("lru2")


def test_rejects_bounds_naming_another_policy() -> None:
    b = Bounds(policy="lru")
    with pytest.raises(InvalidArgumentError, match="bounds name policy 'lru'"):
        policies.register_profile(
            policies.PolicyProfile("other", {level: b for level in LEVELS}, b)
        )


def test_register_verified_policy_makes_it_known_everywhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(factory, "_registered", dict(factory._registered))
    monkeypatch.setattr(policies, "_PROFILES", dict(policies._PROFILES))
    b = Bounds(slots=1, keys=2, max_ref=1, batch=1, policy="lru3")
    try:
        policies.register_verified_policy(
            "lru3",
            ModelLru,
            type("L3", (LRUCachePolicy,), {}),
            explore={level: b for level in LEVELS},
            check=b,
        )
        assert "lru3" in policies.verified_policies()
        assert policies.profile("lru3").check == b
    finally:
        MODEL_POLICIES.pop("lru3", None)
