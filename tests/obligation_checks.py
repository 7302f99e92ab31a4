"""Assertions shared by the tests of obligation groups: a claim is proved, its control refuted."""

from __future__ import annotations

from evictable.proofs.base.records import HANG_BACKSTOP_S as BACKSTOP_S
from evictable.proofs.base.records import Obligation, Status

__all__ = ["BACKSTOP_S", "assert_proved", "refuted_control"]

# The tests' checks run under the suite's own hang backstop: bounded by work, like
# `evictable verify` (an `unknown` is a failure, not a pass).


def assert_proved(ob: Obligation) -> None:
    """The obligation's claim is proved (`unknown` or a counterexample fails)."""
    outcome = ob.check(BACKSTOP_S)
    assert outcome.status is Status.PROVED, outcome.counterexample


def refuted_control(ob: Obligation) -> str:
    """Run the obligation's negative control; assert it gives a counterexample and return it."""
    assert ob.negative is not None, f"{ob.name} has no negative control"
    outcome = ob.negative(BACKSTOP_S)
    assert outcome.status is Status.COUNTEREXAMPLE, outcome.counterexample
    return outcome.counterexample
