"""The vocabulary of tiered offloading: ids, owners, states, outcomes, results, and the
snapshot every engine judges (docs/semantics.md, "Tiered offloading").

A tiering orchestrator keeps a *primary* tier (the CPU chunk table of
`model.lifecycle.CPU_MACHINE`) in front of *secondary* tiers `0..T-1`. The lifecycle of
one primary chunk is the CPU table with more meaning:

* a PENDING chunk (ref_cnt -1) has a **pending owner**, the one party that may complete
  it: a GPU store of a request (`GpuStore`), a promotion staged by a lookup and not yet
  submitted (`StagedPromotion`), or a submitted promotion job (`SubmittedPromotion`);
* each unit of a positive ref count has a **pin owner**: a GPU load of a request
  (`GpuLoad`), a cascade job that copies the chunk to a tier (`Cascade`), or a peer store
  job that serves it to a peer (`PeerStore`).

Every value here is frozen and comparable, so that the model's snapshot and an adapter's
snapshot over another orchestrator (vLLM's) are compared with `==` and judged by the same
invariants (`model.tiering_invariants`). A part an adapter cannot observe is `None`; the
invariants that need it are then skipped and reported as skipped, never passed.

Standard library only.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import NewType

from evictable.model.lifecycle import CpuState
from evictable.model.types import Key, PrepareStoreOutput

__all__ = [
    "PROFILES",
    "Cascade",
    "ChunkEntry",
    "CopyEntry",
    "CopyState",
    "GpuLoad",
    "GpuStore",
    "JobEntry",
    "JobId",
    "JobKind",
    "JobOutcome",
    "JobPhase",
    "Micro",
    "MicroKind",
    "OutcomeKind",
    "PeerEntry",
    "PeerPhase",
    "PeerStore",
    "PendingOwner",
    "PinOwner",
    "PrimarySnapshot",
    "ProbeEntry",
    "ProbePhase",
    "Profile",
    "ReqId",
    "RequestEntry",
    "RequestPhase",
    "StagedEntry",
    "StagedPromotion",
    "StoreOutcome",
    "SubmittedPromotion",
    "TierAnswer",
    "TierId",
    "TierSpec",
    "TieringConfig",
    "TieringSnapshot",
    "owner_order",
]

# ------------------------------------------------------------------------------ ids

ReqId = NewType("ReqId", str)
"""A request's id (vLLM: `ReqContext.req_id`). A peer's lookup is a request too, with a
synthetic id (the model names them `peer0`, `peer1`, ...)."""

TierId = NewType("TierId", int)
"""A secondary tier's index, `0..T-1` (the primary tier has none)."""

JobId = NewType("JobId", int)
"""A tier job's id, unique while the job lives (the model counts from 0)."""


class Profile(enum.Enum):
    """Which semantics the model gives the orchestrator (docs/semantics.md)."""

    SPEC = "spec"
    """The fixed orchestrator: every safety invariant and the liveness property hold by
    construction, whatever a tier does (the default)."""
    VLLM_033 = "vllm-0.33"
    """What vLLM 0.33's `TieringOffloadingManager` does, defects included."""


PROFILES: tuple[str, ...] = tuple(p.value for p in Profile)
"""The profile names, default first."""

# ---------------------------------------------------------------------------- owners


@dataclass(frozen=True, order=True)
class GpuStore:
    """Pending owner: the GPU-to-primary store of request `req` (prepare_store ...
    complete_store)."""

    req: ReqId


@dataclass(frozen=True, order=True)
class StagedPromotion:
    """Pending owner: a promotion from tier `tier` that a lookup of `req` allocated and
    staged; it is submitted as one job per (tier, request) at the end of the step."""

    tier: TierId
    req: ReqId


@dataclass(frozen=True, order=True)
class SubmittedPromotion:
    """Pending owner: the promotion job `job`, which writes the chunk from its tier."""

    job: JobId


@dataclass(frozen=True, order=True)
class GpuLoad:
    """Pin owner: the primary-to-GPU load of request `req` (the pin of its scan's hits
    ... complete_load)."""

    req: ReqId


@dataclass(frozen=True, order=True)
class Cascade:
    """Pin owner: the cascade job `job`, which copies the chunk to its tier."""

    job: JobId


@dataclass(frozen=True, order=True)
class PeerStore:
    """Pin owner: the peer store job `job`, which holds the chunk for a peer's fetch."""

    job: JobId


PendingOwner = GpuStore | StagedPromotion | SubmittedPromotion
PinOwner = GpuLoad | Cascade | PeerStore

_OWNER_RANK: dict[type, int] = {
    GpuStore: 0,
    StagedPromotion: 1,
    SubmittedPromotion: 2,
    GpuLoad: 3,
    Cascade: 4,
    PeerStore: 5,
}


def owner_order(owner: PendingOwner | PinOwner) -> tuple[int, tuple[object, ...]]:
    """A total order over owners of every kind (kind first, then fields), so that a
    multiset of owners prints and compares as one sorted tuple."""
    if isinstance(owner, StagedPromotion):
        return (_OWNER_RANK[StagedPromotion], (owner.tier, owner.req))
    if isinstance(owner, GpuStore | GpuLoad):
        return (_OWNER_RANK[type(owner)], (owner.req,))
    return (_OWNER_RANK[type(owner)], (owner.job,))


# ------------------------------------------------------------------ states, answers


class TierAnswer(enum.Enum):
    """What a lookup answers (vLLM's `LookupResult`, RETRY included)."""

    HIT = "hit"  # resident and readable in the primary tier
    HIT_PENDING = "hit_pending"  # resident, not readable yet (a store or promotion in flight)
    RETRY = "retry"  # a tier has not decided yet (an asynchronous probe runs)
    MISS = "miss"  # nowhere, or no room to promote it, or promotions are held


class CopyState(enum.Enum):
    """A secondary tier's copy of one key (ABSENT copies are not listed)."""

    ABSENT = "ABSENT"
    WRITING = "WRITING"  # a cascade job is writing it
    PRESENT = "PRESENT"


class JobKind(enum.Enum):
    CASCADE = "cascade"  # primary -> tier, pins its chunks
    PEER_STORE = "peer_store"  # primary -> a peer (through a serving tier), pins its chunks
    PROMOTION = "promotion"  # tier -> primary, owns its PENDING chunks


class JobPhase(enum.Enum):
    """A job's phase; a processed job is gone. Snapshots list REGISTERED, SUBMITTED and
    FINISHED_UNSEEN jobs; the lifecycle table (`model.tiering_tables.JOB_TABLE`) also
    has NONE (no job, or processed) and STAGED (a promotion staged, not a job yet)."""

    NONE = "none"
    STAGED = "staged"
    REGISTERED = "registered"  # pins taken / chunks owned, submit not returned
    SUBMITTED = "submitted"  # the tier has it
    FINISHED_UNSEEN = "finished_unseen"  # the tier reported it; the orchestrator has not polled


class OutcomeKind(enum.Enum):
    OK = "ok"
    FAILED = "failed"
    PARTIAL = "partial"  # a promotion that wrote only some keys (`JobOutcome.ok_keys`)


@dataclass(frozen=True)
class JobOutcome:
    """How a job finished: all keys, none, or the keys in `ok_keys` (PARTIAL)."""

    kind: OutcomeKind
    ok_keys: tuple[Key, ...] = ()

    @classmethod
    def ok(cls) -> JobOutcome:
        return cls(OutcomeKind.OK)

    @classmethod
    def failed(cls) -> JobOutcome:
        return cls(OutcomeKind.FAILED)

    @classmethod
    def partial(cls, ok_keys: tuple[Key, ...]) -> JobOutcome:
        return cls(OutcomeKind.PARTIAL, tuple(ok_keys))

    def succeeded(self, key: Key) -> bool:
        """Whether this outcome wrote `key`."""
        if self.kind is OutcomeKind.OK:
            return True
        return self.kind is OutcomeKind.PARTIAL and key in self.ok_keys

    def __str__(self) -> str:
        if self.kind is OutcomeKind.PARTIAL:
            return f"partial{list(self.ok_keys)}"
        return str(self.kind.value)


class RequestPhase(enum.Enum):
    NONE = "none"  # not known to the orchestrator (the table's initial state)
    ACTIVE = "active"
    FINISHED = "finished"  # finish() seen; waiting for its GPU stores and parked cascades
    FINALISED = "finalised"  # every tier told (on_request_finished), exactly once


class ProbePhase(enum.Enum):
    """An asynchronous lookup probe of one (tier, key); NONE probes are not listed."""

    NONE = "none"
    QUEUED = "queued"  # asked by a lookup, posted at the tier's end of step
    IN_FLIGHT = "in_flight"  # the tier's worker is looking
    RESOLVED = "resolved"  # answered (`ProbeEntry.found`), kept while a request uses it


class PeerPhase(enum.Enum):
    """A peer's lookup at a serving tier (NONE: none, or answered and closed)."""

    NONE = "none"
    QUEUED = "queued"  # received, not served yet (served at the tier's next serve point)
    PARKED = "parked"  # served once; some keys were pending, looked up again at each serve


# ------------------------------------------------------------------------- entries


@dataclass(frozen=True)
class ChunkEntry:
    """One resident primary chunk.

    `ref_cnt` is what the primary reports (-1 pending, n pins); `owners` the pending
    owners of a PENDING chunk (exactly one, in a correct orchestrator); `pins` one pin
    owner per unit of ref count, sorted by `owner_order` (empty unless LOADING).
    """

    key: Key
    state: CpuState
    slot: int
    ref_cnt: int
    owners: tuple[PendingOwner, ...] = ()
    pins: tuple[PinOwner, ...] = ()


@dataclass(frozen=True)
class PrimarySnapshot:
    """The primary tier: resident chunks, slots (as in `ManagerSnapshot`: fresh ids from
    `high_water`, freed ids on a LIFO stack) and its evictable order (least recent
    first; None when the primary's policy does not report one)."""

    num_slots: int
    chunks: frozenset[ChunkEntry]
    free_stack: tuple[int, ...]
    high_water: int
    evictable: tuple[Key, ...] | None


@dataclass(frozen=True)
class CopyEntry:
    """A secondary tier's copy of one key: WRITING (by cascade `job`) or PRESENT."""

    tier: TierId
    key: Key
    state: CopyState
    job: JobId | None = None


@dataclass(frozen=True)
class JobEntry:
    """One live tier job: `keys` and the primary `slots` it reads or writes, in order;
    `req` the request it serves (a peer's synthetic request for a peer store)."""

    job: JobId
    tier: TierId
    kind: JobKind
    keys: tuple[Key, ...]
    slots: tuple[int, ...]
    req: ReqId
    phase: JobPhase
    outcome: JobOutcome | None = None


@dataclass(frozen=True)
class StagedEntry:
    """The promotions lookups of `req` staged from `tier`, not submitted yet: the keys
    and the primary slots allocated for them, in staging order."""

    tier: TierId
    req: ReqId
    keys: tuple[Key, ...]
    slots: tuple[int, ...] = ()


@dataclass(frozen=True)
class RequestEntry:
    """One request as the orchestrator sees it.

    `stores`: keys whose GPU store is outstanding (pending under `GpuStore(req)`);
    `loads`: keys its GPU load pins (`GpuLoad(req)`); `parked`: keys whose cascade to a
    request-level tier waits for the key to become READY; `store_calls`: vLLM's count of
    outstanding prepare_store calls (None where the orchestrator keeps none);
    `finalised`: per tier, how many times that tier was told the request ended;
    `origin`: the serving tier of a peer's request (never told: it asked).
    """

    req: ReqId
    phase: RequestPhase
    stores: tuple[Key, ...] = ()
    loads: tuple[Key, ...] = ()
    parked: tuple[Key, ...] = ()
    store_calls: int | None = None
    finalised: tuple[int, ...] = ()
    origin: TierId | None = None


@dataclass(frozen=True)
class ProbeEntry:
    """An asynchronous lookup probe of `key` at `tier`, and the requests using it."""

    tier: TierId
    key: Key
    phase: ProbePhase
    found: bool | None = None
    reqs: frozenset[ReqId] = frozenset()


@dataclass(frozen=True)
class PeerEntry:
    """A peer's lookup of `keys` at serving tier `tier` (its request `req`):
    `resolved` the keys settled so far (HIT pinned, or MISS), `pending` those looked up
    again at the next serve."""

    tier: TierId
    req: ReqId
    keys: tuple[Key, ...]
    phase: PeerPhase
    resolved: tuple[tuple[Key, bool], ...] = ()
    pending: tuple[Key, ...] = ()


class MicroKind(enum.Enum):
    """One step inside an operation, as the operation's record lists it."""

    OPEN = "open"  # a lookup hold opens: a scan (who: the request) or a peer's lookup
    LOOKUP = "lookup"  # key, answer
    EVICT = "evict"  # key, state before (the primary made room)
    PIN = "pin"  # key, owner
    COMPLETE = "complete"  # key, by (the completer), owners (the key's pending owners before)
    CLOSE = "close"  # the hold closes


@dataclass(frozen=True)
class Micro:
    """One entry of an operation's record (`TieringSnapshot.log`)."""

    kind: MicroKind
    key: Key = None
    answer: TierAnswer | None = None
    owner: PendingOwner | PinOwner | None = None
    owners: tuple[PendingOwner, ...] = ()
    state: CpuState | None = None
    who: ReqId | None = None


# -------------------------------------------------------------- config and results


@dataclass(frozen=True)
class TierSpec:
    """What the orchestrator knows of a secondary tier.

    `serving`: the tier serves peers (vLLM: it overrides `serve_external_requests` and
    sets `tolerates_off_thread_polling`, so poll rounds serve it between steps);
    `async_lookup`: lookups go through asynchronous probes (RETRY until answered);
    `request_level`: the tier asks for request-level offloading (chunks already in the
    primary are cascaded too, parked while PENDING).
    """

    name: str = "tier"
    serving: bool = False
    async_lookup: bool = False
    request_level: bool = False


@dataclass(frozen=True)
class TieringConfig:
    """An orchestrator's shape: primary slots and secondary tiers."""

    num_slots: int
    tiers: tuple[TierSpec, ...] = (TierSpec(),)


StoreOutcome = PrepareStoreOutput
"""What `store` answers: the keys to store, their primary slots, the keys evicted."""


@dataclass(frozen=True)
class TieringSnapshot:
    """Everything observable about an orchestrator and its tiers, identical in shape for
    the model and for an adapter over real code.

    `pending_work`: what `has_pending_work()` answers now; `gate`: jobs already polled
    this step; `held`: promotions held after a reset until `reset_flushed`; `armed`: the
    tiers whose next submit raises (a fault the engine armed); `next_job`: the next job
    id; `closed`: shut down; `log`: the record of the last operation (its lookup holds,
    evictions, pins and completions, in order). A part that cannot be observed is None.

    Orders: `jobs` by id; `staged` in submission order (tiers in the order of their
    first staged promotion, then requests in the order of their first staged key, as
    vLLM iterates them); `requests` by id; `peers` in arrival order.
    """

    config: TieringConfig
    primary: PrimarySnapshot
    copies: frozenset[CopyEntry] | None
    jobs: tuple[JobEntry, ...]
    staged: tuple[StagedEntry, ...]
    requests: tuple[RequestEntry, ...]
    probes: frozenset[ProbeEntry] | None
    peers: tuple[PeerEntry, ...] | None
    pending_work: bool | None
    gate: bool | None
    held: bool
    armed: frozenset[TierId] = frozenset()
    next_job: int | None = None
    closed: bool = False
    log: tuple[Micro, ...] | None = field(default=(), compare=False)
    strays: frozenset[TierId] = frozenset()
    """Tiers that will report, at their next poll, a job id the orchestrator never gave
    them (a fault the engine armed with `tier_reports_unknown`)."""

    def chunk(self, key: Key) -> ChunkEntry | None:
        """The resident chunk of `key`, or None."""
        for c in self.primary.chunks:
            if c.key == key:
                return c
        return None

    def request(self, req: ReqId) -> RequestEntry | None:
        """The request `req`, or None."""
        for r in self.requests:
            if r.req == req:
                return r
        return None

    def job(self, job: JobId) -> JobEntry | None:
        """The live job `job`, or None."""
        for j in self.jobs:
            if j.job == job:
                return j
        return None
