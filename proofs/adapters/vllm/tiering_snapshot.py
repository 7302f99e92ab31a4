"""vLLM 0.33's tiering state read into a `TieringSnapshot` (the shape the model has).

What is read, and from where (a `VllmTiering` `a`, its manager `m`):

* **primary**: vLLM's own CPU manager snapshot (`VllmManager.around(primary)`): each
  resident chunk's key, `ref_cnt` (state from it), slot (`chunk_id`); the free stack
  and high-water mark of its chunk pool; the LRU order of the evictable chunks (None
  under ARC, whose order is four lists).
* **owners** (vLLM keeps none; reconstructed): a PENDING chunk's owners are the GPU
  stores the adapter prepared and has not completed (`GpuStore`), the staged
  promotions of `m._pending_load_submissions` (`StagedPromotion`) and the promotion
  jobs of `m._jobs` (`SubmittedPromotion`); a chunk's pins are the adapter's GPU loads
  (`GpuLoad`, one per scan that pinned it and was not completed) and the store jobs of
  `m._jobs` (`PeerStore` when the job's request was opened by a serving tier,
  `Cascade` otherwise). Owners are listed whatever the chunk's state, so that a chunk
  whose ref count and owners disagree shows it.
* **jobs**: `m._jobs` (tier, keys, chunk ids, request); the phase from the tier:
  FINISHED_UNSEEN when the tier holds its result for the next poll (example:
  `completed_jobs`; fs: its pool's finished queue; p2p: `_finished_jobs`; ours: what
  was finished and not taken), SUBMITTED while the tier works on it (fs: in its pool;
  p2p and the peer tier: parked or in a fetch round), REGISTERED when no tier has it
  (its submit raised).
* **staged**: `m._pending_load_submissions`. **requests**: every request the adapter
  opened, and every request a serving tier opened; phase from the finish calls and
  `m._req_state`; `store_calls` is vLLM's `pending_primary_stores`, `parked` its
  `pending_cascade_keys`; `finalised` counts each tier's `on_request_finished` calls.
* **copies**: the example tier's `chunks`; the fs tier's block files (for every key
  the adapter has seen); the harness tiers' copies; the p2p and peer tiers hold none.
* **probes**: the fs tier's `AsyncLookupManager` state and the harness tiers' probes.
  **peers**: the p2p server roles' queued and parked lookups (and LookupMsgs still in
  the stub connection), the serving harness tiers' peer requests.
* `pending_work` is `m.has_pending_work()`, `gate` `m._processed_jobs_this_step`,
  `held` `m._promotions_held`, `next_job` `m._job_id_counter`, `armed` / `strays` the
  harness tiers' armed faults, `log` the last call's record (`tiering_log`).
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterator
from dataclasses import replace
from typing import Any

from evictable.impl.refusals import state_of_ref
from evictable.model.tiering_types import (
    Cascade,
    ChunkEntry,
    CopyEntry,
    CopyState,
    GpuLoad,
    GpuStore,
    JobEntry,
    JobId,
    JobKind,
    JobOutcome,
    JobPhase,
    PeerEntry,
    PeerPhase,
    PeerStore,
    PendingOwner,
    PinOwner,
    PrimarySnapshot,
    ProbeEntry,
    ProbePhase,
    ReqId,
    RequestEntry,
    RequestPhase,
    StagedEntry,
    StagedPromotion,
    SubmittedPromotion,
    TierId,
    TieringSnapshot,
    owner_order,
)
from evictable.model.types import LruPolicySnapshot
from evictable.proofs.adapters.vllm.manager import VllmManager

__all__ = ["copies", "peers", "pending_owners", "phase_of", "probes", "read_snapshot"]


def outcome_of(result: Any) -> JobOutcome:
    """vLLM's `JobResult` as an outcome: OK, PARTIAL (its successful keys), FAILED."""
    if result.success:
        return JobOutcome.ok()
    if result.successful_keys:
        return JobOutcome.partial(tuple(result.successful_keys))
    return JobOutcome.failed()


def _peer_made(a: Any, job_meta: Any) -> bool:
    return str(job_meta.transfer_job.req_context.req_id) in a.recorder.origin


def _job_kind(a: Any, meta: Any) -> JobKind:
    if meta.transfer_job.is_promotion:
        return JobKind.PROMOTION
    return JobKind.PEER_STORE if _peer_made(a, meta) else JobKind.CASCADE


def _named(a: Any, outcome: JobOutcome) -> JobOutcome:
    """`outcome` with the engine's keys (vLLM reports its own)."""
    return replace(outcome, ok_keys=tuple(a.key(k) for k in outcome.ok_keys))


def phase_of(a: Any, index: int, job: int) -> tuple[JobPhase, JobOutcome | None]:
    phase, outcome = _raw_phase(a, index, job)
    return phase, None if outcome is None else _named(a, outcome)


def _raw_phase(a: Any, index: int, job: int) -> tuple[JobPhase, JobOutcome | None]:
    kind, tier = a.kinds[index], a.tiers[index]
    if kind in ("harness", "serving"):
        if job in tier.reported:
            return JobPhase.FINISHED_UNSEEN, tier.reported[job][1]
        return (JobPhase.SUBMITTED if job in tier.submitted else JobPhase.REGISTERED), None
    if kind == "example":
        for r in tier.completed_jobs:
            if r.job_id == job:
                return JobPhase.FINISHED_UNSEEN, outcome_of(r)
        return JobPhase.REGISTERED, None
    if kind == "fs":
        for job_id, success, _ in list(tier._pool._finished_q):
            if job_id == job:
                keys = tier._load_job_keys.get(job) or ()
                done = tier._load_progress.get(job, 0)
                if success:
                    return JobPhase.FINISHED_UNSEEN, JobOutcome.ok()
                if keys and done:
                    return JobPhase.FINISHED_UNSEEN, JobOutcome.partial(tuple(keys[:done]))
                return JobPhase.FINISHED_UNSEEN, JobOutcome.failed()
        in_pool = job in tier._job_block_counts
        return (JobPhase.SUBMITTED if in_pool else JobPhase.REGISTERED), None
    finished = tier.results if kind == "peer" else tier._finished_jobs
    for r in finished:
        if r.job_id == job:
            return JobPhase.FINISHED_UNSEEN, outcome_of(r)
    return JobPhase.SUBMITTED, None


def _jobs(a: Any) -> tuple[JobEntry, ...]:
    out = []
    for job_id, meta in sorted(a.vllm._jobs.items()):
        tj = meta.transfer_job
        phase, outcome = phase_of(a, int(meta.tier_idx), int(job_id))
        out.append(
            JobEntry(
                job=JobId(int(job_id)),
                tier=TierId(int(meta.tier_idx)),
                kind=_job_kind(a, meta),
                keys=tuple(a.key(k) for k in tj.keys),
                slots=tuple(int(c) for c in tj.chunk_ids),
                req=ReqId(str(tj.req_context.req_id)),
                phase=phase,
                outcome=outcome,
            )
        )
    return tuple(out)


def _staged(a: Any) -> tuple[StagedEntry, ...]:
    return tuple(
        StagedEntry(
            TierId(int(t)),
            ReqId(str(req)),
            tuple(a.key(k) for k in entry.keys),
            tuple(int(c) for c in entry.chunk_ids),
        )
        for t, by_req in a.vllm._pending_load_submissions.items()
        for req, entry in by_req.items()
    )


def pending_owners(a: Any, key: Hashable) -> tuple[PendingOwner, ...]:
    """Who may complete the PENDING chunk of `key` (the engine's key; module
    docstring), sorted."""
    owners: list[PendingOwner] = [
        GpuStore(ReqId(req)) for req, keys in a.stores.items() if key in keys
    ]
    for entry in _staged(a):
        if key in entry.keys:
            owners.append(StagedPromotion(entry.tier, entry.req))
    for job_id, meta in a.vllm._jobs.items():
        if meta.transfer_job.is_promotion and key in [a.key(k) for k in meta.transfer_job.keys]:
            owners.append(SubmittedPromotion(JobId(int(job_id))))
    return tuple(sorted(owners, key=owner_order))


def _pins(a: Any, key: Hashable) -> tuple[PinOwner, ...]:
    pins: list[PinOwner] = [
        GpuLoad(ReqId(req)) for req, keys in a.loads.items() for k in keys if k == key
    ]
    for job_id, meta in a.vllm._jobs.items():
        tj = meta.transfer_job
        if not tj.is_promotion and key in [a.key(k) for k in tj.keys]:
            job = JobId(int(job_id))
            pins.append(PeerStore(job) if _peer_made(a, meta) else Cascade(job))
    return tuple(sorted(pins, key=owner_order))


def _primary(a: Any) -> PrimarySnapshot:
    cpu = VllmManager.around(a.primary).snapshot()
    chunks = frozenset(
        ChunkEntry(
            key=a.key(b.key),
            state=state_of_ref(b.ref_cnt),
            slot=b.slot,
            ref_cnt=b.ref_cnt,
            owners=pending_owners(a, a.key(b.key)),
            pins=_pins(a, a.key(b.key)),
        )
        for b in cpu.blocks
    )
    order = (
        tuple(a.key(k) for k in cpu.policy.evictable)
        if isinstance(cpu.policy, LruPolicySnapshot)
        else None
    )
    return PrimarySnapshot(
        num_slots=cpu.num_blocks,
        chunks=chunks,
        free_stack=cpu.free_stack,
        high_water=cpu.high_water,
        evictable=order,
    )


def copies(a: Any) -> frozenset[CopyEntry]:
    out: set[CopyEntry] = set()
    for i, (kind, tier) in enumerate(zip(a.kinds, a.tiers, strict=True)):
        t = TierId(i)
        if kind == "example":
            out.update(CopyEntry(t, a.key(k), CopyState.PRESENT) for k in tier.chunks)
        elif kind == "fs":
            for raw, key in a.keys_seen.items():
                if os.path.exists(tier.file_mapper.get_file_name(raw)):
                    out.add(CopyEntry(t, key, CopyState.PRESENT))
        elif kind in ("harness", "serving"):
            out.update(CopyEntry(t, a.key(k), CopyState.PRESENT) for k in tier.present)
            for job_id, job in tier.submitted.items():
                if job.is_promotion or job_id in getattr(tier, "peer_jobs", ()):
                    continue
                for k in job.keys:
                    if k not in tier.present:
                        out.add(CopyEntry(t, a.key(k), CopyState.WRITING, JobId(job_id)))
    return frozenset(out)


def _requests(a: Any) -> tuple[RequestEntry, ...]:
    m, rec = a.vllm, a.recorder
    out = []
    for req in sorted({*a.contexts, *rec.origin}):
        state = m._req_state.get(req)
        finished = rec.finish_calls[req] > 0
        phase = (
            RequestPhase.ACTIVE
            if not finished and (state is not None or req in a.contexts)
            else RequestPhase.FINISHED
            if state is not None
            else RequestPhase.FINALISED
        )
        out.append(
            RequestEntry(
                req=ReqId(req),
                phase=phase,
                stores=tuple(a.stores.get(req, ())),
                loads=tuple(a.loads.get(req, ())),
                parked=tuple(a.key(k) for k in state.pending_cascade_keys) if state else (),
                store_calls=int(state.pending_primary_stores) if state else 0,
                finalised=tuple(rec.told[(req, i)] for i in range(len(a.tiers))),
                origin=TierId(rec.origin[req]) if req in rec.origin else None,
            )
        )
    return tuple(out)


_PROBE = {"PENDING": ProbePhase.QUEUED, "IN_FLIGHT": ProbePhase.IN_FLIGHT}


def probes(a: Any) -> frozenset[ProbeEntry]:
    out: set[ProbeEntry] = set()
    for i, (kind, tier) in enumerate(zip(a.kinds, a.tiers, strict=True)):
        if kind == "fs":
            for key, s in tier._lookup_manager._lookup_state.items():
                out.add(
                    ProbeEntry(
                        TierId(i),
                        a.key(key),
                        _PROBE.get(s.phase.name, ProbePhase.RESOLVED),
                        s.result,
                        frozenset(ReqId(r) for r in s.request_ids),
                    )
                )
        elif kind in ("harness", "serving"):
            for key, p in tier.probes.items():
                out.add(
                    ProbeEntry(
                        TierId(i),
                        a.key(key),
                        ProbePhase(p.phase),
                        p.found,
                        frozenset(ReqId(r) for r in p.reqs),
                    )
                )
    return frozenset(out)


def _servers(a: Any, index: int) -> Iterator[Any]:
    tier = a.tiers[index]
    if a.kinds[index] == "peer":
        yield tier.server
    else:
        for session in tier._sessions.values():
            yield session._server


def peers(a: Any) -> tuple[PeerEntry, ...]:
    out: list[PeerEntry] = []
    for i, kind in enumerate(a.kinds):
        t = TierId(i)
        if kind == "serving":
            out += [
                PeerEntry(
                    t,
                    ReqId(p.req),
                    tuple(a.key(k) for k in p.keys),
                    p.phase,
                    tuple((a.key(k), v) for k, v in p.resolved.items()),
                    tuple(a.key(k) for k in p.pending),
                )
                for p in a.tiers[i].peers
            ]
        if kind not in ("peer", "p2p"):
            continue
        for server in _servers(a, i):
            for kv, st in server._requests.items():
                for pl in st.pending_lookups:
                    keys = tuple(a.key(k) for k in pl.keys)
                    out.append(PeerEntry(t, ReqId(str(kv)), keys, PeerPhase.QUEUED))
                for lu in st.lookups.values():
                    out.append(
                        PeerEntry(
                            t,
                            ReqId(str(lu.ctx.req_id)),
                            tuple(a.key(k) for k in lu.keys),
                            PeerPhase.PARKED,
                            tuple((a.key(k), v) for k, v in lu.resolved.items()),
                            tuple(a.key(k) for k in lu.keys if k in lu.pending),
                        )
                    )
        conn = a.peers.get(i)
        for msg in conn.inbox if conn is not None else ():
            if msg.get("type") == "lookup":
                keys = tuple(a.key(k) for k in msg["keys"])
                out.append(PeerEntry(t, ReqId(msg["kv_request_id"]), keys, PeerPhase.QUEUED))
    return tuple(out)


def read_snapshot(a: Any) -> TieringSnapshot:
    """Everything of `a` (a `VllmTiering`) a snapshot holds (module docstring)."""
    m = a.vllm
    ours = [
        (TierId(i), t)
        for i, (k, t) in enumerate(zip(a.kinds, a.tiers, strict=True))
        if k in ("harness", "serving")
    ]
    return TieringSnapshot(
        config=a.config,
        primary=_primary(a),
        copies=copies(a),
        jobs=_jobs(a),
        staged=_staged(a),
        requests=_requests(a),
        probes=probes(a),
        peers=peers(a),
        pending_work=bool(m.has_pending_work()),
        gate=bool(m._processed_jobs_this_step),
        held=bool(m._promotions_held),
        armed=frozenset(i for i, t in ours if t.armed),
        strays=frozenset(i for i, t in ours if t.stray),
        next_job=int(m._job_id_counter),
        closed=bool(a.closed),
        log=a.recorder.last,
    )
