"""The tiering adapter protocol: what the engines call on a tiering orchestrator under
test, and how they build one (docs/semantics.md, "Tiered offloading").

`evictable.model.tiering.ModelTiering` satisfies it as it is; vLLM 0.33's
`TieringOffloadingManager` satisfies it through the adapters of `proofs.adapters.vllm`.
Each scheduler-side call is one lock hold of the orchestrator; the events are what other
threads and the tiers do, fired explicitly by the engine (an adapter over real code
drives its tiers so that they happen exactly then).

Optional: `tier_reports_unknown(tier)` -- a tier will report, at its next poll, a job id
it was never given (a misbehaving tier); an engine fires it only where the adapter has it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from evictable.model.errors import InvalidArgumentError
from evictable.model.lifecycle import CpuState
from evictable.model.tiering_types import (
    ChunkEntry,
    CopyState,
    JobId,
    JobOutcome,
    ReqId,
    StoreOutcome,
    TierId,
    TieringConfig,
    TieringSnapshot,
)
from evictable.model.types import Key

__all__ = ["EVENT_API", "SCHEDULER_API", "TieringAdapter", "TieringFactory", "start_chunks"]


@runtime_checkable
class TieringAdapter(Protocol):
    """An orchestrator at the scheduler's granularity, plus the events of its tiers."""

    # ------------------------------------------------------------ scheduler side
    def new_request(self, req: ReqId) -> None:
        """A request arrives (vLLM: `on_new_request`)."""

    def scan(self, req: ReqId, keys: Sequence[Key]) -> int | None:
        """The prefix scan of `req` over `keys` (lookups in order until the first MISS;
        None, "try later", when one answered HIT_PENDING or RETRY), and in the same hold
        the pin of its hits (`GpuLoad(req)`) when it answers n > 0."""

    def store(self, req: ReqId, keys: Sequence[Key]) -> StoreOutcome | None:
        """Prepare the GPU store of `keys` for `req` (None: no room)."""

    def complete_store(self, req: ReqId, keys: Sequence[Key], success: bool = True) -> None:
        """The GPU store of `keys` for `req` finished (or failed)."""

    def complete_load(self, req: ReqId, keys: Sequence[Key]) -> None:
        """The GPU load of `keys` for `req` finished: its pins are released."""

    def finish(self, req: ReqId) -> None:
        """The request finished (vLLM: `on_request_finished`)."""

    def end_step(self) -> None:
        """The end of a scheduler step (vLLM: `on_schedule_end`)."""

    def poll(self) -> None:
        """One poll round of the serving tiers, between holds (vLLM: `poll_tiers`)."""

    def reset(self) -> None:
        """Reset the cache (vLLM: `reset_cache`)."""

    def reset_flushed(self) -> None:
        """The workers flushed what the reset cancelled (vLLM: `on_reset_flushed`)."""

    def shutdown(self) -> None:
        """Shut the orchestrator and its tiers down."""

    def has_pending_work(self) -> bool:
        """Whether the engine must keep stepping for the orchestrator's sake."""

    def snapshot(self) -> TieringSnapshot:
        """Everything observable (parts it cannot see are None)."""

    # ------------------------------------------------------- other threads, tiers
    def job_finishes(self, job: JobId, outcome: JobOutcome) -> None:
        """A submitted job finishes at its tier (seen at the orchestrator's next poll
        point)."""

    def submit_raises(self, tier: TierId) -> None:
        """Arm the next `submit_store` / `submit_load` of `tier` to raise."""

    def probe_answers(self, tier: TierId, key: Key, found: bool) -> None:
        """The asynchronous lookup probe of `key` at `tier` answers."""

    def peer_request(self, tier: TierId, keys: Sequence[Key]) -> None:
        """A peer asks serving tier `tier` to look `keys` up and pin the hits (served at
        the tier's next serve point: `end_step` or `poll`)."""

    def tier_drops(self, tier: TierId, key: Key) -> None:
        """Tier `tier` loses its copy of `key`."""

    def peer_gives_up(self, tier: TierId) -> None:
        """The deadline of the oldest peer lookup parked at serving tier `tier` passes:
        its pending keys are answered MISS and its request is finished."""


TieringFactory = Callable[[TieringConfig], TieringAdapter]
"""`(config) -> adapter`: how every engine builds the orchestrator under test."""

SCHEDULER_API: tuple[str, ...] = (
    "new_request",
    "scan",
    "store",
    "complete_store",
    "complete_load",
    "finish",
    "end_step",
    "poll",
    "reset",
    "reset_flushed",
    "shutdown",
    "has_pending_work",
    "snapshot",
)
"""The scheduler-side calls every adapter must have."""

EVENT_API: tuple[str, ...] = (
    "job_finishes",
    "submit_raises",
    "probe_answers",
    "peer_request",
    "tier_drops",
    "peer_gives_up",
)
"""The events every adapter must let the engine fire."""


def start_chunks(snap: TieringSnapshot, config: TieringConfig) -> list[ChunkEntry]:
    """The primary's chunks of the start state `snap` for an orchestrator of `config`,
    in slot order, after the checks every adapter's `start(snapshot)` makes: nothing
    in flight (no job, staged promotion, request, peer or probe), the same config,
    every chunk READY in slots 0.. in order, every tier copy PRESENT; else
    `InvalidArgumentError` (nothing changed)."""
    chunks = sorted(snap.primary.chunks, key=lambda c: c.slot)
    if (
        snap.jobs
        or snap.staged
        or snap.requests
        or snap.peers
        or snap.probes
        or snap.config != config
        or any(c.state is not CpuState.READY for c in chunks)
        or [c.slot for c in chunks] != list(range(len(chunks)))
        or any(c.state is not CopyState.PRESENT for c in snap.copies or ())
    ):
        raise InvalidArgumentError("a start state holds READY chunks and tier copies only")
    return chunks
