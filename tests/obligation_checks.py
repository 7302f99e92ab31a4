"""Assertions shared by the tests of obligation groups: a claim is proved, its control refuted."""

from __future__ import annotations

from evictable.proofs.base.records import Obligation, Status

TIMEOUT_S = 20.0
"""Per-check solver timeout in the tests (generous: a timeout is a failure, not a pass)."""


def assert_proved(ob: Obligation) -> None:
    """The obligation's claim is proved (`unknown` or a counterexample fails)."""
    outcome = ob.check(TIMEOUT_S)
    assert outcome.status is Status.PROVED, outcome.counterexample


def refuted_control(ob: Obligation) -> str:
    """Run the obligation's negative control; assert it gives a counterexample and return it."""
    assert ob.negative is not None, f"{ob.name} has no negative control"
    outcome = ob.negative(TIMEOUT_S)
    assert outcome.status is Status.COUNTEREXAMPLE, outcome.counterexample
    return outcome.counterexample
