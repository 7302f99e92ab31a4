"""A primary chunk's lifecycle with owners, as data (`CHUNK_RULES`).

A primary chunk's lifecycle is the CPU table (`model.lifecycle.CPU_MACHINE`) with owners:
each rule says, for one thing the orchestrator does to a chunk, which CPU event it makes
(the ref count, the evictable flag and the refusals all come from that table), who may
make it (`guard`), what happens to the chunk's pending owners and pin owners
(`on_chunk`) and what happens to the acting party's own claims and pins (`on_party`: a
request's outstanding stores and loads, a staged promotion, a job's keys). The two sides
change in the same event: the invariants "pins = live owners" and "a pending chunk's
owner is a live claim" say they stay equal.

The rules are validated when this module is imported; `model.tiering_tables` re-exports
them beside the phase tables, docs/spec.md shows them (generated), and the Z3 proofs of
the tiering key relations (`proofs.z3.tiering`) are built from them over an unbounded key
sort (docs/proofs.md, "Tiering key relations").
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from evictable.model.lifecycle import CPU_MACHINE, CpuEvent, TableError

__all__ = [
    "CHUNK_RULES",
    "WHOLE_CACHE",
    "ChunkEvent",
    "ChunkGuard",
    "ChunkRule",
    "OnChunk",
    "OnParty",
    "chunk_rule",
    "validate_chunk_rules",
]


class ChunkEvent(enum.Enum):
    """What the orchestrator does to one primary chunk."""

    GPU_STORE = "gpu_store"
    STAGE_PROMOTION = "stage_promotion"
    SUBMIT_PROMOTION = "submit_promotion"
    COMMIT = "commit"
    ABORT = "abort"
    PIN = "pin"
    UNPIN = "unpin"
    EVICT = "evict"
    RESET = "reset"


WHOLE_CACHE: frozenset[ChunkEvent] = frozenset({ChunkEvent.RESET})
"""Events that act on every chunk at once (the others act on one chunk, by one party)."""


class ChunkGuard(enum.Enum):
    """Who may make a chunk event, beyond the CPU table's own guard (else it changes
    nothing)."""

    ANYONE = "anyone"
    OWNER = "its pending owner"
    HOLDER = "a holder of one of its pins"
    UNPROTECTED = "not a key reported HIT in the open lookup hold"


class OnChunk(enum.Enum):
    """What a chunk event does to the chunk's pending owners and pin owners."""

    KEEP = "unchanged"
    SET_OWNER = "the party becomes its pending owner"
    HAND_OVER = "its pending owner passes to the party's new job"
    CLEAR_OWNERS = "its pending owners cleared"
    ADD_PIN = "one more pin, the party's"
    REMOVE_PIN = "one pin of the party's less"
    CLEAR_ALL = "owners and pins dropped"


class OnParty(enum.Enum):
    """What a chunk event does to the acting party's own claims and pins."""

    KEEP = "unchanged"
    CLAIM = "the party claims the key (at the chunk's slot)"
    PASS_CLAIM = "the claim passes to the party's new job"
    END_CLAIM = "the party's claim on the key ends"
    HOLD = "the party holds one more pin of it"
    RELEASE = "the party holds one pin of it less"
    DROP_ALL = "every party's claims and pins end"


@dataclass(frozen=True)
class ChunkRule:
    """One chunk event: the CPU table's event it makes (None: the chunk's lifecycle state
    and ref count do not change), who may make it, and what it does to the owners."""

    event: ChunkEvent
    cpu: CpuEvent | None
    who: str
    owners: str
    guard: ChunkGuard
    on_chunk: OnChunk
    on_party: OnParty


CHUNK_RULES: tuple[ChunkRule, ...] = (
    ChunkRule(
        ChunkEvent.GPU_STORE,
        CpuEvent.STORE_BEGIN,
        "`store` of request r, for an ABSENT key",
        "pending owner := GpuStore(r)",
        ChunkGuard.ANYONE,
        OnChunk.SET_OWNER,
        OnParty.CLAIM,
    ),
    ChunkRule(
        ChunkEvent.STAGE_PROMOTION,
        CpuEvent.STORE_BEGIN,
        "a lookup of request r that misses the primary and hits tier t",
        "pending owner := StagedPromotion(t, r)",
        ChunkGuard.ANYONE,
        OnChunk.SET_OWNER,
        OnParty.CLAIM,
    ),
    ChunkRule(
        ChunkEvent.SUBMIT_PROMOTION,
        None,
        "the end of the step, for the chunks staged by (t, r)",
        "pending owner StagedPromotion(t, r) → SubmittedPromotion(job)",
        ChunkGuard.OWNER,
        OnChunk.HAND_OVER,
        OnParty.PASS_CLAIM,
    ),
    ChunkRule(
        ChunkEvent.COMMIT,
        CpuEvent.STORE_COMMIT,
        "its pending owner only: a successful `complete_store` of r (GpuStore(r)), or "
        "its promotion job processed with the key written",
        "pending owner cleared; a completion by anyone else is ignored",
        ChunkGuard.OWNER,
        OnChunk.CLEAR_OWNERS,
        OnParty.END_CLAIM,
    ),
    ChunkRule(
        ChunkEvent.ABORT,
        CpuEvent.STORE_ABORT,
        "its pending owner only: a failed store, a promotion whose key failed, or whose "
        "submit raised",
        "pending owner cleared; the slot is freed",
        ChunkGuard.OWNER,
        OnChunk.CLEAR_OWNERS,
        OnParty.END_CLAIM,
    ),
    ChunkRule(
        ChunkEvent.PIN,
        CpuEvent.LOAD_BEGIN,
        "a scan's hits (GpuLoad(r)), a cascade job (Cascade(job)), a peer's hits (PeerStore(job))",
        "pins += the owner",
        ChunkGuard.ANYONE,
        OnChunk.ADD_PIN,
        OnParty.HOLD,
    ),
    ChunkRule(
        ChunkEvent.UNPIN,
        CpuEvent.LOAD_END,
        "`complete_load` of r, or its job processed (any outcome)",
        "pins -= the owner (it must hold one)",
        ChunkGuard.HOLDER,
        OnChunk.REMOVE_PIN,
        OnParty.RELEASE,
    ),
    ChunkRule(
        ChunkEvent.EVICT,
        CpuEvent.EVICT,
        "an allocation that needs room (a store, or a promotion)",
        "never a key the allocation protects: its own keys, and in a lookup hold every "
        "key reported HIT in that hold",
        ChunkGuard.UNPROTECTED,
        OnChunk.KEEP,
        OnParty.KEEP,
    ),
    ChunkRule(
        ChunkEvent.RESET,
        CpuEvent.RESET,
        "`reset`, after the tiers drained",
        "owners and pins dropped with their jobs, staged promotions and loads",
        ChunkGuard.ANYONE,
        OnChunk.CLEAR_ALL,
        OnParty.DROP_ALL,
    ),
)
"""The primary chunk's lifecycle: the CPU table's rows, with owners."""


def chunk_rule(event: ChunkEvent) -> ChunkRule:
    """The rule of one chunk event."""
    for rule in CHUNK_RULES:
        if rule.event is event:
            return rule
    raise TableError(f"no chunk rule for {event}")


def validate_chunk_rules(rules: tuple[ChunkRule, ...] = CHUNK_RULES) -> None:
    """Every chunk event has exactly one rule, on an event of the CPU table; raise
    `TableError` on the first problem."""
    events = [r.event for r in rules]
    if sorted(e.value for e in events) != sorted(e.value for e in ChunkEvent):
        raise TableError("chunk: every chunk event needs exactly one rule")
    for rule in rules:
        if rule.cpu is not None and rule.cpu not in CPU_MACHINE.events:
            raise TableError(f"chunk: {rule.event.value} names an unknown CPU event")
        if rule.cpu is None and rule.on_chunk is not OnChunk.HAND_OVER:
            raise TableError(f"chunk: {rule.event.value} keeps the CPU state: only a hand-over may")


validate_chunk_rules()
