"""Fault injection into policy hooks, for the conformance engine and the explorer.

`fault_policy_name(policy)` registers (once) a subclass of the implementation's
policy class with `impl.policies.factory.register_policy`, under the name
`"<policy>+faults"`. Each of its hooks (`HOOKS`) asks the shared `FaultPlan` whether
to fail; when the plan is armed for that hook and this is its k-th call since
arming, the hook raises a fresh `InjectedFault`:

* at its **entry** (`late=False`), before it has changed anything, or
* **after** its body ran (`late=True`): the policy has already changed -- for a
  per-key hook inside a batch, the keys before it and this one; for `evict`, the
  victims are gone; for `clear`, everything is -- and only then the hook fails.

The policy otherwise behaves exactly like its base class. The manager under test
must re-raise that very exception and leave its whole observable state as before
the call (docs/semantics.md, "All-or-nothing"): a late fault checks that it restores a
policy that *did* change, not only one that refused at once.

The plan also counts hook calls (`counting()`), so that the explorer tries faults
only where a call reaches a hook (`calls`). The registered class is importable
from this module under its own name, so a manager that uses it can be pickled.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
    "clear",
)
"""The policy hooks a fault can be injected into."""

SUFFIX = "+faults"


class InjectedFault(RuntimeError):
    """The exception a fault-injecting policy raises; never raised by real code."""


class FaultPlan:
    """Which hook fails on which call, at its entry or after its body. One shared plan;
    one lock-step run (or one explorer worker) uses it at a time."""

    def __init__(self) -> None:
        self.hook: str | None = None
        self.remaining = 0
        self.late = False
        self.fired: InjectedFault | None = None
        self.calls: Counter[str] | None = None
        """Hook calls since `counting()` began (None when not counting)."""

    def arm(self, hook: str, k: int, late: bool = False) -> None:
        """Make the k-th call of `hook` from now on raise (k >= 1), at its entry or,
        with `late`, after its body ran."""
        self.hook, self.remaining, self.late, self.fired = hook, k, late, None

    def disarm(self) -> InjectedFault | None:
        """Stop injecting; return the fault that fired since arming, if any."""
        fired = self.fired
        self.hook, self.remaining, self.late, self.fired = None, 0, False, None
        return fired

    @contextmanager
    def failing(self, hook: str, k: int = 1, late: bool = False) -> Iterator[None]:
        """Inside the block, the k-th call of `hook` raises (`arm`); disarmed after it
        (what a finding's snippet uses to make the same call fail again)."""
        self.arm(hook, k, late)
        try:
            yield
        finally:
            self.disarm()

    @contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        """Count hook calls inside the block (the yielded counter)."""
        self.calls = Counter()
        try:
            yield self.calls
        finally:
            self.calls = None

    def enter(self, hook: str) -> bool:
        """Called at the entry of every hook: raises now for an entry fault; True when
        the hook must raise after its body (a late fault)."""
        if self.calls is not None:
            self.calls[hook] += 1
        if self.hook != hook or self.fired is not None:
            return False
        self.remaining -= 1
        if self.remaining:
            return False
        self.fired = InjectedFault(
            f"injected fault in policy hook {hook!r}" + (" after its body" if self.late else "")
        )
        if not self.late:
            raise self.fired
        return True


PLAN = FaultPlan()
"""The plan every fault-injecting policy consults."""


def _wrap(base: type[CachePolicy], hook: str) -> Callable[..., Any]:
    inner = getattr(base, hook)

    def hooked(self: CachePolicy, *args: Any, **kwargs: Any) -> Any:
        late = PLAN.enter(hook)
        result = inner(self, *args, **kwargs)
        if late and PLAN.fired is not None:
            raise PLAN.fired
        return result

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
    cls_name = f"{base.__name__}WithFaults"
    if cls_name in globals():  # two policies share a class: give each its own name
        cls_name = f"{cls_name}_{policy.replace('-', '_')}"
    namespace: dict[str, Any] = {h: _wrap(base, h) for h in HOOKS}
    namespace["__doc__"] = f"{base.__name__} whose hooks fail on demand (conformance faults)."
    namespace["__module__"] = __name__
    namespace["__qualname__"] = cls_name
    cls = type(cls_name, (base,), namespace)
    globals()[cls_name] = cls  # picklable by reference, like any module-level class
    register_policy(name, cls)
    return name
