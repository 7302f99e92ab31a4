"""The conformance engine catches every seeded bug (tests/seeded_bugs), quickly.

Each run stops at the first divergence; the line printed per bug (see it with
`pytest -s`) says how many examples and steps it took and the shortened trace's
length. The budget is an upper bound, not the expected cost.
"""

from __future__ import annotations

import pytest

from proofs.conformance import run_conformance
from tests.seeded_bugs import SEEDED_BUGS, SeededBug

BUDGET = {"examples": 400, "steps": 40}
SEED = 20261129  # fixed: the suite is reproducible (CI derandomizes as well)


def test_there_are_at_least_six_distinct_seeded_bugs() -> None:
    names = [bug.name for bug in SEEDED_BUGS]
    assert len(names) >= 6
    assert len(set(names)) == len(names)
    assert all(bug.summary for bug in SEEDED_BUGS)


@pytest.mark.parametrize("bug", SEEDED_BUGS, ids=lambda bug: bug.name)
def test_conformance_engine_catches_seeded_bug(bug: SeededBug) -> None:
    record = run_conformance(bug.factory, "lru", seed=SEED, inject_faults=bug.faults, **BUDGET)
    print(
        f"\n{bug.name}: caught in example {record.first_failure_example} after "
        f"{record.first_failure_steps} steps ({record.seconds:.2f}s incl. shrinking); "
        f"shortest trace {len(record.trace.splitlines())} lines: {record.reason}"
    )
    assert record.status == "failed", record.text()
    assert record.first_failure_example is not None
    assert record.trace.startswith("m = factory(")
