"""The tiering lifecycles as data: the one source of truth of `model.tiering`.

A primary chunk's lifecycle is the CPU table (`model.lifecycle.CPU_MACHINE`) with owners:
`CHUNK_RULES` (declared in `model.tiering_chunk`, re-exported here) says, for each thing
the orchestrator does to a chunk, which CPU event it makes (the ref count, the evictable
flag and the refusals all come from that table), who may make it and what happens to the
chunk's pending owner and pin owners and to the acting party's claims. The other
lifecycles are phase tables in one small vocabulary (`PhaseTable`): a secondary tier's
copy of a key, a tier job (a promotion is STAGED before it is a job), a request, an
asynchronous lookup probe and a peer's lookup at a serving tier.

Every table is validated when this module is imported (`validate_phases`;
`model.tiering_chunk.validate_chunk_rules` and `model.machine.validate` for the chunk):
every state reachable from an initial state, no trap state (from every state an initial
or a declared final state is reachable), and every (state, event) pair exactly one of:
one or more transitions (told apart by their `case`), a named rejection, or a tolerated
no-op. `step_phase` is the one way `model.tiering` changes a phase; docs/spec.md shows
the tables and their diagrams, generated from here.
"""

from __future__ import annotations

import enum

from evictable.model.errors import (
    DuplicateRequestError,
    InvariantViolationError,
    RequestFinishedError,
    UnknownJobError,
    UnknownRequestError,
)
from evictable.model.tiering_chunk import (
    CHUNK_RULES,
    ChunkEvent,
    ChunkGuard,
    ChunkRule,
    OnChunk,
    OnParty,
    chunk_rule,
)
from evictable.model.tiering_phases import (
    Move,
    Noop,
    PhaseTable,
    Refusal,
    step_phase,
    validate_phases,
)
from evictable.model.tiering_types import (
    CopyState,
    JobPhase,
    PeerPhase,
    ProbePhase,
    RequestPhase,
)

__all__ = [
    "CHUNK_RULES",
    "COPY_TABLE",
    "JOB_TABLE",
    "PEER_TABLE",
    "PHASE_TABLES",
    "PROBE_TABLE",
    "PROFILE_DIFFERENCES",
    "REQUEST_TABLE",
    "ChunkEvent",
    "ChunkGuard",
    "ChunkRule",
    "CopyEvent",
    "JobEvent",
    "Move",
    "Noop",
    "OnChunk",
    "OnParty",
    "PeerEvent",
    "PhaseTable",
    "ProbeEvent",
    "Refusal",
    "RequestEvent",
    "chunk_rule",
    "step_phase",
    "validate_phases",
]

# ------------------------------------------------------------ a tier's copy of a key


class CopyEvent(enum.Enum):
    CASCADE = "cascade"  # a cascade job to this tier was submitted
    WRITTEN = "written"  # a cascade job finished with the key written
    NOT_WRITTEN = "not_written"  # the copy's writer finished without writing it
    LOST = "lost"  # the tier dropped it, or a promotion from it failed


_CA, _CW, _CP = CopyState.ABSENT, CopyState.WRITING, CopyState.PRESENT
_C = CopyEvent

COPY_TABLE = PhaseTable(
    name="copy",
    states=(_CA, _CW, _CP),
    meanings={
        _CA: "the tier has no copy",
        _CW: "a cascade job is writing it",
        _CP: "the tier holds the key",
    },
    events=tuple(CopyEvent),
    initial=(_CA,),
    moves=(
        Move(_C.CASCADE, _CA, _CW),
        Move(_C.WRITTEN, _CA, _CP),
        Move(_C.WRITTEN, _CW, _CP),
        Move(_C.NOT_WRITTEN, _CW, _CA),
        Move(_C.LOST, _CP, _CA),
    ),
    noops=(
        Noop(_C.CASCADE, _CW, "already being written (its first writer decides)"),
        Noop(_C.CASCADE, _CP, "the tier filters keys it holds"),
        Noop(_C.WRITTEN, _CP, "already held"),
        Noop(_C.NOT_WRITTEN, _CA, "nothing was written"),
        Noop(_C.NOT_WRITTEN, _CP, "another job wrote it"),
        Noop(_C.LOST, _CA, "nothing to lose"),
        Noop(_C.LOST, _CW, "the write in flight decides"),
    ),
)

# --------------------------------------------------------------------- a tier job


class JobEvent(enum.Enum):
    STAGE = "stage"  # a lookup allocated a promotion's chunk
    REGISTER = "register"  # pins taken (store jobs) / staged chunks handed over (flush)
    SUBMIT = "submit"  # the tier accepted it
    SUBMIT_RAISES = "submit_raises"  # the tier's submit raised
    FINISH = "finish"  # the tier finished it (ok, failed or partial)
    PROCESS = "process"  # the orchestrator polled it: pins released / chunks completed
    RESET = "reset"  # the cache was reset


_JN, _JS, _JR = JobPhase.NONE, JobPhase.STAGED, JobPhase.REGISTERED
_JU, _JF = JobPhase.SUBMITTED, JobPhase.FINISHED_UNSEEN
_J = JobEvent
_NO_JOB = "no such job in flight"

JOB_TABLE = PhaseTable(
    name="job",
    states=(_JN, _JS, _JR, _JU, _JF),
    meanings={
        _JN: "no job (or processed: gone)",
        _JS: "a promotion staged by a lookup, submitted at the end of the step",
        _JR: "pins taken / chunks owned; submit not returned",
        _JU: "the tier has it",
        _JF: "the tier reported it; not polled yet",
    },
    events=tuple(JobEvent),
    initial=(_JN,),
    moves=(
        Move(_J.STAGE, _JN, _JS, "promotion"),
        Move(_J.STAGE, _JS, _JS, "another key of the same (tier, request)"),
        Move(_J.REGISTER, _JN, _JR, "cascade or peer store"),
        Move(_J.REGISTER, _JS, _JR, "promotion, at the end of the step"),
        Move(_J.SUBMIT, _JR, _JU),
        Move(_J.SUBMIT_RAISES, _JR, _JN, "failed at once: pins released, chunks aborted"),
        Move(_J.FINISH, _JU, _JF),
        Move(_J.PROCESS, _JF, _JN),
        Move(_J.RESET, _JS, _JN),
        Move(_J.RESET, _JR, _JN),
        Move(_J.RESET, _JU, _JN, "after the tier drained it"),
        Move(_J.RESET, _JF, _JN),
    ),
    refusals=(
        Refusal(_J.FINISH, _JN, UnknownJobError, _NO_JOB),
        Refusal(_J.FINISH, _JS, UnknownJobError, "a staged promotion is not submitted yet"),
        Refusal(_J.FINISH, _JR, UnknownJobError, "its submit has not returned"),
        Refusal(_J.FINISH, _JF, UnknownJobError, "reported already: a job finishes once"),
        Refusal(_J.STAGE, _JR, InvariantViolationError, "only a promotion is staged"),
        Refusal(_J.STAGE, _JU, InvariantViolationError, "only a promotion is staged"),
        Refusal(_J.STAGE, _JF, InvariantViolationError, "only a promotion is staged"),
        Refusal(_J.REGISTER, _JR, InvariantViolationError, "registered once"),
        Refusal(_J.REGISTER, _JU, InvariantViolationError, "registered once"),
        Refusal(_J.REGISTER, _JF, InvariantViolationError, "registered once"),
        Refusal(_J.SUBMIT, _JN, InvariantViolationError, "a job is registered first"),
        Refusal(_J.SUBMIT, _JS, InvariantViolationError, "a job is registered first"),
        Refusal(_J.SUBMIT, _JU, InvariantViolationError, "submitted once"),
        Refusal(_J.SUBMIT, _JF, InvariantViolationError, "submitted once"),
        Refusal(_J.SUBMIT_RAISES, _JN, InvariantViolationError, "a job is registered first"),
        Refusal(_J.SUBMIT_RAISES, _JS, InvariantViolationError, "a job is registered first"),
        Refusal(_J.SUBMIT_RAISES, _JU, InvariantViolationError, "submitted once"),
        Refusal(_J.SUBMIT_RAISES, _JF, InvariantViolationError, "submitted once"),
        Refusal(_J.PROCESS, _JS, InvariantViolationError, "only a reported job is processed"),
        Refusal(_J.PROCESS, _JR, InvariantViolationError, "only a reported job is processed"),
        Refusal(_J.PROCESS, _JU, InvariantViolationError, "only a reported job is processed"),
    ),
    noops=(
        Noop(_J.PROCESS, _JN, "a report of an unknown job is ignored"),
        Noop(_J.RESET, _JN, "nothing to reset"),
    ),
)

# ---------------------------------------------------------------------- a request


class RequestEvent(enum.Enum):
    NEW = "new_request"
    FINISH = "finish"
    FINALISE = "finalise"  # no GPU store outstanding, nothing parked: every tier told once


_RN, _RA, _RF, _RZ = (
    RequestPhase.NONE,
    RequestPhase.ACTIVE,
    RequestPhase.FINISHED,
    RequestPhase.FINALISED,
)
_R = RequestEvent

REQUEST_TABLE = PhaseTable(
    name="request",
    states=(_RN, _RA, _RF, _RZ),
    meanings={
        _RN: "not known",
        _RA: "running: scans, stores and loads",
        _RF: "finished; waiting for its GPU stores and parked cascades",
        _RZ: "every tier told it ended, exactly once (by its last store, or by reset)",
    },
    events=tuple(RequestEvent),
    initial=(_RN,),
    final=(_RZ,),
    moves=(
        Move(_R.NEW, _RN, _RA),
        Move(_R.FINISH, _RA, _RF),
        Move(_R.FINALISE, _RF, _RZ),
    ),
    refusals=(
        Refusal(_R.FINISH, _RN, UnknownRequestError, "never added"),
        Refusal(_R.FINISH, _RF, RequestFinishedError, "finished already"),
        Refusal(_R.FINISH, _RZ, UnknownRequestError, "finalised already"),
        Refusal(_R.FINALISE, _RN, InvariantViolationError, "only a finished request"),
        Refusal(_R.FINALISE, _RA, InvariantViolationError, "only a finished request"),
        Refusal(_R.FINALISE, _RZ, InvariantViolationError, "finalised exactly once"),
        Refusal(_R.NEW, _RA, DuplicateRequestError, "already known"),
        Refusal(_R.NEW, _RF, DuplicateRequestError, "already known"),
        Refusal(_R.NEW, _RZ, DuplicateRequestError, "a finalised id is not reused"),
    ),
)

# -------------------------------------------------------------- a lookup probe


class ProbeEvent(enum.Enum):
    ASK = "ask"  # a lookup asks the tier about the key
    POST = "post"  # the tier's end of step posts queued probes to its worker
    ANSWER = "answer"  # the worker answers (found or not)
    RELEASE = "release"  # the last request using it finished
    FAIL_LOAD = "fail_load"  # a promotion of the key from this tier failed: not found


_PN, _PQ, _PI, _PR = ProbePhase.NONE, ProbePhase.QUEUED, ProbePhase.IN_FLIGHT, ProbePhase.RESOLVED
_P = ProbeEvent

PROBE_TABLE = PhaseTable(
    name="probe",
    states=(_PN, _PQ, _PI, _PR),
    meanings={
        _PN: "no probe",
        _PQ: "asked; posted at the tier's end of step (lookups answer RETRY)",
        _PI: "the tier's worker is looking (RETRY)",
        _PR: "answered: lookups answer HIT or MISS from it",
    },
    events=tuple(ProbeEvent),
    initial=(_PN,),
    moves=(
        Move(_P.ASK, _PN, _PQ),
        Move(_P.POST, _PQ, _PI),
        Move(_P.ANSWER, _PI, _PR, "a request uses it"),
        Move(_P.ANSWER, _PI, _PN, "no request uses it any more: dropped"),
        Move(_P.RELEASE, _PQ, _PN),
        Move(_P.RELEASE, _PR, _PN),
        Move(_P.FAIL_LOAD, _PR, _PR, "found := false"),
    ),
    refusals=(
        Refusal(_P.ANSWER, _PN, UnknownJobError, "no probe in flight"),
        Refusal(_P.ANSWER, _PQ, UnknownJobError, "not posted yet"),
        Refusal(_P.ANSWER, _PR, UnknownJobError, "answered already"),
    ),
    noops=(
        Noop(_P.ASK, _PQ, "asked already"),
        Noop(_P.ASK, _PI, "asked already"),
        Noop(_P.ASK, _PR, "answered: the lookup reads it"),
        Noop(_P.POST, _PN, "nothing queued"),
        Noop(_P.POST, _PI, "posted already"),
        Noop(_P.POST, _PR, "posted already"),
        Noop(_P.RELEASE, _PN, "nothing to release"),
        Noop(_P.RELEASE, _PI, "kept until its answer arrives"),
        Noop(_P.FAIL_LOAD, _PN, "no probe"),
        Noop(_P.FAIL_LOAD, _PQ, "its own answer will come"),
        Noop(_P.FAIL_LOAD, _PI, "its own answer will come"),
    ),
)

# ------------------------------------------------------ a peer's lookup at a tier


class PeerEvent(enum.Enum):
    RECEIVE = "receive"  # a peer's lookup message arrives
    SERVE = "serve"  # the tier's serve point looks its keys up and pins the hits
    GIVE_UP = "give_up"  # the tier's deadline passed: the pending keys are answered MISS


_EN, _EQ, _EP = PeerPhase.NONE, PeerPhase.QUEUED, PeerPhase.PARKED
_E = PeerEvent

PEER_TABLE = PhaseTable(
    name="peer",
    states=(_EN, _EQ, _EP),
    meanings={
        _EN: "no lookup (or answered and closed)",
        _EQ: "received; served at the tier's next serve point",
        _EP: "served; some keys were pending, looked up again at each serve",
    },
    events=tuple(PeerEvent),
    initial=(_EN,),
    moves=(
        Move(_E.RECEIVE, _EN, _EQ),
        Move(_E.SERVE, _EQ, _EN, "every key settled: answered, its request finalised"),
        Move(_E.SERVE, _EQ, _EP, "some key pending"),
        Move(_E.SERVE, _EP, _EN, "every key settled: answered, its request finalised"),
        Move(_E.SERVE, _EP, _EP, "some key still pending"),
        Move(_E.GIVE_UP, _EP, _EN, "answered (pending keys MISS), its request finalised"),
    ),
    refusals=(
        Refusal(_E.GIVE_UP, _EN, UnknownJobError, "no lookup parked at the tier"),
        Refusal(_E.GIVE_UP, _EQ, UnknownJobError, "not served yet: no deadline runs"),
    ),
    noops=(
        Noop(_E.SERVE, _EN, "nothing to serve"),
        Noop(_E.RECEIVE, _EQ, "each message is a lookup of its own"),
        Noop(_E.RECEIVE, _EP, "each message is a lookup of its own"),
    ),
)

PROFILE_DIFFERENCES: tuple[tuple[str, str, str], ...] = (
    (
        "a promotion inside a lookup hold",
        "never evicts a key the hold reported HIT; with no other room it answers MISS, so a "
        "scan answers the resident prefix that fits",
        "protects only the promoted key: it may evict a key reported HIT a moment before (a "
        "peer serve then pins it and asserts; a scan answers try later, for ever when its "
        "prefix is longer than the primary)",
    ),
    (
        "staged promotions",
        "are pending work (`has_pending_work`)",
        "are not: one staged by a poll round waits for a step an idle engine never takes",
    ),
    (
        "a submit that raises",
        "fails its job at once (pins released, chunks aborted); the call goes on",
        "escapes the call: the job stays registered with its pins and is never reported, the "
        "rest of the call is skipped (later tiers, the store's count); a flush keeps its "
        "staged entries and submits them again",
    ),
    (
        "a GPU store's completion",
        "completes only the chunks its store still owns and cascades only those; a "
        "request is waiting while a key is pending under its store",
        "completes every PENDING key named, cascades every key named (asserting each "
        "readable), counts calls and asserts one was pending",
    ),
    (
        "a GPU load's completion",
        "releases only the pins its request holds",
        "releases one pin per key named, whoever holds it, asserting key by key",
    ),
    (
        "a reset over work no tier reported",
        "fails that work with the reset: nothing is left",
        "asserts half way (the primary not reset, pins and staged promotions kept)",
    ),
    (
        "a tier's report of a job it was never given",
        "is ignored",
        "asserts; the rest of that tier's batch is lost (those jobs never reported again)",
    ),
    (
        "a partial promotion naming keys it has not",
        "counts only the job's own keys",
        "asserts after taking the job: its chunks stay PENDING without an owner",
    ),
    (
        "request ids and calls on them",
        "a known id, a second finish, a call on an unknown request: refused before any change",
        "a known id replaces its state (its outstanding stores lost); a store or completion "
        "of an unknown or finalised request changes the primary, then raises KeyError",
    ),
)
"""The named differences between the `spec` and `vllm-0.33` profiles (docs/spec.md,
generated; docs/semantics.md, "Tiered offloading")."""

PHASE_TABLES: tuple[PhaseTable, ...] = (
    COPY_TABLE,
    JOB_TABLE,
    REQUEST_TABLE,
    PROBE_TABLE,
    PEER_TABLE,
)


for _table in PHASE_TABLES:
    validate_phases(_table)
