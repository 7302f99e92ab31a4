"""`conformance.<policy>`: the Hypothesis lock-step conformance run per policy, with a
non-atomic adapter as the control.
"""

from __future__ import annotations

from collections.abc import Callable

from evictable.proofs.base.profiles import verified_policies
from evictable.proofs.base.protocol import Factory
from evictable.proofs.base.records import (
    Kind,
    Obligation,
    Outcome,
)
from evictable.proofs.controls.manager import key_by_key
from evictable.proofs.lockstep.conformance import SIZES, run_conformance

SEEDS: dict[str, int | None] = {"quick": 0, "default": 0, "thorough": None}
"""Fixed seeds keep `quick`/`default` reproducible; `thorough` explores afresh."""


def _impl_factory() -> Factory:
    from evictable.impl.manager import CPUOffloadingManager

    return CPUOffloadingManager


def _check(
    policy: str, examples: int, steps: int, seed: int | None, broken: bool
) -> Callable[[float], Outcome]:
    def run(backstop_s: float) -> Outcome:
        factory = _impl_factory()
        if broken:
            factory = key_by_key(factory, "prepare_load")
        record = run_conformance(
            factory,
            policy,
            examples,
            steps,
            seed,
            inject_faults=not broken,
            stop_at_first=True,
            require_copies=True,
        )
        return record.outcome()

    return run


def obligations(level: str) -> list[Obligation]:
    """`conformance.<policy>` for each policy known to model and impl, with controls."""
    examples, steps = SIZES[level]
    seed = SEEDS[level]
    return [
        Obligation(
            name=f"conformance.{policy}",
            statement=(
                f"CPUOffloadingManager({policy!r}) agrees with ModelManager in "
                f"lock-step ({examples} examples x {steps} steps: results, errors, "
                "snapshots, atomicity under bad input and policy-hook faults)"
            ),
            check=_check(policy, examples, steps, seed, broken=False),
            negative=_check(policy, examples, steps, seed, broken=True),
            negative_statement=(
                f"a manager whose prepare_load pins key by key is refuted (policy {policy!r})"
            ),
            tags=("conformance",),
            kind=Kind.TESTED,
            bounds=f"{examples} examples x {steps} steps, seed {seed}",
        )
        for policy in verified_policies()
    ]
