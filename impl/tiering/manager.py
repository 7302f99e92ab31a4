"""Our tiering orchestrator: a CPU primary tier in front of any number of secondary
tiers, under one lock (docs/semantics.md, "Tiered offloading", profile `spec`;
docs/interop.md, "Our orchestrator").

    from evictable.impl.tiering import TieringManager
    m = TieringManager(num_slots=1024, tiers=[disk_tier], policy="lru")
    m.new_request("r1")
    n = m.scan("r1", keys)          # hits pinned for r1's load, or None: try later
    out = m.store("r1", more_keys)  # slots to write, or None: no room
    m.complete_store("r1", more_keys)
    m.end_step()

Every scheduler call is one hold of the lock; `poll()` is one poll round of the serving
tiers, callable from a thread. Each call validates its arguments first and raises a
typed error of `evictable.errors` with nothing changed. The safety invariants of the
model's `spec` profile hold by construction whatever a tier does (module doc of
`impl.tiering.core`); a prefix whose promotions do not fit in the primary answers the
part that fits instead of "try later" for ever.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from evictable.impl.batches import check_keys
from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.tiering.core import RequestRecord, TieringCore
from evictable.impl.tiering.tiers import SecondaryTier, TierJob
from evictable.model.errors import (
    InvalidArgumentError,
    RequestFinishedError,
    ShutdownError,
    UnknownRequestError,
)
from evictable.model.tiering_types import (
    GpuLoad,
    GpuStore,
    JobKind,
    JobPhase,
    Micro,
    MicroKind,
    ReqId,
    RequestPhase,
    TierAnswer,
    TierId,
)
from evictable.model.types import Key, PrepareStoreOutput
from evictable.model.validate import check_num_blocks

__all__ = ["TIER_METHODS", "Parent", "TieringManager"]

_SUBMITTED = JobPhase.SUBMITTED

TIER_METHODS: tuple[str, ...] = (
    "lookup",
    "submit_store",
    "submit_load",
    "finished_jobs",
    "drain",
    "serve_peers",
    "new_request",
    "request_finished",
    "end_of_step",
    "has_pending_work",
    "shutdown",
)
"""What a secondary tier must have (`impl.tiering.tiers.SecondaryTier`)."""


def _req(req: object) -> ReqId:
    """A request id is a str. Complexity: O(1)."""
    if not isinstance(req, str):
        raise InvalidArgumentError(f"a request id is a str, got {type(req).__name__} {req!r}")
    return ReqId(req)


def _check_tier(tier: object) -> SecondaryTier:
    """A tier with every method of the protocol and its two flags. Complexity: O(1)."""
    missing = [m for m in TIER_METHODS if not callable(getattr(tier, m, None))]
    missing += [f for f in ("serving", "request_level") if not hasattr(tier, f)]
    if missing:
        raise InvalidArgumentError(f"{type(tier).__name__} is not a secondary tier: no {missing}")
    return tier  # type: ignore[return-value]


class TieringManager(TieringCore):
    """The tiering orchestrator (see the module doc).

    Pre/post of each call: docs/semantics.md, "Tiered offloading" (profile `spec`).
    Complexity: per call below; n the keys of the call, T the tiers.

    A prefix of three keys held by a tier, two primary slots: the first scan stages
    promotions ("try later"), the next answers the part that fits.

    >>> from evictable.impl.tiering import MemoryTier
    >>> tier = MemoryTier()
    >>> tier.copies.update(["a", "b", "c"])
    >>> m = TieringManager(2, [tier])
    >>> m.new_request(ReqId("r"))
    >>> m.scan(ReqId("r"), ["a", "b", "c"]) is None
    True
    >>> m.end_step()
    >>> m.scan(ReqId("r"), ["a", "b", "c"])
    2
    """

    def __init__(
        self,
        num_slots: object = None,
        tiers: Sequence[object] = (),
        policy: object = "lru",
        *,
        primary: CPUOffloadingManager | None = None,
        trace: bool = False,
    ) -> None:
        """Build over `tiers` with a fresh primary of `num_slots` slots and `policy`,
        or over `primary` (a `CPUOffloadingManager` whose chunks are all idle: they
        are kept as READY). Pre: exactly one of `num_slots` / `primary`; each tier
        has the protocol's methods; else `InvalidArgumentError`. `trace` keeps the
        record of the last call for `snapshot()` (checking only).
        Complexity: O(T) (O(chunks) to check a given primary)."""
        if (num_slots is None) == (primary is None):
            raise InvalidArgumentError("give exactly one of num_slots and primary")
        if isinstance(tiers, str | bytes) or not isinstance(tiers, Sequence):
            raise InvalidArgumentError(f"tiers must be a sequence, got {type(tiers).__name__}")
        checked = [_check_tier(t) for t in tiers]
        if primary is None:
            mgr = CPUOffloadingManager(check_num_blocks(num_slots, "num_slots"), policy)
        elif not isinstance(primary, CPUOffloadingManager):
            raise InvalidArgumentError(f"primary must be a CPUOffloadingManager, got {primary!r}")
        else:
            snap = primary.snapshot()
            if any(b.ref_cnt != 0 for b in snap.blocks):
                raise InvalidArgumentError("the primary's chunks must all be idle (READY)")
            mgr = primary
        super().__init__(mgr, checked, trace=trace)
        self.lock = threading.RLock()
        self.parents = [Parent(self, t) for t in range(len(checked))]
        self.serving_now = -1

    # ------------------------------------------------------------ guards

    def open(self, call: str) -> None:
        """Every call after `shutdown` is refused (`ShutdownError`). Complexity: O(1)."""
        if self.closed:
            raise ShutdownError(call)

    def known(self, req: object, finalised_ok: bool = False) -> RequestRecord:
        """The record of request `req` (`UnknownRequestError` if never added, or
        finalised and not `finalised_ok`). Complexity: O(1)."""
        rid = _req(req)
        r = self.find(rid, finalised_ok)
        if r is None:
            held = rid in self.requests or rid in self.gone
            raise UnknownRequestError(rid, "finalised" if held else "never added")
        return r

    # ------------------------------------------------------------ scheduler side

    def new_request(self, req: ReqId) -> None:
        """A request arrives. Pre: `req` a str not known (`DuplicateRequestError`).
        Post: ACTIVE; every tier told. Complexity: O(T)."""
        with self.lock:
            self.open("new_request")
            rid = _req(req)
            self.begin()
            self.add_request(rid, None)
            for tier in self.tiers:
                try:
                    tier.new_request(rid)
                except Exception:
                    self.tier_errors += 1

    def scan(self, req: ReqId, keys: Sequence[Key]) -> int | None:
        """The prefix scan of an ACTIVE request: lookups in order until the first MISS
        (a tier's HIT promotes, answered HIT_PENDING; a promotion never evicts a key
        this scan reported HIT), and in the same hold the pin of the n hits it answers
        for the request's load. Returns n, or None ("try later") when a lookup answered
        HIT_PENDING or RETRY. Pre: `req` ACTIVE (`UnknownRequestError`,
        `RequestFinishedError`), `keys` a batch (`InvalidArgumentError`,
        `DuplicateKeysError`). Complexity: O(n * T) plus promotions'."""
        with self.lock:
            self.open("scan")
            r = self.known(req)
            if r.phase is not RequestPhase.ACTIVE:
                raise RequestFinishedError(r.req, "a finished request is not scanned")
            seq, _ = check_keys(keys)
            self.begin()
            self.hold_start()
            self.note(Micro(MicroKind.OPEN, who=r.req))
            try:
                hits, later = 0, False
                for key in seq:
                    answer = self.lookup(key, r.req, -1)
                    if answer is TierAnswer.MISS:
                        break
                    if answer is not TierAnswer.RETRY:
                        hits += 1
                    if answer is not TierAnswer.HIT:
                        later = True
                result = None if later else hits
                if result:
                    pinned = list(seq[:result])
                    self.pin(pinned, GpuLoad(r.req))
                    loads = r.loads
                    for key in pinned:
                        loads[key] = loads.get(key, 0) + 1
            finally:
                self.note(Micro(MicroKind.CLOSE, who=r.req))
                self.hold_end()
            return result

    # ------------------------------------------------------------ per-key calls
    # (an engine whose scheduler scans key by key inside its own lock region, as
    # vLLM's connector does: `evictable.vllm.tiering`)

    def open_region(self) -> None:
        """A caller-wide lookup hold opens (the caller holds `lock` until
        `close_region`): every key `lookup_key` reports HIT is kept resident against
        promotions until the region closes. Idempotent. Complexity: O(1)."""
        with self.lock:
            if not self.region:
                self.region = True
                self.hold = []

    def close_region(self) -> None:
        """The caller-wide hold closes. Idempotent. Complexity: O(1)."""
        with self.lock:
            self.region = False
            self.hold = None

    def lookup_key(self, req: ReqId, key: Key) -> TierAnswer:
        """One lookup of an ACTIVE request's key in the open hold (a region's, else a
        hold of its own): HIT, HIT_PENDING (a tier's HIT promoted, or a write in
        flight), RETRY or MISS; a promotion never evicts a key the hold reported HIT.
        Pre: as `scan`. Complexity: O(T) plus a promotion's."""
        with self.lock:
            self.open("lookup_key")
            r = self.known(req)
            if r.phase is not RequestPhase.ACTIVE:
                raise RequestFinishedError(r.req, "a finished request is not looked up")
            check_keys([key])
            self.begin()
            self.hold_start()
            try:
                return self.lookup(key, r.req, -1)
            finally:
                self.hold_end()

    def load(self, req: ReqId, keys: Sequence[Key]) -> list[int]:
        """Pin `keys` (each READY or LOADING) for the GPU load of a request not
        finalised; their slots. All or nothing: a key not readable raises the
        primary's typed error with nothing pinned. Complexity: O(n)."""
        with self.lock:
            self.open("load")
            seq, _ = check_keys(keys)
            r = self.known(req)
            self.begin()
            slots = self.pin(list(seq), GpuLoad(r.req))
            loads = r.loads
            for key in seq:
                loads[key] = loads.get(key, 0) + 1
            return slots

    def touch(self, keys: Sequence[Key]) -> None:
        """Mark resident `keys` recently used in the primary's policy.
        Complexity: O(n)."""
        with self.lock:
            self.open("touch")
            seq, _ = check_keys(keys)
            self.primary.touch(seq)

    def store(self, req: ReqId, keys: Sequence[Key]) -> PrepareStoreOutput | None:
        """Prepare the GPU store of `keys` for a request not finalised (after every
        tier's reports are taken): the ABSENT keys become PENDING, owned by this
        request, evicting idle chunks; None (nothing changed) when there is no room.
        Request-level tiers also get the keys already resident. Complexity: O(n * T)
        plus victims."""
        with self.lock:
            self.open("store")
            seq, _ = check_keys(keys)
            r = self.known(req)
            self.begin()
            self.gate = True
            self.process_finished(range(len(self.tiers)))
            out = self.primary.prepare_store(seq)
            if out is None:
                return None
            self.evicted(out.evicted_keys)
            stored = out.keys_to_store
            if stored:
                r.stores.update(dict.fromkeys(stored))
            if self.level:
                new = set(stored)
                self.cascade_existing([k for k in seq if k not in new], r)
            return out

    def complete_store(self, req: ReqId, keys: Sequence[Key], success: bool = True) -> None:
        """The GPU store of `keys` finished: the keys this request's store still owns
        become READY (and are cascaded, one job per tier) or ABSENT on failure; other
        keys are ignored (a store a reset cancelled completes nothing). The request is
        finalised if it was its last. Complexity: O(n * T)."""
        with self.lock:
            self.open("complete_store")
            seq, _ = check_keys(keys)
            if type(success) is not bool:
                raise InvalidArgumentError(f"success must be a bool, got {success!r}")
            r = self.known(req, finalised_ok=True)
            self.begin()
            stores = r.stores
            done = [k for k in seq if k in stores]
            for key in done:
                del stores[key]
            self.complete(done, _store_owner(r.req), success)
            if success:
                self.cascade(done, r.req, range(len(self.tiers)))
            self.maybe_finalise(r)

    def complete_load(self, req: ReqId, keys: Sequence[Key]) -> None:
        """The GPU load of `keys` for `req` finished: the pins its load holds go (keys
        it does not pin are ignored: a load a reset cancelled releases nothing).
        Complexity: O(n)."""
        with self.lock:
            self.open("complete_load")
            seq, _ = check_keys(keys)
            r = self.known(req, finalised_ok=True)
            self.begin()
            self.release_loads(r, list(seq))

    def finish(self, req: ReqId) -> None:
        """The request finished (`RequestFinishedError` the second time): finalised at
        once when no GPU store is outstanding and nothing is parked, else by the last
        of them. Complexity: O(T)."""
        with self.lock:
            self.open("finish")
            r = self.known(req)
            if r.phase is not RequestPhase.ACTIVE:
                raise RequestFinishedError(r.req, "finished already")
            self.begin()
            self.end_request(r)

    def end_step(self) -> None:
        """The end of a scheduler step: the step's poll point (if none came earlier),
        the tiers' peers served, the gate reset, staged promotions submitted (one job
        per tier and request), parked cascades retried, the tiers' own end of step.
        Complexity: O(T + reports + staged + parked)."""
        with self.lock:
            self.open("end_step")
            self.begin()
            self.poll_gated()
            for t in range(len(self.tiers)):
                self.serve(t)
            self.gate = False
            self.flush_staged()
            self.flush_parked()
            for t in range(len(self.tiers)):
                self.tier_call(t, "end_of_step")

    def poll(self) -> None:
        """One poll round, between holds (callable from a poll thread): the serving
        tiers' reports, then their peers; the step's gate is left as it was.
        Complexity: O(serving tiers + reports)."""
        with self.lock:
            self.open("poll")
            self.begin()
            saved, self.gate = self.gate, True
            try:
                self.process_finished(self.serving)
                for t in self.serving:
                    self.serve(t)
            finally:
                self.gate = saved

    def reset(self) -> None:
        """Reset the cache: the tiers drain, every report is taken, then nothing is in
        flight, staged or pinned (jobs no tier reported fail with the reset); finished
        requests are finalised, active ones keep running with nothing outstanding;
        promotions are held until `reset_flushed`. Complexity: O(chunks + R + T)."""
        with self.lock:
            self.open("reset")
            self.begin()
            for t in range(len(self.tiers)):
                self.tier_call(t, "drain")
            self.process_finished(range(len(self.tiers)))
            self.jobs.clear()
            self.staged.clear()
            self.parked_keys = 0
            for r in list(self.requests.values()):
                r.loads.clear()
                if r.phase is RequestPhase.FINALISED:
                    self.forget(r)
                    continue
                r.stores.clear()
                r.parked.clear()
                if r.phase is RequestPhase.FINISHED:
                    self.finalise(r)
            self.primary.reset_cache()
            self.gate = False
            self.held = bool(self.tiers)

    def reset_flushed(self) -> None:
        """What the reset cancelled has been flushed: promotions are allowed again.
        Complexity: O(1)."""
        with self.lock:
            self.open("reset_flushed")
            self.begin()
            self.held = False

    def shutdown(self) -> None:
        """Shut down: the tiers are shut down, every later call is refused.
        Complexity: O(T)."""
        with self.lock:
            self.open("shutdown")
            self.begin()
            self.closed = True
            for t in range(len(self.tiers)):
                self.tier_call(t, "shutdown")

    def has_pending_work(self) -> bool:
        """Whether the engine must keep stepping: a job in flight, a staged promotion,
        a parked cascade, or a tier's own work. Complexity: O(T)."""
        with self.lock:
            if self.jobs or self.staged or self.parked_keys:
                return True
            for tier in self.tiers:
                try:
                    if tier.has_pending_work():
                        return True
                except Exception:
                    self.tier_errors += 1
            return False

    # ------------------------------------------------------------ peers

    def serve(self, t: int) -> None:
        """Tier `t` answers its peers through its parent handle (valid during the
        call only). Complexity: the tier's, plus its parent calls'."""
        self.serving_now = t
        try:
            self.tiers[t].serve_peers(self.parents[t])
        except Exception:
            self.tier_errors += 1
        finally:
            self.serving_now = -1
            self.hold_end()


def _store_owner(req: ReqId) -> GpuStore:
    return GpuStore(req)


class Parent:
    """What serving tier `tier` may ask of the orchestrator (`impl.tiering.tiers.
    PeerParent`), only while the orchestrator serves it. Complexity: per method.

    >>> from evictable.impl.tiering import MemoryTier
    >>> m = TieringManager(1, [MemoryTier()])
    >>> isinstance(m.parents[0], Parent)
    True
    """

    def __init__(self, owner: TieringManager, tier: int) -> None:
        """Complexity: O(1)."""
        self.owner = owner
        self.tier = tier

    def check(self) -> TieringManager:
        """The orchestrator, while it serves this tier (else `InvalidArgumentError`).
        Complexity: O(1)."""
        m = self.owner
        if m.serving_now != self.tier:
            raise InvalidArgumentError("a tier's parent handle is valid only in serve_peers")
        return m

    def open_request(self, req: ReqId) -> None:
        """A peer's request arrives (its origin this tier). Complexity: O(T)."""
        m = self.check()
        rid = _req(req)
        m.add_request(rid, TierId(self.tier))
        for t, tier in enumerate(m.tiers):
            if t == self.tier:
                continue
            try:
                tier.new_request(rid)
            except Exception:
                m.tier_errors += 1

    def lookup_and_pin(
        self, req: ReqId, keys: Sequence[Key]
    ) -> tuple[list[TierAnswer], TierJob | None]:
        """One lookup hold of a peer's ACTIVE request from this tier: `keys` looked up
        in order (this tier excluded), the HITs pinned in one PEER_STORE job, already
        submitted (the tier reports it after its peer's fetch). Returns the answers and
        that job (None: no HIT). Complexity: O(n * T) plus promotions'."""
        m = self.check()
        r = m.known(req)
        if r.origin != self.tier or r.phase is not RequestPhase.ACTIVE:
            raise UnknownRequestError(r.req, "not an active peer request of this tier")
        seq, _ = check_keys(keys)
        m.hold_start()
        m.note(Micro(MicroKind.OPEN, who=r.req))
        try:
            answers = [m.lookup(key, r.req, self.tier) for key in seq]
            hits = [k for k, a in zip(seq, answers, strict=True) if a is TierAnswer.HIT]
            job: TierJob | None = None
            if hits:
                rec = m.store_job(hits, r.req, self.tier, JobKind.PEER_STORE)
                rec.phase = _SUBMITTED
                job = rec.job
        finally:
            m.note(Micro(MicroKind.CLOSE, who=r.req))
            m.hold_end()
        return answers, job

    def lookup(self, req: ReqId, key: Key) -> TierAnswer:
        """One lookup of a peer's ACTIVE request from this tier (this tier excluded),
        in a hold that lasts until `pin` or the serve's end (for tiers that look keys
        up one by one, then pin the hits). Complexity: O(T) plus a promotion's."""
        m = self.check()
        r = m.known(req)
        if r.origin != self.tier or r.phase is not RequestPhase.ACTIVE:
            raise UnknownRequestError(r.req, "not an active peer request of this tier")
        check_keys([key])
        if m.hold is None:
            m.hold = []
        return m.lookup(key, r.req, self.tier)

    def pin(self, req: ReqId, keys: Sequence[Key]) -> TierJob:
        """Pin `keys` (reported HIT in this serve's hold, so still readable) in one
        PEER_STORE job, already submitted; the hold closes. A key not readable raises
        the primary's typed error with nothing pinned. Complexity: O(n)."""
        m = self.check()
        r = m.known(req)
        if r.origin != self.tier or r.phase is not RequestPhase.ACTIVE:
            raise UnknownRequestError(r.req, "not an active peer request of this tier")
        seq, _ = check_keys(keys)
        try:
            rec = m.store_job(list(seq), r.req, self.tier, JobKind.PEER_STORE)
        finally:
            m.hold_end()
        rec.phase = _SUBMITTED
        return rec.job

    def finish_request(self, req: ReqId) -> None:
        """The peer's request is answered (or given up): it ends. Complexity: O(T)."""
        m = self.check()
        r = m.known(req)
        if r.origin != self.tier or r.phase is not RequestPhase.ACTIVE:
            raise UnknownRequestError(r.req, "not an active peer request of this tier")
        m.end_request(r)
