"""Our tiering orchestrator as vLLM 0.33 builds it from `EvictableTieringSpec`, over
vLLM's own secondary tiers, behind the tiering adapter protocol
(`proofs.base.tiering_protocol.TieringAdapter`).

`OursOverVllm(config, kinds)` is built exactly as vLLM builds it from
`spec_name: EvictableTieringSpec` (`tiering_build.build_manager` with our spec class:
the shared primary region under /dev/shm, each tier made by vLLM's
`SecondaryTierFactory` from its `secondary_tiers` entry, each behind our
`evictable.vllm.tiers.VllmTier`), with the same tier kinds as `VllmTiering` (vLLM's
`example` and `fs` tiers, vLLM's real `p2p` tier with stub transports, vLLM's p2p
server role behind a `peer` tier, and the fault-injecting `harness` / `serving` tiers
vLLM loads by `module_path`). Only the orchestrator differs from `VllmTiering`'s:

* the scheduler's calls go to the orchestrator (`TieringManager`) as the model names
  them (`scan`, `store`, `complete_store`, ...), with vLLM's keys (`K(n)` for the
  explorer's `"k0"`, as `VllmTiering` makes them): the connector's per-key path
  (`EvictableTieringManager.lookup` in the connector's lock region) is the same scan
  split over calls, and is held to vLLM's connector by tests/interop
  (`test_vllm_tiering_inside.py`);
* the orchestrator keeps the record of each call (the tracing of `TieringManager`) and,
  unlike inside vLLM, remembers finalised requests (the model's request ids are never
  reused: a finalised id is refused, as the model refuses it);
* the tiers' events (a job of a harness tier finishing, a probe answered, a peer's
  lookup, a copy lost, a raising submit, a stray report) are `VllmTiering`'s, on the
  same vLLM tiers; a peer's give-up runs inside a serve of that tier, as our
  orchestrator's poll round serves it;
* `snapshot()` reads the orchestrator's own records (chunks, owners, pins, jobs,
  staged promotions, requests, the call's record) and the tiers' state as
  `tiering_snapshot` reads it for vLLM's orchestrator (copies, probes, peers, the jobs
  a tier finished and has not reported).

The factories (`ours_example_tiering`, `ours_fs_tiering`, `ours_peer_tiering`,
`ours_p2p_tiering`, `ours_harness_tiering`) declare the `spec` profile (our
orchestrator is held to the model's semantics, not to vLLM 0.33's) and `answers`
comparison for vLLM's tiers (they finish jobs by themselves, so their states are not
the model's harness tiers'); `ours_harness_tiering` compares states too (its tiers
move only when the engine says, as the model's do). Every invariant is judged on
every state either way. No family is skipped: a GPU completion
made stale by a reset reaches our orchestrator (the explorer's `stale` family), which
vLLM's connector would drop before it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import Any

from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.tiering import TieringManager
from evictable.model.errors import InvalidArgumentError, UnknownJobError
from evictable.model.tiering_types import (
    ChunkEntry,
    JobEntry,
    JobId,
    JobOutcome,
    JobPhase,
    OutcomeKind,
    PendingOwner,
    PrimarySnapshot,
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
from evictable.proofs.adapters.vllm.tiering import VllmTiering
from evictable.proofs.adapters.vllm.tiering_factories import tier_kinds
from evictable.proofs.adapters.vllm.tiering_snapshot import copies, peers, phase_of, probes
from evictable.proofs.base.tiering_protocol import start_chunks

__all__ = [
    "SPEC",
    "OursOverVllm",
    "ours_example_tiering",
    "ours_fs_tiering",
    "ours_harness_tiering",
    "ours_p2p_tiering",
    "ours_peer_tiering",
]


SPEC = ("EvictableTieringSpec", "evictable.vllm")
"""The `spec_name` and `spec_module_path` a user's config gives vLLM to select ours."""


class _Record:
    """`VllmTiering`'s recorder, for our orchestrator: each event starts the
    orchestrator's record of a call afresh (it keeps its own)."""

    def __init__(self, owner: OursOverVllm) -> None:
        self.owner = owner

    def begin(self, name: str) -> None:
        self.owner.orch.begin()

    def end(self) -> None:
        return None


class OursOverVllm(VllmTiering):
    """Our orchestrator over vLLM's tiers, built by `EvictableTieringSpec` (module
    docstring)."""

    def __init__(
        self,
        config: TieringConfig,
        kinds: Sequence[str],
        cls: type[TieringManager] = TieringManager,
    ) -> None:
        """`cls`: the orchestrator class the start state is built with (ours, or a
        seeded-bug copy of it, `proofs.controls.ours_tiering`)."""
        if not isinstance(config, TieringConfig):
            raise InvalidArgumentError(f"config must be a TieringConfig, got {config!r}")
        self.cls = cls
        self._build(config, kinds, *SPEC)
        self.told: Counter[tuple[str, int]] = Counter()
        """(request, tier) -> how many times the tier was told the request ended."""
        for i, wrapped in enumerate(self.vllm.wrapped):
            wrapped.request_finished = self._counting(i, wrapped.request_finished)
        self.orch: TieringManager = self.vllm.orch
        self._adopt(self.orch)
        self.recorder: Any = _Record(self)

    def _counting(self, index: int, fn: Callable[[ReqId], None]) -> Callable[[ReqId], None]:
        def run(req: ReqId) -> None:
            self.told[(str(req), index)] += 1
            fn(req)

        return run

    def _adopt(self, orch: TieringManager) -> None:
        """Make `orch` the orchestrator vLLM's manager uses, tracing, keeping
        finalised requests (module docstring)."""
        orch.log = []
        orch.max_gone = TieringManager(1).max_gone
        self.vllm.orch = self.orch = orch
        self.vllm.region_lock = type(self.vllm.region_lock)(orch)

    def _call(self, name: str, fn: Callable[[], Any], *, lock: bool = True) -> Any:
        try:
            if not lock:
                return fn()
            with self.orch.lock:
                return fn()
        finally:
            self._settle()

    def start(self, snap: TieringSnapshot) -> None:
        """Bring this fresh orchestrator to the start state `snap` (READY chunks,
        least recent first in slot order, and PRESENT copies written into the tiers);
        anything else is refused (`InvalidArgumentError`)."""
        chunks = start_chunks(snap, self.config)
        primary = CPUOffloadingManager(self.config.num_slots, "lru")
        for c in chunks:
            primary.prepare_store([self.vkey(c.key)])
            primary.complete_store([self.vkey(c.key)])
        self._adopt(self.cls(primary=primary, tiers=self.vllm.wrapped))
        self.write_copies(snap)
        self.orch.begin()
        self._settle()

    # --------------------------------------------------------- scheduler side

    def new_request(self, req: ReqId) -> None:
        self._call("new_request", lambda: self.orch.new_request(req))

    def scan(self, req: ReqId, keys: Sequence[Key]) -> int | None:
        seen = self._see(keys)
        got: int | None = self._call("scan", lambda: self.orch.scan(req, seen))
        return got

    def store(self, req: ReqId, keys: Sequence[Key]) -> StoreOutcome | None:
        seen = self._see(keys)
        out = self._call("store", lambda: self.orch.store(req, seen))
        if out is None:
            return None
        return StoreOutcome(
            keys_to_store=[self.key(k) for k in out.keys_to_store],
            slot_ids=list(out.slot_ids),
            evicted_keys=[self.key(k) for k in out.evicted_keys],
        )

    def complete_store(self, req: ReqId, keys: Sequence[Key], success: bool = True) -> None:
        seen = self._see(keys)
        self._call("complete_store", lambda: self.orch.complete_store(req, seen, success))

    def complete_load(self, req: ReqId, keys: Sequence[Key]) -> None:
        seen = self._see(keys)
        self._call("complete_load", lambda: self.orch.complete_load(req, seen))

    def finish(self, req: ReqId) -> None:
        self._call("finish", lambda: self.orch.finish(req))

    def end_step(self) -> None:
        self._call("end_step", self.orch.end_step)

    def poll(self) -> None:
        self._call("poll", self.orch.poll)

    def reset(self) -> None:
        self._call("reset", self.orch.reset)

    def reset_flushed(self) -> None:
        self._call("reset_flushed", self.orch.reset_flushed)

    def has_pending_work(self) -> bool:
        with self.orch.lock:
            return self.orch.has_pending_work()

    # ------------------------------------------------------ other threads, tiers

    def job_finishes(self, job: JobId, outcome: JobOutcome) -> None:
        if not isinstance(outcome, JobOutcome):
            raise InvalidArgumentError(f"outcome must be a JobOutcome, got {outcome!r}")
        rec = self.orch.jobs.get(job) if isinstance(job, int) else None
        if rec is None:
            raise UnknownJobError(job, "not registered with the orchestrator")
        index = int(rec.job.tier)
        kind, tier = self.kinds[index], self.tiers[index]
        self.orch.begin()
        try:
            if outcome.kind is OutcomeKind.PARTIAL:
                outcome = JobOutcome.partial(tuple(self.vkey(k) for k in outcome.ok_keys))
            if kind in ("harness", "serving"):
                tier.finish(int(job), outcome)
            elif kind == "peer":
                tier.fetch(int(job), outcome.kind is OutcomeKind.OK)
            elif (
                kind == "p2p"
                and self.orch.requests.get(rec.job.req) is not None
                and (self.orch.requests[rec.job.req].origin is not None)
            ):
                self._p2p_fetch(index, int(job), outcome.kind is OutcomeKind.OK)
            elif outcome.kind is not OutcomeKind.OK:
                raise UnknownJobError(job, f"the {kind} tier finishes its jobs by itself")
        finally:
            self._settle()

    def peer_gives_up(self, tier: TierId) -> None:
        """The deadline of the oldest peer lookup parked at serving tier `tier` passes:
        inside one serve of that tier (our orchestrator's `serve`, through `VllmTier`
        and its `ParentManager`), the tier answers the lookup's pending keys MISS and
        ends its request, as at a serve past the deadline."""
        t = self._tier(tier, "serving", "peer", "p2p")
        index = int(tier)
        raised: list[BaseException] = []

        def give(parent: Any) -> None:
            try:
                self.give_up_at(tier, parent)
            except BaseException as exc:  # the serve counts a tier's error: ours to report
                raised.append(exc)

        def run() -> None:
            self.orch.begin()
            t.serve_external_requests = give
            try:
                self.orch.serve(index)
            finally:
                del t.serve_external_requests
            if raised:
                raise raised[0]

        self._call("peer_gives_up", run)

    # ------------------------------------------------------------ snapshot

    def pending_owners(self, key: Hashable) -> tuple[PendingOwner, ...]:
        got = self.orch.pending_owners().get(self.vkey(key))
        return () if got is None else (got,)

    def snapshot(self) -> TieringSnapshot:
        m = self.orch
        with m.lock:
            base = m.primary.snapshot()
            owners = m.pending_owners()
            pins = m.pin_owners()
            chunks = frozenset(
                ChunkEntry(
                    self.key(b.key),
                    b.state,
                    b.slot,
                    b.ref_cnt,
                    (owners[b.key],) if b.key in owners else (),
                    tuple(sorted(pins.get(b.key, ()), key=owner_order)),
                )
                for b in base.blocks
            )
            order = getattr(base.policy, "evictable", None)
            primary = PrimarySnapshot(
                base.num_blocks,
                chunks,
                base.free_stack,
                base.high_water,
                tuple(self.key(k) for k in order) if order is not None else None,
            )
            ours = [
                (TierId(i), t)
                for i, (k, t) in enumerate(zip(self.kinds, self.tiers, strict=True))
                if k in ("harness", "serving")
            ]
            return TieringSnapshot(
                config=self.config,
                primary=primary,
                copies=copies(self),
                jobs=self._jobs(),
                staged=tuple(
                    StagedEntry(t, req, tuple(self.key(k) for k in keys), tuple(slots))
                    for t, by_req in m.staged.items()
                    for req, (keys, slots) in by_req.items()
                ),
                requests=self._requests(),
                probes=probes(self),
                peers=peers(self),
                pending_work=m.has_pending_work(),
                gate=m.gate,
                held=m.held,
                armed=frozenset(i for i, t in ours if t.armed),
                strays=frozenset(i for i, t in ours if t.stray),
                next_job=m.next_job,
                closed=m.closed,
                log=tuple(replace(e, key=self.key(e.key)) for e in m.log or ()),
            )

    def _jobs(self) -> tuple[JobEntry, ...]:
        out = []
        for j in sorted(self.orch.jobs):
            rec = self.orch.jobs[j]
            job = rec.job
            phase, outcome = rec.phase, None
            seen, result = phase_of(self, int(job.tier), int(j))
            if seen is JobPhase.FINISHED_UNSEEN:
                phase, outcome = seen, result
            out.append(
                JobEntry(
                    j,
                    job.tier,
                    job.kind,
                    tuple(self.key(k) for k in job.keys),
                    tuple(job.slots),
                    job.req,
                    phase,
                    outcome,
                )
            )
        return tuple(out)

    def _requests(self) -> tuple[RequestEntry, ...]:
        m, n = self.orch, len(self.tiers)
        out = []
        for r in m.requests.values():
            out.append(
                RequestEntry(
                    r.req,
                    r.phase,
                    tuple(self.key(k) for k in r.stores),
                    tuple(self.key(k) for k, c in r.loads.items() for _ in range(c)),
                    tuple(self.key(k) for k in r.parked),
                    None,
                    tuple(self.told[(r.req, i)] for i in range(n)),
                    r.origin,
                )
            )
        for req, origin in m.gone.items():
            counts = tuple(self.told[(req, i)] for i in range(n))
            out.append(RequestEntry(req, RequestPhase.FINALISED, finalised=counts, origin=origin))
        return tuple(sorted(out, key=lambda e: e.req))


def _factory(name: str, serving: str | None, asynch: str | None, doc: str, shape: Any) -> Any:
    def build(config: TieringConfig) -> OursOverVllm:
        return OursOverVllm(config, tier_kinds(config, serving, asynch, name))

    build.__name__ = build.__qualname__ = name
    build.__doc__ = doc
    build.evictable_tiering = TieringConfig(num_slots=2, tiers=shape)  # type: ignore[attr-defined]
    build.evictable_tiering_profile = Profile.SPEC.value  # type: ignore[attr-defined]
    build.evictable_tiering_compare = "answers"  # type: ignore[attr-defined]
    return build


ours_example_tiering = _factory(
    "ours_example_tiering",
    None,
    None,
    "Our orchestrator over vLLM's example tier for every tier (no serving, no probes).",
    (TierSpec("example"),),
)
ours_fs_tiering = _factory(
    "ours_fs_tiering",
    None,
    "fs",
    "Our orchestrator over vLLM's fs tier for every tier with asynchronous lookups, "
    "vLLM's example tier for the others.",
    (TierSpec("fs", async_lookup=True),),
)
ours_peer_tiering = _factory(
    "ours_peer_tiering",
    "peer",
    "fs",
    "Our orchestrator; a serving tier is vLLM's p2p ServerRole behind our "
    "PeerServerTier, asynchronous tiers vLLM's fs tier, the others its example tier.",
    (TierSpec("peer", serving=True), TierSpec("example")),
)
ours_p2p_tiering = _factory(
    "ours_p2p_tiering",
    "p2p",
    "fs",
    "Our orchestrator; a serving tier is vLLM's real P2PSecondaryTierManager (stub "
    "transports), asynchronous tiers vLLM's fs tier, the others its example tier.",
    (TierSpec("p2p", serving=True), TierSpec("example")),
)


def ours_harness_tiering(config: TieringConfig) -> OursOverVllm:
    """Our orchestrator over harness tiers vLLM loads by `module_path` (every move of
    a tier an event: jobs finishing, failing, splitting, raising submits, stray
    reports, probes, peers), serving and asynchronous as each `TierSpec` says."""
    kinds = ["serving" if spec.serving else "harness" for spec in config.tiers]
    return OursOverVllm(config, kinds)


ours_harness_tiering.evictable_tiering = TieringConfig(  # type: ignore[attr-defined]
    num_slots=2, tiers=(TierSpec("harness"), TierSpec("serving", serving=True))
)
ours_harness_tiering.evictable_tiering_profile = Profile.SPEC.value  # type: ignore[attr-defined]
ours_harness_tiering.evictable_tiering_compare = "state"  # type: ignore[attr-defined]
