"""A tiering orchestrator's state as a `TieringSnapshot`, and back.

`take_snapshot` lists every part of an `Orchestrator` (model.tiering_core) as frozen,
comparable values in the orders `TieringSnapshot` states; `restore_state` makes an
orchestrator's state the one a snapshot describes (the explorer's states are snapshots).
"""

from __future__ import annotations

from evictable.model.tiering_core import Orchestrator
from evictable.model.tiering_tiers import Job, Peer, Probe, Request, Staged
from evictable.model.tiering_types import (
    CopyEntry,
    JobEntry,
    PeerEntry,
    ProbeEntry,
    RequestEntry,
    StagedEntry,
    TieringSnapshot,
)

__all__ = ["restore_state", "take_snapshot"]


def take_snapshot(o: Orchestrator, pending_work: bool) -> TieringSnapshot:
    """Everything observable about `o` (`pending_work`: what it says it has)."""
    return TieringSnapshot(
        config=o.config,
        primary=o.primary.snapshot(),
        copies=frozenset(CopyEntry(t, k, state, job) for (t, k), (state, job) in o.copies.items()),
        jobs=tuple(
            JobEntry(j.job, j.tier, j.kind, j.keys, j.slots, j.req, j.phase, j.outcome)
            for j in sorted(o.jobs.values(), key=lambda j: j.job)
        ),
        staged=tuple(
            StagedEntry(t, req, tuple(e.keys), tuple(e.slots))
            for t, by_req in o.staged.items()
            for req, e in by_req.items()
        ),
        requests=tuple(
            RequestEntry(
                r.req,
                r.phase,
                tuple(r.stores),
                tuple(r.loads),
                tuple(r.parked),
                None if o.spec else r.store_calls,
                tuple(r.finalised),
                r.origin,
            )
            for r in sorted(o.requests.values(), key=lambda r: r.req)
        ),
        probes=frozenset(
            ProbeEntry(t, k, p.phase, p.found, frozenset(p.reqs)) for (t, k), p in o.probes.items()
        ),
        peers=tuple(
            PeerEntry(p.tier, p.req, p.keys, p.phase, tuple(p.resolved.items()), tuple(p.pending))
            for p in o.peers
        ),
        pending_work=pending_work,
        gate=o.gate,
        held=o.held,
        armed=frozenset(o.armed),
        next_job=o.next_job,
        closed=o.closed,
        log=tuple(o.log),
        strays=frozenset(o.strays),
    )


def restore_state(o: Orchestrator, snap: TieringSnapshot) -> None:
    """Give `o` (fresh, of `snap`'s config) the state `snap` describes."""
    o.primary.restore(snap.primary)
    o.copies = {(c.tier, c.key): (c.state, c.job) for c in snap.copies or ()}
    o.jobs = {
        j.job: Job(j.job, j.tier, j.kind, j.keys, j.slots, j.req, j.phase, j.outcome)
        for j in snap.jobs
    }
    for s in snap.staged:
        o.staged.setdefault(s.tier, {})[s.req] = Staged(list(s.keys), list(s.slots))
    for e in snap.requests:
        r = Request(e.req, e.phase, e.origin, list(e.finalised))
        r.stores, r.loads, r.parked = list(e.stores), list(e.loads), list(e.parked)
        r.store_calls = e.store_calls if e.store_calls is not None else 0
        o.requests[e.req] = r
    o.probes = {(p.tier, p.key): Probe(p.phase, p.found, set(p.reqs)) for p in snap.probes or ()}
    o.peers = [
        Peer(p.tier, p.req, p.keys, p.phase, dict(p.resolved), list(p.pending))
        for p in snap.peers or ()
    ]
    o.gate = bool(snap.gate)
    o.held = snap.held
    o.armed = set(snap.armed)
    o.strays = set(snap.strays)
    o.next_job = snap.next_job or 0
    o.closed = snap.closed
