"""The reference tiering orchestrator: docs/semantics.md, "Tiered offloading", as code.

`ModelTiering(config, profile="spec")` has one method per call of the scheduler (each one
lock hold of the orchestrator) and one per event of another thread or of a tier; it
satisfies `proofs.base.tiering_protocol.TieringAdapter`. Each method checks its guards
first (a one-line reason each; a refused call raises a typed error of `model.errors` and
changes nothing), then makes its change through the mechanisms of `model.tiering_core`.

Profiles: `spec` (the default) is the fixed orchestrator -- every invariant of
`model.tiering_invariants` holds in every state it reaches and no lookup says "try later"
for ever, whatever a tier does; `vllm-0.33` is what vLLM 0.33's `TieringOffloadingManager`
does, its defects included: where vLLM fails an assertion half way the model raises
`TieringAssertionError` and keeps vLLM's half-done state, and a tier's raising submit
escapes the call (`TierSubmitError`).

`snapshot()` is the whole state; `ModelTiering.restore(snapshot, profile)` rebuilds a
model from one (the explorer's states are snapshots).
"""

from __future__ import annotations

from collections.abc import Collection

from evictable.model.errors import (
    InvalidArgumentError,
    RequestFinishedError,
    ShutdownError,
    UnknownJobError,
    UnknownRequestError,
    UnknownTierError,
)
from evictable.model.lifecycle import CpuState
from evictable.model.tiering_core import Orchestrator
from evictable.model.tiering_snapshot import restore_state, take_snapshot
from evictable.model.tiering_tables import (
    JOB_TABLE,
    PEER_TABLE,
    PROBE_TABLE,
    CopyEvent,
    JobEvent,
    PeerEvent,
    ProbeEvent,
    step_phase,
)
from evictable.model.tiering_tiers import Peer, Request
from evictable.model.tiering_types import (
    GpuLoad,
    GpuStore,
    JobId,
    JobOutcome,
    JobPhase,
    Micro,
    MicroKind,
    OutcomeKind,
    PeerPhase,
    ProbePhase,
    Profile,
    ReqId,
    RequestPhase,
    StoreOutcome,
    TierAnswer,
    TierId,
    TieringConfig,
    TieringSnapshot,
    TierSpec,
)
from evictable.model.types import Key, PrepareStoreOutput
from evictable.model.validate import check_key, check_keys, check_num_blocks

__all__ = ["ModelTiering", "check_config", "check_profile"]


def check_profile(profile: object) -> Profile:
    """A profile name or `Profile`; else `InvalidArgumentError` naming the known ones."""
    if isinstance(profile, Profile):
        return profile
    for p in Profile:
        if profile == p.value:
            return p
    known = ", ".join(p.value for p in Profile)
    raise InvalidArgumentError(f"unknown tiering profile {profile!r}; known profiles: {known}")


def check_config(config: object) -> TieringConfig:
    """A `TieringConfig` with a non-negative slot count and `TierSpec` tiers."""
    if not isinstance(config, TieringConfig):
        raise InvalidArgumentError(f"config must be a TieringConfig, got {type(config).__name__}")
    check_num_blocks(config.num_slots, "num_slots")
    if not isinstance(config.tiers, tuple) or not all(
        isinstance(t, TierSpec) for t in config.tiers
    ):
        raise InvalidArgumentError("config.tiers must be a tuple of TierSpec")
    return config


def _check_req(req: object) -> ReqId:
    if not isinstance(req, str):
        raise InvalidArgumentError(f"a request id is a str, got {type(req).__name__} {req!r}")
    return ReqId(req)


class ModelTiering(Orchestrator):
    """The tiering orchestrator as a specification (see the module doc)."""

    def __init__(self, config: TieringConfig, profile: str | Profile = Profile.SPEC) -> None:
        super().__init__(check_config(config), check_profile(profile))

    # ------------------------------------------------------------------ guards

    def _open(self, call: str) -> None:
        """Every call after `shutdown` is refused."""
        if self.closed:
            raise ShutdownError(call)

    def _tier(self, tier: object) -> TierId:
        """A tier index in 0..T-1 (not a bool)."""
        if isinstance(tier, bool) or not isinstance(tier, int) or not 0 <= tier < len(self.tiers):
            raise UnknownTierError(tier, f"{len(self.tiers)} tiers")
        return TierId(tier)

    def _known(self, req: object, *, finalised_ok: bool = False) -> Request:
        """A request the orchestrator holds (finalised ones only where `finalised_ok`)."""
        r = self.requests.get(_check_req(req))
        if r is None or (r.phase is RequestPhase.FINALISED and not finalised_ok):
            raise UnknownRequestError(str(req), "never added" if r is None else "finalised")
        return r

    def _begin(self) -> None:
        """A call starts its record afresh (a hold left open by a raising call closes)."""
        self.log.clear()
        self.hold = None

    # -------------------------------------------------------- scheduler side

    def new_request(self, req: ReqId) -> None:
        """A request arrives. spec: a known id is refused (`DuplicateRequestError`);
        vLLM 0.33 replaces its state, losing its outstanding stores."""
        self._open("new_request")
        _check_req(req)
        self._begin()
        self.add_request(req, None)

    def scan(self, req: ReqId, keys: Collection[Key]) -> int | None:
        """The prefix scan of `req`: lookups in order until the first MISS (HIT and
        HIT_PENDING count; a HIT_PENDING or a RETRY makes the answer None, "try later"),
        and in the same hold the pin of the n hits it answers (`GpuLoad(req)`)."""
        self._open("scan")
        r = self._known(req)
        if r.phase is not RequestPhase.ACTIVE:
            raise RequestFinishedError(req, "a finished request is not scanned")
        seq, _ = check_keys(keys)
        self._begin()
        self.hold = []
        self.log.append(Micro(MicroKind.OPEN, who=r.req))
        hits, later = 0, False
        for key in seq:
            answer = self.lookup(key, r.req)
            if answer is TierAnswer.MISS:
                break
            hits += answer is not TierAnswer.RETRY
            later |= answer is not TierAnswer.HIT
        result = None if later else hits
        if result:
            for key in seq[:result]:
                if self.primary.state(key) not in (CpuState.READY, CpuState.LOADING):
                    self.fail("prepare_load", f"chunk {key!r} is not readable", [key])
                self.primary.pin(key, GpuLoad(r.req))
                r.loads.append(key)
        self.log.append(Micro(MicroKind.CLOSE, who=r.req))
        self.hold = None
        return result

    def store(self, req: ReqId, keys: Collection[Key]) -> StoreOutcome | None:
        """Prepare the GPU store of `keys` (after a poll of every tier): the ABSENT keys
        become PENDING under `GpuStore(req)`, evicting idle unprotected chunks; None when
        there is no room. Request-level tiers also get the keys already resident."""
        self._open("store")
        seq, _ = check_keys(keys)
        r = self.requests.get(_check_req(req))
        known = r is not None and r.phase is not RequestPhase.FINALISED
        if self.spec and not known:
            self._known(req)
        self._begin()
        self.gate = True
        self.process_finished(self.tiers)
        got = self.primary.allocate(seq, GpuStore(ReqId(req)), [])
        if got is None:
            return None
        stored, slots, evicted = got
        if r is None or not known:
            raise UnknownRequestError(str(req), "its store was allocated, then its state read")
        if stored:
            r.store_calls += 1
            r.stores.extend(stored)
        self.cascade_existing([k for k in seq if k not in stored], r)
        return PrepareStoreOutput(list(stored), slots, evicted)

    def complete_store(self, req: ReqId, keys: Collection[Key], success: bool = True) -> None:
        """The GPU store of `keys` finished. spec: only the keys this store still owns
        complete (READY, or ABSENT on failure; others are ignored: a store a reset
        cancelled, even of a request since finalised, completes nothing) and only those
        are cascaded, one job per tier; vLLM 0.33 completes every PENDING key named and
        cascades all of them, then counts the store done (asserting one was pending)."""
        self._open("complete_store")
        seq, _ = check_keys(keys)
        if type(success) is not bool:
            raise InvalidArgumentError(f"success must be a bool, got {success!r}")
        r = self.requests.get(_check_req(req))
        known = r is not None and r.phase is not RequestPhase.FINALISED
        if self.spec:
            r = self._known(req, finalised_ok=True)
        self._begin()
        done = [k for k in seq if self.complete_chunk(k, GpuStore(ReqId(req)), success)]
        if success:
            self.cascade(done if self.spec else seq, ReqId(req), self.tiers)
        if r is None or not (known or self.spec):
            raise UnknownRequestError(str(req), "its store completed, then its state read")
        if not self.spec:
            if r.store_calls <= 0:
                self.fail("complete_store", "no prepare_store of this request is pending")
            r.store_calls -= 1
        self.maybe_finalise(r)

    def complete_load(self, req: ReqId, keys: Collection[Key]) -> None:
        """The GPU load of `keys` for `req` finished: `GpuLoad(req)`'s pins go. spec: only
        the pins the request holds are released (a load a reset cancelled releases
        nothing); vLLM 0.33 releases one pin per key named, whoever holds it, and asserts
        each is loading, key by key."""
        self._open("complete_load")
        seq, _ = check_keys(keys)
        r = self.requests.get(_check_req(req))
        owner = GpuLoad(ReqId(req))
        if self.spec:
            r = self._known(req, finalised_ok=True)
        self._begin()
        for key in seq:
            held = r is not None and key in r.loads
            if self.spec and not held:
                continue
            if self.primary.state(key) is not CpuState.LOADING:
                self.fail("complete_load", f"chunk {key!r} has no load in flight", [key])
            self.primary.unpin(key, owner)
            if r is not None and held:
                r.loads.remove(key)

    def finish(self, req: ReqId) -> None:
        """The request finished: finalised at once when no GPU store is outstanding and
        nothing is parked, else by the last of them. spec: a second `finish` is refused."""
        self._open("finish")
        r = self._known(req)
        self._begin()
        self.end_request(r)

    def end_step(self) -> None:
        """The end of a scheduler step: the step's poll point (if none came earlier),
        the serving tiers' peers, the gate reset, staged promotions submitted (one job
        per tier and request), parked cascades retried, the tiers' own end of step."""
        self._open("end_step")
        self._begin()
        self.poll_gated()
        for t in self.tiers:
            self.serve(t)
        self.gate = False
        self.flush_staged()
        self.flush_parked()
        self.tier_end_of_step()

    def poll(self) -> None:
        """One poll round, between holds: the serving tiers' reports, then their peers;
        the step's gate is left as it was."""
        self._open("poll")
        self._begin()
        serving = [t for t in self.tiers if self.config.tiers[t].serving]
        saved, self.gate = self.gate, True
        try:
            self.process_finished(serving)
            for t in serving:
                self.serve(t)
        finally:
            self.gate = saved

    def reset(self) -> None:
        """Reset the cache: the tiers drain, every report is taken, then nothing is left
        in flight, staged or pinned; finished requests are finalised, active ones keep
        running with nothing outstanding; promotions are held until `reset_flushed`.
        vLLM 0.33 asserts (half reset) when a job was never reported."""
        self._open("reset")
        self._begin()
        self.drain()
        self.process_finished(self.tiers)
        if self.jobs and not self.spec:
            self.fail("reset_cache", f"jobs {sorted(self.jobs)} were never reported")
        self.jobs.clear()  # spec: what no tier reported fails with the reset
        self.staged.clear()
        for r in self.requests.values():
            r.loads.clear()  # a finalised request's loads too: the reset cancelled them
            if r.phase is RequestPhase.FINALISED:
                continue
            r.stores.clear()
            r.parked.clear()
            r.store_calls = 0
            if r.phase is RequestPhase.FINISHED:
                self.finalise(r, exclude=r.origin if self.spec else None)
        self.primary.reset()
        self.gate = False
        self.held = bool(self.config.tiers)

    def reset_flushed(self) -> None:
        """What the reset cancelled has been flushed: promotions are allowed again."""
        self._open("reset_flushed")
        self._begin()
        self.held = False

    def shutdown(self) -> None:
        """The orchestrator is shut down; every later call is refused."""
        self._open("shutdown")
        self._begin()
        self.closed = True

    def has_pending_work(self) -> bool:
        """Whether the engine must keep stepping: a job (any phase), a parked cascade, a
        tier's own work (a probe waiting, a peer's lookup queued or parked), and in
        `spec` a staged promotion."""
        staged = self.pending_counts_staged and any(self.staged.values())
        parked = any(r.parked for r in self.requests.values())
        return bool(self.jobs) or staged or parked or self.tier_pending_work()

    # --------------------------------------------------- other threads, tiers

    def job_finishes(self, job: JobId, outcome: JobOutcome) -> None:
        """Submitted job `job` finishes at its tier (seen at the next poll point)."""
        self._open("job_finishes")
        if not isinstance(outcome, JobOutcome):
            raise InvalidArgumentError(f"outcome must be a JobOutcome, got {outcome!r}")
        found = self.jobs.get(job) if isinstance(job, int) else None
        if found is None or found.phase is not JobPhase.SUBMITTED:
            step_phase(
                JOB_TABLE, found.phase if found else JobPhase.NONE, JobEvent.FINISH, item=job
            )
            raise UnknownJobError(job)  # not reached: the table refuses every other phase
        if outcome.kind is OutcomeKind.PARTIAL:
            check_keys(outcome.ok_keys)  # a tier may name keys the job has not (garbage)
        self._begin()
        self.tier_finishes(found, outcome)

    def submit_raises(self, tier: TierId) -> None:
        """Arm tier `tier`'s next submit to raise."""
        self._open("submit_raises")
        t = self._tier(tier)
        self._begin()
        self.armed.add(t)

    def probe_answers(self, tier: TierId, key: Key, found: bool) -> None:
        """The probe of `key` at asynchronous tier `tier` answers `found`."""
        self._open("probe_answers")
        t = self._tier(tier)
        if not self.config.tiers[t].async_lookup:
            raise UnknownTierError(tier, "it has no asynchronous lookups")
        if type(found) is not bool:
            raise InvalidArgumentError(f"found must be a bool, got {found!r}")
        probe = self.probes.get((t, check_key(key)))
        phase = probe.phase if probe is not None else ProbePhase.NONE
        case = "a request uses it" if probe is not None and probe.reqs else ""
        if phase is ProbePhase.IN_FLIGHT and not case:
            case = "no request uses it any more: dropped"
        after = step_phase(PROBE_TABLE, phase, ProbeEvent.ANSWER, case, item=(tier, key))
        if probe is None:
            raise UnknownJobError((tier, key))  # not reached: the table refuses NONE
        self._begin()
        if after is ProbePhase.NONE:
            del self.probes[(t, key)]
        else:
            probe.phase, probe.found = after, found

    def peer_request(self, tier: TierId, keys: Collection[Key]) -> None:
        """A peer asks serving tier `tier` to look `keys` up and pin the hits; served at
        the tier's next serve point (`end_step`, or a poll round)."""
        self._open("peer_request")
        t = self._tier(tier)
        if not self.config.tiers[t].serving:
            raise UnknownTierError(tier, "it serves no peers")
        seq, _ = check_keys(keys)
        self._begin()
        self.peers.append(Peer(t, self._peer_id(), tuple(seq), PeerPhase.QUEUED))

    def peer_gives_up(self, tier: TierId) -> None:
        """The deadline of the oldest lookup parked at serving tier `tier` passes: its
        pending keys are answered MISS and its request finalised."""
        self._open("peer_gives_up")
        t = self._tier(tier)
        parked = [p for p in self.peers if p.tier == t and p.phase is PeerPhase.PARKED]
        if not parked:
            queued = any(p.tier == t for p in self.peers)
            phase = PeerPhase.QUEUED if queued else PeerPhase.NONE
            step_phase(PEER_TABLE, phase, PeerEvent.GIVE_UP, item=tier)
            raise UnknownJobError(tier)  # not reached: the table refuses both
        self._begin()
        peer = parked[0]
        for key in peer.pending:
            peer.resolved[key] = False
        peer.pending.clear()
        step_phase(PEER_TABLE, peer.phase, PeerEvent.GIVE_UP)
        self.peers.remove(peer)
        self.end_request(self.requests[peer.req])

    def tier_reports_unknown(self, tier: TierId) -> None:
        """Tier `tier` will report, at its next poll, a job id it was never given."""
        self._open("tier_reports_unknown")
        t = self._tier(tier)
        self._begin()
        self.strays.add(t)

    def tier_drops(self, tier: TierId, key: Key) -> None:
        """Tier `tier` loses its copy of `key` (nothing happens to a copy being written)."""
        self._open("tier_drops")
        t = self._tier(tier)
        check_key(key)
        self._begin()
        self.copy_event(t, key, CopyEvent.LOST, None)

    def _peer_id(self) -> ReqId:
        used = [r for r in self.requests] + [p.req for p in self.peers]
        taken = [int(r[4:]) for r in used if r.startswith("peer") and r[4:].isdigit()]
        return ReqId(f"peer{max(taken, default=-1) + 1}")

    # ---------------------------------------------------------- snapshot, restore

    def snapshot(self) -> TieringSnapshot:
        """Everything observable; `log` is the record of the last call."""
        return take_snapshot(self, self.has_pending_work())

    @classmethod
    def restore(cls, snap: TieringSnapshot, profile: str | Profile = Profile.SPEC) -> ModelTiering:
        """A model in the state `snap` describes (a snapshot of a `ModelTiering` of the
        same profile); its log is empty."""
        m = cls(snap.config, profile)
        restore_state(m, snap)
        return m
