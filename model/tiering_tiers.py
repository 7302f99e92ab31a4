"""The secondary tiers as the model sees them, and the records the orchestrator keeps.

`TierSide` is what a tier does on its own (what the harness tier of an engine does when
the engine says so): a synchronous lookup answers from the tier's copy, an asynchronous
one from its probe; a cascade writes the copy; a finished job is reported (and a failed
promotion loses the tier's copy); a reset drains the transfers in flight; the tier's end
of step posts its queued probes; a request's end releases its probes; queued probes and
peers' lookups are the tier's own pending work. The records (`Job`, `Staged`, `Request`,
`Probe`, `Peer`) are the mutable entries behind a `TieringSnapshot`'s tuples.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from evictable.model.tiering_tables import (
    COPY_TABLE,
    JOB_TABLE,
    PROBE_TABLE,
    CopyEvent,
    JobEvent,
    ProbeEvent,
    step_phase,
)
from evictable.model.tiering_types import (
    CopyState,
    JobId,
    JobKind,
    JobOutcome,
    JobPhase,
    PeerPhase,
    ProbePhase,
    ReqId,
    RequestPhase,
    TierAnswer,
    TierId,
    TieringConfig,
)
from evictable.model.types import Key

__all__ = ["Job", "Peer", "Probe", "Request", "Staged", "TierSide"]


@dataclass
class Job:
    job: JobId
    tier: TierId
    kind: JobKind
    keys: tuple[Key, ...]
    slots: tuple[int, ...]
    req: ReqId
    phase: JobPhase
    outcome: JobOutcome | None = None


@dataclass
class Staged:
    keys: list[Key] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)


@dataclass
class Request:
    req: ReqId
    phase: RequestPhase
    origin: TierId | None
    finalised: list[int]
    stores: list[Key] = field(default_factory=list)
    loads: list[Key] = field(default_factory=list)
    parked: list[Key] = field(default_factory=list)
    store_calls: int = 0


@dataclass
class Probe:
    phase: ProbePhase
    found: bool | None = None
    reqs: set[ReqId] = field(default_factory=set)


@dataclass
class Peer:
    tier: TierId
    req: ReqId
    keys: tuple[Key, ...]
    phase: PeerPhase
    resolved: dict[Key, bool] = field(default_factory=dict)
    pending: list[Key] = field(default_factory=list)


class TierSide:
    """The tiers' own behaviour (see the module doc); `Orchestrator` is one."""

    config: TieringConfig
    copies: dict[tuple[TierId, Key], tuple[CopyState, JobId | None]]
    jobs: dict[JobId, Job]
    probes: dict[tuple[TierId, Key], Probe]
    peers: list[Peer]

    def tier_lookup(self, t: TierId, key: Key, req: ReqId) -> TierAnswer:
        """A tier's answer: its copy (synchronous), or its probe (asynchronous)."""
        if not self.config.tiers[t].async_lookup:
            present = self.copy_state(t, key) is CopyState.PRESENT
            return TierAnswer.HIT if present else TierAnswer.MISS
        probe = self.probes.get((t, key))
        if probe is None:
            probe = Probe(step_phase(PROBE_TABLE, ProbePhase.NONE, ProbeEvent.ASK))
            self.probes[(t, key)] = probe
        probe.reqs.add(req)
        if probe.phase is ProbePhase.RESOLVED:
            return TierAnswer.HIT if probe.found else TierAnswer.MISS
        return TierAnswer.RETRY

    def copy_state(self, t: int, key: Key) -> CopyState:
        got = self.copies.get((TierId(t), key))
        return CopyState.ABSENT if got is None else got[0]

    def copy_event(self, t: TierId, key: Key, event: CopyEvent, job: JobId | None) -> None:
        state, writer = self.copies.get((t, key), (CopyState.ABSENT, None))
        if event is CopyEvent.NOT_WRITTEN and writer != job:
            return  # only the copy's writer decides
        after = step_phase(COPY_TABLE, state, event)
        if after is CopyState.ABSENT:
            self.copies.pop((t, key), None)
        else:
            keep = job if after is CopyState.WRITING and state is CopyState.ABSENT else writer
            self.copies[(t, key)] = (after, keep if after is CopyState.WRITING else None)

    def tier_finishes(self, job: Job, outcome: JobOutcome) -> None:
        """The tier finished `job`: its copies (a cascade), its memory of failed loads (a
        promotion's failed keys are lost at that tier), and the report to poll."""
        job.phase = step_phase(JOB_TABLE, job.phase, JobEvent.FINISH, item=job.job)
        job.outcome = outcome
        for key in job.keys:
            ok = outcome.succeeded(key)
            if job.kind is JobKind.CASCADE:
                event = CopyEvent.WRITTEN if ok else CopyEvent.NOT_WRITTEN
                self.copy_event(job.tier, key, event, job.job)
            elif job.kind is JobKind.PROMOTION and not ok:
                self.copy_event(job.tier, key, CopyEvent.LOST, None)
                probe = self.probes.get((job.tier, key))
                if probe is not None:
                    probe.phase = step_phase(PROBE_TABLE, probe.phase, ProbeEvent.FAIL_LOAD)
                    if probe.phase is ProbePhase.RESOLVED:
                        probe.found = False

    def drain(self) -> None:
        """Every tier finishes the transfers it has in flight (a reset waits for them); a
        peer store waiting for its peer's fetch is not a transfer in flight, and a serving
        tier (vLLM's p2p) does not report it."""
        for job in sorted(self.jobs.values(), key=lambda j: j.job):
            if job.phase is JobPhase.SUBMITTED and job.kind is not JobKind.PEER_STORE:
                self.tier_finishes(job, JobOutcome.ok())

    def tier_end_of_step(self) -> None:
        """The tiers' own end of step: queued probes go to their workers."""
        for probe in self.probes.values():
            probe.phase = step_phase(PROBE_TABLE, probe.phase, ProbeEvent.POST)

    def tier_forgets(self, t: int, req: ReqId) -> None:
        """Tier `t` is told `req` ended: its probes no longer serve it."""
        for (pt, key), probe in list(self.probes.items()):
            if pt != t or req not in probe.reqs:
                continue
            probe.reqs.discard(req)
            if not probe.reqs:
                after = step_phase(PROBE_TABLE, probe.phase, ProbeEvent.RELEASE)
                if after is ProbePhase.NONE:
                    del self.probes[(pt, key)]

    def tier_pending_work(self) -> bool:
        """A tier needs steps while a probe waits to be posted or answered, or a peer's
        lookup waits to be served or is parked (some of its keys pending)."""
        waiting = (ProbePhase.QUEUED, ProbePhase.IN_FLIGHT)
        return bool(self.peers) or any(p.phase in waiting for p in self.probes.values())
