"""The tiering explorer's alphabet: every call and event a world allows, and its effect.

Other threads are explicit. The scheduler's calls of one step (`scan` of a waiting
request, `store` of a running one, `finish`; each request at most once per step) open
the step's hold and `end_step` closes it; the scheduler scans its waiting requests in
arrival order, as far into the queue as its budget goes (a step's scans are a prefix of
the waiting queue, as vLLM's scheduler makes them); a poll round (`poll`), the GPU
workers' completions (`complete_load`, `complete_store`), `new_request` and `reset`
come only between holds; the tiers' events
(`job_finishes` with each outcome, `probe_answers`) and the bounded inputs (a peer's
lookup, a raising submit, a tier dropping a copy) come between any two calls, so a job
can finish on either side of a step's poll point. Inside one call the order of lookups,
promotions, evictions and pins is the call's record (`TieringSnapshot.log`), which the
hold-level invariants read.

`moves(world, bounds)` lists the actions of a world (`Act`, in the world's names),
`apply(model_class, profile, world, act)` makes one on a model rebuilt from the world's
snapshot, `liveness_props` / `edge_props` say what the fair-cycle search needs.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, replace

from evictable.model.tiering import ModelTiering
from evictable.model.tiering_types import (
    CopyState,
    JobKind,
    JobOutcome,
    JobPhase,
    PeerPhase,
    ProbePhase,
    Profile,
    RequestPhase,
    TierId,
    TieringSnapshot,
)
from evictable.model.types import Key
from evictable.proofs.explore.liveness import EdgeProps, StateProps
from evictable.proofs.explore.tiering_world import (
    Client,
    Phase,
    Renaming,
    TieringBounds,
    World,
    client_id,
    keys_of,
)

__all__ = [
    "INPUTS",
    "Act",
    "Applied",
    "Edge",
    "apply",
    "busy",
    "call_text",
    "edge_props",
    "edge_props_of",
    "keys_arg",
    "liveness_props",
    "moves",
    "translate",
]


@dataclass(frozen=True)
class Act:
    """One action: a call or event, with its arguments (`client`: the request index for
    the scheduler's calls)."""

    op: str
    client: int = -1
    args: tuple[object, ...] = ()

    def __str__(self) -> str:
        return call_text(self)


INPUTS: frozenset[str] = frozenset(
    {"new_request", "store", "peer_request", "reset", "reset_flushed", "submit_raises"}
    | {"tier_drops", "tier_reports_unknown", "peer_gives_up", "finish"}
)
"""New input: never part of a liveness cycle."""

_IN_STEP = frozenset({"scan", "store", "finish"})
_BETWEEN = frozenset({"new_request", "complete_load", "complete_store", "poll", "reset"})


def call_text(a: Act) -> str:
    """The action as the statement that makes it on an orchestrator `m`."""
    req = client_id(a.client) if a.client >= 0 else None
    if a.op == "new_request":
        return f"m.new_request({req!r})  # prefix {keys_arg(a)!r}"
    if a.op in ("scan", "store", "complete_load"):
        return f"m.{a.op}({req!r}, {keys_arg(a)!r})"
    if a.op == "complete_store":
        return f"m.complete_store({req!r}, {keys_arg(a)!r}, success={a.args[1]!r})"
    if a.op == "finish":
        return f"m.finish({req!r})"
    if a.op == "job_finishes":
        return f"m.job_finishes({a.args[0]!r}, {_outcome_text(a.args[1])})"
    args = ", ".join(repr(x) if not isinstance(x, tuple) else repr(list(x)) for x in a.args)
    return f"m.{a.op}({args})"


def _outcome_text(o: object) -> str:
    if not isinstance(o, JobOutcome):
        return repr(o)
    if o.ok_keys or o.kind.value == "partial":
        return f"JobOutcome.partial({o.ok_keys!r})"
    return f"JobOutcome.{o.kind.value}()"


def busy(world: World) -> bool:
    """The engine steps: a step is open, a request is unfinished or has GPU work in
    flight, or the orchestrator says it has pending work."""
    if world.step_open or world.snap.pending_work:
        return True
    return any(
        c.phase not in (Phase.NEW, Phase.FINISHED) or c.loading or c.storing for c in world.clients
    )


def moves(world: World, bounds: TieringBounds) -> Iterator[Act]:
    """Every action `world` allows (see the module doc)."""
    s = world.snap
    keys = keys_of(bounds)
    between = not world.step_open
    queue_scanned = True  # every waiting request before this one was scanned this step
    for i, c in enumerate(world.clients):
        if c.phase is Phase.NEW and between:
            for prefix in itertools.permutations(keys, bounds.requests[i]):
                yield Act("new_request", i, (prefix,))
        elif c.phase is Phase.WAITING and not c.acted:
            if queue_scanned:
                yield Act("scan", i, (c.prefix,))
            queue_scanned = False
        elif c.phase is Phase.RUNNING and not c.acted:
            yield Act("store", i, (c.prefix[c.hit :],))
        elif c.phase is Phase.STORED and not c.acted:
            yield Act("finish", i)
        if c.loading and between:
            yield Act("complete_load", i, (c.loading,))
        if c.storing and between:
            yield Act("complete_store", i, (c.storing, True))
            if bounds.store_failures:
                yield Act("complete_store", i, (c.storing, False))
    if busy(world):
        yield Act("end_step")
    if between and any(t.serving for t in bounds.tiers):
        yield Act("poll")
    if between and world.resets_used < bounds.resets:
        yield Act("reset")
    if s.held and between:
        yield Act("reset_flushed")
    yield from _tier_events(world, bounds)


def _tier_events(world: World, bounds: TieringBounds) -> Iterator[Act]:
    s = world.snap
    for j in s.jobs:
        if j.phase is not JobPhase.SUBMITTED:
            continue
        yield Act("job_finishes", args=(j.job, JobOutcome.ok()))
        if bounds.outcomes:
            yield Act("job_finishes", args=(j.job, JobOutcome.failed()))
            if j.kind is JobKind.PROMOTION and len(j.keys) > 1:
                for n in range(1, len(j.keys)):
                    for part in itertools.combinations(j.keys, n):
                        yield Act("job_finishes", args=(j.job, JobOutcome.partial(part)))
        other = [k for k in keys_of(bounds) if k not in j.keys]
        if bounds.garbage and j.kind is JobKind.PROMOTION and other:
            garbage = JobOutcome.partial((j.keys[0], other[0]))
            yield Act("job_finishes", args=(j.job, garbage))
    copies = {(c.tier, c.key): c.state for c in s.copies or ()}
    for p in sorted(s.probes or (), key=lambda p: (p.tier, repr(p.key))):
        if p.phase is ProbePhase.IN_FLIGHT:
            found = copies.get((p.tier, p.key)) is CopyState.PRESENT
            yield Act("probe_answers", args=(p.tier, p.key, found))
    if world.peers_used < len(bounds.peers):
        tier, n = bounds.peers[world.peers_used]
        for keys in itertools.permutations(keys_of(bounds), n):
            yield Act("peer_request", args=(tier, keys))
    if world.raises_used < bounds.raises:
        for t in range(len(bounds.tiers)):
            if TierId(t) not in s.armed:
                yield Act("submit_raises", args=(t,))
    if world.timeouts_used < bounds.timeouts:
        for t in sorted({p.tier for p in s.peers or () if p.phase is PeerPhase.PARKED}):
            yield Act("peer_gives_up", args=(t,))
    if world.strays_used < bounds.strays:
        for t in range(len(bounds.tiers)):
            if TierId(t) not in s.strays:
                yield Act("tier_reports_unknown", args=(t,))
    if world.drops_used < bounds.drops:
        for c in sorted(s.copies or (), key=lambda c: (c.tier, repr(c.key))):
            if c.state is CopyState.PRESENT:
                yield Act("tier_drops", args=(c.tier, c.key))


@dataclass(frozen=True)
class Applied:
    """One action made: the world after it, the call's answer, what it raised."""

    world: World
    snap: TieringSnapshot
    """The orchestrator's snapshot right after the call (with its record)."""
    answer: object = None
    error: BaseException | None = None


def apply(
    model: type[ModelTiering], profile: Profile, world: World, a: Act, stale: bool = False
) -> Applied:
    """Make `a` on a model rebuilt from `world` (the scheduler side follows); with
    `stale`, a reset leaves the requests' GPU work in flight (its completions still
    come)."""
    m = model.restore(world.snap, profile)
    answer: object = None
    error: BaseException | None = None
    try:
        answer = _call(m, a)
    except Exception as exc:  # the explorer's calls are legal: an exception is a finding
        error = exc
    snap = m.snapshot()
    return Applied(_after(world, a, answer, error, snap, stale), snap, answer, error)


def keys_arg(a: Act) -> list[Key]:
    """The keys an action names (its first argument)."""
    x = a.args[0] if a.args else ()
    return list(x) if isinstance(x, tuple) else []


def _call(m: ModelTiering, a: Act) -> object:
    req = client_id(a.client)
    if a.op == "new_request":
        m.new_request(req)
    elif a.op == "scan":
        return m.scan(req, keys_arg(a))
    elif a.op == "store":
        return m.store(req, keys_arg(a))
    elif a.op == "complete_load":
        m.complete_load(req, keys_arg(a))
    elif a.op == "complete_store":
        m.complete_store(req, keys_arg(a), bool(a.args[1]))
    elif a.op == "finish":
        m.finish(req)
    else:
        return getattr(m, a.op)(*a.args)
    return None


def _after(
    world: World,
    a: Act,
    answer: object,
    error: BaseException | None,
    snap: TieringSnapshot,
    stale: bool,
) -> World:
    """The scheduler side after `a` (its GPU work, its phase, the step's hold, the
    inputs used)."""
    clients = list(world.clients)
    step_open = world.step_open or a.op in _IN_STEP
    if a.op == "end_step":
        step_open = False
        clients = [replace(c, acted=False) if c.acted else c for c in clients]
    if a.client >= 0:
        c = _client_after(clients[a.client], a, answer, error)
        clients[a.client] = replace(c, acted=True) if a.op in _IN_STEP else c
    if a.op == "reset" and not stale:
        clients = [_cancelled(c) for c in clients]
    op = a.op
    return World(
        replace(snap, log=()) if snap.log else snap,
        tuple(clients),
        step_open,
        world.peers_used + (op == "peer_request"),
        world.resets_used + (op == "reset"),
        world.raises_used + (op == "submit_raises"),
        world.drops_used + (op == "tier_drops"),
        world.strays_used + (op == "tier_reports_unknown"),
        world.timeouts_used + (op == "peer_gives_up"),
    )


def _client_after(c: Client, a: Act, answer: object, error: BaseException | None) -> Client:
    if a.op == "new_request":
        return Client(Phase.WAITING, a.args[0])  # type: ignore[arg-type]
    if a.op == "scan":
        if not isinstance(answer, int) or error is not None:
            return c
        if answer == 0:
            return replace(c, phase=Phase.RUNNING, hit=0)
        return replace(c, phase=Phase.LOADING, hit=answer, loading=c.prefix[:answer])
    if a.op == "complete_load":
        return replace(c, phase=Phase.RUNNING if c.phase is Phase.LOADING else c.phase, loading=())
    if a.op == "store":
        stored = getattr(answer, "keys_to_store", None) or []
        return replace(c, phase=Phase.STORED, storing=tuple(stored))
    if a.op == "complete_store":
        return replace(c, storing=())
    if a.op == "finish":
        return replace(c, phase=Phase.FINISHED)
    return c


def _cancelled(c: Client) -> Client:
    """A reset cancels the request's GPU work (the connector drops its completions)."""
    if not (c.loading or c.storing or c.phase is Phase.LOADING):
        return c
    phase = Phase.RUNNING if c.phase is Phase.LOADING else c.phase
    return replace(c, phase=phase, loading=(), storing=())


def translate(a: Act, n: Renaming) -> Act:
    """`a` with its names replaced under `n` (canonical -> concrete with an inverse)."""

    def tr(x: object) -> object:
        if isinstance(x, tuple):
            return tuple(n.key(k) for k in x)
        if isinstance(x, JobOutcome):
            return replace(x, ok_keys=tuple(n.key(k) for k in x.ok_keys))
        return x

    if a.op == "job_finishes":
        return replace(a, args=(n.job(a.args[0]), tr(a.args[1])))  # type: ignore[arg-type]
    if a.op in ("probe_answers", "tier_drops"):
        return replace(a, args=(a.args[0], n.key(a.args[1]), *a.args[2:]))
    if a.op == "peer_request":
        return replace(a, args=(a.args[0], tr(a.args[1])))
    return replace(a, args=tuple(tr(x) for x in a.args))


# -------------------------------------------------------------- liveness


def liveness_props(world: World, bounds: TieringBounds) -> StateProps:
    """Pending tokens and fairness obligations of one world (`explore.liveness`).

    Pending: a request waiting for its scan's answer (`answer`), a staged promotion
    (`staged`), a job not processed (`job`, by tier, kind, keys, request), a finished
    request (or a peer's, opened by a serve) not finalised (`finalise`), a peer's lookup
    not answered (`peer`). Weakly
    fair: a submitted job finishes, a probe in flight answers, the busy engine steps.
    Strongly fair (enabled only between steps, or once per step): a GPU load or store
    completes, a poll round, a scan of each waiting request, the end of an open step.
    """
    s = world.snap
    pending: set[object] = set()
    weak: set[object] = set()
    strong: set[object] = set()
    for i, c in enumerate(world.clients):
        if c.phase is Phase.WAITING:
            pending.add(("answer", i))
            if not c.acted:
                strong.add(("scan", i))
        if c.loading and not world.step_open:
            strong.add(("gpu_load", i))
        if c.storing and not world.step_open:
            strong.add(("gpu_store", i))
    if s.staged:
        pending.add(("staged",))
    for j in s.jobs:
        content = (j.tier, j.kind.value, j.keys, j.req)
        pending.add(("job", content))
        if j.phase is JobPhase.SUBMITTED:
            weak.add(("finish", content))
    for r in s.requests:
        open_peer = r.origin is not None and r.phase is RequestPhase.ACTIVE
        if r.phase is RequestPhase.FINISHED or open_peer:
            pending.add(("finalise", r.req))
    if s.peers:
        pending.add(("peer",))
    for p in s.probes or ():
        if p.phase is ProbePhase.IN_FLIGHT:
            weak.add(("probe", p.tier, p.key))
    if busy(world):
        weak.add(("step",))
    if world.step_open:
        strong.add(("step",))
    if not world.step_open and any(t.serving for t in bounds.tiers):
        strong.add(("poll",))
    return StateProps(frozenset(pending), frozenset(weak), frozenset(strong))


def edge_props_of(a: Act, world: World) -> EdgeProps:
    """What an edge discharges (its source world names the job it finishes)."""
    done: set[object] = set()
    if a.op == "job_finishes":
        j = next((j for j in world.snap.jobs if j.job == a.args[0]), None)
        if j is not None:
            done.add(("finish", (j.tier, j.kind.value, j.keys, j.req)))
    elif a.op == "probe_answers":
        done.add(("probe", a.args[0], a.args[1]))
    elif a.op == "scan":
        done.add(("scan", a.client))
    elif a.op == "end_step":
        done.add(("step",))
    elif a.op == "poll":
        done.add(("poll",))
    elif a.op == "complete_load":
        done.add(("gpu_load", a.client))
    elif a.op == "complete_store":
        done.add(("gpu_store", a.client))
    return EdgeProps(frozenset(done), a.op in INPUTS)


@dataclass(frozen=True)
class Edge:
    """A label of the explored graph: the action, and what it discharges."""

    act: Act
    props: EdgeProps

    def __str__(self) -> str:
        return str(self.act)


def edge_props(e: Edge) -> EdgeProps:
    return e.props
