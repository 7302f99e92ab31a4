"""The conformance engine (policy "arc") catches every seeded ARC bug, quickly.

Each run stops at the first divergence; the line printed per bug (see it with
`pytest -s`) says in which example and after how many steps it was caught, and the
shortened trace's length. The budget is an upper bound, not the expected cost.
"""

from __future__ import annotations

import pytest

from proofs.conformance import run_conformance
from tests.seeded_bugs.arc_bugs import ARC_BUGS
from tests.seeded_bugs.bug import SeededBug

BUDGET = {"examples": 400, "steps": 40}
SEED = 20261129  # fixed: the suite is reproducible


def test_there_are_at_least_three_distinct_seeded_arc_bugs() -> None:
    names = [bug.name for bug in ARC_BUGS]
    assert len(names) >= 3
    assert len(set(names)) == len(names)
    assert {"no_t1_fallback", "touch_promotes_pending", "ghosts_never_trimmed"} <= set(names)
    assert all(bug.summary for bug in ARC_BUGS)


@pytest.mark.parametrize("bug", ARC_BUGS, ids=lambda bug: bug.name)
def test_conformance_engine_catches_seeded_arc_bug(bug: SeededBug) -> None:
    record = run_conformance(bug.factory, "arc", seed=SEED, inject_faults=bug.faults, **BUDGET)
    print(
        f"\n{bug.name}: caught in example {record.first_failure_example} after "
        f"{record.first_failure_steps} steps ({record.seconds:.2f}s incl. shrinking); "
        f"shortest trace {len(record.trace.splitlines())} lines: {record.reason}"
    )
    assert record.status == "failed", record.text()
    assert record.first_failure_example is not None
    assert record.trace.startswith("m = factory(")


def test_unbroken_arc_passes_the_same_run() -> None:
    from impl.manager import CPUOffloadingManager

    record = run_conformance(CPUOffloadingManager, "arc", 60, 40, seed=SEED,
                             inject_faults=False)
    assert record.status == "passed", record.text()
