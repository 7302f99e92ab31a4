"""The engines catch every seeded bug of the catalogue, with a short trace.

`proofs.obligations.hunt` runs the engines that apply to each bug at their default
budgets and stops at the first that catches it with a trace of at most
`MAX_CALLS` calls. By default each bug is hunted with seed 0; under the `thorough`
Hypothesis profile (HYPOTHESIS_PROFILE=thorough) with every seed 0-9. The time each
hunt takes is printed (`pytest -s`), never asserted: `python -m tools.seed_table`
prints the whole table.
"""

from __future__ import annotations

import os

import pytest

from evictable.proofs.controls.bug import TARGETS
from evictable.proofs.controls.catalogue import CATALOGUE, CLASSES, by_name
from evictable.proofs.obligations.hunt import MAX_CALLS, engines_for, hunt

THOROUGH = os.environ.get("HYPOTHESIS_PROFILE") == "thorough"
SEEDS = range(10) if THOROUGH else range(1)


def test_the_catalogue_covers_every_class_and_target_with_documented_bugs() -> None:
    names = [bug.name for bug in CATALOGUE]
    assert len(set(names)) == len(names)
    assert {bug.klass for bug in CATALOGUE} == set(CLASSES)
    assert {bug.target for bug in CATALOGUE} == set(TARGETS)
    assert all(bug.summary for bug in CATALOGUE)
    assert all(engines_for(bug) for bug in CATALOGUE)
    assert by_name("touch_without_unlink").klass == "observation"


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("bug", CATALOGUE, ids=lambda bug: bug.name)
def test_the_engines_catch_the_seeded_bug(bug: object, seed: int) -> None:
    found = hunt(bug, seed)  # type: ignore[arg-type]
    print(
        f"\n{found.bug.name} (seed {seed}): "
        + ", ".join(f"{v.engine} {v.caught} {v.calls} {v.seconds:.2f}s" for v in found.verdicts)
    )
    assert found.caught, f"{found.bug.name} slipped through: {found.verdicts}"
    assert found.winner is not None and found.winner.calls is not None
    assert found.winner.calls <= MAX_CALLS or bug.long_history  # type: ignore[attr-defined]
