"""`conformance.<policy>.long_run`: a long lock-step run over few keys (what only
many steps reach), with a non-atomic adapter as the control.
"""

from __future__ import annotations

from collections.abc import Callable

from evictable.proofs.base.levels import Level
from evictable.proofs.base.profiles import profile, verified_policies
from evictable.proofs.base.protocol import Factory
from evictable.proofs.base.records import Kind, Obligation, Outcome, proved, refuted
from evictable.proofs.lockstep.long_run import long_run

DEFAULT_SIZE = (5000, 5, 4)
"""(steps, keys, num_blocks) of a policy's long run at the default level, unless its
profile says otherwise."""


SCALE: dict[str, float] = {"quick": 0.2, "default": 1.0, "thorough": 10.0}
"""The long run's steps per level, relative to the default."""


def _check(
    policy: str, steps: int, keys: int, blocks: int, broken: bool
) -> Callable[[float], Outcome]:
    def run(_backstop_s: float) -> Outcome:
        from evictable.impl.manager import CPUOffloadingManager
        from evictable.proofs.controls.manager import key_by_key

        factory: Factory = CPUOffloadingManager
        if broken:
            factory = key_by_key(factory, "complete_load")
        out = long_run(factory, policy, steps, 0, keys, blocks)
        if out.failure is not None:
            return refuted(out.text())
        return proved(f"{out.steps} steps in {out.seconds:.1f}s")

    return run


def obligations(level: Level) -> list[Obligation]:
    """`conformance.<policy>.long_run` for every verified policy, with a control."""
    out = []
    for policy in verified_policies():
        steps, keys, blocks = profile(policy).long_run or DEFAULT_SIZE
        steps = max(1, int(steps * SCALE[level]))
        out.append(
            Obligation(
                name=f"conformance.{policy}.long_run",
                statement=(
                    f"CPUOffloadingManager({policy!r}) agrees with ModelManager in lock-step "
                    f"over one run of {steps} steps on {keys} keys and {blocks} blocks "
                    "(touch storms, churn and loads in turn)"
                ),
                check=_check(policy, steps, keys, blocks, broken=False),
                negative=_check(policy, steps, keys, blocks, broken=True),
                negative_statement=(
                    "a manager whose complete_load releases keys one by one is refuted"
                ),
                tags=("conformance",),
                kind=Kind.TESTED,
                bounds=f"{steps} steps, {keys} keys, {blocks} blocks, seed 0",
            )
        )
    return out
