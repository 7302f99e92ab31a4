"""`probe.policy.*`: the built-in policies' own API in lock-step with the model
policies, with a broken policy as the control.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evictable.impl.policies.factory import builtin_class
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, Outcome, proved, refuted
from evictable.proofs.lockstep.policy_probe import CAPACITY, KEYS, policy_probe


def obligations(level: Level) -> list[Obligation]:
    """`probe.policy.<name>` for the built-in policies, with a negative control: an
    LRU whose eviction ignores the protected keys."""
    from evictable.proofs.base.profiles import verified_policies
    from evictable.proofs.controls.policies import EvictionIgnoresProtected

    runs = {"quick": 60, "default": 200, "thorough": 1000}[level]

    def check(name: str, cls: type[Any] | None) -> Callable[[float], Outcome]:
        def run(_backstop_s: float) -> Outcome:
            why = policy_probe(name, cls, runs)
            return proved(f"{runs} runs agree") if why is None else refuted(why)

        return run

    return [
        Obligation(
            name=f"probe.policy.{name}",
            statement=(
                f"the {name} policy's own API (per-key calls, bad arguments, bad "
                "capacities) agrees with the model policy call by call"
            ),
            check=check(name, None),
            negative=check("lru", EvictionIgnoresProtected),
            negative_statement="the probe catches an LRU whose eviction ignores protected keys",
            tags=("probe", "policy"),
            kind=Kind.TESTED,
            bounds=f"{runs} seeded runs x 40 calls, {len(KEYS)} keys, capacity {CAPACITY}",
        )
        for name in verified_policies()
        if builtin_class(name) is not None
    ]
