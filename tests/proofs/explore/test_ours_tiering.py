"""Our tiering orchestrator held to the model: the explorer's lock-step on every edge,
`check --target tiering`'s walks, and a seeded break found (so these tests can fail)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evictable.model.errors import InvalidArgumentError
from evictable.model.lifecycle import CpuState
from evictable.model.tiering_types import Profile, ReqId, RequestEntry, RequestPhase
from evictable.proofs.adapters.ours_tiering import ours_tiering, partner, partner_of
from evictable.proofs.base.compare import Kind
from evictable.proofs.base.tiering_protocol import TieringAdapter, start_chunks
from evictable.proofs.check.tiering import check_orchestrator
from evictable.proofs.controls.ours_tiering import OursForgetsHits
from evictable.proofs.explore.tiering import explore, livelock
from evictable.proofs.explore.tiering_bounds import WORLDS
from evictable.proofs.explore.tiering_world import root_snapshot


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


def test_start_chunks_are_the_start_states_chunks_in_slot_order() -> None:
    bounds = WORLDS["quick"]["peer"][0]
    snap = root_snapshot(bounds)
    chunks = start_chunks(snap, snap.config)
    assert [c.slot for c in chunks] == list(range(len(chunks)))
    assert {c.key for c in chunks} == {c.key for c in snap.primary.chunks}


@pytest.mark.parametrize("bad", ["config", "slots", "state", "request"])
def test_rejects_a_start_state_that_is_not_one(bad: str) -> None:
    bounds = WORLDS["quick"]["peer"][0]
    snap = root_snapshot(bounds)
    assert snap.primary.chunks, "the peer world starts with a resident chunk"
    first = min(snap.primary.chunks, key=lambda c: c.slot)
    rest = snap.primary.chunks - {first}
    if bad == "config":
        snap = replace(snap, config=replace(snap.config, num_slots=snap.config.num_slots + 1))
    elif bad == "slots":
        moved = replace(first, slot=snap.config.num_slots + len(snap.primary.chunks))
        snap = replace(snap, primary=replace(snap.primary, chunks=rest | {moved}))
    elif bad == "state":
        loading = replace(first, state=CpuState.LOADING, ref_cnt=1)
        snap = replace(snap, primary=replace(snap.primary, chunks=rest | {loading}))
    else:
        snap = replace(snap, requests=(RequestEntry(ReqId("r"), RequestPhase.ACTIVE),))
    with pytest.raises(InvalidArgumentError):
        start_chunks(snap, bounds.config)
    ours = ours_tiering(bounds.config)
    before = ours.snapshot()
    with pytest.raises(InvalidArgumentError):
        ours.start(snap)
    assert ours.snapshot() == before
