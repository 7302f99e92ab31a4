"""Which eviction policies are verified, and how: one profile per policy.

A policy has three parts, each with one registry of its own: the specification
(`evictable.model.manager.MODEL_POLICIES`), the implementation
(`evictable.impl.policies.factory`), and here, its verification *profile*: the
explorer's bounds at each verification level, the bounds `evictable check` uses,
and any extra conformance rules that reach the states where the policy differs
(ARC's ghost hits, say). The explorer, the conformance engine, `evictable verify`
and `evictable check` all take the policies to verify from `verified_policies()`
and their settings from `profile(name)`.

A policy that both the model and the implementation know but that has no profile
is an error (`MissingProfileError`), never silently left unverified. A policy known
to one side only cannot be checked exactly against the model and is not verified.

`register_verified_policy` adds a third-party policy in one call: its model class,
its implementation class and its profile.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from evictable.impl.policies.base import CachePolicy
from evictable.impl.policies.factory import known_policies, register_policy
from evictable.model.errors import InvalidArgumentError
from evictable.model.lmcache05 import POLICIES_05
from evictable.model.manager import MODEL_POLICIES
from evictable.model.policy import ModelPolicy
from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.levels import LEVELS

__all__ = [
    "MissingProfileError",
    "PolicyProfile",
    "check_bounds",
    "policies_of",
    "profile",
    "register_profile",
    "register_verified_policy",
    "verified_policies",
]


@dataclass(frozen=True)
class PolicyProfile:
    """How one policy is verified.

    `explore[level]`: the explorer's bounds for `evictable verify` at that level
    (every level required); `check`: the explorer's bounds for `evictable check`
    (at least slots + batch keys, so that one call can evict several blocks);
    `rules`: a mixin of extra conformance rules (a `RuleBasedStateMachine` mixin over
    the engine's `LockStep`), or None (the built-in ARC's rules are the engine's own,
    `lockstep.conformance.POLICY_RULES`).
    """

    name: str
    explore: Mapping[str, Bounds]
    check: Bounds
    rules: type | None = field(default=None)
    long_run: tuple[int, int, int] | None = None
    """(steps, keys, num_blocks) of the long lock-step run (`lockstep.long_run`) at the
    default level: deep enough to reach what only long runs reach (ARC: the
    compaction of its idle heaps and ghost lists). None: the long run's own default."""
    faults: Mapping[str, Bounds] = field(default_factory=dict)
    """The explorer's bounds with the fault alphabet, per level (`Bounds.faults` set);
    default: the `quick` explorer bounds at every level, with faults."""
    generic: Mapping[str, Bounds] = field(default_factory=dict)
    """The explorer's bounds for the manager's generic path (the policy's variant that
    shares no key table, `base.own_table`), per level; default: `explore`. That path
    is the manager's, not the policy's, so smaller bounds than the policy's own
    exploration cover it where the policy's world is large."""

    def __post_init__(self) -> None:
        if not self.faults and "quick" in self.explore:
            quick = replace(self.explore["quick"], faults=True)
            object.__setattr__(self, "faults", {level: quick for level in LEVELS})
        if not self.generic:
            object.__setattr__(self, "generic", dict(self.explore))


class MissingProfileError(InvalidArgumentError):
    """A policy is known to the model and the implementation but has no profile."""


_PROFILES: dict[str, PolicyProfile] = {}


def register_profile(p: PolicyProfile) -> None:
    """Add (or replace) the profile of `p.name`.

    Pre: a bounds entry for every level, each naming the policy; else
    `InvalidArgumentError` and nothing is registered.
    """
    _validate(p)
    _PROFILES[p.name] = p


def _validate(p: PolicyProfile) -> None:
    missing = [level for level in LEVELS if level not in p.explore]
    if missing:
        raise InvalidArgumentError(f"policy {p.name!r}: no explorer bounds for {missing}")
    missing = [level for level in LEVELS if level not in p.generic]
    if missing:
        raise InvalidArgumentError(f"policy {p.name!r}: no generic-path bounds for {missing}")
    bounds = (*p.explore.values(), *p.faults.values(), *p.generic.values(), p.check)
    wrong = [b for b in bounds if b.policy != p.name]
    if wrong:
        raise InvalidArgumentError(f"policy {p.name!r}: bounds name policy {wrong[0].policy!r}")


def verified_policies() -> list[str]:
    """The policies to verify: every one both the model and the implementation know.

    Raises `MissingProfileError` if one of them has no profile.
    """
    impl = set(known_policies())
    both = [name for name in MODEL_POLICIES if name in impl]  # the model's order
    missing = [name for name in both if name not in _PROFILES]
    if missing:
        raise MissingProfileError(
            f"policies {missing} are known to the model and the implementation but have no "
            "verification profile (register one with evictable.proofs.base.profiles."
            "register_profile)"
        )
    return both


def profile(name: str) -> PolicyProfile:
    """The profile of `name`; `MissingProfileError` if it has none."""
    found = _PROFILES.get(name)
    if found is None:
        raise MissingProfileError(
            f"policy {name!r} has no verification profile; profiles: {', '.join(sorted(_PROFILES))}"
        )
    return found


def policies_of(semantics: str) -> list[str]:
    """The policy names the model knows under a semantic profile (`Contract.profile`):
    LMCache's four under `lmcache-0.5`, the model's registry otherwise."""
    return list(POLICIES_05) if semantics == "lmcache-0.5" else list(MODEL_POLICIES)


LMCACHE_CHECK_SLOTS = 2
"""Slots of `evictable check`'s explorer under `lmcache-0.5` (as many keys again)."""


def check_bounds(policy: str, semantics: str = "seed") -> Bounds:
    """The explorer's bounds of `evictable check` for `policy` under a semantic profile
    (`MissingProfileError` for a policy without a verification profile)."""
    if semantics == "lmcache-0.5":
        return Bounds(slots=LMCACHE_CHECK_SLOTS, keys=4, max_ref=2, batch=2, policy=policy)
    return profile(policy).check


def register_verified_policy(
    name: str,
    model: Callable[[int], ModelPolicy],
    impl: type[CachePolicy],
    explore: Mapping[str, Bounds],
    check: Bounds,
    rules: type | None = None,
) -> None:
    """Make a third-party policy known to the model, the implementation and the
    verification at once (validated first: a bad profile registers nothing)."""
    p = PolicyProfile(name, explore, check, rules)
    _validate(p)
    register_policy(name, impl)
    MODEL_POLICIES[name] = model
    register_profile(p)


register_profile(
    PolicyProfile(
        "lru",
        explore={
            "quick": Bounds(slots=2, keys=3, max_ref=2, batch=2, policy="lru", events=1),
            "default": Bounds(slots=3, keys=4, max_ref=2, batch=2, policy="lru", events=1),
            "thorough": Bounds(slots=3, keys=5, max_ref=2, batch=3, policy="lru", events=1),
        },
        check=Bounds(slots=2, keys=4, max_ref=2, batch=2, policy="lru", events=1),
        generic={  # the generic path with the events off: the buffer is explored above
            "quick": Bounds(slots=2, keys=3, max_ref=2, batch=2, policy="lru"),
            "default": Bounds(slots=3, keys=4, max_ref=2, batch=2, policy="lru"),
            "thorough": Bounds(slots=3, keys=5, max_ref=2, batch=3, policy="lru", events=1),
        },
        faults={
            "quick": Bounds(slots=2, keys=3, max_ref=1, batch=2, policy="lru", faults=True),
            "default": Bounds(
                slots=2, keys=3, max_ref=2, batch=2, policy="lru", events=1, faults=True
            ),
            "thorough": Bounds(
                slots=2, keys=4, max_ref=2, batch=2, policy="lru", events=1, faults=True
            ),
        },
    )
)
register_profile(
    PolicyProfile(
        "arc",
        explore={
            "quick": Bounds(slots=2, keys=3, max_ref=1, batch=2, policy="arc"),
            # Events off at the default level: the event buffer is the manager's, not
            # ARC's (explored with events by explore.lru and at the thorough level),
            # and with events <= 1 ARC's world is 4.6x larger (7,513 states, 150 s).
            "default": Bounds(slots=2, keys=4, max_ref=2, batch=2, policy="arc"),
            "thorough": Bounds(slots=3, keys=4, max_ref=1, batch=2, policy="arc", events=1),
        },
        check=Bounds(slots=2, keys=4, max_ref=1, batch=2, policy="arc"),
        generic={
            "quick": Bounds(slots=1, keys=3, max_ref=1, batch=2, policy="arc"),
            "default": Bounds(slots=2, keys=3, max_ref=1, batch=2, policy="arc"),
            "thorough": Bounds(slots=2, keys=4, max_ref=2, batch=2, policy="arc"),
        },
        long_run=(5000, 8, 6),  # 6 idle records per pin wave: heaps compacted within 5000 steps
        faults={
            "quick": Bounds(slots=1, keys=2, max_ref=1, batch=2, policy="arc", faults=True),
            "default": Bounds(slots=2, keys=3, max_ref=1, batch=2, policy="arc", faults=True),
            "thorough": Bounds(
                slots=2, keys=3, max_ref=2, batch=2, policy="arc", events=1, faults=True
            ),
        },
    )
)
"""The built-in policies. Every level has more keys than slots, so that eviction is
reachable (ARC from `default` on: two more, so that ghost lists overflow and are
trimmed). The `check` bounds have at least slots + batch keys, so that one
`prepare_store` can evict several blocks and the order of its victims is visible."""
