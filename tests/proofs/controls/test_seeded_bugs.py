"""The conformance engine catches every seeded bug (tests/seeded_bugs), quickly.

Each run stops at the first divergence; the line printed per bug (see it with
`pytest -s`) says how many examples and steps it took and the shortened trace's
length. The budget is an upper bound, not the expected cost.
"""

from __future__ import annotations

import pytest

from evictable.proofs.controls import SEEDED_BUGS, SeededBug
from evictable.proofs.controls.bug import assert_engine_catches


def test_there_are_at_least_six_distinct_seeded_bugs() -> None:
    names = [bug.name for bug in SEEDED_BUGS]
    assert len(names) >= 6
    assert len(set(names)) == len(names)
    assert all(bug.summary for bug in SEEDED_BUGS)


@pytest.mark.parametrize("bug", SEEDED_BUGS, ids=lambda bug: bug.name)
def test_conformance_engine_catches_seeded_bug(bug: SeededBug) -> None:
    assert_engine_catches(bug, "lru")
