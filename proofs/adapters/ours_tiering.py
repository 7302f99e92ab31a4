"""Our tiering orchestrator (`evictable.impl.tiering.TieringManager`) behind the tiering
adapter protocol (`proofs.base.tiering_protocol.TieringAdapter`), over harness tiers
(`proofs.adapters.harness_tier.HarnessTier`) that do what the model's tiers do when the
engine says so.

`OursTiering(config)` builds the orchestrator with a harness tier per `TierSpec` and an
LRU primary of `config.num_slots` slots; `start(snapshot)` brings it to an explorer's
start state (READY chunks, least recent first in slot order, and PRESENT copies). The
scheduler's calls go to the orchestrator as they are; the tiers' events go to the
harness tiers, validated as the model validates them. `snapshot()` is the
orchestrator's state (the owners of its chunks read from its records) together with
its tiers' (copies, probes, peers' lookups, armed faults, reports not yet taken), in
the model's shape and orders, so the explorer and `evictable check --target tiering`
compare it with the model's `spec` profile state for state.

`ours_tiering` is the factory (`evictable check --target tiering
evictable.proofs.adapters.ours_tiering:ours_tiering`); `partner(snapshot)` is the
explorer's lock-step partner.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.tiering import TieringManager
from evictable.model.errors import (
    InvalidArgumentError,
    ShutdownError,
    UnknownJobError,
    UnknownTierError,
)
from evictable.model.tiering_tables import (
    PEER_TABLE,
    PROBE_TABLE,
    CopyEvent,
    PeerEvent,
    ProbeEvent,
    step_phase,
)
from evictable.model.tiering_tiers import Peer
from evictable.model.tiering_types import (
    ChunkEntry,
    CopyEntry,
    CopyState,
    JobEntry,
    JobId,
    JobOutcome,
    JobPhase,
    OutcomeKind,
    PeerEntry,
    PeerPhase,
    PendingOwner,
    PrimarySnapshot,
    ProbeEntry,
    ProbePhase,
    Profile,
    ReqId,
    RequestEntry,
    RequestPhase,
    StagedEntry,
    StoreOutcome,
    TierId,
    TieringConfig,
    TieringSnapshot,
    TierSpec,
    owner_order,
)
from evictable.model.types import Key
from evictable.model.validate import check_key, check_keys
from evictable.proofs.adapters.harness_tier import HarnessTier
from evictable.proofs.base.tiering_protocol import start_chunks

__all__ = ["OursTiering", "ours_tiering", "partner", "partner_of"]


class OursTiering:
    """Our orchestrator over harness tiers, as a tiering adapter (module doc)."""

    def __init__(
        self, config: TieringConfig, policy: str = "lru", cls: type[TieringManager] = TieringManager
    ) -> None:
        """`cls`: the orchestrator class (ours, or a seeded-bug copy of it)."""
        if not isinstance(config, TieringConfig):
            raise InvalidArgumentError(f"config must be a TieringConfig, got {config!r}")
        self.config = config
        self.peers: list[Peer] = []
        self.tiers = [HarnessTier(i, spec, self.peers) for i, spec in enumerate(config.tiers)]
        self.policy = policy
        self.cls = cls
        self.m = cls(config.num_slots, self.tiers, policy, trace=True)
        self.next_peer = 0

    def start(self, snap: TieringSnapshot) -> None:
        """Bring this fresh orchestrator to the start state `snap`: READY chunks (least
        recent first in slot order, slots 0..) and PRESENT copies; anything else is
        refused (`InvalidArgumentError`)."""
        order = tuple(c.key for c in start_chunks(snap, self.config))
        if snap.primary.evictable not in (None, order):
            raise InvalidArgumentError("a start state holds READY chunks and tier copies only")
        primary = CPUOffloadingManager(self.config.num_slots, self.policy)
        for key in order:
            primary.prepare_store([key])
            primary.complete_store([key])
        self.m = self.cls(primary=primary, tiers=self.tiers, trace=True)
        for c in snap.copies or ():
            self.tiers[c.tier].copies[c.key] = (CopyState.PRESENT, None)

    # ------------------------------------------------------------ scheduler side

    def new_request(self, req: ReqId) -> None:
        self.m.new_request(req)

    def scan(self, req: ReqId, keys: Sequence[Key]) -> int | None:
        return self.m.scan(req, keys)

    def store(self, req: ReqId, keys: Sequence[Key]) -> StoreOutcome | None:
        return self.m.store(req, keys)

    def complete_store(self, req: ReqId, keys: Sequence[Key], success: bool = True) -> None:
        self.m.complete_store(req, keys, success)

    def complete_load(self, req: ReqId, keys: Sequence[Key]) -> None:
        self.m.complete_load(req, keys)

    def finish(self, req: ReqId) -> None:
        self.m.finish(req)

    def end_step(self) -> None:
        self.m.end_step()

    def poll(self) -> None:
        self.m.poll()

    def reset(self) -> None:
        self.m.reset()

    def reset_flushed(self) -> None:
        self.m.reset_flushed()

    def shutdown(self) -> None:
        self.m.shutdown()

    def has_pending_work(self) -> bool:
        return self.m.has_pending_work()

    # ------------------------------------------------------------ events

    def event(self, call: str, tier: object = None) -> HarnessTier | None:
        """The event's guards (shut down; a tier index), then a fresh record."""
        if self.m.closed:
            raise ShutdownError(call)
        got = None
        if tier is not None:
            n = len(self.tiers)
            if isinstance(tier, bool) or not isinstance(tier, int) or not 0 <= tier < n:
                raise UnknownTierError(tier, f"{n} tiers")
            got = self.tiers[tier]
        return got

    def job_finishes(self, job: JobId, outcome: JobOutcome) -> None:
        self.event("job_finishes")
        if not isinstance(outcome, JobOutcome):
            raise InvalidArgumentError(f"outcome must be a JobOutcome, got {outcome!r}")
        rec = self.m.jobs.get(job) if isinstance(job, int) else None
        tier = self.tiers[rec.job.tier] if rec is not None else None
        if rec is None or tier is None or job not in tier.held:
            raise UnknownJobError(job)
        if outcome.kind is OutcomeKind.PARTIAL:
            check_keys(outcome.ok_keys)
        self.m.begin()
        tier.finishes(job, outcome)

    def submit_raises(self, tier: TierId) -> None:
        t = self.event("submit_raises", tier)
        assert t is not None
        self.m.begin()
        t.armed = True

    def probe_answers(self, tier: TierId, key: Key, found: bool) -> None:
        t = self.event("probe_answers", tier)
        assert t is not None
        if not t.spec.async_lookup:
            raise UnknownTierError(tier, "it has no asynchronous lookups")
        if type(found) is not bool:
            raise InvalidArgumentError(f"found must be a bool, got {found!r}")
        probe = t.probes.get(check_key(key))
        phase = probe.phase if probe is not None else ProbePhase.NONE
        case = "a request uses it" if probe is not None and probe.reqs else ""
        if phase is ProbePhase.IN_FLIGHT and not case:
            case = "no request uses it any more: dropped"
        after = step_phase(PROBE_TABLE, phase, ProbeEvent.ANSWER, case, item=(tier, key))
        if probe is None:
            raise UnknownJobError((tier, key))
        self.m.begin()
        if after is ProbePhase.NONE:
            del t.probes[key]
        else:
            probe.phase, probe.found = after, found

    def peer_request(self, tier: TierId, keys: Sequence[Key]) -> None:
        t = self.event("peer_request", tier)
        assert t is not None
        if not t.serving:
            raise UnknownTierError(tier, "it serves no peers")
        seq, _ = check_keys(keys)
        self.m.begin()
        self.peers.append(Peer(t.index, self.peer_id(), tuple(seq), PeerPhase.QUEUED))

    def peer_gives_up(self, tier: TierId) -> None:
        t = self.event("peer_gives_up", tier)
        assert t is not None
        parked = [p for p in self.peers if p.tier == t.index and p.phase is PeerPhase.PARKED]
        if not parked:
            queued = any(p.tier == t.index for p in self.peers)
            phase = PeerPhase.QUEUED if queued else PeerPhase.NONE
            step_phase(PEER_TABLE, phase, PeerEvent.GIVE_UP, item=tier)
            raise UnknownJobError(tier)
        peer = parked[0]
        for key in peer.pending:
            peer.resolved[key] = False
        peer.pending.clear()
        self.peers.remove(peer)
        self.m.finish(peer.req)

    def tier_reports_unknown(self, tier: TierId) -> None:
        t = self.event("tier_reports_unknown", tier)
        assert t is not None
        self.m.begin()
        t.stray = True

    def tier_drops(self, tier: TierId, key: Key) -> None:
        t = self.event("tier_drops", tier)
        assert t is not None
        check_key(key)
        self.m.begin()
        t.copy_event(key, CopyEvent.LOST, None)

    def peer_id(self) -> ReqId:
        """The model's name for the next peer's request (`peerN`, N past every peer id
        used)."""
        used = [*self.m.requests, *self.m.gone, *(p.req for p in self.peers)]
        taken = [int(r[4:]) for r in used if r.startswith("peer") and r[4:].isdigit()]
        return ReqId(f"peer{max([*taken, self.next_peer - 1], default=-1) + 1}")

    # ------------------------------------------------------------ snapshot

    def snapshot(self) -> TieringSnapshot:
        m = self.m
        base = m.primary.snapshot()
        owners = m.pending_owners()
        pins = m.pin_owners()
        chunks = frozenset(
            ChunkEntry(
                b.key,
                b.state,
                b.slot,
                b.ref_cnt,
                _owners(owners, b.key),
                tuple(sorted(pins.get(b.key, ()), key=owner_order)),
            )
            for b in base.blocks
        )
        evictable = getattr(base.policy, "evictable", None)
        primary = PrimarySnapshot(
            base.num_blocks,
            chunks,
            base.free_stack,
            base.high_water,
            tuple(evictable) if evictable is not None else None,
        )
        jobs = []
        for j in sorted(m.jobs):
            job = m.jobs[j].job
            tier = self.tiers[job.tier]
            phase, outcome = m.jobs[j].phase, None
            if j in tier.done:
                phase, outcome = JobPhase.FINISHED_UNSEEN, tier.done[j]
            jobs.append(
                JobEntry(j, job.tier, job.kind, job.keys, job.slots, job.req, phase, outcome)
            )
        staged = tuple(
            StagedEntry(t, req, tuple(keys), tuple(slots))
            for t, by_req in m.staged.items()
            for req, (keys, slots) in by_req.items()
        )
        return TieringSnapshot(
            config=self.config,
            primary=primary,
            copies=frozenset(
                CopyEntry(t.index, k, state, job)
                for t in self.tiers
                for k, (state, job) in t.copies.items()
            ),
            jobs=tuple(jobs),
            staged=staged,
            requests=self.requests(),
            probes=frozenset(
                ProbeEntry(t.index, k, p.phase, p.found, frozenset(p.reqs))
                for t in self.tiers
                for k, p in t.probes.items()
            ),
            peers=tuple(
                PeerEntry(
                    p.tier, p.req, p.keys, p.phase, tuple(p.resolved.items()), tuple(p.pending)
                )
                for p in self.peers
            ),
            pending_work=m.has_pending_work(),
            gate=m.gate,
            held=m.held,
            armed=frozenset(t.index for t in self.tiers if t.armed),
            next_job=m.next_job,
            closed=m.closed,
            log=tuple(m.log or ()),
            strays=frozenset(t.index for t in self.tiers if t.stray),
        )

    def requests(self) -> tuple[RequestEntry, ...]:
        m = self.m
        out = []
        for r in m.requests.values():
            loads = tuple(k for k, n in r.loads.items() for _ in range(n))
            out.append(
                RequestEntry(
                    r.req,
                    r.phase,
                    tuple(r.stores),
                    loads,
                    tuple(r.parked),
                    None,
                    tuple(t.finalised[r.req] for t in self.tiers),
                    r.origin,
                )
            )
        for req, origin in m.gone.items():
            counts = tuple(t.finalised[req] for t in self.tiers)
            out.append(RequestEntry(req, RequestPhase.FINALISED, finalised=counts, origin=origin))
        return tuple(sorted(out, key=lambda e: e.req))


def _owners(owners: dict[Key, PendingOwner], key: Key) -> tuple[PendingOwner, ...]:
    got = owners.get(key)
    return () if got is None else (got,)


def ours_tiering(config: TieringConfig) -> OursTiering:
    """Our orchestrator (LRU primary) over a harness tier per `TierSpec` of `config`."""
    return OursTiering(config)


ours_tiering.evictable_tiering = TieringConfig(  # type: ignore[attr-defined]
    num_slots=2, tiers=(TierSpec("harness"), TierSpec("serving", serving=True))
)
ours_tiering.evictable_tiering_profile = Profile.SPEC.value  # type: ignore[attr-defined]
ours_tiering.evictable_tiering_compare = "state"  # type: ignore[attr-defined]


def partner(snap: TieringSnapshot) -> OursTiering:
    """The explorer's lock-step partner: ours, in the start state `snap`."""
    return partner_of(TieringManager)(snap)


def partner_of(cls: type[TieringManager]) -> Callable[[TieringSnapshot], OursTiering]:
    """The lock-step partner made of orchestrator class `cls` (a seeded bug's)."""

    def build(snap: TieringSnapshot) -> OursTiering:
        made = OursTiering(snap.config, cls=cls)
        made.start(snap)
        return made

    return build
