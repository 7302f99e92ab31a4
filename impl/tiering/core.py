"""The mechanisms of our tiering orchestrator: what its calls share (docs/semantics.md,
"Tiered offloading", the `spec` profile; docs/interop.md, "Our orchestrator").

`TieringCore` holds the state -- the primary tier (our `CPUOffloadingManager`, any
policy), the secondary tiers (`impl.tiering.tiers.SecondaryTier`), the jobs in flight,
the staged promotions, the requests, the step gate and the post-reset hold -- and the
steps every public call of `impl.tiering.manager.TieringManager` is made of: a lookup
(and the promotion it may start), a store job, a submit, a tier's report, a peer's
lookup hold, the end-of-step flushes, a request's finalisation. Callers hold the lock.

Who owns what is kept by construction, not in a table: a PENDING chunk belongs to
exactly one of a request's outstanding GPU stores (`RequestRecord.stores`), a staged
promotion (`staged`) or a submitted promotion job (`jobs`); a pin belongs to a
request's load (`RequestRecord.loads`) or to a live store job. Every completion and
unpin names its owner's record first and touches only what that record holds, so a
stale completion, a late or repeated report or an unknown job id changes nothing.

Each tier call is guarded: whatever a tier raises or answers, the orchestrator's state
stays consistent (a raising submit fails its job at once; a raising lookup is a MISS; a
malformed or unknown report is ignored and counted in `ignored_reports`).
"""

from __future__ import annotations

from collections.abc import Sequence

from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.tiering.tiers import SecondaryTier, TierJob
from evictable.model.errors import DuplicateRequestError
from evictable.model.lifecycle import CpuState
from evictable.model.tiering_types import (
    Cascade,
    GpuLoad,
    GpuStore,
    JobId,
    JobKind,
    JobOutcome,
    JobPhase,
    Micro,
    MicroKind,
    PeerStore,
    PendingOwner,
    PinOwner,
    ReqId,
    RequestPhase,
    StagedPromotion,
    SubmittedPromotion,
    TierAnswer,
    TierId,
)
from evictable.model.types import Key, LookupResult

__all__ = ["JobRecord", "RequestRecord", "TieringCore"]

_HIT, _PENDING, _RETRY, _MISS = (
    TierAnswer.HIT,
    TierAnswer.HIT_PENDING,
    TierAnswer.RETRY,
    TierAnswer.MISS,
)
_SUBMITTED = JobPhase.SUBMITTED


class JobRecord:
    """A job in flight: the job handed to its tier and its phase (REGISTERED until its
    submit returns, then SUBMITTED until its report is processed). Complexity: O(1).

    >>> from evictable.model.tiering_types import JobId, JobKind, ReqId, TierId
    >>> JobRecord(TierJob(JobId(0), TierId(0), JobKind.CASCADE, ("a",), (0,), ReqId("r"))).phase
    <JobPhase.REGISTERED: 'registered'>
    """

    __slots__ = ("job", "phase")

    def __init__(self, job: TierJob) -> None:
        self.job = job
        self.phase = JobPhase.REGISTERED


class RequestRecord:
    """A request: its phase, the serving tier it came from (`origin`, a peer's), the
    keys its GPU stores still own (`stores`, in order), the pins its loads hold
    (`loads`: key -> count, in order), the keys whose request-level cascade waits for
    them to settle (`parked`), and its arrival number (`seq`). Complexity: O(1).

    >>> RequestRecord(ReqId("r"), None, 0).phase
    <RequestPhase.ACTIVE: 'active'>
    """

    __slots__ = ("loads", "origin", "parked", "phase", "req", "seq", "stores")

    def __init__(self, req: ReqId, origin: TierId | None, seq: int) -> None:
        self.req = req
        self.origin = origin
        self.seq = seq
        self.phase = RequestPhase.ACTIVE
        self.stores: dict[Key, None] = {}
        self.loads: dict[Key, int] = {}
        self.parked: list[Key] = []


class TieringCore:
    """The orchestrator's state and mechanisms (see the module doc).

    Pre (every method): the caller holds the orchestrator's lock and the arguments are
    validated. Complexity: per method below.

    >>> core = TieringCore(CPUOffloadingManager(2, "lru"), [], trace=False)
    >>> core.jobs, core.requests, core.primary.num_free
    ({}, {}, 2)
    """

    def __init__(
        self, primary: CPUOffloadingManager, tiers: Sequence[SecondaryTier], trace: bool
    ) -> None:
        """Complexity: O(T)."""
        self.primary = primary
        self.tiers: list[SecondaryTier] = list(tiers)
        self.serving: list[int] = [t for t, x in enumerate(self.tiers) if bool(x.serving)]
        self.level: list[int] = [t for t, x in enumerate(self.tiers) if bool(x.request_level)]
        self.jobs: dict[JobId, JobRecord] = {}
        self.staged: dict[TierId, dict[ReqId, tuple[list[Key], list[int]]]] = {}
        self.requests: dict[ReqId, RequestRecord] = {}
        self.gone: dict[ReqId, TierId | None] = {}
        """Finalised requests holding nothing (id -> origin), oldest first, bounded."""
        self.max_gone = 65536
        self.gate = False
        self.held = False
        self.closed = False
        self.next_job = 0
        self.next_seq = 0
        self.parked_keys = 0
        self.ignored_reports = 0
        self.tier_errors = 0
        self.hold: list[Key] | None = None
        """The keys reported HIT in the open lookup hold (None: no hold open)."""
        self.region = False
        """A caller-wide hold is open (`TieringManager.open_region`): the hold spans
        calls until `close_region`."""
        self.log: list[Micro] | None = [] if trace else None
        """The record of the last call (`TieringSnapshot.log`), when tracing."""

    # ------------------------------------------------------------ records

    def begin(self) -> None:
        """A call starts: its record afresh. Complexity: O(1)."""
        if self.log is not None:
            self.log.clear()
        if not self.region:
            self.hold = None

    def hold_start(self) -> None:
        """A lookup hold opens (inside a region, the region's hold goes on).
        Complexity: O(1)."""
        if not self.region:
            self.hold = []

    def hold_end(self) -> None:
        """A lookup hold closes (inside a region, at the region's end).
        Complexity: O(1)."""
        if not self.region:
            self.hold = None

    def note(self, entry: Micro) -> None:
        """Append to the call's record when tracing. Complexity: O(1)."""
        if self.log is not None:
            self.log.append(entry)

    def find(self, req: ReqId, finalised_ok: bool) -> RequestRecord | None:
        """The live record of `req` (finalised ones only where `finalised_ok`: a
        finalised request that holds nothing gets an empty record). Complexity: O(1)."""
        r = self.requests.get(req)
        if r is not None:
            if r.phase is RequestPhase.FINALISED and not finalised_ok:
                return None
            return r
        if finalised_ok and req in self.gone:
            done = RequestRecord(req, self.gone[req], -1)
            done.phase = RequestPhase.FINALISED
            return done
        return None

    def add_request(self, req: ReqId, origin: TierId | None) -> RequestRecord:
        """A new request (`DuplicateRequestError` for an id held, or finalised within the
        last `max_gone` requests). Complexity: O(1)."""
        if req in self.requests or req in self.gone:
            raise DuplicateRequestError(req, "already known")
        r = RequestRecord(req, origin, self.next_seq)
        self.next_seq += 1
        self.requests[req] = r
        return r

    # ------------------------------------------------------------ primary

    def complete(self, keys: list[Key], by: PendingOwner, ok: bool) -> None:
        """`by` completes its chunks `keys` (it owns each: the caller read them from its
        record): READY (ok) or ABSENT. Complexity: O(len(keys))."""
        if not keys:
            return
        if self.log is not None:
            for key in keys:
                self.log.append(Micro(MicroKind.COMPLETE, key=key, owner=by, owners=(by,)))
        self.primary.complete_store(keys, ok)

    def pin(self, keys: list[Key], owner: PinOwner) -> list[int]:
        """One pin of each of `keys` (READY or LOADING) for `owner`; their slots.
        Complexity: O(len(keys))."""
        slots = self.primary.prepare_load(keys)
        if self.log is not None:
            for key in keys:
                self.log.append(Micro(MicroKind.PIN, key=key, owner=owner))
        return slots

    def evicted(self, keys: list[Key]) -> None:
        """Record the primary's victims. Complexity: O(len(keys))."""
        if self.log is not None:
            for key in keys:
                self.log.append(Micro(MicroKind.EVICT, key=key, state=CpuState.READY))

    # ------------------------------------------------------------ polling

    def poll_gated(self) -> None:
        """The step's poll point: the first one of a step takes every tier's reports.
        Complexity: O(reports)."""
        if self.gate:
            return
        self.gate = True
        self.process_finished(range(len(self.tiers)))

    def process_finished(self, tiers: Sequence[int] | range) -> None:
        """Take the reports of the tiers `tiers`, each in the order its tier gives.
        Complexity: O(reports + their keys)."""
        for t in tiers:
            try:
                reports = list(self.tiers[t].finished_jobs())
            except Exception:
                self.tier_errors += 1
                continue
            for item in reports:
                self.process_report(t, item)

    def process_report(self, t: int, item: object) -> None:
        """One report of tier `t`: a job of that tier in flight is processed -- a
        promotion completes its chunks (the written keys READY, the others ABSENT,
        keys it does not have ignored), a store job releases its pins; anything else is
        ignored. Complexity: O(len(job keys))."""
        if not isinstance(item, tuple) or len(item) != 2:
            self.ignored_reports += 1
            return
        jid, outcome = item
        rec = self.jobs.get(JobId(jid)) if isinstance(jid, int) else None
        if (
            rec is None
            or not isinstance(outcome, JobOutcome)
            or rec.job.tier != t
            or rec.phase is not _SUBMITTED
        ):
            self.ignored_reports += 1
            return
        job = rec.job
        del self.jobs[job.job]
        if job.kind is JobKind.PROMOTION:
            written = [k for k in job.keys if outcome.succeeded(k)]
            by = SubmittedPromotion(job.job)
            self.complete(written, by, True)
            if len(written) < len(job.keys):
                done = set(written)
                self.complete([k for k in job.keys if k not in done], by, False)
            return
        self.primary.complete_load(list(job.keys))

    # ------------------------------------------------------------ lookups

    def lookup(self, key: Key, req: ReqId, exclude: int) -> TierAnswer:
        """One key: the primary first; on a miss the tiers in order (but `exclude`), a
        tier's HIT starting a promotion. A HIT joins the open hold. Complexity: O(T),
        plus a promotion's."""
        self.poll_gated()
        got = self.primary.lookup(key)
        if got is LookupResult.HIT:
            answer = _HIT
        elif got is LookupResult.HIT_PENDING:
            answer = _PENDING
        elif self.held or not self.tiers:
            answer = _MISS
        else:
            answer = self.tier_lookups(key, req, exclude)
        if self.log is not None:
            self.log.append(Micro(MicroKind.LOOKUP, key=key, answer=answer, who=req))
        if answer is _HIT and self.hold is not None:
            self.hold.append(key)
        return answer

    def tier_lookups(self, key: Key, req: ReqId, exclude: int) -> TierAnswer:
        """The tiers' answers for an absent key. Complexity: O(T), plus a promotion's."""
        retry = False
        for t, tier in enumerate(self.tiers):
            if t == exclude:
                continue
            try:
                got = tier.lookup(key, req)
            except Exception:
                self.tier_errors += 1
                continue
            if got is _HIT:
                return _PENDING if self.promote(TierId(t), key, req) else _MISS
            if got is _RETRY:
                retry = True
        return _RETRY if retry else _MISS

    def promote(self, t: TierId, key: Key, req: ReqId) -> bool:
        """Allocate `key`'s chunk for a promotion from tier `t` and stage it, evicting
        only idle chunks that this hold did not report HIT; False when there is no
        room. Complexity: O(1 + victims + the hold's HITs when it evicts)."""
        batch = [key]
        if self.hold and self.primary.num_free < 1:
            held = dict.fromkeys(self.hold)
            if self.region:  # a region's HITs may have left since (a GPU store evicted)
                look = self.primary.lookup
                held = {k: None for k in held if look(k) is LookupResult.HIT}
            batch.extend(k for k in held if k != key)
        out = self.primary.prepare_store(batch)
        if out is None or not out.keys_to_store:
            return False
        self.evicted(out.evicted_keys)
        by_req = self.staged.get(t)
        if by_req is None:
            by_req = self.staged[t] = {}
        entry = by_req.get(req)
        if entry is None:
            entry = by_req[req] = ([], [])
        entry[0].append(key)
        entry[1].append(out.slot_ids[0])
        return True

    # ------------------------------------------------------------ jobs

    def store_job(self, keys: list[Key], req: ReqId, t: int, kind: JobKind) -> JobRecord:
        """Pin `keys` (readable) for a job that reads them and register it.
        Complexity: O(len(keys))."""
        j = JobId(self.next_job)
        owner: PinOwner = Cascade(j) if kind is JobKind.CASCADE else PeerStore(j)
        slots = self.pin(keys, owner)
        self.next_job += 1
        rec = JobRecord(TierJob(j, TierId(t), kind, tuple(keys), tuple(slots), req))
        self.jobs[j] = rec
        return rec

    def submit(self, rec: JobRecord) -> bool:
        """Hand a registered job to its tier; a tier that raises fails it at once (its
        pins released, or its chunks aborted). Complexity: O(len(keys))."""
        job = rec.job
        tier = self.tiers[job.tier]
        try:
            if job.kind is JobKind.PROMOTION:
                tier.submit_load(job)
            else:
                tier.submit_store(job)
        except Exception:
            self.tier_errors += 1
            del self.jobs[job.job]
            if job.kind is JobKind.PROMOTION:
                self.complete(list(job.keys), SubmittedPromotion(job.job), False)
            else:
                self.primary.complete_load(list(job.keys))
            return False
        rec.phase = _SUBMITTED
        return True

    def cascade(self, keys: list[Key], req: ReqId, tiers: Sequence[int] | range) -> None:
        """One cascade job per tier of `tiers` pinning `keys`, each submitted at once.
        Complexity: O(len(tiers) * len(keys))."""
        if not keys:
            return
        for t in tiers:
            self.submit(self.store_job(keys, req, t, JobKind.CASCADE))

    def cascade_existing(self, keys: list[Key], r: RequestRecord) -> None:
        """The request-level tiers (but the request's origin) also get the request's
        keys already in the primary: the readable ones at once, the PENDING ones
        parked until they settle. Complexity: O(len(keys) * T)."""
        tiers = [t for t in self.level if t != r.origin]
        if not tiers or not keys:
            return
        ready: list[Key] = []
        for key in keys:
            got = self.primary.lookup(key)
            if got is LookupResult.HIT:
                ready.append(key)
            elif got is LookupResult.HIT_PENDING:
                r.parked.append(key)
                self.parked_keys += 1
        self.cascade(ready, r.req, tiers)

    # ------------------------------------------------------------ requests

    def end_request(self, r: RequestRecord) -> None:
        """The request finished (pre: ACTIVE); finalised now if nothing is outstanding.
        Complexity: O(T)."""
        r.phase = RequestPhase.FINISHED
        self.maybe_finalise(r)

    def maybe_finalise(self, r: RequestRecord) -> None:
        """Tell the tiers (but its origin) that a finished request ended, once its GPU
        stores are all completed and nothing is parked. Complexity: O(T)."""
        if r.phase is RequestPhase.FINISHED and not r.stores and not r.parked:
            self.finalise(r)

    def finalise(self, r: RequestRecord) -> None:
        """Every tier but the origin told once; the record kept only while its loads
        hold pins. Complexity: O(T) (amortised O(1) for the bounded memory)."""
        for t, tier in enumerate(self.tiers):
            if t == r.origin:
                continue
            try:
                tier.request_finished(r.req)
            except Exception:
                self.tier_errors += 1
        r.phase = RequestPhase.FINALISED
        if not r.loads:
            self.forget(r)

    def forget(self, r: RequestRecord) -> None:
        """A finalised request that holds nothing: only its id is remembered (a bounded
        number of them, oldest forgotten first). Complexity: O(1) amortised."""
        if self.requests.get(r.req) is r:
            del self.requests[r.req]
        self.gone[r.req] = r.origin
        while len(self.gone) > self.max_gone:
            del self.gone[next(iter(self.gone))]

    def release_loads(self, r: RequestRecord, keys: list[Key]) -> None:
        """The pins `r`'s load holds on `keys` go (keys it does not pin are ignored).
        Complexity: O(len(keys))."""
        loads = r.loads
        held: list[Key] = []
        for key in keys:
            n = loads.get(key, 0)
            if n:
                held.append(key)
                if n == 1:
                    del loads[key]
                else:
                    loads[key] = n - 1
        if held:
            self.primary.complete_load(held)
        if r.phase is RequestPhase.FINALISED and not loads:
            self.forget(r)

    # ------------------------------------------------------------ flushes

    def flush_staged(self) -> None:
        """Each (tier, request)'s staged promotions become one job, submitted (in the
        order they were first staged). Complexity: O(staged keys)."""
        staged, self.staged = self.staged, {}
        for t, by_req in staged.items():
            for req, (keys, slots) in by_req.items():
                j = JobId(self.next_job)
                self.next_job += 1
                rec = JobRecord(TierJob(j, t, JobKind.PROMOTION, tuple(keys), tuple(slots), req))
                self.jobs[j] = rec
                self.submit(rec)

    def flush_parked(self) -> None:
        """Parked request-level cascades are tried again (requests in arrival order);
        their requests may finalise. Complexity: O(R) when something is parked, else
        O(1)."""
        if not self.parked_keys:
            return
        waiting = sorted((r for r in self.requests.values() if r.parked), key=_seq)
        for r in waiting:
            keys, r.parked = r.parked, []
            self.parked_keys -= len(keys)
            self.cascade_existing(keys, r)
            self.maybe_finalise(r)

    # ------------------------------------------------------------ tiers

    def tier_call(self, t: int, what: str) -> None:
        """Call tier `t`'s `what` (no argument), a raise counted and ignored.
        Complexity: O(1) plus the tier's."""
        try:
            getattr(self.tiers[t], what)()
        except Exception:
            self.tier_errors += 1

    def pending_owners(self) -> dict[Key, PendingOwner]:
        """Who owns each PENDING chunk (for snapshots). Complexity: O(pending)."""
        owners: dict[Key, PendingOwner] = {}
        for r in self.requests.values():
            for key in r.stores:
                owners[key] = GpuStore(r.req)
        for t, by_req in self.staged.items():
            for req, (keys, _) in by_req.items():
                for key in keys:
                    owners[key] = StagedPromotion(t, req)
        for rec in self.jobs.values():
            if rec.job.kind is JobKind.PROMOTION:
                for key in rec.job.keys:
                    owners[key] = SubmittedPromotion(rec.job.job)
        return owners

    def pin_owners(self) -> dict[Key, list[PinOwner]]:
        """Every pin's owner, per key (for snapshots). Complexity: O(pins)."""
        pins: dict[Key, list[PinOwner]] = {}
        for r in self.requests.values():
            for key, n in r.loads.items():
                pins.setdefault(key, []).extend([GpuLoad(r.req)] * n)
        for rec in self.jobs.values():
            job = rec.job
            if job.kind is JobKind.PROMOTION:
                continue
            owner: PinOwner = (
                Cascade(job.job) if job.kind is JobKind.CASCADE else PeerStore(job.job)
            )
            for key in job.keys:
                pins.setdefault(key, []).append(owner)
        return pins


def _seq(r: RequestRecord) -> int:
    return r.seq
