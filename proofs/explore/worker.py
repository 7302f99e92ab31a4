"""The explorer's worker side: one state and every edge out of it (see proofs/explore.py).

A worker process (or the parent itself, with one worker) receives frontier states
as (id, shortest path of op indexes). For each it rebuilds the model and the
implementation by replaying the path on fresh instances, checks the state (every
named invariant, snapshots equal, the implementation's `check_invariants()`), and
then makes every op of the alphabet on working copies of both, comparing replies
and snapshots (`judge`). Working copies come from a pickle round trip of the
pre-state objects (falling back to replaying the path); a call that raised or
changed nothing observable leaves them in use for the next op.

Successor codes are filtered through the worker's own visited set before they are
sent to the parent, which deduplicates globally.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evictable.model.invariants import check_snapshot
from evictable.model.manager import MODEL_POLICIES, ModelManager
from evictable.model.types import ManagerSnapshot
from evictable.proofs.explore.ops import Alphabet, invoke
from evictable.proofs.explore.state import Code, encode, mentioned_keys
from evictable.proofs.explore.trace import Factory
from evictable.proofs.lockstep.compare import diff, judge

__all__ = ["Bounds", "Chunk", "Context", "Found", "expand_chunk", "init_worker"]


@dataclass(frozen=True)
class Bounds:
    """The size of the explored world. `events` is the most pending events a state
    may hold (0: events off); successors beyond it are checked but not expanded."""

    slots: int = 2
    keys: int = 3
    max_ref: int = 2
    batch: int = 2
    policy: str = "lru"
    events: int = 0

    def describe(self) -> str:
        ev = f"events<={self.events}" if self.events else "events off"
        return (f"policy={self.policy} slots={self.slots} keys={self.keys} "
                f"max_ref={self.max_ref} batch={self.batch} {ev}")

    def check(self) -> None:
        """Raise `ValueError` for bounds the explorer cannot use."""
        for name in ("slots", "keys", "max_ref", "batch", "events"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"bound {name} must be a non-negative int, got {v!r}")
        if not 1 <= self.keys <= 26:
            raise ValueError(f"keys must be in 1..26, got {self.keys}")
        if self.max_ref < 1:
            raise ValueError("max_ref must be at least 1")
        if self.policy not in MODEL_POLICIES:
            raise ValueError(f"unknown policy {self.policy!r}; known: {sorted(MODEL_POLICIES)}")


Found = tuple[str, tuple[int, ...], int | None]
New = tuple[int, int, Code, int]
"""A successor: (parent id, op index, code, number of keys it mentions)."""
Chunk = tuple[int, int, list[New], Found | None]


class Context:
    """Everything a worker needs; inherited by fork, never pickled."""

    def __init__(self, bounds: Bounds, factory: Factory, canonical: bool) -> None:
        self.bounds = bounds
        self.factory = factory
        self.canonical = canonical
        self.alphabet = Alphabet(bounds.keys, bounds.batch)
        self.ops = self.alphabet.ops
        self.key_bit = {k: 1 << i for i, k in enumerate(self.alphabet.keys)}
        self.seen: set[Code] = set()
        self.picklable: dict[type, bool] = {}

    def fresh(self, path: Sequence[int]) -> tuple[ModelManager, Any]:
        b = self.bounds
        model = ModelManager(b.slots, b.policy, b.events > 0)
        impl = self.factory(b.slots, b.policy, b.events > 0)
        for i in path:
            invoke(model, self.ops[i])
            invoke(impl, self.ops[i])
        return model, impl

    def ops_in(self, snap: ManagerSnapshot) -> tuple[int, ...]:
        """Indexes of the ops to try in the state `snap` (`Alphabet.ops_for` with the
        keys it mentions and the keys at `max_ref` loads)."""
        mentioned = maxed = 0
        for k in mentioned_keys(snap):
            mentioned |= self.key_bit.get(k, 0)
        for e in snap.blocks:
            if e.ref_cnt >= self.bounds.max_ref:
                maxed |= self.key_bit.get(e.key, 0)
        return self.alphabet.ops_for(mentioned, maxed, self.canonical)

    def cloner(self, obj: Any) -> Callable[[], Any] | None:
        """A maker of independent copies of `obj`, or None (rebuild by replay).

        Copies are pickle round trips; whether a type survives one (the copy has an
        equal snapshot) is learnt once per type. `copy.deepcopy` is deliberately
        not used: a class may define `__deepcopy__` to share parts (the
        implementation's `BlockStatus` does), and a copy that shares state with the
        pre-state would corrupt every later edge.
        """
        kind = type(obj)
        if self.picklable.get(kind) is False:
            return None
        try:
            blob = pickle.dumps(obj, pickle.HIGHEST_PROTOCOL)
            if kind not in self.picklable:
                if pickle.loads(blob).snapshot() != obj.snapshot():
                    raise ValueError("the copy is not equivalent")
                self.picklable[kind] = True
        except Exception:
            self.picklable[kind] = False
            return None
        return lambda: pickle.loads(blob)


_CTX: Context | None = None


def init_worker(ctx: Context) -> None:
    global _CTX
    _CTX = ctx


def _post(obj: Any) -> tuple[object, str | None]:
    try:
        return obj.snapshot(), None
    except Exception as exc:  # an adapter whose snapshot crashes fails the check
        return None, f"impl.snapshot() raised {type(exc).__name__}: {exc}"


def _counters(impl: Any, m_snap: ManagerSnapshot) -> str | None:
    """Why the implementation's counter properties disagree with the model, or None."""
    try:
        got = (impl.num_evictable, impl.num_pending)
    except Exception as exc:
        return f"impl counters raised {type(exc).__name__}: {exc}"
    want = (m_snap.num_evictable, m_snap.num_pending)
    if got != want:
        return f"counters (num_evictable, num_pending): model {want} != impl {got}"
    return None


def _state_failure(model: ModelManager, impl: Any) -> tuple[ManagerSnapshot, Any, str | None]:
    m_pre = model.snapshot()
    bad = check_snapshot(m_pre)
    if bad:
        return m_pre, None, f"model state violates invariants {bad} (model bug)"
    i_pre, err = _post(impl)
    if err is not None:
        return m_pre, i_pre, err
    if i_pre != m_pre:
        return m_pre, i_pre, f"snapshots differ: {diff(m_pre, i_pre)}"
    err = _counters(impl, m_pre)
    if err is not None:
        return m_pre, i_pre, err
    checker = getattr(impl, "check_invariants", None)
    if callable(checker):
        try:
            checker()
        except Exception as exc:
            return m_pre, i_pre, f"impl.check_invariants() failed: {type(exc).__name__}: {exc}"
    return m_pre, i_pre, None


def _expand(ctx: Context, sid: int, path: tuple[int, ...]) -> Chunk:
    """Check state `sid` (reached by `path`) and every edge out of it."""
    try:
        model, impl = ctx.fresh(path)
    except Exception as exc:  # the factory itself failed: report, do not crash the pool
        return 0, 0, [], (f"building the state raised {type(exc).__name__}: {exc}", path, None)
    m_pre, i_pre, why = _state_failure(model, impl)
    if why is not None:
        return 0, 0, [], (why, path, None)
    make_m, make_i = ctx.cloner(model), ctx.cloner(impl)
    wm: Any = None
    wi: Any = None
    hist: list[int] = []
    edges = pruned = 0
    new: list[New] = []
    limit = ctx.bounds.events
    for oi in ctx.ops_in(m_pre):
        op = ctx.ops[oi]
        if wm is None:
            fm, fi = (make_m, make_i) if make_m and make_i else (None, None)
            wm, wi = (fm(), fi()) if fm and fi else ctx.fresh(path)
            hist = []
        rm, ri = invoke(wm, op), invoke(wi, op)
        m_post = wm.snapshot()
        i_post, why = _post(wi)
        m_same = m_post == m_pre
        edges += 1
        if why is None:
            found = judge(rm, ri, m_pre, i_pre, m_post, i_post)
            why = found.reason if found is not None else _counters(wi, m_post)
        if why is not None:
            if hist:  # the working copies saw earlier no-op calls: is the failure theirs?
                again = ctx.fresh(path)
                ra, rb = invoke(again[0], op), invoke(again[1], op)
                pa, pb = again[0].snapshot(), _post(again[1])
                if pb[1] is None and judge(ra, rb, m_pre, i_pre, pa, pb[0]) is None:
                    return edges, pruned, new, (why, path + tuple(hist), oi)
            return edges, pruned, new, (why, path, oi)
        if m_same:
            # Agreement makes i_post == m_post == m_pre == i_pre: both copies are
            # (observably) still the pre-state and serve the next op.
            hist.append(oi)
            continue
        wm = None
        if limit and len(m_post.pending_events) > limit:
            pruned += 1
            continue
        code, mentioned_now = encode(m_post, ctx.canonical)
        if code not in ctx.seen:
            ctx.seen.add(code)
            new.append((sid, oi, code, len(mentioned_now)))
    return edges, pruned, new, None


def expand_chunk(items: list[tuple[int, tuple[int, ...]]]) -> Chunk:
    ctx = _CTX
    if ctx is None:
        raise RuntimeError("explorer worker used before initialisation")
    edges = pruned = 0
    new: list[New] = []
    for sid, path in items:
        e, p, n, found = _expand(ctx, sid, path)
        edges, pruned = edges + e, pruned + p
        new.extend(n)
        if found is not None:
            return edges, pruned, new, found
    return edges, pruned, new, None
