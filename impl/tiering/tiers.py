"""What our tiering orchestrator asks of a secondary tier, and what a tier may ask back
(docs/semantics.md, "Tiered offloading"; docs/interop.md, "Our orchestrator").

A secondary tier (`SecondaryTier`) holds copies of primary chunks somewhere else (a
disk, an object store, a peer). The orchestrator (`evictable.impl.tiering.
TieringManager`) calls it only under its one lock:

* `lookup(key, req)`: HIT (a copy is there and readable), MISS, or RETRY (the tier has
  not decided yet: an asynchronous probe runs);
* `submit_store(job)` / `submit_load(job)`: take a job (`TierJob`) that reads primary
  chunks (a cascade) or writes them (a promotion); may raise, which fails the job at
  once;
* `finished_jobs()`: the reports of the jobs it finished since the last call, as
  `(job id, JobOutcome)` pairs; anything else in the batch (an id it was never given,
  a report twice, a malformed entry) is ignored by the orchestrator;
* `drain()`: finish (or fail) every transfer in flight, so that its reports are
  available from the next `finished_jobs()` (a reset waits for it);
* `serve_peers(parent)`: answer the tier's peers through `parent` (`PeerParent`),
  valid only during the call;
* `new_request(req)`, `request_finished(req)`: a request's start and its end (told
  exactly once, when nothing of the request is outstanding);
* `end_of_step()`, `has_pending_work()`, `shutdown()`.

The flags `serving` (peers are also served by poll rounds between steps) and
`request_level` (chunks already in the primary are cascaded too) are read once.
Whatever a tier does -- raise from any call, report late, twice, never, or garbage --
the orchestrator's own state stays consistent (docs/semantics.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from evictable.model.tiering_types import JobId, JobKind, JobOutcome, ReqId, TierAnswer, TierId
from evictable.model.types import Key

__all__ = ["JobReport", "PeerParent", "SecondaryTier", "TierJob"]

JobReport = tuple[JobId, JobOutcome]
"""A tier's report of one finished job."""


class TierJob:
    """One transfer handed to a tier: `keys` and the primary `slots` it reads (a
    CASCADE, or a PEER_STORE the tier's peer fetches) or writes (a PROMOTION), in
    order; `req` the request it serves. Immutable by convention.

    >>> from evictable.model.tiering_types import JobId, JobKind, ReqId, TierId
    >>> job = TierJob(JobId(0), TierId(0), JobKind.CASCADE, ("a",), (3,), ReqId("r"))
    >>> job, job.is_promotion
    (TierJob(0, tier=0, cascade, ['a']), False)

    Complexity: O(1) to build (the tuples are the caller's).
    """

    __slots__ = ("job", "keys", "kind", "req", "slots", "tier")

    def __init__(
        self,
        job: JobId,
        tier: TierId,
        kind: JobKind,
        keys: tuple[Key, ...],
        slots: tuple[int, ...],
        req: ReqId,
    ) -> None:
        """Pre: `len(keys) == len(slots)`. Complexity: O(1)."""
        self.job = job
        self.tier = tier
        self.kind = kind
        self.keys = keys
        self.slots = slots
        self.req = req

    @property
    def is_promotion(self) -> bool:
        """Whether the job writes primary chunks (vLLM's `is_promotion`). Complexity: O(1)."""
        return self.kind is JobKind.PROMOTION

    def __repr__(self) -> str:
        return f"TierJob({self.job}, tier={self.tier}, {self.kind.value}, {list(self.keys)!r})"


class PeerParent(Protocol):
    """What a serving tier may ask of the orchestrator during `serve_peers` (each call
    one step of the orchestrator under its lock, which the serve holds throughout).
    Outside `serve_peers` the handle refuses every call:

    >>> from evictable.impl.tiering import MemoryTier, TieringManager
    >>> m = TieringManager(1, [MemoryTier()])
    >>> m.parents[0].open_request(ReqId("peer-1"))
    Traceback (most recent call last):
    ...
    evictable.model.errors.InvalidArgumentError: a tier's parent handle is valid only in serve_peers
    """

    def open_request(self, req: ReqId) -> None:
        """A peer's request arrives at this tier (its origin: never told it ended).
        Pre: `req` unknown (else `DuplicateRequestError`)."""

    def lookup_and_pin(
        self, req: ReqId, keys: Sequence[Key]
    ) -> tuple[list[TierAnswer], TierJob | None]:
        """One lookup hold of a peer's request: `keys` looked up in order (this tier
        excluded; a HIT in another tier starts a promotion, answered HIT_PENDING),
        then the HIT keys pinned in one PEER_STORE job, already submitted (the tier
        reports it when the peer has fetched). Returns the answers and that job (None:
        no HIT)."""

    def finish_request(self, req: ReqId) -> None:
        """The peer's request is answered (or given up): it ends, and is finalised
        once nothing of it is outstanding."""


class SecondaryTier(Protocol):
    """A secondary tier as the orchestrator drives it (see the module doc);
    `MemoryTier` is the reference one:

    >>> from evictable.impl.tiering import MemoryTier
    >>> tier: SecondaryTier = MemoryTier()
    >>> tier.lookup("a", ReqId("r"))
    <TierAnswer.MISS: 'miss'>
    """

    serving: bool
    request_level: bool

    def lookup(self, key: Key, req: ReqId) -> TierAnswer:
        """HIT, MISS or RETRY for `key` (never HIT_PENDING)."""

    def submit_store(self, job: TierJob) -> None:
        """Take a job that reads primary chunks (may raise: the job fails)."""

    def submit_load(self, job: TierJob) -> None:
        """Take a job that writes primary chunks (may raise: the job fails)."""

    def finished_jobs(self) -> Iterable[JobReport]:
        """The jobs finished since the last call."""

    def drain(self) -> None:
        """Finish every transfer in flight; their reports come next."""

    def serve_peers(self, parent: PeerParent) -> None:
        """Answer the tier's peers through `parent`."""

    def new_request(self, req: ReqId) -> None:
        """A request starts."""

    def request_finished(self, req: ReqId) -> None:
        """A request ended (told once, when nothing of it is outstanding)."""

    def end_of_step(self) -> None:
        """The scheduler's step ends."""

    def has_pending_work(self) -> bool:
        """Whether the tier needs the engine to keep stepping."""

    def shutdown(self) -> None:
        """Release the tier's resources."""
