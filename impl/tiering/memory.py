"""An in-memory secondary tier (`MemoryTier`): the reference tier for tests, examples
and benchmarks of our orchestrator (docs/interop.md, "Our orchestrator").

It keeps its copies in a set; every job it takes completes at once and is reported by
the next `finished_jobs()`. It serves no peers and needs no request-level cascade.
"""

from __future__ import annotations

from evictable.impl.tiering.tiers import JobReport, PeerParent, TierJob
from evictable.model.tiering_types import JobOutcome, ReqId, TierAnswer
from evictable.model.types import Key

__all__ = ["MemoryTier"]


class MemoryTier:
    """A secondary tier in memory: `copies` holds the keys it has; a cascade adds its
    keys, a promotion reads them; each job is reported OK by the next
    `finished_jobs()`.

    >>> from evictable.impl.tiering import MemoryTier, TieringManager
    >>> tier = MemoryTier()
    >>> m = TieringManager(2, [tier])
    >>> m.new_request(ReqId("r"))
    >>> m.store(ReqId("r"), ["a"]).keys_to_store
    ['a']
    >>> m.complete_store(ReqId("r"), ["a"])  # cascaded to the tier
    >>> sorted(tier.copies)
    ['a']

    Complexity: O(1) per key of a call.
    """

    serving = False
    request_level = False

    def __init__(self) -> None:
        """An empty tier. Complexity: O(1)."""
        self.copies: set[Key] = set()
        self.reports: list[JobReport] = []
        self.requests: set[ReqId] = set()

    def lookup(self, key: Key, req: ReqId) -> TierAnswer:
        """HIT when the tier holds `key`, else MISS (never RETRY). Complexity: O(1)."""
        return TierAnswer.HIT if key in self.copies else TierAnswer.MISS

    def submit_store(self, job: TierJob) -> None:
        """Copy the job's keys; report it OK next. Complexity: O(keys)."""
        self.copies.update(job.keys)
        self.reports.append((job.job, JobOutcome.ok()))

    def submit_load(self, job: TierJob) -> None:
        """Read the job's keys (all held: the orchestrator asked after a HIT); report
        it OK next, or failed for a key the tier does not hold. Complexity: O(keys)."""
        held = all(k in self.copies for k in job.keys)
        self.reports.append((job.job, JobOutcome.ok() if held else JobOutcome.failed()))

    def finished_jobs(self) -> list[JobReport]:
        """The reports since the last call, oldest first. Complexity: O(reports)."""
        out, self.reports = self.reports, []
        return out

    def drain(self) -> None:
        """Nothing in flight: every job completed when it was taken. Complexity: O(1)."""

    def serve_peers(self, parent: PeerParent) -> None:
        """No peers. Complexity: O(1)."""

    def new_request(self, req: ReqId) -> None:
        """Remember the request. Complexity: O(1)."""
        self.requests.add(req)

    def request_finished(self, req: ReqId) -> None:
        """Forget the request. Complexity: O(1)."""
        self.requests.discard(req)

    def end_of_step(self) -> None:
        """Nothing to do at a step's end. Complexity: O(1)."""

    def has_pending_work(self) -> bool:
        """Reports not yet taken. Complexity: O(1)."""
        return bool(self.reports)

    def shutdown(self) -> None:
        """Drop the copies. Complexity: O(copies)."""
        self.copies.clear()
