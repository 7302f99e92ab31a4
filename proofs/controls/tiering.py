"""Deliberately broken tiering orchestrators: each one realistic mistake in the `spec`
profile of `model.tiering.ModelTiering`, for the negative controls of the tiering records.

Each breaks one invariant of `model.tiering_invariants` (the record that controls it must
find the violation) except `LazyFlush`, which breaks only liveness (the fair-cycle search
must find its lasso). vLLM 0.33's own profile is a control too (`VLLM_PROFILE`): what it
breaks is what `docs/semantics.md` lists as its defects.
"""

from __future__ import annotations

from evictable.model.tiering import ModelTiering
from evictable.model.tiering_tiers import Job, Request
from evictable.model.tiering_types import JobKind, JobPhase, Profile, RequestPhase, TieringConfig

__all__ = [
    "LIVENESS_BREAKERS",
    "SAFETY_BREAKERS",
    "VLLM_PROFILE",
    "AnyoneCompletes",
    "FinalisesEarly",
    "ForgetsHits",
    "LazyFlush",
    "RaiseKeepsPins",
    "ResetLeavesJob",
    "StagedNotPending",
]

VLLM_PROFILE = Profile.VLLM_033
"""vLLM 0.33's orchestrator, as the model's profile: a control of every record."""


class ForgetsHits(ModelTiering):
    """A promotion protects only its own key (vLLM's `prepare_write([key])`): it may evict
    a key its hold reported HIT a moment before. Breaks `hits_stay_resident`."""

    @property
    def protects_hits(self) -> bool:
        return False


class RaiseKeepsPins(ModelTiering):
    """A raising submit drops its job but forgets to release the job's pins. Breaks
    `pins_have_owners`."""

    def release(self, job: Job) -> None:
        if job.kind is JobKind.PROMOTION:
            super().release(job)


class StagedNotPending(ModelTiering):
    """`has_pending_work` does not count staged promotions (vLLM's choice). Breaks
    `pending_work_visible` (and, with an idle engine, liveness)."""

    @property
    def pending_counts_staged(self) -> bool:
        return False


class ResetLeavesJob(ModelTiering):
    """A reset that keeps the jobs still in flight at the tiers instead of draining them.
    Breaks the reset postcondition `reset_left_nothing`."""

    def reset(self) -> None:
        kept = {j: job for j, job in self.jobs.items() if job.phase is JobPhase.SUBMITTED}
        super().reset()
        self.jobs.update(kept)


class FinalisesEarly(ModelTiering):
    """`finish` tells the tiers at once even while a GPU store is outstanding, and the
    last store tells them again. Breaks `finalised_once`."""

    def end_request(self, r: Request) -> None:
        super().end_request(r)
        if r.phase is RequestPhase.FINISHED:
            for t in self.tiers:
                if t != r.origin:
                    r.finalised[t] += 1


class AnyoneCompletes(ModelTiering):
    """A completion completes any PENDING chunk it names, whoever owns it (vLLM keeps no
    owners): a store a reset cancelled completes a promotion's chunk. Breaks
    `owner_completes`."""

    def __init__(self, config: TieringConfig, profile: str | Profile = Profile.SPEC) -> None:
        super().__init__(config, profile)
        self.primary.strict_owners = False


class LazyFlush(ModelTiering):
    """The end of a step submits staged promotions only two (tier, request) batches at a
    time, to batch better: a lone staged promotion is never submitted. Every safety
    invariant holds; a scan waiting on it answers "try later" for ever (liveness)."""

    def flush_staged(self) -> None:
        if sum(len(by_req) for by_req in self.staged.values()) >= 2:
            super().flush_staged()


SAFETY_BREAKERS: dict[str, type[ModelTiering]] = {
    "forgets_hits": ForgetsHits,
    "raise_keeps_pins": RaiseKeepsPins,
    "staged_not_pending": StagedNotPending,
    "reset_leaves_job": ResetLeavesJob,
    "finalises_early": FinalisesEarly,
    "anyone_completes": AnyoneCompletes,
}
"""Every safety-breaking variant, by name."""

LIVENESS_BREAKERS: dict[str, type[ModelTiering]] = {"lazy_flush": LazyFlush}
"""Every liveness-breaking variant, by name."""
