"""The world the tiering explorer searches: an orchestrator's snapshot, the scheduler's
requests around it, and its canonical form under key renaming.

A *world* is a `TieringSnapshot` (the whole orchestrator and its tiers) plus the
scheduler side the orchestrator cannot see (`Client`: a request's phase, its prefix of
keys, its GPU load or store in flight), whether a scheduler step is open (its lock hold:
poll rounds wait for its end), and how much of each bounded input was used (peer lookups,
resets, raised submits, tier drops).

**Canonical form.** The orchestrator treats keys, job ids and peers' request ids as names:
renaming them maps every run to a run. `canonical(world)` renames keys by their first
appearance in a traversal that never looks at names (the requests' prefixes in request
order, the peers' lookups, the primary's chunks by slot, the jobs by id, the staged
promotions, the requests, then the keys only the tiers hold, by what the tiers hold of
them), job ids to 0, 1, ... in increasing order (processing follows it), and peers'
requests to `peer0`, `peer1`, ... in order of first appearance. Two worlds get the same
canonical form when one is a renaming of the other, so each class is explored once; the
renaming it returns translates an edge's label back to a concrete run.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from evictable.model.lifecycle import CpuState
from evictable.model.tiering_types import (
    Cascade,
    ChunkEntry,
    CopyEntry,
    CopyState,
    GpuLoad,
    GpuStore,
    JobId,
    JobOutcome,
    PeerStore,
    PendingOwner,
    PinOwner,
    PrimarySnapshot,
    ReqId,
    RequestEntry,
    StagedPromotion,
    SubmittedPromotion,
    TierId,
    TieringConfig,
    TieringSnapshot,
    TierSpec,
    owner_order,
)
from evictable.model.types import Key

__all__ = [
    "Client",
    "Phase",
    "Renaming",
    "TieringBounds",
    "World",
    "canonical",
    "client_id",
    "key_name",
    "keys_of",
    "rename",
    "root_snapshot",
]


def key_name(i: int) -> str:
    """The explorer's i-th key."""
    return f"k{i}"


def client_id(i: int) -> ReqId:
    """The explorer's i-th scheduler request."""
    return ReqId(f"r{i}")


@dataclass(frozen=True)
class TieringBounds:
    """The finite slice of behaviour searched.

    `requests`: one prefix length per scheduler request (its prefix is any sequence of
    distinct keys of that length, chosen when it arrives); `peers`: one (serving tier,
    number of keys) per peer lookup; `primary`: keys READY in the primary at the start;
    `copies`: per tier, the keys it holds at the start (by index); `resets`, `raises`,
    `drops`: how many resets, raising submits and tier drops a run may have; `stale`:
    GPU completions of work a reset cancelled still reach the orchestrator; `outcomes`:
    jobs may also fail (and promotions of several keys split), not only succeed;
    `store_failures`: GPU stores may fail; `strays`: how many times a tier may report a
    job id it was never given; `garbage`: a promotion may report keys it does not have;
    `timeouts`: how many parked peer lookups may reach their deadline.
    """

    keys: int = 2
    slots: int = 1
    tiers: tuple[TierSpec, ...] = (TierSpec(),)
    requests: tuple[int, ...] = (2,)
    peers: tuple[tuple[int, int], ...] = ()
    primary: int = 0
    copies: tuple[tuple[int, ...], ...] = ()
    resets: int = 0
    raises: int = 0
    drops: int = 0
    stale: bool = False
    outcomes: bool = True
    store_failures: bool = False
    strays: int = 0
    garbage: bool = False
    timeouts: int = 0
    max_states: int = 300_000

    @property
    def config(self) -> TieringConfig:
        return TieringConfig(self.slots, self.tiers)

    def describe(self) -> str:
        """The bounds in one line (the record's `bounds`; no square brackets, which a
        rich terminal would read as markup)."""
        tiers = ", ".join(f"{i} {_tier_text(t)}" for i, t in enumerate(self.tiers))
        parts = [
            _count(self.keys, "key"),
            _count(self.slots, "primary slot"),
            f"tiers: {tiers}",
            f"requests: prefixes of {_joined(self.requests)} keys"
            if self.requests
            else "no request",
        ]
        if self.peers:
            peers = ", ".join(f"{_count(n, 'key')} at tier {t}" for t, n in self.peers)
            parts.append(f"peer lookups: {peers}")
        held = [
            f"tier {t} holds {' '.join(key_name(i) for i in keys)}"
            for t, keys in enumerate(self.copies)
            if keys
        ]
        if self.primary or held:
            ready = [_count(self.primary, "key") + " in the primary"] if self.primary else []
            parts.append("start: " + ", ".join([*ready, *held]))
        for name in ("resets", "raises", "drops", "strays", "timeouts"):
            if getattr(self, name):
                parts.append(_count(getattr(self, name), name[:-1]))
        flags = [
            n.replace("_", " ") for n in ("stale", "store_failures", "garbage") if getattr(self, n)
        ]
        parts.append("jobs ok, failed or split" if self.outcomes else "jobs succeed")
        return "; ".join(parts + flags)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _joined(xs: tuple[int, ...]) -> str:
    return ", ".join(str(x) for x in xs)


def _tier_text(t: TierSpec) -> str:
    kinds = [n for n in ("serving", "async_lookup", "request_level") if getattr(t, n)]
    return "+".join(kinds) or "sync"


class Phase(enum.Enum):
    """A scheduler request's phase, as the explorer's scheduler sees it."""

    NEW = "new"  # not arrived yet
    WAITING = "waiting"  # arrived; scanned every step until the scan answers a number
    LOADING = "loading"  # its scan answered n > 0: the GPU load of its hits is in flight
    RUNNING = "running"  # computing; it stores what it computed once
    STORED = "stored"  # its store was prepared (its GPU store may be in flight)
    FINISHED = "finished"  # finished (its GPU store may still be in flight)


@dataclass(frozen=True)
class Client:
    """One scheduler request."""

    phase: Phase = Phase.NEW
    prefix: tuple[Key, ...] = ()
    hit: int = 0
    loading: tuple[Key, ...] = ()
    storing: tuple[Key, ...] = ()
    acted: bool = False
    """The scheduler already called for it in the open step (once per step)."""


@dataclass(frozen=True)
class World:
    """One state of the search (hashable; the snapshot's log is not part of it)."""

    snap: TieringSnapshot
    clients: tuple[Client, ...]
    step_open: bool = False
    peers_used: int = 0
    resets_used: int = 0
    raises_used: int = 0
    drops_used: int = 0
    strays_used: int = 0
    timeouts_used: int = 0

    def __hash__(self) -> int:
        """Computed once per world (a world is a key of the visited set and caches)."""
        got: int | None = self.__dict__.get("hash_cache")
        if got is None:
            got = hash(
                (
                    self.snap,
                    self.clients,
                    self.step_open,
                    self.peers_used,
                    self.resets_used,
                    self.raises_used,
                    self.drops_used,
                    self.strays_used,
                    self.timeouts_used,
                )
            )
            object.__setattr__(self, "hash_cache", got)
        return got


@dataclass(frozen=True)
class Renaming:
    """Concrete names -> canonical names (keys, job ids, peers' request ids)."""

    keys: dict[Key, Key] = field(default_factory=dict)
    jobs: dict[int, int] = field(default_factory=dict)
    reqs: dict[ReqId, ReqId] = field(default_factory=dict)

    def inverse(self) -> Renaming:
        return Renaming(
            {v: k for k, v in self.keys.items()},
            {v: k for k, v in self.jobs.items()},
            {v: k for k, v in self.reqs.items()},
        )

    def key(self, k: Key) -> Key:
        return self.keys.get(k, k)

    def job(self, j: int) -> JobId:
        return JobId(self.jobs.get(j, j))

    def req(self, r: ReqId) -> ReqId:
        return self.reqs.get(r, r)


def root_snapshot(bounds: TieringBounds) -> TieringSnapshot:
    """The start: `bounds.primary` keys READY in the primary (slots 0.., least recent
    first), each tier holding its `bounds.copies` keys, nothing else."""
    ready = [key_name(i) for i in range(bounds.primary)]
    chunks = frozenset(ChunkEntry(k, CpuState.READY, i, 0) for i, k in enumerate(ready))
    copies = frozenset(
        CopyEntry(TierId(t), key_name(i), CopyState.PRESENT)
        for t, held in enumerate(bounds.copies)
        for i in held
    )
    return TieringSnapshot(
        config=bounds.config,
        primary=PrimarySnapshot(bounds.slots, chunks, (), len(ready), tuple(ready)),
        copies=copies,
        jobs=(),
        staged=(),
        requests=(),
        probes=frozenset(),
        peers=(),
        pending_work=False,
        gate=False,
        held=False,
        next_job=0,
    )


# ------------------------------------------------------------------ renaming


def _owner(o: PendingOwner | PinOwner, n: Renaming) -> PendingOwner | PinOwner:
    if isinstance(o, GpuStore):
        return GpuStore(n.req(o.req))
    if isinstance(o, GpuLoad):
        return GpuLoad(n.req(o.req))
    if isinstance(o, StagedPromotion):
        return StagedPromotion(o.tier, n.req(o.req))
    if isinstance(o, SubmittedPromotion):
        return SubmittedPromotion(n.job(o.job))
    if isinstance(o, Cascade):
        return Cascade(n.job(o.job))
    return PeerStore(n.job(o.job))


def _keys(ks: tuple[Key, ...], n: Renaming) -> tuple[Key, ...]:
    return tuple(n.key(k) for k in ks)


def _outcome(o: JobOutcome | None, n: Renaming) -> JobOutcome | None:
    return None if o is None else replace(o, ok_keys=_keys(o.ok_keys, n))


def rename(world: World, n: Renaming) -> World:
    """`world` with every name replaced by its image under `n`."""
    s = world.snap

    def owners(xs: tuple[PendingOwner, ...]) -> tuple[PendingOwner, ...]:
        return tuple(_owner(o, n) for o in xs)  # type: ignore[misc]

    def pins(xs: tuple[PinOwner, ...]) -> tuple[PinOwner, ...]:
        return tuple(sorted((_owner(o, n) for o in xs), key=owner_order))  # type: ignore[misc]

    chunks = frozenset(
        replace(c, key=n.key(c.key), owners=owners(c.owners), pins=pins(c.pins))
        for c in s.primary.chunks
    )
    primary = replace(
        s.primary,
        chunks=chunks,
        evictable=None if s.primary.evictable is None else _keys(s.primary.evictable, n),
    )
    snap = replace(
        s,
        primary=primary,
        copies=frozenset(
            replace(c, key=n.key(c.key), job=None if c.job is None else n.job(c.job))
            for c in s.copies or ()
        ),
        jobs=tuple(
            sorted(
                (
                    replace(
                        j,
                        job=n.job(j.job),
                        keys=_keys(j.keys, n),
                        req=n.req(j.req),
                        outcome=_outcome(j.outcome, n),
                    )
                    for j in s.jobs
                ),
                key=lambda j: j.job,
            )
        ),
        staged=tuple(replace(e, req=n.req(e.req), keys=_keys(e.keys, n)) for e in s.staged),
        requests=tuple(
            sorted(
                (
                    replace(
                        r,
                        req=n.req(r.req),
                        stores=_keys(r.stores, n),
                        loads=_keys(r.loads, n),
                        parked=_keys(r.parked, n),
                    )
                    for r in s.requests
                ),
                key=lambda r: r.req,
            )
        ),
        probes=frozenset(
            replace(p, key=n.key(p.key), reqs=frozenset(n.req(r) for r in p.reqs))
            for p in s.probes or ()
        ),
        peers=tuple(
            replace(
                p,
                req=n.req(p.req),
                keys=_keys(p.keys, n),
                resolved=tuple((n.key(k), v) for k, v in p.resolved),
                pending=_keys(p.pending, n),
            )
            for p in s.peers or ()
        ),
        next_job=len(n.jobs),
        log=(),
    )
    clients = tuple(
        replace(
            c,
            prefix=_keys(c.prefix, n),
            loading=_keys(c.loading, n),
            storing=_keys(c.storing, n),
        )
        for c in world.clients
    )
    return replace(world, snap=snap, clients=clients)


# ---------------------------------------------------------------- canonical


def _job_ids(s: TieringSnapshot) -> list[int]:
    ids: set[int] = {j.job for j in s.jobs}
    for c in s.primary.chunks:
        for o in (*c.owners, *c.pins):
            if isinstance(o, SubmittedPromotion | Cascade | PeerStore):
                ids.add(o.job)
    for cp in s.copies or ():
        if cp.job is not None:
            ids.add(cp.job)
    return sorted(ids)


def canonical(world: World, bounds: TieringBounds) -> tuple[World, Renaming]:
    """The canonical form of `world` and the renaming that takes it there."""
    s = world.snap
    keys: dict[Key, Key] = {}
    reqs: dict[ReqId, ReqId] = {}

    def see_key(k: Key) -> None:
        if k not in keys:
            keys[k] = key_name(len(keys))

    def see_req(r: ReqId) -> None:
        if r.startswith("peer") and r not in reqs:
            reqs[r] = ReqId(f"peer{len(reqs)}")

    for c in world.clients:
        for k in c.prefix:
            see_key(k)
    for p in s.peers or ():
        see_req(p.req)
        for k in p.keys:
            see_key(k)
    for ch in sorted(s.primary.chunks, key=lambda ch: ch.slot):
        see_key(ch.key)
        for o in (*ch.owners, *ch.pins):
            if isinstance(o, GpuStore | GpuLoad | StagedPromotion):
                see_req(o.req)
    for j in s.jobs:
        see_req(j.req)
        for k in j.keys:
            see_key(k)
    for e in s.staged:
        see_req(e.req)
        for k in e.keys:
            see_key(k)
    others = [r for r in s.requests if r.req.startswith("peer") and r.req not in reqs]
    for r in sorted(others, key=_request_signature):
        see_req(r.req)
    rest = _tier_only_keys(s, keys)
    for k in sorted(rest, key=lambda k: rest[k]):
        see_key(k)
    for k in keys_of(bounds):  # the keys the state does not name: a permutation all the same
        see_key(k)
    jobs = {j: i for i, j in enumerate(_job_ids(s))}
    n = Renaming(keys, jobs, reqs)
    if _identity(n) and s.next_job == len(jobs) and not s.log:
        return world, n
    return rename(world, n), n


def _identity(n: Renaming) -> bool:
    """Whether `n` names everything as it is named already."""
    return (
        all(k == v for k, v in n.keys.items())
        and all(k == v for k, v in n.jobs.items())
        and all(k == v for k, v in n.reqs.items())
    )


def _request_signature(r: RequestEntry) -> tuple[object, ...]:
    return (r.phase.value, r.finalised, -1 if r.origin is None else r.origin, len(r.stores))


def _tier_only_keys(s: TieringSnapshot, named: dict[Key, Key]) -> dict[Key, tuple[object, ...]]:
    """Keys only the tiers mention, with a name-free signature of what they hold."""
    sig: dict[Key, list[object]] = {}
    for c in s.copies or ():
        if c.key not in named:
            sig.setdefault(c.key, []).append(("copy", c.tier, c.state.value))
    for p in s.probes or ():
        if p.key not in named:
            reqs = sorted(r for r in p.reqs if not r.startswith("peer"))
            sig.setdefault(p.key, []).append(("probe", p.tier, p.phase.value, p.found, reqs))
    for r in s.requests:
        for k in (*r.stores, *r.loads, *r.parked):
            if k not in named:
                sig.setdefault(k, []).append(("req", r.req))
    return {k: tuple(sorted(v, key=repr)) for k, v in sig.items()}


def keys_of(bounds: TieringBounds) -> tuple[str, ...]:
    """The explorer's keys at `bounds`."""
    return tuple(key_name(i) for i in range(bounds.keys))
