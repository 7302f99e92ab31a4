"""Our tiering orchestrator held to the model: the explorer's lock-step on every edge,
`check --target tiering`'s walks, and a seeded break found (so these tests can fail)."""

from __future__ import annotations

import pytest

from evictable.model.tiering_types import Profile
from evictable.proofs.adapters.ours_tiering import ours_tiering, partner, partner_of
from evictable.proofs.base.compare import Kind
from evictable.proofs.base.tiering_protocol import TieringAdapter
from evictable.proofs.check.tiering import check_orchestrator
from evictable.proofs.controls.ours_tiering import OursForgetsHits
from evictable.proofs.explore.tiering import explore, livelock
from evictable.proofs.explore.tiering_bounds import WORLDS


def test_ours_satisfies_the_adapter_protocol() -> None:
    assert isinstance(ours_tiering(WORLDS["quick"]["scan"][0].config), TieringAdapter)


@pytest.mark.parametrize("family", ["scan", "peer", "faults", "async"])
def test_ours_follows_the_spec_model_on_every_edge(family: str) -> None:
    bounds = WORLDS["quick"][family][0]
    result = explore(bounds, Profile.SPEC, partner=partner)
    assert result.found is None and result.complete, result.found


def test_the_spec_graph_ours_follows_has_no_lasso() -> None:
    assert livelock(WORLDS["quick"]["scan"][0], Profile.SPEC).lasso is None


def test_check_tiering_reports_nothing_on_ours() -> None:
    run = check_orchestrator(partner, level="quick", profile="spec", walks=6, depth=25, seed=7)
    assert run.ok and run.diverged == 0 and not run.skipped, [f.reason for f in run.findings]


def test_a_seeded_break_in_ours_is_found() -> None:
    bounds = WORLDS["quick"]["scan"][0]
    result = explore(bounds, Profile.SPEC, partner=partner_of(OursForgetsHits))
    assert result.found is not None and "model answered 1, impl None" in result.found.reason
    run = check_orchestrator(
        partner_of(OursForgetsHits), "quick", "spec", walks=10, seed=1, families=["scan"]
    )
    assert Kind.EVICTED_WHILE_HIT in {f.kind for f in run.findings}
