"""The CPU manager as a subject of the search engine: one state and every edge out of it.

The engine (`explore.engine`, possibly in a forked worker process) hands over a
state as its payload: the shortest path of op indexes that reaches it. The subject
rebuilds the model and the
implementation by replaying the path on fresh instances, checks the state (every
named invariant, snapshots equal, the implementation's `check_invariants()`), and
then makes every op of the alphabet on working copies of both, comparing replies
and snapshots (`judge`). Working copies come from a pickle round trip of the
pre-state objects (falling back to replaying the path); a call that raised or
changed nothing observable leaves them in use for the next op.

Successor codes are filtered through the worker's own visited set before they are
sent to the parent, which deduplicates globally.

With `Bounds.faults` the alphabet also has faults: the implementation runs its
policy's fault-injecting variant, and every op that succeeded on the model is made
again with each policy hook it reached failing at call k (k = 1, 2), at the hook's
entry and after its body; the implementation must re-raise the injected fault and
end exactly in the state's snapshot. So all-or-nothing under faults is checked
exhaustively at the bounds, not sampled.
"""

from __future__ import annotations

import math
import pickle
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from evictable.model.invariants import check_snapshot
from evictable.model.manager import MODEL_POLICIES, ModelManager
from evictable.model.types import ManagerSnapshot
from evictable.proofs.explore.engine import Expansion, Found
from evictable.proofs.explore.ops import Alphabet, Op, invoke
from evictable.proofs.explore.state import Code, encode, mentioned_keys
from evictable.proofs.explore.trace import Factory
from evictable.proofs.lockstep.compare import diff, judge
from evictable.proofs.lockstep.faults import PLAN, InjectedFault, fault_policy_name

__all__ = ["FAULT_CALLS", "Bounds", "Context", "ManagerSubject", "Payload"]

FAULT_CALLS = 2
"""With `Bounds.faults`: a fault is injected at each of the first this many calls of a
hook an op reaches."""


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
    faults: bool = False
    """Also inject a fault at call k (1, 2) of every hook an op reaches, at the hook's
    entry and after its body (the implementation then runs its policy's
    fault-injecting variant, `lockstep.faults`)."""

    def describe(self) -> str:
        ev = f"events<={self.events}" if self.events else "events off"
        faults = " faults at call 1-2 of every hook" if self.faults else ""
        return (
            f"policy={self.policy} slots={self.slots} keys={self.keys} "
            f"max_ref={self.max_ref} batch={self.batch} {ev}{faults}"
        )

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


class Context:
    """Everything a worker needs; inherited by fork, never pickled. `model` is the
    reference model's class (a subclass may record what it executes, see
    `explore.coverage`)."""

    def __init__(
        self,
        bounds: Bounds,
        factory: Factory,
        canonical: bool,
        model: type[ModelManager] | None = None,
    ) -> None:
        self.bounds = bounds
        self.model = model if model is not None else ModelManager
        self.factory = factory
        self.impl_policy = bounds.policy
        if bounds.faults:
            faulty = fault_policy_name(bounds.policy)
            if faulty is None:
                raise ValueError(f"no fault-injecting variant of policy {bounds.policy!r}")
            self.impl_policy = faulty
        self.canonical = canonical
        self.alphabet = Alphabet(bounds.keys, bounds.batch)
        self.ops = self.alphabet.ops
        self.key_bit = {k: 1 << i for i, k in enumerate(self.alphabet.keys)}
        self.seen: set[Code] = set()
        self.picklable: dict[type, bool] = {}
        self.in_flight: int | None = None
        """The op being made on the working copies (None between ops): the edge the
        engine reports when one hangs (`explore.engine`)."""

    def fresh(self, path: Sequence[int]) -> tuple[ModelManager, Any]:
        b = self.bounds
        model = self.model(b.slots, b.policy, b.events > 0)
        impl = self.factory(b.slots, self.impl_policy, b.events > 0)
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


def _fault_failure(
    impl: Any, fired: InjectedFault, ri: Any, i_pre: object, what: str
) -> str | None:
    """Why the implementation mishandled the injected fault `fired`, or None."""
    if not ri.raised or ri.value is not fired:
        return f"{what}: impl did not re-raise the injected fault: {ri.describe()}"
    i_post, why = _post(impl)
    if why is not None:
        return f"{what}: {why}"
    if i_post != i_pre:
        return f"{what}: impl changed state although the call failed: {diff(i_pre, i_post)}"
    checker = getattr(impl, "check_invariants", None)
    if callable(checker):  # restored in every part, not only in what the snapshot shows
        try:
            checker()
        except Exception as exc:
            return f"{what}: impl.check_invariants() failed after the fault: {exc}"
    return None


Payload = tuple[tuple[int, ...], int]
"""A state as the explorer hands it around: (shortest path of op indexes, number of
keys it mentions)."""


class _Faults:
    """The fault alphabet of one op (a mixin of `ManagerSubject`)."""

    bounds: Bounds
    fresh: Callable[[Sequence[int]], tuple[ModelManager, Any]]

    def _faults(
        self,
        path: Sequence[int],
        op: Op,
        reached: Counter[str],
        i_pre: object,
        make_i: Callable[[], Any] | None,
        notes: Counter[str],
    ) -> str | None:
        """Make `op` again with each hook it reached failing on its call 1 or 2, at the
        hook's entry and after its body: the implementation must re-raise the fault
        and end exactly in its pre-state (all-or-nothing under faults)."""
        for hook, calls in sorted(reached.items()):
            for k in range(1, min(calls, FAULT_CALLS) + 1):
                for late in (False, True):
                    impl = make_i() if make_i is not None else self.fresh(path)[1]
                    PLAN.arm(hook, k, late)
                    try:
                        ri = invoke(impl, op)
                    finally:
                        fired = PLAN.disarm()
                    if fired is None:
                        continue  # the hook was reached fewer times this time
                    notes[f"fault:{hook}"] += 1
                    when = " after its body" if late else ""
                    what = f"with policy hook {hook!r} failing on call {k}{when}"
                    why = _fault_failure(impl, fired, ri, i_pre, what)
                    if why is not None:
                        return why
        return None


class ManagerSubject(Context, _Faults):
    """The CPU manager as a subject of `explore.engine.search`: the model's states,
    the implementation stepped beside it on every edge."""

    def root(self) -> tuple[Hashable, Payload]:
        b = self.bounds
        code, _ = encode(self.model(b.slots, b.policy, b.events > 0).snapshot(), self.canonical)
        return code, ((), 0)

    def weight(self, payload: Payload) -> int:
        """How many states before the quotient by key renaming this one stands for: a
        canonical state mentioning m of the K keys stands for K!/(K-m)! states (the
        keys it mentions are told apart by slot or list position)."""
        return math.perm(self.bounds.keys, payload[1]) if self.canonical else 1

    def expand(self, payload: Payload) -> Expansion[Payload, int]:
        """Check the state reached by the payload's path and every edge out of it."""
        self.in_flight = None  # left set when an edge hangs: the engine reports it
        out = self._expand(payload)
        self.in_flight = None
        return out

    def _expand(self, payload: Payload) -> Expansion[Payload, int]:
        path = payload[0]
        out: Expansion[Payload, int] = Expansion()
        try:
            model, impl = self.fresh(path)
        except Exception as exc:  # the factory itself failed: report, do not crash the pool
            out.found = Found(f"building the state raised {type(exc).__name__}: {exc}")
            return out
        m_pre, i_pre, why = _state_failure(model, impl)
        if why is not None:
            out.found = Found(why)
            return out
        make_m, make_i = self.cloner(model), self.cloner(impl)
        wm: Any = None
        wi: Any = None
        hist: list[int] = []
        limit = self.bounds.events
        for oi in self.ops_in(m_pre):
            op = self.ops[oi]
            if wm is None:
                fm, fi = (make_m, make_i) if make_m and make_i else (None, None)
                wm, wi = (fm(), fi()) if fm and fi else self.fresh(path)
                hist = []
            self.in_flight = oi
            rm = invoke(wm, op)
            with PLAN.counting() as reached:
                ri = invoke(wi, op)
            m_post = wm.snapshot()
            i_post, why = _post(wi)
            if why is None and self.bounds.faults and not rm.raised and reached:
                # Fault attempts run on copies of the state itself: their failure is
                # this op's, whatever the working copies saw before.
                faulted = self._faults(path, op, reached, i_pre, make_i, out.notes)
                if faulted is not None:
                    out.found = Found(f"{op}: {faulted}", oi)
                    return out
            self.in_flight = None
            out.edges += 1
            if why is None:
                found = judge(rm, ri, m_pre, i_pre, m_post, i_post)
                why = found.reason if found is not None else _counters(wi, m_post)
            if why is not None:
                if hist:  # the working copies saw earlier no-op calls: is the failure theirs?
                    again = self.fresh(path)
                    ra, rb = invoke(again[0], op), invoke(again[1], op)
                    pa, pb = again[0].snapshot(), _post(again[1])
                    if pb[1] is None and judge(ra, rb, m_pre, i_pre, pa, pb[0]) is None:
                        out.found = Found(why, oi, path + tuple(hist))
                        return out
                out.found = Found(why, oi)
                return out
            if m_post == m_pre:
                # Agreement makes i_post == m_post == m_pre == i_pre: both copies are
                # (observably) still the pre-state and serve the next op.
                hist.append(oi)
                continue
            wm = None
            if limit and len(m_post.pending_events) > limit:
                out.pruned += 1
                continue
            code, mentioned_now = encode(m_post, self.canonical)
            if code not in self.seen:  # this process's own filter: less to send back
                self.seen.add(code)
                out.successors.append((code, ((*path, oi), len(mentioned_now)), oi))
        return out
