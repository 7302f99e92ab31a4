"""The mechanisms of the tiering orchestrator: what its calls share (docs/semantics.md,
"Tiered offloading").

`Orchestrator` holds the whole state -- the primary tier (`model.tiering_primary`), the
secondary tiers' copies and probes, the jobs, the staged promotions, the requests, the
peers' lookups at serving tiers, the step gate and the post-reset hold -- and the steps
every public call (`model.tiering.ModelTiering`) is made of: a lookup (and the promotion
it may start), a store job, a submit, the processing of a finished job, a peer serve,
the end-of-step flushes, a request's finalisation. Phases change only through the tables
of `model.tiering_tables`.

The two profiles differ in named places only (`spec` is the fixed orchestrator, the
`vllm-0.33` profile what vLLM 0.33 does; docs/semantics.md lists each difference):
`protects_hits`, `pending_counts_staged`, `submit_failure`, the owner check of
completions, the request's store count, and the assertions vLLM fails half way
(`fail`).
"""

from __future__ import annotations

from collections.abc import Sequence

from evictable.model.errors import InvariantViolationError, TieringAssertionError, TierSubmitError
from evictable.model.lifecycle import CpuState
from evictable.model.tiering_primary import Primary
from evictable.model.tiering_tables import (
    JOB_TABLE,
    PEER_TABLE,
    REQUEST_TABLE,
    CopyEvent,
    JobEvent,
    PeerEvent,
    RequestEvent,
    step_phase,
)
from evictable.model.tiering_tiers import Job, Peer, Probe, Request, Staged, TierSide
from evictable.model.tiering_types import (
    Cascade,
    CopyState,
    GpuStore,
    JobId,
    JobKind,
    JobOutcome,
    JobPhase,
    Micro,
    MicroKind,
    PeerPhase,
    PeerStore,
    PinOwner,
    Profile,
    ReqId,
    RequestPhase,
    StagedPromotion,
    SubmittedPromotion,
    TierAnswer,
    TierId,
    TieringConfig,
)
from evictable.model.types import Key

__all__ = ["Orchestrator"]


class Orchestrator(TierSide):
    """The orchestrator's state and mechanisms (see the module doc)."""

    def __init__(self, config: TieringConfig, profile: Profile) -> None:
        self.config = config
        self.profile = profile
        self.spec = profile is Profile.SPEC
        self.log: list[Micro] = []
        self.primary = Primary(config.num_slots, self.log, strict_owners=self.spec)
        self.copies: dict[tuple[TierId, Key], tuple[CopyState, JobId | None]] = {}
        self.jobs: dict[JobId, Job] = {}
        self.staged: dict[TierId, dict[ReqId, Staged]] = {}
        self.requests: dict[ReqId, Request] = {}
        self.probes: dict[tuple[TierId, Key], Probe] = {}
        self.peers: list[Peer] = []
        self.gate = False
        self.held = False
        self.armed: set[TierId] = set()
        self.strays: set[TierId] = set()
        self.next_job = 0
        self.closed = False
        self.hold: list[Key] | None = None
        """The keys reported HIT in the open lookup hold (None: no hold open)."""

    @property
    def tiers(self) -> range:
        return range(len(self.config.tiers))

    # ------------------------------------------------------------ profile choices

    @property
    def protects_hits(self) -> bool:
        """A promotion inside a lookup hold spares every key the hold reported HIT
        (`spec`); vLLM 0.33 protects only the promoted key."""
        return self.spec

    @property
    def pending_counts_staged(self) -> bool:
        """Staged promotions are pending work (`spec`); vLLM 0.33 does not count them."""
        return self.spec

    def fail(self, call: str, reason: str, keys: Sequence[Key] = ()) -> None:
        """Where vLLM 0.33 fails an assertion half way, the vllm-0.33 profile raises
        `TieringAssertionError` in the state vLLM leaves; in `spec` it cannot happen (an
        invariant of the model would be broken)."""
        if self.spec:
            raise InvariantViolationError(["tiering"], f"{call}: {reason}")
        raise TieringAssertionError(call, reason, keys)

    # ----------------------------------------------------------------- polling

    def poll_gated(self) -> None:
        """The step's poll point: the first one of a step polls every tier."""
        if self.gate:
            return
        self.gate = True
        self.process_finished(self.tiers)

    def process_finished(self, tiers: Sequence[int] | range) -> None:
        """Take every job the tiers `tiers` reported, in job id order per tier."""
        for t in tiers:
            done = sorted(
                j
                for j, job in self.jobs.items()
                if job.tier == t and job.phase is JobPhase.FINISHED_UNSEEN
            )
            if t in self.strays:
                self.stray_report(TierId(t), done)
            for j in done:
                self.process_job(self.jobs[j])

    def stray_report(self, t: TierId, batch: list[JobId]) -> None:
        """Tier `t` reports a job id it was never given, first in its batch: `spec`
        ignores it; vLLM 0.33 asserts, the rest of the batch taken from the tier and lost
        (those jobs are never reported again)."""
        self.strays.discard(t)
        if self.spec:
            return
        for j in batch:
            self.jobs[j].phase = JobPhase.REGISTERED
        self.fail("get_finished_jobs", f"tier {t} reported a job it was never given")

    def process_job(self, job: Job) -> None:
        """A reported job's effect on the primary: a promotion completes its chunks
        (written keys READY, the others ABSENT); a store job releases its pins."""
        step_phase(JOB_TABLE, job.phase, JobEvent.PROCESS, item=job.job)
        del self.jobs[job.job]
        outcome = job.outcome or JobOutcome.failed()
        stray = [k for k in outcome.ok_keys if k not in job.keys]
        if stray and job.kind is JobKind.PROMOTION and not self.spec:
            self.fail("complete_promotion", f"job {job.job} reported keys it has not: {stray}")
        if job.kind is JobKind.PROMOTION:
            by = SubmittedPromotion(job.job)
            written = [k for k in job.keys if outcome.succeeded(k)]
            for key in [*written, *(k for k in job.keys if k not in written)]:
                self.complete_chunk(key, by, key in written)
            return
        owner: PinOwner = Cascade(job.job) if job.kind is JobKind.CASCADE else PeerStore(job.job)
        for key in job.keys:
            if self.primary.state(key) is not CpuState.LOADING:
                self.fail("complete_read", f"chunk {key!r} of job {job.job} is not pinned", [key])
            self.primary.unpin(key, owner)

    def complete_chunk(self, key: Key, by: GpuStore | SubmittedPromotion, ok: bool) -> bool:
        """`by` completes `key`'s chunk; the owners whose claim it consumed forget the key."""
        chunk = self.primary.chunks.get(key)
        before = list(chunk.owners) if chunk is not None else []
        if not self.primary.complete(key, by, ok):
            return False
        for owner in before:
            if isinstance(owner, GpuStore) and owner.req in self.requests:
                stores = self.requests[owner.req].stores
                if key in stores:
                    stores.remove(key)
        return True

    # ------------------------------------------------------------------ lookups

    def lookup(self, key: Key, req: ReqId, exclude: TierId | None = None) -> TierAnswer:
        """One key: the primary first; on a miss, the tiers in order (a tier's HIT
        starts a promotion). Records LOOKUP; a HIT joins the open hold's record."""
        self.poll_gated()
        state = self.primary.state(key)
        if state in (CpuState.READY, CpuState.LOADING):
            answer = TierAnswer.HIT
        elif state is CpuState.PENDING:
            answer = TierAnswer.HIT_PENDING
        elif self.held:
            answer = TierAnswer.MISS
        else:
            answer = self.tier_lookups(key, req, exclude)
        self.log.append(Micro(MicroKind.LOOKUP, key=key, answer=answer, who=req))
        if answer is TierAnswer.HIT and self.hold is not None:
            self.hold.append(key)
        return answer

    def tier_lookups(self, key: Key, req: ReqId, exclude: TierId | None) -> TierAnswer:
        retry = False
        for t in self.tiers:
            if t == exclude:
                continue
            got = self.tier_lookup(TierId(t), key, req)
            if got is TierAnswer.HIT:
                promoted = self.promote(TierId(t), key, req)
                return TierAnswer.HIT_PENDING if promoted else TierAnswer.MISS
            retry |= got is TierAnswer.RETRY
        return TierAnswer.RETRY if retry else TierAnswer.MISS

    def promote(self, t: TierId, key: Key, req: ReqId) -> bool:
        """Allocate `key`'s chunk for a promotion from tier `t` and stage it; False when
        the primary has no room (without evicting a protected key)."""
        protected = [key, *(self.hold or ())] if self.protects_hits else [key]
        got = self.primary.allocate([key], StagedPromotion(t, req), protected)
        if got is None:
            return False
        keys, slots, _ = got
        entry = self.staged.setdefault(t, {}).setdefault(req, Staged())
        step_phase(JOB_TABLE, JobPhase.STAGED if entry.keys else JobPhase.NONE, JobEvent.STAGE)
        entry.keys.extend(keys)
        entry.slots.extend(slots)
        return True

    # -------------------------------------------------------------------- jobs

    def new_job(
        self, t: TierId, kind: JobKind, keys: Sequence[Key], slots: Sequence[int], req: ReqId
    ) -> Job:
        job = Job(JobId(self.next_job), t, kind, tuple(keys), tuple(slots), req, JobPhase.NONE)
        self.next_job += 1
        return job

    def store_job(self, keys: Sequence[Key], req: ReqId, t: TierId, kind: JobKind) -> Job:
        """Pin `keys` for a job that reads them (a cascade, or a peer store) and register
        it. vLLM 0.33 pins key by key and asserts each is readable: a key evicted meanwhile
        fails it half way, the pins before it left without a job."""
        j = JobId(self.next_job)
        owner: PinOwner = Cascade(j) if kind is JobKind.CASCADE else PeerStore(j)
        for key in keys:
            if self.primary.state(key) in (CpuState.ABSENT, CpuState.PENDING):
                self.fail("create_store_job", f"chunk {key!r} is not readable", [key])
            self.primary.pin(key, owner)
        slots = [self.primary.slot(k) or 0 for k in keys]
        job = self.new_job(t, kind, keys, slots, req)
        job.phase = step_phase(JOB_TABLE, job.phase, JobEvent.REGISTER)
        self.jobs[job.job] = job
        return job

    def submit(self, job: Job) -> bool:
        """Hand `job` to its tier. A tier armed to raise refuses it: in `spec` the job
        fails at once (pins released, chunks aborted) and the call goes on; vLLM 0.33
        lets the exception out, the job left registered."""
        if job.tier in self.armed:
            self.armed.discard(job.tier)
            if not self.submit_failure_absorbed:
                raise TierSubmitError(job.tier, job.job)
            job.phase = step_phase(JOB_TABLE, job.phase, JobEvent.SUBMIT_RAISES)
            del self.jobs[job.job]
            self.release(job)
            return False
        job.phase = step_phase(JOB_TABLE, job.phase, JobEvent.SUBMIT)
        if job.kind is JobKind.CASCADE:
            for key in job.keys:
                self.copy_event(job.tier, key, CopyEvent.CASCADE, job.job)
        return True

    @property
    def submit_failure_absorbed(self) -> bool:
        """A raising submit fails its job and the call goes on (`spec`)."""
        return self.spec

    def release(self, job: Job) -> None:
        """A job that failed before its tier took it: its pins, or its chunks, go."""
        if job.kind is JobKind.PROMOTION:
            for key in job.keys:
                self.complete_chunk(key, SubmittedPromotion(job.job), False)
            return
        owner: PinOwner = Cascade(job.job) if job.kind is JobKind.CASCADE else PeerStore(job.job)
        for key in job.keys:
            self.primary.unpin(key, owner)

    def cascade(self, keys: Sequence[Key], req: ReqId, tiers: Sequence[int] | range) -> None:
        """One cascade job per tier of `tiers`, pinning `keys`, submitted at once."""
        if not keys:
            return
        for t in tiers:
            self.submit(self.store_job(keys, req, TierId(t), JobKind.CASCADE))

    def level_tiers(self, r: Request) -> list[int]:
        """The request-level tiers of request `r` (its origin excluded)."""
        return [t for t in self.tiers if self.config.tiers[t].request_level and t != r.origin]

    def cascade_existing(self, keys: Sequence[Key], r: Request) -> None:
        """Request-level tiers also get the request's keys already in the primary: the
        readable ones at once, the PENDING ones parked until they settle."""
        tiers = self.level_tiers(r)
        if not tiers:
            return
        ready = []
        for key in keys:
            state = self.primary.state(key)
            if state in (CpuState.READY, CpuState.LOADING):
                ready.append(key)
            elif state is CpuState.PENDING:
                r.parked.append(key)
        self.cascade(ready, r.req, tiers)

    # ---------------------------------------------------------------- requests

    def add_request(self, req: ReqId, origin: TierId | None) -> Request:
        prev = self.requests.get(req)
        phase = prev.phase if prev is not None and self.spec else RequestPhase.NONE
        step_phase(REQUEST_TABLE, phase, RequestEvent.NEW, item=req)
        r = Request(req, RequestPhase.ACTIVE, origin, [0] * len(self.config.tiers))
        self.requests[req] = r
        return r

    def end_request(self, r: Request) -> None:
        """The request finished (on_request_finished); finalised when nothing is left."""
        if r.phase is RequestPhase.ACTIVE or self.spec:
            r.phase = step_phase(REQUEST_TABLE, r.phase, RequestEvent.FINISH, item=r.req)
        self.maybe_finalise(r)

    def maybe_finalise(self, r: Request) -> None:
        """Tell every tier (but the request's origin) that a finished request ended, once
        its GPU stores are all completed and nothing is parked."""
        if r.phase is not RequestPhase.FINISHED:
            return
        outstanding = bool(r.stores) if self.spec else r.store_calls != 0
        if outstanding or r.parked:
            return
        self.finalise(r, exclude=r.origin)

    def finalise(self, r: Request, exclude: TierId | None) -> None:
        for t in self.tiers:
            if t == exclude:
                continue
            self.tier_forgets(t, r.req)
            r.finalised[t] += 1
        r.phase = step_phase(REQUEST_TABLE, r.phase, RequestEvent.FINALISE, item=r.req)

    # ------------------------------------------------------------- peer serve

    def serve(self, t: int) -> None:
        """Serving tier `t` answers its peers: per peer lookup, one hold that looks the
        unsettled keys up and pins the hits (a peer store job)."""
        for peer in [p for p in self.peers if p.tier == t]:
            if peer.phase is PeerPhase.QUEUED:
                self.peers.remove(peer)  # taken off the queue before it is served
                self.add_request(peer.req, TierId(t))
                todo = list(dict.fromkeys(peer.keys))
            else:
                todo = list(peer.pending)
            self.serve_one(peer, todo)

    def serve_one(self, peer: Peer, todo: list[Key]) -> None:
        self.hold = []
        self.log.append(Micro(MicroKind.OPEN, who=peer.req))
        hits = []
        for key in todo:
            if key in peer.resolved:
                continue
            answer = self.lookup(key, peer.req, exclude=peer.tier)
            if answer in (TierAnswer.HIT, TierAnswer.MISS):
                peer.resolved[key] = answer is TierAnswer.HIT
                if key in peer.pending:
                    peer.pending.remove(key)
                if answer is TierAnswer.HIT:
                    hits.append(key)
            elif key not in peer.pending:
                peer.pending.append(key)
        if hits:
            job = self.store_job(hits, peer.req, peer.tier, JobKind.PEER_STORE)
            job.phase = step_phase(JOB_TABLE, job.phase, JobEvent.SUBMIT)
        self.log.append(Micro(MicroKind.CLOSE, who=peer.req))
        self.hold = None
        case = "some key pending" if peer.pending else "every key settled"
        if peer.phase is PeerPhase.PARKED:
            case = "some key still pending" if peer.pending else case
        after = step_phase(PEER_TABLE, peer.phase, PeerEvent.SERVE, _peer_case(case))
        if after is PeerPhase.NONE:
            if peer in self.peers:
                self.peers.remove(peer)
            self.end_request(self.requests[peer.req])
        elif peer.phase is PeerPhase.QUEUED:
            peer.phase = after
            self.peers.append(peer)

    # -------------------------------------------------------- end-of-step flushes

    def flush_staged(self) -> None:
        """Each (tier, request)'s staged promotions become one job, submitted."""
        for t, by_req in list(self.staged.items()):
            for req, entry in list(by_req.items()):
                job = self.new_job(t, JobKind.PROMOTION, entry.keys, entry.slots, req)
                step_phase(JOB_TABLE, JobPhase.STAGED, JobEvent.REGISTER)
                job.phase = JobPhase.REGISTERED
                self.jobs[job.job] = job
                for key in entry.keys:
                    self.primary.hand_over(
                        key, StagedPromotion(t, req), SubmittedPromotion(job.job)
                    )
                if self.spec:
                    del by_req[req]
                self.submit(job)
        self.staged.clear()

    def flush_parked(self) -> None:
        """Parked request-level cascades are tried again; their requests may finalise."""
        for r in list(self.requests.values()):
            if not r.parked:
                continue
            keys, r.parked = r.parked, []
            self.cascade_existing(keys, r)
            self.maybe_finalise(r)


def _peer_case(text: str) -> str:
    """The peer table's case names (`model.tiering_tables.PEER_TABLE`)."""
    if text == "every key settled":
        return "every key settled: answered, its request finalised"
    return text
