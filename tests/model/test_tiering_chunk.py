"""The chunk rules' data (guard, on the chunk) is what the model's primary does: the Z3
proofs are built from the rules, the orchestrator runs `model.tiering_primary`, and
these tests hold one to the other, event by event."""

from __future__ import annotations

import dataclasses

import pytest

from evictable.model.lifecycle import CpuState, TableError
from evictable.model.tiering_chunk import (
    CHUNK_RULES,
    ChunkEvent,
    ChunkGuard,
    OnChunk,
    OnParty,
    chunk_rule,
    validate_chunk_rules,
)
from evictable.model.tiering_primary import Primary
from evictable.model.tiering_types import (
    GpuLoad,
    GpuStore,
    JobId,
    Micro,
    ReqId,
    StagedPromotion,
    SubmittedPromotion,
    TierId,
)
from evictable.model.types import Key

K: Key = "k"
OTHER: Key = "other"
STORE = GpuStore(ReqId("r"))
STAGED = StagedPromotion(TierId(0), ReqId("r"))
JOB = SubmittedPromotion(JobId(7))
LOAD = GpuLoad(ReqId("r"))


def _primary(strict: bool = True) -> Primary:
    log: list[Micro] = []
    return Primary(2, log, strict_owners=strict)


def _pending(owner: GpuStore | StagedPromotion = STORE) -> Primary:
    p = _primary()
    assert p.allocate([K], owner, []) is not None
    return p


def _ready() -> Primary:
    p = _pending()
    assert p.complete(K, STORE, True)
    return p


def test_every_event_has_its_data() -> None:
    assert {r.event for r in CHUNK_RULES} == set(ChunkEvent)
    assert chunk_rule(ChunkEvent.RESET).on_party is OnParty.DROP_ALL


def test_rejects_a_rule_that_keeps_the_cpu_state_without_a_hand_over() -> None:
    broken = tuple(
        dataclasses.replace(r, cpu=None) if r.event is ChunkEvent.PIN else r for r in CHUNK_RULES
    )
    with pytest.raises(TableError):
        validate_chunk_rules(broken)


@pytest.mark.parametrize("event", [ChunkEvent.GPU_STORE, ChunkEvent.STAGE_PROMOTION])
def test_an_allocation_makes_its_party_the_pending_owner(event: ChunkEvent) -> None:
    assert chunk_rule(event).on_chunk is OnChunk.SET_OWNER
    owner = STORE if event is ChunkEvent.GPU_STORE else STAGED
    p = _pending(owner)
    assert p.state(K) is CpuState.PENDING and p.chunks[K].owners == [owner]


def test_a_submitted_promotion_takes_over_its_staged_chunk() -> None:
    rule = chunk_rule(ChunkEvent.SUBMIT_PROMOTION)
    assert (rule.guard, rule.on_chunk) == (ChunkGuard.OWNER, OnChunk.HAND_OVER)
    p = _pending(STAGED)
    assert p.hand_over(K, STAGED, JOB)
    assert p.chunks[K].owners == [JOB]


@pytest.mark.parametrize("event", [ChunkEvent.COMMIT, ChunkEvent.ABORT])
def test_only_the_pending_owner_completes_and_clears_the_owners(event: ChunkEvent) -> None:
    rule = chunk_rule(event)
    assert (rule.guard, rule.on_chunk) == (ChunkGuard.OWNER, OnChunk.CLEAR_OWNERS)
    p = _pending()
    assert not p.complete(K, JOB, event is ChunkEvent.COMMIT)  # not its owner: nothing
    assert p.chunks[K].owners == [STORE]
    assert p.complete(K, STORE, event is ChunkEvent.COMMIT)
    if event is ChunkEvent.COMMIT:
        assert p.state(K) is CpuState.READY and p.chunks[K].owners == []
    else:
        assert p.state(K) is CpuState.ABSENT


def test_a_pin_and_an_unpin_add_and_remove_the_party_s_pin() -> None:
    assert chunk_rule(ChunkEvent.PIN).on_chunk is OnChunk.ADD_PIN
    assert chunk_rule(ChunkEvent.UNPIN).on_chunk is OnChunk.REMOVE_PIN
    p = _ready()
    p.pin(K, LOAD)
    p.pin(K, LOAD)
    assert p.chunks[K].pins == [LOAD, LOAD] and p.chunks[K].phase.ref == 2
    p.unpin(K, LOAD)
    assert p.chunks[K].pins == [LOAD] and p.chunks[K].phase.ref == 1


def test_an_eviction_never_takes_a_protected_key() -> None:
    assert chunk_rule(ChunkEvent.EVICT).guard is ChunkGuard.UNPROTECTED
    p = _ready()
    assert p.victims(1, [K]) is None
    assert p.victims(1, []) == [K]


def test_a_reset_drops_every_chunk_with_its_owners_and_pins() -> None:
    assert chunk_rule(ChunkEvent.RESET).on_chunk is OnChunk.CLEAR_ALL
    p = _ready()
    p.pin(K, LOAD)
    assert p.allocate([OTHER], STORE, []) is not None
    p.reset()
    assert p.chunks == {}
