"""A secondary tier that does exactly what the tiering model's tiers do, when the engine
says so: the harness tier behind our orchestrator (`proofs.adapters.ours_tiering`).

`HarnessTier` satisfies `evictable.impl.tiering.SecondaryTier` and mirrors the model's
tier side (`model.tiering_tiers.TierSide`) for one tier: a synchronous lookup answers from
its copy, an asynchronous one from its probe (asked, posted at the tier's end of step,
answered by the engine); a cascade writes its copy; a job finishes only when the engine
fires it (`finishes`), and a failed promotion loses the tier's copy; `drain` finishes
every transfer in flight but a peer's store (which waits for its peer's fetch); a
serving tier answers its peers' lookups at each serve, one lookup hold per peer lookup,
parking those with keys still pending; the faults the engine arms -- a raising submit,
a stray job id at the next report -- happen once each.
"""

from __future__ import annotations

from collections import Counter

from evictable.impl.tiering import PeerParent, TierJob
from evictable.model.errors import TierSubmitError
from evictable.model.tiering_tables import (
    COPY_TABLE,
    PEER_TABLE,
    PROBE_TABLE,
    CopyEvent,
    PeerEvent,
    ProbeEvent,
    step_phase,
)
from evictable.model.tiering_tiers import Peer, Probe
from evictable.model.tiering_types import (
    CopyState,
    JobId,
    JobKind,
    JobOutcome,
    PeerPhase,
    ProbePhase,
    ReqId,
    TierAnswer,
    TierId,
    TierSpec,
)
from evictable.model.types import Key

__all__ = ["STRAY_JOB", "HarnessTier"]

STRAY_JOB = JobId(-1)
"""The job id a harness tier armed with a stray report reports (never given out)."""


class HarnessTier:
    """One tier of the model, driven by the engine (see the module doc). `peers` is
    the list of peers' lookups shared by the tiers of one orchestrator, in arrival
    order (the model keeps one list)."""

    def __init__(self, index: int, spec: TierSpec, peers: list[Peer]) -> None:
        self.index = TierId(index)
        self.spec = spec
        self.serving = spec.serving
        self.request_level = spec.request_level
        self.copies: dict[Key, tuple[CopyState, JobId | None]] = {}
        self.probes: dict[Key, Probe] = {}
        self.peers = peers
        self.held: dict[JobId, TierJob] = {}
        self.done: dict[JobId, JobOutcome] = {}
        self.armed = False
        self.stray = False
        self.finalised: Counter[ReqId] = Counter()

    # ------------------------------------------------------------ the tier protocol

    def lookup(self, key: Key, req: ReqId) -> TierAnswer:
        if not self.spec.async_lookup:
            present = self.copy_state(key) is CopyState.PRESENT
            return TierAnswer.HIT if present else TierAnswer.MISS
        probe = self.probes.get(key)
        if probe is None:
            probe = Probe(step_phase(PROBE_TABLE, ProbePhase.NONE, ProbeEvent.ASK))
            self.probes[key] = probe
        probe.reqs.add(req)
        if probe.phase is ProbePhase.RESOLVED:
            return TierAnswer.HIT if probe.found else TierAnswer.MISS
        return TierAnswer.RETRY

    def submit_store(self, job: TierJob) -> None:
        self.take(job)
        if job.kind is JobKind.CASCADE:
            for key in job.keys:
                self.copy_event(key, CopyEvent.CASCADE, job.job)

    def submit_load(self, job: TierJob) -> None:
        self.take(job)

    def take(self, job: TierJob) -> None:
        if self.armed:
            self.armed = False
            raise TierSubmitError(self.index, job.job)
        self.held[job.job] = job

    def finished_jobs(self) -> list[tuple[JobId, JobOutcome]]:
        out = [(j, self.done[j]) for j in sorted(self.done)]
        self.done.clear()
        if self.stray:
            self.stray = False
            out.insert(0, (STRAY_JOB, JobOutcome.ok()))
        return out

    def drain(self) -> None:
        for j in sorted(self.held):
            if self.held[j].kind is not JobKind.PEER_STORE:
                self.finishes(j, JobOutcome.ok())

    def serve_peers(self, parent: PeerParent) -> None:
        for peer in [p for p in self.peers if p.tier == self.index]:
            if peer.phase is PeerPhase.QUEUED:
                self.peers.remove(peer)  # taken off the queue before it is served
                parent.open_request(peer.req)
                todo = list(dict.fromkeys(peer.keys))
            else:
                todo = list(peer.pending)
            self.serve_one(parent, peer, [k for k in todo if k not in peer.resolved])

    def serve_one(self, parent: PeerParent, peer: Peer, todo: list[Key]) -> None:
        answers, job = parent.lookup_and_pin(peer.req, todo)
        if job is not None:
            self.held[job.job] = job
        for key, answer in zip(todo, answers, strict=True):
            if answer in (TierAnswer.HIT, TierAnswer.MISS):
                peer.resolved[key] = answer is TierAnswer.HIT
                if key in peer.pending:
                    peer.pending.remove(key)
            elif key not in peer.pending:
                peer.pending.append(key)
        case = "some key pending" if peer.pending else "every key settled"
        if peer.phase is PeerPhase.PARKED:
            case = "some key still pending" if peer.pending else case
        if case == "every key settled":
            case = "every key settled: answered, its request finalised"
        after = step_phase(PEER_TABLE, peer.phase, PeerEvent.SERVE, case)
        if after is PeerPhase.NONE:
            if peer in self.peers:
                self.peers.remove(peer)
            parent.finish_request(peer.req)
        elif peer.phase is PeerPhase.QUEUED:
            peer.phase = after
            self.peers.append(peer)

    def new_request(self, req: ReqId) -> None:
        return

    def request_finished(self, req: ReqId) -> None:
        self.finalised[req] += 1
        for key, probe in list(self.probes.items()):
            if req not in probe.reqs:
                continue
            probe.reqs.discard(req)
            if not probe.reqs:
                after = step_phase(PROBE_TABLE, probe.phase, ProbeEvent.RELEASE)
                if after is ProbePhase.NONE:
                    del self.probes[key]

    def end_of_step(self) -> None:
        for probe in self.probes.values():
            probe.phase = step_phase(PROBE_TABLE, probe.phase, ProbeEvent.POST)

    def has_pending_work(self) -> bool:
        waiting = (ProbePhase.QUEUED, ProbePhase.IN_FLIGHT)
        mine = any(p.tier == self.index for p in self.peers)
        return mine or any(p.phase in waiting for p in self.probes.values())

    def shutdown(self) -> None:
        return

    # ------------------------------------------------------------ the engine's events

    def copy_state(self, key: Key) -> CopyState:
        got = self.copies.get(key)
        return CopyState.ABSENT if got is None else got[0]

    def copy_event(self, key: Key, event: CopyEvent, job: JobId | None) -> None:
        """The copy table's move (model.tiering_tiers.TierSide.copy_event)."""
        state, writer = self.copies.get(key, (CopyState.ABSENT, None))
        if event is CopyEvent.NOT_WRITTEN and writer != job:
            return
        after = step_phase(COPY_TABLE, state, event)
        if after is CopyState.ABSENT:
            self.copies.pop(key, None)
        else:
            keep = job if after is CopyState.WRITING and state is CopyState.ABSENT else writer
            self.copies[key] = (after, keep if after is CopyState.WRITING else None)

    def finishes(self, j: JobId, outcome: JobOutcome) -> None:
        """Job `j` (held) finishes with `outcome`: its copies, its memory of failed
        loads, and the report for the next `finished_jobs`."""
        job = self.held.pop(j)
        self.done[j] = outcome
        for key in job.keys:
            ok = outcome.succeeded(key)
            if job.kind is JobKind.CASCADE:
                event = CopyEvent.WRITTEN if ok else CopyEvent.NOT_WRITTEN
                self.copy_event(key, event, j)
            elif job.kind is JobKind.PROMOTION and not ok:
                self.copy_event(key, CopyEvent.LOST, None)
                probe = self.probes.get(key)
                if probe is not None:
                    probe.phase = step_phase(PROBE_TABLE, probe.phase, ProbeEvent.FAIL_LOAD)
                    if probe.phase is ProbePhase.RESOLVED:
                        probe.found = False
