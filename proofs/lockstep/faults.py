"""Fault injection into policy hooks, for the conformance engine.

`fault_policy_name(policy)` registers (once) a subclass of the implementation's
policy class with `impl.policies.factory.register_policy`, under the name
`"<policy>+faults"`. Each of its hooks (`HOOKS`) first asks the shared `FaultPlan`
whether to fail; when the plan is armed for that hook and this is its k-th call
since arming, the hook raises a fresh `InjectedFault` before doing anything. The
policy otherwise behaves exactly like its base class.

The manager under test must then re-raise that very exception and leave its whole
observable state as before the call (docs/semantics.md, "All-or-nothing").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evictable.impl.policies.base import CachePolicy
from evictable.impl.policies.factory import create_policy, known_policies, register_policy

__all__ = ["HOOKS", "PLAN", "FaultPlan", "InjectedFault", "fault_policy_name"]

HOOKS: tuple[str, ...] = (
    "mark_evictable",
    "mark_non_evictable",
    "insert",
    "remove",
    "evict",
    "touch",
)
"""The policy hooks a fault can be injected into."""

SUFFIX = "+faults"


class InjectedFault(RuntimeError):
    """The exception a fault-injecting policy raises; never raised by real code."""


class FaultPlan:
    """Which hook fails on which call. One shared plan; one lock-step run uses it."""

    def __init__(self) -> None:
        self.hook: str | None = None
        self.remaining = 0
        self.fired: InjectedFault | None = None

    def arm(self, hook: str, k: int) -> None:
        """Make the k-th call of `hook` from now on raise (k >= 1)."""
        self.hook, self.remaining, self.fired = hook, k, None

    def disarm(self) -> InjectedFault | None:
        """Stop injecting; return the fault that fired since arming, if any."""
        fired = self.fired
        self.hook, self.remaining, self.fired = None, 0, None
        return fired

    def tick(self, hook: str) -> None:
        """Called at the entry of every hook; raises when the plan says so."""
        if self.hook != hook or self.fired is not None:
            return
        self.remaining -= 1
        if self.remaining == 0:
            self.fired = InjectedFault(f"injected fault in policy hook {hook!r}")
            raise self.fired


PLAN = FaultPlan()
"""The plan every fault-injecting policy consults."""


def _wrap(base: type[CachePolicy], hook: str) -> Callable[..., Any]:
    inner = getattr(base, hook)

    def hooked(self: CachePolicy, *args: Any, **kwargs: Any) -> Any:
        PLAN.tick(hook)
        return inner(self, *args, **kwargs)

    hooked.__name__ = hook
    hooked.__qualname__ = f"{base.__name__}WithFaults.{hook}"
    return hooked


def fault_policy_name(policy: str) -> str | None:
    """The registered name of `policy`'s fault-injecting variant, or None if unknown."""
    name = policy + SUFFIX
    if name in known_policies():
        return name
    if policy not in known_policies():
        return None
    base = type(create_policy(policy, 1))
    namespace: dict[str, Any] = {h: _wrap(base, h) for h in HOOKS}
    namespace["__doc__"] = f"{base.__name__} whose hooks fail on demand (conformance faults)."
    cls = type(f"{base.__name__}WithFaults", (base,), namespace)
    register_policy(name, cls)
    return name
