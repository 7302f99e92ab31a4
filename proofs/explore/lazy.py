"""Exhaustive explorer for the lazy offload scanner over the model (small bounds).

The system is a `ModelLazyOffload` over a `ModelBlockPool`. Actions are every pool
operation a serving engine performs (allocate from the front, prefix-hit touch,
free, cache a block that is in use -- the pool refuses a free one --, reset the
prefix cache) and every scanner operation (step with a given CPU capacity,
complete, abort, reset), enumerated exhaustively within the bounds; optionally
also a queue-level unlink (a block taken out of the free queue directly, without
the pool, so its ref_cnt stays 0).

Breadth-first search visits every distinct state once (states are compared up to
the link generation numbers, which only matter through "is the cursor / a visit
mark still at the block's current link"), so the first violation found comes with
a shortest trace. `proofs/explore/lazy_cursor.py` turns searches into obligations.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field

from evictable.impl.block_pool import BlockPool
from evictable.impl.lazy_offload import LazyOffloadScanner
from evictable.model.block_pool import ModelBlockPool, check_pool_snapshot
from evictable.model.errors import LifecycleError
from evictable.model.free_queue import ModelFreeQueue
from evictable.model.lazy_offload import (
    ModelLazyOffload,
    ScanView,
    Validation,
    check_scan,
    covered,
    no_stall_bound,
    pending_blocks,
    start_of,
)
from evictable.model.types import BlockId
from evictable.proofs.explore.engine import Expansion, Found, search

__all__ = [
    "Action",
    "Bounds",
    "Search",
    "action_code",
    "apply",
    "apply_impl",
    "clone",
    "explore",
    "render_state",
    "replay",
    "stall_run",
]


@dataclass(frozen=True)
class Bounds:
    """The finite slice of behaviour searched."""

    num_blocks: int = 3  # usable blocks (the pool also has the null block 0)
    window: int = 1
    hashes: tuple[str, ...] = ("a",)
    max_ref: int = 2  # touches and allocations stop at this ref count
    capacities: tuple[int, ...] = (1,)
    queue_unlink: bool = False  # allow `free_queue.remove(b)` outside the pool API
    max_states: int = 2_000_000


@dataclass(frozen=True)
class Action:
    """One pool or scanner operation, printable as the call it stands for."""

    op: str
    args: tuple[Hashable, ...] = ()

    def __str__(self) -> str:
        return action_code(self)


def action_code(a: Action) -> str:
    """`a` as one runnable Python statement over `pool` (the implementation's
    `BlockPool`), `scanner` and `capacity` (a one-element list the scanner reads its
    CPU capacity from): the one renderer of lazy-scanner traces and snippets."""
    x = a.args
    blk = f"pool.blocks[{x[0]}]" if x else ""
    if a.op == "get_new_blocks":
        return f"[b.block_id for b in pool.get_new_blocks({x[0]})]"
    if a.op == "touch":
        return f"pool.touch([{blk}])"
    if a.op == "free":
        return f"pool.free_blocks([{blk}])"
    if a.op == "cache":
        return f"pool.cache_block({blk}, {x[1]!r})"
    if a.op == "reset_prefix_cache":
        return "pool.reset_prefix_cache()"
    if a.op == "queue_unlink":
        return f"pool.free_block_queue.remove({blk})  # outside the pool API: ref stays 0"
    if a.op == "step":
        return f"capacity[0] = {x[0]}; print([b.block_id for b in scanner.step()])"
    if a.op in ("complete", "abort"):
        return f"scanner.{a.op}([{blk}])"
    if a.op == "reset":
        return "scanner.reset()"
    return f"{a.op}{x}"


# ---------------------------------------------------------------- state handling


def _clone_queue(q: ModelFreeQueue) -> ModelFreeQueue:
    c = object.__new__(ModelFreeQueue)
    c.__dict__.update(q.__dict__)
    c.order = list(q.order)
    c.stamp = dict(q.stamp)
    c.owners = {b: (c if o is q else o) for b, o in q.owners.items()}
    return c


def clone(m: ModelLazyOffload) -> ModelLazyOffload:
    """An independent copy of a scanner and its pool (fast: one level of containers)."""
    p = m.pool
    pc = object.__new__(ModelBlockPool)
    pc.__dict__.update(p.__dict__)
    pc.phase = dict(p.phase)
    pc.block_hash = dict(p.block_hash)
    pc.cached = {h: list(bs) for h, bs in p.cached.items()}
    pc.free_queue = _clone_queue(p.free_queue)
    mc = object.__new__(ModelLazyOffload)
    mc.__dict__.update(m.__dict__)
    mc.pool = pc
    mc.offloaded = set(m.offloaded)
    mc.in_flight = dict(m.in_flight)
    mc.visited = dict(m.visited)
    return mc


def _ref(m: ModelLazyOffload, b: BlockId) -> int:
    r = m.pool.phase[b].ref
    return 0 if r is None else r


def key(m: ModelLazyOffload) -> Hashable:
    """The state up to renaming of link generations (what future behaviour depends on)."""
    p, q = m.pool, m.pool.free_queue
    phase, hashes, owners, stamp, visited = p.phase, p.block_hash, q.owners, q.stamp, m.visited
    blocks = [BlockId(b) for b in range(1, p.num_blocks)]
    cursor: tuple[int, bool] | None = None
    if m.cursor is not None:
        b = m.cursor.block_id
        cursor = (b, owners.get(b) is q and stamp[b] == m.cursor.generation)
    return (
        tuple(q.order),
        tuple([phase[b].ref for b in blocks]),
        tuple([hashes.get(b) for b in blocks]),
        tuple([b in owners for b in blocks]),  # differs from ref 0 only after an unlink
        cursor,
        tuple([visited.get(b) == stamp[b] for b in q.order]),
        tuple(sorted(m.offloaded, key=repr)),
        tuple(sorted(m.in_flight.items())),
    )


def render_state(m: ModelLazyOffload) -> str:
    """One line: queue front to back (`b:h` hashed, `+` visited at its current link),
    cursor, in flight, offloaded, and blocks in use with their ref counts."""
    p, q = m.pool, m.pool.free_queue
    cells = []
    for b in q.order:
        h = p.block_hash.get(b)
        mark = "+" if m.visited.get(b) == q.stamp[b] else ""
        cells.append(f"{b}{':' + str(h) if h is not None else ''}{mark}")
    if m.cursor is None:
        cur = "-"
    else:
        b = m.cursor.block_id
        where = "linked" if q.owners.get(b) is q else "UNLINKED"
        if q.owners.get(b) is q and q.stamp[b] != m.cursor.generation:
            where = "relinked"
        cur = f"{b} ({where}, ref {_ref(m, b)})"
    used = {
        b: _ref(m, BlockId(b))
        for b in range(1, p.num_blocks)
        if b not in q.owners and _ref(m, BlockId(b)) > 0
    }
    used_txt = " ".join(
        f"{b}{':' + str(p.block_hash[BlockId(b)]) if BlockId(b) in p.block_hash else ''}(ref {r})"
        for b, r in used.items()
    )
    inflight = " ".join(f"{b}:{h}" for b, h in m.in_flight.items())
    return (
        f"queue [{' '.join(cells)}]  cursor {cur}  in use [{used_txt}]  "
        f"in flight [{inflight}]  offloaded {{{', '.join(sorted(map(str, m.offloaded)))}}}"
    )


def actions(m: ModelLazyOffload, bounds: Bounds) -> Iterator[Action]:
    """Every action enabled in `m` within `bounds`."""
    p, q = m.pool, m.pool.free_queue
    # Single-block calls suffice: a bulk pool call equals its single-block calls in
    # sequence (no scanner step can run in between), up to generation renaming.
    if q.order:
        yield Action("get_new_blocks", (1,))
    for b in range(1, p.num_blocks):
        bid = BlockId(b)
        ref = _ref(m, bid)
        pins = 1 if bid in m.in_flight else 0
        if ref < bounds.max_ref and (ref > 0 or bid in q.owners):
            yield Action("touch", (b,))
        if ref > pins:
            yield Action("free", (b,))
        # Offered for every unhashed block: the pool itself refuses a free one
        # (`cache_block` raises), so only a block in use gets content.
        if bid not in p.block_hash:
            for h in bounds.hashes:
                yield Action("cache", (b, h))
        if bounds.queue_unlink and bid in q.owners:
            yield Action("queue_unlink", (b,))
    if p.block_hash and not any(_ref(m, BlockId(b)) > 0 for b in range(1, p.num_blocks)):
        yield Action("reset_prefix_cache")
    for c in bounds.capacities:
        yield Action("step", (c,))
    for b in m.in_flight:
        yield Action("complete", (b,))
        yield Action("abort", (b,))
    if m.cursor is not None or m.offloaded:
        yield Action("reset")


def apply(m: ModelLazyOffload, a: Action) -> list[int] | None:
    """Perform `a` on `m` (in place); return the block ids a call hands back."""
    p = m.pool
    n = int(a.args[0]) if a.args else 0  # type: ignore[call-overload]
    arg = BlockId(n)
    if a.op == "get_new_blocks":
        return [int(b) for b in p.get_new_blocks(n)]
    if a.op == "touch":
        p.touch([arg])
    elif a.op == "free":
        p.free_blocks([arg])
    elif a.op == "cache":
        p.cache_block(arg, a.args[1])
    elif a.op == "reset_prefix_cache":
        p.reset_prefix_cache()
    elif a.op == "queue_unlink":
        p.free_queue.remove(arg)
    elif a.op == "step":
        return [int(b) for b in m.step(n)]
    elif a.op == "complete":
        m.complete([arg])
    elif a.op == "abort":
        m.abort([arg])
    elif a.op == "reset":
        m.reset()
    return None


def _note(a: Action, got: list[int] | None) -> str:
    if got is None:
        return ""
    return f"-> selects {got}" if a.op == "step" else f"-> {got}"


def apply_impl(
    pool: BlockPool, scanner: LazyOffloadScanner, a: Action, capacity: list[int] | None = None
) -> list[int] | None:
    """Perform `a` on the implementation; return the block ids a call hands back.

    `capacity`, when given, is the one-element box the scanner's capacity callable
    reads: a step action stores its capacity there first.
    """
    blocks = pool.blocks
    arg = int(a.args[0]) if a.args else 0  # type: ignore[call-overload]
    if a.op == "get_new_blocks":
        return [b.block_id for b in pool.get_new_blocks(arg)]
    if a.op == "touch":
        pool.touch([blocks[arg]])
    elif a.op == "free":
        pool.free_blocks([blocks[arg]])
    elif a.op == "cache":
        pool.cache_block(blocks[arg], a.args[1])
    elif a.op == "reset_prefix_cache":
        pool.reset_prefix_cache()
    elif a.op == "queue_unlink":
        pool.free_block_queue.remove(blocks[arg])
    elif a.op == "step":
        if capacity is not None:
            capacity[0] = arg
        return [b.block_id for b in scanner.step()]
    elif a.op == "complete":
        scanner.complete([blocks[arg]])
    elif a.op == "abort":
        scanner.abort([blocks[arg]])
    elif a.op == "reset":
        scanner.reset()
    return None


# ---------------------------------------------------------------- properties


Check = Callable[[ModelLazyOffload], str | None]
"""A state property: None when it holds, else a one-line reason."""


def invariants_check(names: tuple[str, ...] | None, pool_too: bool = True) -> Check:
    """Scanner invariants (all, or `names`) and, optionally, the pool invariants."""

    def check(m: ModelLazyOffload) -> str | None:
        view = m.view()
        bad = check_scan(view, names)
        if pool_too:
            bad += [f"pool.{n}" for n in check_pool_snapshot(view.pool)]
        if bad:
            return "violated: " + ", ".join(bad) + _explain(view)
        return None

    return check


def _explain(view: ScanView) -> str:
    start = start_of(view)
    pend = sorted(pending_blocks(view))
    return (
        f" (walk starts: {start.kind.value}"
        + (f" {start.block_id}" if start.block_id is not None else "")
        + f"; hashed, not offloaded, not visited since linked: {pend})"
    )


def stall_run(m: ModelLazyOffload, verbose: bool = True) -> tuple[bool, list[str]]:
    """Bounded liveness from `m`: with no pool mutation, run `no_stall_bound` steps
    with unlimited capacity; every block pending at the start must be covered.

    Returns (ok, lines of the run; with `verbose` off, only on failure)."""
    sim = clone(m)
    view = sim.view()
    q = sim.pool.free_queue
    pend = {b: q.stamp[BlockId(b)] for b in pending_blocks(view)}
    if not pend:
        return True, []
    k = no_stall_bound(len(q.order), sim.window)
    lines = [f"pending {sorted(pend)}; {k} steps with no pool mutation:"]
    for i in range(k):
        got = sim.step(sim.pool.num_blocks)
        if verbose:
            lines.append(f"  step {i + 1}: selects {got}   {render_state(sim)}")
    after = sim.view()
    missed = sorted(b for b, s in pend.items() if not covered(after, b, s))
    if missed:
        if not verbose:
            return stall_run(m, verbose=True)
        lines.append(f"never visited: {missed}")
        return False, lines
    return True, lines


def no_stall_check(m: ModelLazyOffload) -> str | None:
    ok, lines = stall_run(m, verbose=False)
    return None if ok else "stall: " + "\n".join(lines)


# ---------------------------------------------------------------- search


@dataclass
class Search:
    """The outcome of one exhaustive search."""

    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0
    violation: str | None = None
    trace: list[str] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    truncated: bool = False

    @property
    def states_per_s(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else 0.0

    def figures(self) -> str:
        return (
            f"{self.states} states, {self.transitions} transitions, depth {self.depth}, "
            f"{self.seconds:.2f}s ({self.states_per_s:,.0f} states/s)"
        )


def initial(bounds: Bounds, validation: Validation) -> ModelLazyOffload:
    return ModelLazyOffload(ModelBlockPool(bounds.num_blocks + 1), bounds.window, validation)


PathCheck = Callable[[ModelLazyOffload, list[Action], list[int] | None], str | None]


LazyPayload = tuple[ModelLazyOffload, tuple[Action, ...], list[int] | None]
"""A state, the path that reached it, and what the path's last call handed back."""


class LazySubject:
    """The model scanner and pool as a subject of `explore.engine.search`."""

    def __init__(
        self, bounds: Bounds, validation: Validation, check: Check, path_check: PathCheck | None
    ) -> None:
        self.bounds, self.validation = bounds, validation
        self.check, self.path_check = check, path_check

    def root(self) -> tuple[Hashable, LazyPayload]:
        start = initial(self.bounds, self.validation)
        return key(start), (start, (), None)

    def expand(self, payload: LazyPayload) -> Expansion[LazyPayload, Action]:
        m, path, got = payload
        out: Expansion[LazyPayload, Action] = Expansion()
        reason = self.check(m)
        if reason is None and self.path_check is not None and path:
            reason = self.path_check(m, list(path), got)
        if reason is not None:
            out.found = Found(reason)
            return out
        for a in actions(m, self.bounds):
            nxt = clone(m)
            try:
                result = apply(nxt, a)
            except LifecycleError:
                continue  # a rejected call changes nothing: not a transition
            out.edges += 1
            out.successors.append((key(nxt), (nxt, (*path, a), result), a))
        return out


def explore(
    bounds: Bounds,
    validation: Validation,
    check: Check,
    path_check: PathCheck | None = None,
    deadline: float | None = None,
) -> Search:
    """Breadth-first over every reachable state; stop at the first state failing `check`
    (or `path_check`, given the path from the initial state and the last call's
    result), with a shortest trace. `deadline`: stop there, truncated."""
    run = search(
        LazySubject(bounds, validation, check, path_check),
        max_states=bounds.max_states,
        deadline=deadline,
    )
    out = Search(
        states=run.states,
        transitions=run.transitions,
        depth=run.depth,
        seconds=run.seconds,
        truncated=not run.complete,
    )
    if run.found is not None:
        out.violation = run.found.reason
        out.actions = list(run.path)
        out.trace = replay(bounds, validation, out.actions)
    return out


def replay(bounds: Bounds, validation: Validation, steps: list[Action]) -> list[str]:
    """Run `steps` from the initial state; one readable line per action."""
    m = initial(bounds, validation)
    lines = [f"     {'initial':<36} {render_state(m)}"]
    for i, a in enumerate(steps, 1):
        call = f"{a} {_note(a, apply(m, a))}".strip()
        lines.append(f"{i:>3}. {call:<36} {render_state(m)}")
    return lines
