"""Copies of the implementation: a `copy.deepcopy` or pickle round trip, checked.

A `Copy` action (made by the conformance engine's `copy_roundtrip` rule, replayed
like every other action) copies the implementation and checks that

* the copy equals the original: the same snapshot, counters and invariants;
* the copy is independent of the original, both ways: changing the copy leaves the
  original as it was, and changing the original leaves a second copy as it was;
* the same holds for the manager's policy on its own (when the adapter has one:
  `_policy`, a `CachePolicy`);

and then the run **continues on the copy**, so every later step also checks that
the copy *behaves* like the original would have (state a snapshot does not show,
such as list links or the slot allocator, must survive the trip too).

`copy_modes(factory)` says which round trips an adapter supports at all (those that
do not raise on a small adapter); the rule uses only those.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any, NoReturn, Protocol

from evictable.impl.policies.base import CachePolicy
from evictable.proofs.base.compare import diff
from evictable.proofs.lockstep.failures import Copy, RawStep, TraceLine

__all__ = ["MODES", "Copy", "apply_copy", "copy_modes", "copy_support", "roundtrip"]

MODES: tuple[str, ...] = ("deepcopy", "pickle")

_PROBE_KEYS: tuple[str, ...] = ("copy-probe-1", "copy-probe-2")
"""Keys no rule uses: what a copy is disturbed with to test independence."""


class LockStep(Protocol):
    """What a `Copy` action uses of `lockstep.manager.LockStep`."""

    impl: Any
    lines: list[TraceLine]
    stats: Any

    def _begin(self, action: Any) -> str: ...
    def _sides(self) -> tuple[Any, Any, Any, Any]: ...
    def _fail(self, reason: str) -> NoReturn: ...
    def _check_after(self, label: str) -> None: ...


def roundtrip(obj: Any, how: str) -> Any:
    """A copy of `obj` by `copy.deepcopy` or by a pickle round trip."""
    if how == "deepcopy":
        return copy.deepcopy(obj)
    return pickle.loads(pickle.dumps(obj, pickle.HIGHEST_PROTOCOL))


def copy_support(
    factory: Callable[[int, str, bool], Any], policy: str
) -> tuple[tuple[str, ...], str]:
    """The round trips `factory`'s adapters survive without raising (on an adapter
    holding a stored, a committed and a loading key), and why the others cannot be
    checked ("" when every mode works): a check that leaves a mode out says so."""
    try:
        adapter = factory(3, policy, True)
        adapter.prepare_store(["a", "b", "c"])
        adapter.complete_store(["a", "b"])
        adapter.prepare_load(["a"])
    except Exception as exc:
        return (), f"no adapter to copy: setting one up raised {type(exc).__name__}: {exc}"
    modes = []
    why = []
    for how in MODES:
        try:
            roundtrip(adapter, how)
        except Exception as exc:
            why.append(f"{how}: {type(exc).__name__}: {exc}")
            continue
        modes.append(how)
    return tuple(modes), "; ".join(why)


def copy_modes(factory: Callable[[int, str, bool], Any], policy: str) -> tuple[str, ...]:
    """The round trips `factory`'s adapters survive (`copy_support` without the why)."""
    return copy_support(factory, policy)[0]


def _disturb(target: Any) -> None:
    """Change `target` as much as a few calls can (errors ignored: only the effect on
    the *other* object is judged)."""
    for call in (
        lambda: target.prepare_store(list(_PROBE_KEYS)),
        lambda: target.complete_store(list(_PROBE_KEYS)),
        lambda: target.touch(list(_PROBE_KEYS)),
        target.reset_cache,
        lambda: target.prepare_store(list(_PROBE_KEYS[:1])),
    ):
        try:
            call()
        except Exception:  # the call's own outcome is not what is checked
            continue


def apply_copy(lock: LockStep, action: Copy) -> None:
    """Make `action` on `lock` (see the module doc); raises `ConformanceFailure`."""
    label = lock._begin(action) + f" (copy.{action.how} round trip)"
    impl = lock._sides()[1]
    i_before = _observe(lock, impl, label, "the original")
    text = "copy.deepcopy(m)" if action.how == "deepcopy" else "pickle.loads(pickle.dumps(m))"
    lock.lines.append(
        TraceLine(
            f"m = {text}",
            "the copy must equal m and be independent of it; the run goes on with it",
            raw=RawStep("copy", kwargs=(("how", action.how),), before=i_before),
        )
    )

    def make(what: str) -> Any:
        try:
            return roundtrip(impl, action.how)
        except Exception as exc:
            lock._fail(f"{label}: {what} raised {type(exc).__name__}: {exc}")

    def same(other: Any, what: str) -> None:
        snap = _observe(lock, other, label, what)
        if snap != i_before:
            lock._fail(f"{label}: {what} differs from the original: {diff(i_before, snap)}")
        checker = getattr(other, "check_invariants", None)
        if callable(checker):
            try:
                checker()
            except Exception as exc:
                lock._fail(f"{label}: {what}.check_invariants() failed: {exc}")

    first = make("the copy")
    same(first, "the copy")
    _disturb(first)
    if _observe(lock, impl, label, "the original") != i_before:
        lock._fail(f"{label}: changing the copy changed the original (the copy shares state)")
    _policy_roundtrip(lock, impl, action.how, label)
    second = make("a second copy")
    same(second, "a second copy")
    _disturb(impl)
    if _observe(lock, second, label, "the copy") != i_before:
        lock._fail(f"{label}: changing the original changed its copy (the copy shares state)")
    lock.stats.outcomes[f"copy:{action.how}"] += 1
    lock.impl = second
    lock._check_after(label)


def _policy_roundtrip(lock: LockStep, impl: Any, how: str, label: str) -> None:
    """The adapter's own policy (if it exposes one) survives the round trip alone."""
    try:
        policy = object.__getattribute__(impl, "_policy")
    except AttributeError:
        return
    if not isinstance(policy, CachePolicy):
        return
    before = _call(lock, policy.snapshot, label, "policy.snapshot()")
    try:
        twin = roundtrip(policy, how)
    except Exception as exc:
        lock._fail(f"{label}: the policy's round trip raised {type(exc).__name__}: {exc}")
    if _call(lock, twin.snapshot, label, "the policy copy's snapshot()") != before:
        lock._fail(f"{label}: the policy's copy differs from the policy")
    _call(lock, twin.check_invariants, label, "the policy copy's check_invariants()")
    _call(lock, twin.clear, label, "clearing the policy copy")
    if _call(lock, policy.snapshot, label, "policy.snapshot()") != before:
        lock._fail(f"{label}: clearing the policy's copy changed the policy")


def _call(lock: LockStep, fn: Callable[[], Any], label: str, what: str) -> Any:
    try:
        return fn()
    except Exception as exc:
        lock._fail(f"{label}: {what} raised {type(exc).__name__}: {exc}")


def _observe(lock: LockStep, target: Any, label: str, what: str) -> Any:
    return _call(lock, target.snapshot, label, f"{what}.snapshot()")
