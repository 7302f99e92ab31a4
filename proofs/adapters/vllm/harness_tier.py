"""Secondary tiers of ours, for driving vLLM 0.33's `TieringOffloadingManager`:
`SecondaryTierManager` subclasses that vLLM's `SecondaryTierFactory` loads by
`module_path`, exactly as it loads a tier author's out-of-tree class.

* `HarnessTier` -- a tier whose every move is an engine's event: a submitted job
  finishes, fails or splits (a partial promotion) only when `finish` is called; the
  next `submit_store` / `submit_load` raises `TierSubmitError` when `armed` (a tier
  fault: the tier API asks for failures as results); with `stray`, its next batch of
  results starts with a job id it was never given (`STRAY_JOB`); with `async_lookup`, a lookup
  answers RETRY until the probe of that key is posted (`on_schedule_end`) and
  answered (`answer`), then the answer, as vLLM's fs tier does; `drop` loses a copy.
  `drain_jobs` finishes every submitted job with success (the contract's drain),
  but for a serving tier's peer store jobs, which wait for their peer's fetch (as
  vLLM's p2p tier's do: the model's `vllm-0.33` semantics).
* `ServingHarnessTier` -- the same, serving peers between steps
  (`tolerates_off_thread_polling`): `peer_request(keys)` queues a peer's lookup; each
  serve looks the keys up through the `ParentManager`, pins the hits in one
  `create_store_job` after the lookups (as vLLM's p2p server role does), parks the
  keys that answered HIT_PENDING or RETRY and looks them up again at each later
  serve; the peer request ends (`on_request_finished`) once every key has settled.
  The peer store jobs finish when the engine says (`finish`: the peer fetched).
* `PeerServerTier` -- vLLM's own p2p server role (`ServerRole` of
  `vllm.v1.kv_offload.tiering.p2p.session.server`) behind a tier, its data transport a
  `StubData`: `peer_request(keys)` is a peer's LookupMsg (one fetch round per
  request), `fetch(job, success)` the peer's FetchMsg for the whole round of that job
  (every job of the round finishes with it, as in vLLM). Its `has_pending_work()`
  answers for its own work (transfers in flight, lookups queued or parked), unlike
  vLLM's p2p tier, which answers True always.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from vllm.v1.kv_offload.base import (
    LookupResult,
    OffloadPolicy,
    ReqContext,
    RequestOffloadingContext,
)
from vllm.v1.kv_offload.tiering.base import JobResult, SecondaryTierManager
from vllm.v1.kv_offload.tiering.p2p.session.server import ServerRole

from evictable.model.errors import InvalidArgumentError, TierSubmitError, UnknownJobError
from evictable.model.tiering_types import JobOutcome, OutcomeKind, PeerPhase
from evictable.proofs.adapters.vllm.tiering_build import StubData

__all__ = [
    "HARNESS_MODULE",
    "STRAY_JOB",
    "HarnessTier",
    "PeerRequest",
    "PeerServerTier",
    "Probe",
    "ServingHarnessTier",
    "give_up",
    "round_of",
]

STRAY_JOB = -1
"""The job id a harness tier reports when told to report one it was never given."""

HARNESS_MODULE = __name__
"""The `module_path` that vLLM's tier factory loads these classes from."""


@dataclass
class Probe:
    """An asynchronous lookup probe of one key: QUEUED until the tier's end of step
    posts it, IN_FLIGHT until answered, then RESOLVED with `found`."""

    phase: str = "queued"
    found: bool | None = None
    reqs: set[str] = field(default_factory=set)


@dataclass
class PeerRequest:
    """A peer's lookup at a serving harness tier (see `ServingHarnessTier`)."""

    req: str
    keys: tuple[Hashable, ...]
    phase: PeerPhase = PeerPhase.QUEUED
    resolved: dict[Hashable, bool] = field(default_factory=dict)
    pending: list[Hashable] = field(default_factory=list)
    ctx: Any = None


class HarnessTier(SecondaryTierManager):  # type: ignore[misc]
    """A tier the engine drives move by move (see the module docstring)."""

    tolerates_off_thread_polling: ClassVar[bool] = False

    def __init__(
        self,
        offloading_spec: Any,
        primary_kv_view: memoryview,
        tier_type: str,
        backpressure_detector: Any = None,
        index: int = 0,
        async_lookup: bool = False,
        request_level: bool = False,
    ) -> None:
        super().__init__(offloading_spec, primary_kv_view, tier_type, backpressure_detector)
        self.index = int(index)
        self.async_lookup = bool(async_lookup)
        self.request_level = bool(request_level)
        self.present: set[Hashable] = set()
        self.submitted: dict[int, Any] = {}  # job id -> vLLM TransferJob
        self.reported: dict[int, tuple[Any, JobOutcome]] = {}  # finished, not yet taken
        self.results: list[JobResult] = []
        self.armed = False
        self.stray = False
        self.probes: dict[Hashable, Probe] = {}

    # ------------------------------------------------------------- vLLM's tier API

    def lookup(self, key: Hashable, req_context: Any) -> LookupResult:
        if not self.async_lookup:
            return LookupResult.HIT if key in self.present else LookupResult.MISS
        probe = self.probes.setdefault(key, Probe())
        probe.reqs.add(req_context.req_id)
        if probe.phase != "resolved":
            return LookupResult.RETRY
        return LookupResult.HIT if probe.found else LookupResult.MISS

    def submit_store(self, job_metadata: Any) -> None:
        self._submit(job_metadata)

    def submit_load(self, job_metadata: Any) -> None:
        self._submit(job_metadata)

    def get_finished_jobs(self) -> Iterable[JobResult]:
        done, self.results = self.results, []
        self.reported.clear()
        if self.stray:  # a job id never given, first in the batch
            self.stray = False
            done.insert(0, JobResult(job_id=STRAY_JOB, success=True))
        return done

    def drain_jobs(self) -> None:
        for job_id in list(self.submitted):
            if not self._is_peer_store(self.submitted[job_id]):
                self.finish(job_id, JobOutcome.ok())

    def has_pending_work(self) -> bool:
        """Its own work: a probe not answered yet (its end of step must post it, or an
        answer must be applied)."""
        return any(p.phase != "resolved" for p in self.probes.values())

    def on_new_request(self, req_context: Any) -> RequestOffloadingContext:
        if self.request_level:
            return RequestOffloadingContext(policy=OffloadPolicy.REQUEST_LEVEL)
        return RequestOffloadingContext()

    def on_request_finished(self, req_context: Any) -> None:
        for key in list(self.probes):
            probe = self.probes[key]
            probe.reqs.discard(req_context.req_id)
            if not probe.reqs and probe.phase != "in_flight":
                del self.probes[key]

    def on_schedule_end(self, context: Any) -> None:
        for probe in self.probes.values():
            if probe.phase == "queued":
                probe.phase = "in_flight"

    # ------------------------------------------------------------ the engine's moves

    def _submit(self, job: Any) -> None:
        if self.armed:
            self.armed = False
            raise TierSubmitError(self.index, int(job.job_id))
        self.submitted[int(job.job_id)] = job

    def finish(self, job_id: int, outcome: JobOutcome) -> None:
        """The submitted job `job_id` finishes with `outcome` (reported at the
        manager's next poll of this tier). A store that does not succeed writes
        nothing; a partial promotion reports its `ok_keys` as vLLM's
        `JobResult.successful_keys`."""
        job = self.submitted.pop(int(job_id), None)
        if job is None:
            raise UnknownJobError(job_id, f"not submitted to tier {self.index}")
        if job.is_promotion:
            ok = outcome.kind is OutcomeKind.OK
            keys = tuple(outcome.ok_keys) if outcome.kind is OutcomeKind.PARTIAL else None
            for key in job.keys:  # a key it failed to read is gone (vLLM fs: mark_miss)
                if not outcome.succeeded(key):
                    self.present.discard(key)
                    probe = self.probes.get(key)
                    if probe is not None and probe.phase == "resolved":
                        probe.found = False
            self.results.append(JobResult(job_id=int(job_id), success=ok, successful_keys=keys))
        else:
            if outcome.kind is OutcomeKind.OK and not self._is_peer_store(job):
                self.present.update(job.keys)
            ok = outcome.kind is OutcomeKind.OK
            self.results.append(JobResult(job_id=int(job_id), success=ok))
        self.reported[int(job_id)] = (job, outcome)

    def _is_peer_store(self, job: Any) -> bool:
        return False

    def answer(self, key: Hashable, found: bool) -> None:
        """The probe of `key` answers `found` (it must have been posted)."""
        probe = self.probes.get(key)
        if probe is None or probe.phase != "in_flight":
            raise InvalidArgumentError(f"no probe of {key!r} in flight at tier {self.index}")
        probe.phase, probe.found = "resolved", bool(found)

    def drop(self, key: Hashable) -> None:
        """The tier loses its copy of `key` (capacity, a remote store)."""
        self.present.discard(key)


class ServingHarnessTier(HarnessTier):
    """A harness tier that also serves peers between steps (see the module docstring)."""

    tolerates_off_thread_polling: ClassVar[bool] = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.peers: list[PeerRequest] = []
        self.peer_jobs: set[int] = set()
        self.count = 0

    def peer_request(self, keys: Sequence[Hashable]) -> PeerRequest:
        """A peer asks this tier to look `keys` up and pin the hits."""
        entry = PeerRequest(req=f"peer{self.count}", keys=tuple(keys))
        self.count += 1
        self.peers.append(entry)
        return entry

    def has_pending_work(self) -> bool:
        return bool(self.peers) or super().has_pending_work()

    def serve_external_requests(self, parent: Any) -> None:
        for entry in list(self.peers):
            # Taken off the list while it is served, as vLLM's server role dequeues a
            # LookupMsg: a serve that raises loses it.
            self.peers.remove(entry)
            if entry.phase is PeerPhase.QUEUED:
                entry.ctx = ReqContext(req_id=entry.req)
                parent.on_new_request(entry.ctx)
                entry.phase = PeerPhase.PARKED
                keys = list(dict.fromkeys(entry.keys))
            else:
                keys = list(entry.pending)
            hits: list[Hashable] = []
            entry.pending = []
            for key in keys:
                got = parent.lookup(key, entry.ctx)
                if got is LookupResult.HIT:
                    entry.resolved[key] = True
                    hits.append(key)
                elif got is LookupResult.MISS:
                    entry.resolved[key] = False
                else:
                    entry.pending.append(key)
            if hits:
                job = parent.create_store_job(hits, entry.ctx)
                self.submitted[int(job.job_id)] = job
                self.peer_jobs.add(int(job.job_id))
            if entry.pending:
                self.peers.append(entry)
            else:
                parent.on_request_finished(entry.ctx)

    def give_up(self, parent: Any) -> None:
        """The deadline of the oldest parked peer lookup passes: its pending keys are
        answered MISS and its request ends (through `parent`, as in a serve)."""
        parked = [p for p in self.peers if p.phase is PeerPhase.PARKED]
        if not parked:
            raise UnknownJobError(self.index, "no peer lookup parked at this tier")
        entry = parked[0]
        for key in entry.pending:
            entry.resolved[key] = False
        entry.pending = []
        self.peers.remove(entry)
        parent.on_request_finished(entry.ctx)

    def _is_peer_store(self, job: Any) -> bool:
        return int(job.job_id) in self.peer_jobs


def give_up(server: Any, parent: Any) -> bool:
    """The deadline of the oldest lookup parked at vLLM's p2p `ServerRole` `server`
    passes: vLLM's own deadline path (`_resolve_pending_lookups` past `deadline`:
    the keys still pending, after one more look, are answered MISS and the lookup's
    request ends). False when nothing is parked there."""
    for kv, state in server._requests.items():
        if state.lookups:
            oldest = min(state.lookups)
            state.lookups[oldest].deadline = 0.0
            server._resolve_pending_lookups(kv, parent)
            return True
    return False


def round_of(server: Any, job_id: int) -> tuple[str, int, list[Hashable]] | None:
    """The (kv request id, round, supplied keys) of the fetch round of vLLM's p2p
    `ServerRole` `server` that peer store job `job_id` supplied, or None."""
    for kv, state in server._requests.items():
        for seq, rnd in state.outbound.items():
            if any(j == job_id for j, _ in rnd.available.values()):
                return str(kv), int(seq), list(rnd.available)
    return None


class PeerServerTier(SecondaryTierManager):  # type: ignore[misc]
    """vLLM's p2p `ServerRole` behind a tier (see the module docstring)."""

    tolerates_off_thread_polling: ClassVar[bool] = True

    def __init__(
        self,
        offloading_spec: Any,
        primary_kv_view: memoryview,
        tier_type: str,
        backpressure_detector: Any = None,
        index: int = 0,
    ) -> None:
        super().__init__(offloading_spec, primary_kv_view, tier_type, backpressure_detector)
        self.index = int(index)
        self.data = StubData("stub", primary_kv_view)
        self.sent: list[dict[str, Any]] = []
        self.server = ServerRole("peer", self.data, self.sent.append)
        self.results: list[JobResult] = []
        self.rounds = 0

    def peer_request(self, keys: Sequence[Hashable]) -> str:
        """A peer's LookupMsg for `keys` (its own fetch round); its kv request id."""
        self.rounds += 1
        kv = f"kv{self.rounds}"
        self.server.on_lookup(kv, list(keys), self.rounds)
        return kv

    def fetch(self, job_id: int, success: bool) -> None:
        """The peer fetches the round of `job_id` (its transfer fails unless
        `success`): every job of that round finishes at the next poll."""
        found = round_of(self.server, job_id)
        if found is None:
            raise UnknownJobError(job_id, f"no peer round holds it at tier {self.index}")
        kv, seq, keys = found
        self.data.fail_next = not success
        self.server.on_fetch(kv, keys, list(range(len(keys))), seq)

    def lookup(self, key: Hashable, req_context: Any) -> LookupResult:
        return LookupResult.MISS

    def submit_store(self, job_metadata: Any) -> None:
        self.results.append(JobResult(job_id=int(job_metadata.job_id), success=True))

    def submit_load(self, job_metadata: Any) -> None:
        self.results.append(JobResult(job_id=int(job_metadata.job_id), success=False))

    def get_finished_jobs(self) -> Iterable[JobResult]:
        done, self.results = self.results, []
        done += [
            JobResult(job_id=s.job_id, success=s.success) for s in self.server.collect_results()
        ]
        return done

    def drain_jobs(self) -> None:
        while self.server.has_inflight_transfers:
            self.results += [
                JobResult(job_id=s.job_id, success=s.success) for s in self.server.collect_results()
            ]

    def has_pending_work(self) -> bool:
        return bool(self.server.has_inflight_transfers or self.server._serve_pending)

    def on_new_request(self, req_context: Any) -> RequestOffloadingContext:
        return RequestOffloadingContext()

    def serve_external_requests(self, parent: Any) -> None:
        self.server.serve_external_requests(parent)
