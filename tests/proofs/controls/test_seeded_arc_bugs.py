"""The conformance engine (policy "arc") catches every seeded ARC bug, quickly.

Each run stops at the first divergence; the line printed per bug (see it with
`pytest -s`) says in which example and after how many steps it was caught, and the
shortened trace's length. The budget is an upper bound, not the expected cost.
"""

from __future__ import annotations

import pytest

from evictable.proofs.controls.arc_policies import ARC_BUGS
from evictable.proofs.controls.bug import SEED, SeededBug, assert_engine_catches
from evictable.proofs.lockstep.conformance import run_conformance


def test_there_are_at_least_three_distinct_seeded_arc_bugs() -> None:
    names = [bug.name for bug in ARC_BUGS]
    assert len(names) >= 3
    assert len(set(names)) == len(names)
    assert {"no_t1_fallback", "touch_promotes_pending", "ghosts_never_trimmed"} <= set(names)
    assert all(bug.summary for bug in ARC_BUGS)


@pytest.mark.parametrize("bug", ARC_BUGS, ids=lambda bug: bug.name)
def test_conformance_engine_catches_seeded_arc_bug(bug: SeededBug) -> None:
    assert_engine_catches(bug, "arc")


def test_unbroken_arc_passes_the_same_run() -> None:
    from evictable.impl.manager import CPUOffloadingManager

    record = run_conformance(CPUOffloadingManager, "arc", 60, 40, seed=SEED,
                             inject_faults=False)
    assert record.status == "passed", record.text()
