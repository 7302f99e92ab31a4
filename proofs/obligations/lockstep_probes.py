"""`probe.*`: the constructor's argument order, the evict contract and the policy
registry, probed exhaustively, each with a broken variant.
"""

from __future__ import annotations

from collections.abc import Callable

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.base.levels import Level
from evictable.proofs.base.records import Kind, Obligation, Outcome, proved, refuted
from evictable.proofs.lockstep.inputs import BAD_ENABLE_EVENTS, BAD_NUM_BLOCKS
from evictable.proofs.lockstep.probes import (
    BAD_ANSWERS,
    bad_registrations,
    construct_probe,
    evict_contract_probe,
    registry_probe,
)


def _as_check(run: Callable[[], str | None], ok: str) -> Callable[[float], Outcome]:
    def check(_backstop_s: float) -> Outcome:
        why = run()
        return proved(ok) if why is None else refuted(why)

    return check


def obligations(level: Level) -> list[Obligation]:
    """`probe.construct` and `probe.evict_contract` (the same at every level: the
    catalogues are small and always run whole), each with a negative control."""
    from evictable.proofs.controls.contract import (
        TrustsPolicyVictims,
        events_checked_first,
        register_unchecked,
    )

    cases = len(BAD_ANSWERS) + 1
    return [
        Obligation(
            name="probe.construct",
            statement=(
                "every constructor call with one to three bad arguments is refused by the "
                "model and the implementation with the same error (type and message)"
            ),
            check=_as_check(lambda: construct_probe(CPUOffloadingManager), "every case agrees"),
            negative=_as_check(lambda: construct_probe(events_checked_first), "no difference"),
            negative_statement=(
                "the probe tells apart a constructor that checks enable_events before the "
                "policy name"
            ),
            tags=("probe",),
            kind=Kind.TESTED,
            bounds=(
                f"{len(BAD_NUM_BLOCKS) + 1} num_blocks x 2 policy names x "
                f"{len(BAD_ENABLE_EVENTS) + 1} enable_events values, all but the valid call"
            ),
        ),
        Obligation(
            name="probe.evict_contract",
            statement=(
                "a policy whose evict answers wrongly makes prepare_store raise "
                "InvariantViolationError (policy_evict_contract) and change nothing; the "
                "honest answer is taken"
            ),
            check=_as_check(lambda: evict_contract_probe(CPUOffloadingManager), "refused"),
            negative=_as_check(lambda: evict_contract_probe(TrustsPolicyVictims), "refused"),
            negative_statement="the probe catches a manager that takes any victims unchecked",
            tags=("probe",),
            kind=Kind.TESTED,
            bounds=f"{cases} wrong answers, with the policy's table shared and not, 4 slots",
        ),
        Obligation(
            name="probe.registry",
            statement=(
                "every bad register_policy call (name, class, a built-in or taken name) "
                "is refused with InvalidArgumentError and registers nothing"
            ),
            check=_as_check(registry_probe, "every case refused"),
            negative=_as_check(lambda: registry_probe(register_unchecked), "refused"),
            negative_statement="the probe catches a registry that takes any name and class",
            tags=("probe",),
            kind=Kind.TESTED,
            bounds=f"{len(bad_registrations())} bad registrations and one repeat",
        ),
    ]
