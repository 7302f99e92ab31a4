"""The conformance engine catches every seeded bug of `evictable.proofs.controls`, quickly.

Each run stops at the first divergence; the line printed per bug (see it with
`pytest -s`) says how many examples and steps it took and the shortened trace's
length. The budget is an upper bound, not the expected cost.
"""

from __future__ import annotations

import pytest

from evictable.impl.manager import CPUOffloadingManager
from evictable.proofs.controls import ARC_BUGS, SEEDED_BUGS, SeededBug
from evictable.proofs.lockstep.conformance import run_conformance

EXAMPLES, STEPS = 400, 40
"""An upper bound on one run, not its expected cost."""

SEED = 20261129
"""Fixed: the suite is reproducible (CI derandomizes as well)."""

CATALOGUE = [(bug, "lru") for bug in SEEDED_BUGS] + [
    (bug, "arc") for bug in ARC_BUGS if not bug.long_history
]
"""Bugs that need a long history are the long run's (tests/proofs/controls/test_catalogue.py)."""


def test_the_catalogue_has_distinct_documented_bugs() -> None:
    names = [bug.name for bug, _ in CATALOGUE]
    assert len(SEEDED_BUGS) >= 6 and len(ARC_BUGS) >= 3
    assert len(set(names)) == len(names)
    assert {"no_t1_fallback", "touch_promotes_pending", "ghosts_never_trimmed"} <= {
        bug.name for bug in ARC_BUGS
    }
    assert all(bug.summary for bug, _ in CATALOGUE)


@pytest.mark.parametrize(("bug", "policy"), CATALOGUE, ids=lambda x: getattr(x, "name", x))
def test_conformance_engine_catches_seeded_bug(bug: SeededBug, policy: str) -> None:
    record = run_conformance(
        bug.factory,
        policy,
        EXAMPLES,
        STEPS,
        seed=SEED,
        inject_faults=bug.faults,
        stop_at_first=True,
    )
    print(
        f"\n{bug.name}: caught in example {record.first_failure_example} after "
        f"{record.first_failure_steps} steps ({record.seconds:.2f}s incl. shrinking); "
        f"shortest trace {len(record.trace.splitlines())} lines: {record.reason}"
    )
    assert record.status == "failed", record.text()
    assert record.first_failure_example is not None
    assert record.trace.startswith("m = factory(")


@pytest.mark.parametrize("policy", ["lru", "arc"])
def test_the_unbroken_implementation_passes_the_same_run(policy: str) -> None:
    record = run_conformance(CPUOffloadingManager, policy, 60, 40, seed=SEED, inject_faults=False)
    assert record.status == "passed", record.text()
