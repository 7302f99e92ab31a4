"""The safety invariants of tiered offloading, over a `TieringSnapshot`.

Each `inv_<name>(snap)` returns True (holds), False (violated) or None (skipped: the
snapshot does not show a part it needs -- an adapter over real code reports what it can
see; a skipped invariant is reported as skipped, never as holding). They judge the model
and an adapter over another orchestrator alike. The hold-level ones read `snap.log`, the
record of the last call (its lookup holds, evictions, pins, completions).

`TIERING_INVARIANTS` is the registry (merged into `model.invariants.INVARIANTS`);
`FINDING_CLASS` names what a violation of each means (the finding classes of
docs/semantics.md, "Tiered offloading"); `POSTCONDITIONS` are the invariants of one call's
post-state (after `reset`: nothing left). `check_tiering(snap)` evaluates them all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from evictable.model.lifecycle import CpuState
from evictable.model.tiering_types import (
    Cascade,
    CopyState,
    GpuLoad,
    GpuStore,
    JobKind,
    JobPhase,
    MicroKind,
    PeerStore,
    PendingOwner,
    PinOwner,
    ProbePhase,
    RequestPhase,
    StagedPromotion,
    SubmittedPromotion,
    TierAnswer,
    TieringSnapshot,
)
from evictable.model.types import Key

__all__ = [
    "BETWEEN_STEPS",
    "FINDING_CLASS",
    "LOG_INVARIANTS",
    "POSTCONDITIONS",
    "TIERING_INVARIANTS",
    "TieringVerdict",
    "check_tiering",
    "live_pending_owners",
    "live_pins",
]

Verdict = bool | None
TieringInvariant = Callable[[TieringSnapshot], Verdict]


# ------------------------------------------------------------- derived owners


def live_pins(snap: TieringSnapshot) -> dict[Key, list[PinOwner]]:
    """The pins the live parties hold, per key: each unprocessed cascade / peer store job
    one per key, each request's GPU load one per key it loads."""
    out: dict[Key, list[PinOwner]] = {}
    for j in snap.jobs:
        if j.kind is JobKind.PROMOTION:
            continue
        owner: PinOwner = Cascade(j.job) if j.kind is JobKind.CASCADE else PeerStore(j.job)
        for key in j.keys:
            out.setdefault(key, []).append(owner)
    for r in snap.requests:
        for key in r.loads:
            out.setdefault(key, []).append(GpuLoad(r.req))
    return out


def live_pending_owners(snap: TieringSnapshot) -> dict[Key, list[PendingOwner]]:
    """The parties that claim to complete a PENDING chunk, per key: a request's
    outstanding GPU stores, a staged promotion, an unprocessed promotion job."""
    out: dict[Key, list[PendingOwner]] = {}
    for r in snap.requests:
        for key in r.stores:
            out.setdefault(key, []).append(GpuStore(r.req))
    for s in snap.staged:
        for key in s.keys:
            out.setdefault(key, []).append(StagedPromotion(s.tier, s.req))
    for j in snap.jobs:
        if j.kind is JobKind.PROMOTION:
            for key in j.keys:
                out.setdefault(key, []).append(SubmittedPromotion(j.job))
    return out


def _within(part: Sequence[object], whole: Sequence[object]) -> bool:
    """Multiset inclusion of two small lists."""
    return all(part.count(x) <= whole.count(x) for x in set(part))


# --------------------------------------------------------------- the primary


def inv_chunks_consistent(snap: TieringSnapshot) -> Verdict:
    """Each chunk's ref count is its state's (PENDING -1, READY 0, LOADING = its pins),
    slots split into fresh, free and owned, and the evictable list is the READY keys."""
    p = snap.primary
    for c in p.chunks:
        want = {CpuState.PENDING: -1, CpuState.READY: 0}.get(c.state, len(c.pins))
        if c.state is CpuState.LOADING and c.ref_cnt < 1:
            return False
        if c.ref_cnt != want or (c.state is not CpuState.PENDING and c.owners):
            return False
        if c.state is not CpuState.LOADING and c.pins:
            return False
    owned = [c.slot for c in p.chunks] + list(p.free_stack)
    if not 0 <= p.high_water <= p.num_slots or sorted(owned) != list(range(p.high_water)):
        return False
    if p.evictable is None:
        return True
    ready = {c.key for c in p.chunks if c.state is CpuState.READY}
    return len(set(p.evictable)) == len(p.evictable) and set(p.evictable) == ready


def inv_pins_have_owners(snap: TieringSnapshot) -> Verdict:
    """Every pin of a chunk is held by a live party (no leaked pin)."""
    live = live_pins(snap)
    for c in snap.primary.chunks:
        if c.ref_cnt > 0 and c.ref_cnt != len(c.pins):
            return False
        if c.pins and not _within(c.pins, live.get(c.key, [])):
            return False
    return True


def inv_owners_have_pins(snap: TieringSnapshot) -> Verdict:
    """Every live party that reads a chunk holds its pin on it (no lost owner)."""
    chunks = {c.key: c for c in snap.primary.chunks}
    for key, owners in live_pins(snap).items():
        c = chunks.get(key)
        if c is None or not _within(owners, c.pins):
            return False
    return True


def inv_one_pending_owner(snap: TieringSnapshot) -> Verdict:
    """A PENDING chunk has exactly one party that may complete it."""
    return all(len(c.owners) == 1 for c in snap.primary.chunks if c.state is CpuState.PENDING)


def inv_pending_owners_live(snap: TieringSnapshot) -> Verdict:
    """The pending owner of every PENDING chunk is a live claim on it, and every live
    claim (an outstanding GPU store, a staged promotion, a promotion job not processed)
    owns its chunk."""
    chunks = {c.key: c for c in snap.primary.chunks}
    claims = live_pending_owners(snap)
    for chunk in chunks.values():
        if chunk.state is CpuState.PENDING and not _within(chunk.owners, claims.get(chunk.key, [])):
            return False
    for key, owners in claims.items():
        c = chunks.get(key)
        if c is None or c.state is not CpuState.PENDING:
            return False
        if not _within(owners, c.owners):
            return False
    return True


def inv_no_stale_write(snap: TieringSnapshot) -> Verdict:
    """A promotion job in flight writes only the chunks its keys own: the chunk of each
    key at the job's slot, PENDING under the job."""
    chunks = {c.key: c for c in snap.primary.chunks}
    for j in snap.jobs:
        if j.kind is not JobKind.PROMOTION or j.phase is not JobPhase.SUBMITTED:
            continue
        for key, slot in zip(j.keys, j.slots, strict=False):
            c = chunks.get(key)
            if c is None or c.state is not CpuState.PENDING or c.slot != slot:
                return False
            if SubmittedPromotion(j.job) not in c.owners:
                return False
    return True


def inv_owner_completes(snap: TieringSnapshot) -> Verdict:
    """Only a PENDING chunk's owner completed it in the last call (no completion by a
    store or a promotion the chunk is not theirs)."""
    if snap.log is None:
        return None
    return all(m.owner in m.owners for m in snap.log if m.kind is MicroKind.COMPLETE)


def inv_hits_stay_resident(snap: TieringSnapshot) -> Verdict:
    """Inside one lookup hold (a scan, one peer lookup), no key reported HIT is evicted
    before the hold closes: what the hold answered is still there when it pins."""
    if snap.log is None:
        return None
    hits: set[Key] | None = None
    for m in snap.log:
        if m.kind is MicroKind.OPEN:
            hits = set()
        elif m.kind is MicroKind.CLOSE:
            hits = None
        elif hits is not None and m.kind is MicroKind.LOOKUP and m.answer is TierAnswer.HIT:
            hits.add(m.key)
        elif hits is not None and m.kind is MicroKind.EVICT and m.key in hits:
            return False
    return True


def inv_only_idle_evicted(snap: TieringSnapshot) -> Verdict:
    """Only READY (idle, unpinned, written) chunks are evicted."""
    if snap.log is None:
        return None
    return all(m.state is CpuState.READY for m in snap.log if m.kind is MicroKind.EVICT)


# -------------------------------------------------------- requests and work


def inv_finalised_once(snap: TieringSnapshot) -> Verdict:
    """A finalised request was told to every tier (but its origin) exactly once; one
    not finalised, to none."""
    tiers = range(len(snap.config.tiers))
    for r in snap.requests:
        if len(r.finalised) != len(tiers) or any(n > 1 for n in r.finalised):
            return False
        told = {t for t in tiers if r.finalised[t] == 1}
        if r.phase is RequestPhase.FINALISED:
            if told != {t for t in tiers if t != r.origin} and told != set(tiers):
                return False
        elif told:
            return False
    return True


def inv_pending_work_visible(snap: TieringSnapshot) -> Verdict:
    """Between steps (where an engine asks), while any job, staged promotion, parked
    cascade, waiting probe or peer's lookup exists, `has_pending_work()` says so (else an
    idle engine stops stepping and it waits for ever)."""
    if snap.pending_work is None:
        return None
    waiting = snap.probes is not None and any(
        p.phase in (ProbePhase.QUEUED, ProbePhase.IN_FLIGHT) for p in snap.probes
    )
    work = bool(snap.jobs) or bool(snap.staged) or waiting or bool(snap.peers)
    work = work or any(r.parked for r in snap.requests)
    return snap.pending_work or not work


def inv_copies_written_by_jobs(snap: TieringSnapshot) -> Verdict:
    """A copy being written is written by a live cascade job of its tier that has it."""
    if snap.copies is None:
        return None
    jobs = {j.job: j for j in snap.jobs}
    for c in snap.copies:
        if c.state is not CopyState.WRITING:
            continue
        j = jobs.get(c.job) if c.job is not None else None
        if j is None or j.kind is not JobKind.CASCADE or j.tier != c.tier or c.key not in j.keys:
            return False
    return True


def inv_reset_left_nothing(snap: TieringSnapshot) -> Verdict:
    """After a reset (its post-state): no job, no staged promotion, no resident chunk,
    no request with an outstanding store, load or parked key."""
    if snap.jobs or snap.staged or snap.primary.chunks:
        return False
    return not any(r.stores or r.loads or r.parked for r in snap.requests)


TIERING_INVARIANTS: dict[str, TieringInvariant] = {
    "chunks_consistent": inv_chunks_consistent,
    "pins_have_owners": inv_pins_have_owners,
    "owners_have_pins": inv_owners_have_pins,
    "one_pending_owner": inv_one_pending_owner,
    "pending_owners_live": inv_pending_owners_live,
    "no_stale_write": inv_no_stale_write,
    "owner_completes": inv_owner_completes,
    "hits_stay_resident": inv_hits_stay_resident,
    "only_idle_evicted": inv_only_idle_evicted,
    "finalised_once": inv_finalised_once,
    "copies_written_by_jobs": inv_copies_written_by_jobs,
}
"""Every tiering invariant checked in every state, by name."""

BETWEEN_STEPS: dict[str, TieringInvariant] = {
    "pending_work_visible": inv_pending_work_visible,
}
"""The invariants judged only in states between scheduler steps (where an engine asks
`has_pending_work()`: no step's hold open)."""

LOG_INVARIANTS: frozenset[str] = frozenset(
    {"owner_completes", "hits_stay_resident", "only_idle_evicted"}
)
"""The invariants that read the last call's record (`snap.log`); the others read the
state alone."""

POSTCONDITIONS: dict[str, dict[str, TieringInvariant]] = {
    "reset": {"reset_left_nothing": inv_reset_left_nothing},
}
"""Invariants of one call's post-state, by call."""

FINDING_CLASS: dict[str, str] = {
    "chunks_consistent": "accounting",
    "pins_have_owners": "pin_leak",
    "owners_have_pins": "owner_lost",
    "one_pending_owner": "double_owner",
    "pending_owners_live": "owner_lost",
    "no_stale_write": "stale_write",
    "owner_completes": "stale_write",
    "hits_stay_resident": "evicted_while_hit",
    "only_idle_evicted": "evicted_while_pinned",
    "finalised_once": "finalised_twice",
    "pending_work_visible": "pending_hidden",
    "copies_written_by_jobs": "accounting",
    "reset_left_nothing": "reset_left_work",
}
"""The finding class a violation of each invariant is reported as."""


@dataclass(frozen=True)
class TieringVerdict:
    """The invariants a snapshot violates and those it could not be judged on."""

    violated: tuple[str, ...]
    skipped: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.violated


def check_tiering(
    snap: TieringSnapshot,
    after: str | None = None,
    names: Iterable[str] | None = None,
    between_steps: bool = False,
) -> TieringVerdict:
    """Evaluate every invariant (or those in `names`), those of `BETWEEN_STEPS` when the
    snapshot is taken between steps, and the postconditions of the call `after`."""
    every = {**TIERING_INVARIANTS, **BETWEEN_STEPS}
    chosen = TIERING_INVARIANTS if names is None else {n: every[n] for n in names}
    invs = dict(chosen)
    if between_steps and names is None:
        invs.update(BETWEEN_STEPS)
    if after is not None:
        invs.update(POSTCONDITIONS.get(after, {}))
    violated, skipped = [], []
    for name, inv in invs.items():
        got = inv(snap)
        if got is None:
            skipped.append(name)
        elif not got:
            violated.append(name)
    return TieringVerdict(tuple(violated), tuple(skipped))
