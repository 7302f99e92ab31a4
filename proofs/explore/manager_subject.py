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
from typing import Any

from evictable.model.manager import ModelManager
from evictable.model.types import ManagerSnapshot
from evictable.proofs.base.bounds import Bounds
from evictable.proofs.base.compare import Kind, Mismatch, describe, diff
from evictable.proofs.base.contract import DEFAULT, Contract
from evictable.proofs.base.cpu_contract import (
    ObservationError,
    Side,
    counters,
    judge_call,
    judge_state,
    make_model,
    observe,
    pair,
    refused_by_table,
)
from evictable.proofs.base.faults import PLAN, InjectedFault, fault_policy_name
from evictable.proofs.base.guard import STEP_BOUND_S, Called, step_guard
from evictable.proofs.base.protocol import Factory
from evictable.proofs.base.trace import TraceStep, encode_args, encode_state, outcome_of
from evictable.proofs.explore.engine import Expansion, Found
from evictable.proofs.explore.ops import Alphabet, Op, invoke
from evictable.proofs.explore.state import Code, encode, mentioned_keys

__all__ = ["FAULT_CALLS", "Context", "ManagerSubject", "Payload"]

FAULT_CALLS = 2
"""With `Bounds.faults`: a fault is injected at each of the first this many calls of a
hook an op reaches."""


class Context:
    """Everything a worker needs; inherited by fork, never pickled. `model` is the
    reference model's class (a subclass may record what it executes, see
    `explore.coverage`)."""

    def __init__(
        self,
        bounds: Bounds,
        factory: Factory,
        canonical: bool,
        contract: Contract = DEFAULT,
        masked: frozenset[Kind] = frozenset(),
        model: type[ModelManager] | None = None,
    ) -> None:
        self.bounds = bounds
        self.model = model
        """The reference model's class; None: the contract's (`make_model`)."""
        self.factory = factory
        self.impl_policy = bounds.policy
        if bounds.faults:
            faulty = fault_policy_name(bounds.policy)
            if faulty is None:
                raise ValueError(f"no fault-injecting variant of policy {bounds.policy!r}")
            self.impl_policy = faulty
        self.canonical = canonical
        self.contract = contract
        self.masked = masked
        """Finding classes already reported: an edge showing one is not followed."""
        keys = None if contract.keys.make is None else contract.keys.pool(bounds.keys)
        self.alphabet = Alphabet(bounds.keys, bounds.batch, keys)
        self.ops = self.alphabet.ops
        self.key_bit = {k: 1 << i for i, k in enumerate(self.alphabet.keys)}
        self.seen: set[Code] = set()
        self.picklable: dict[type, bool] = {}
        self.counted = True
        self.in_flight: int | None = None
        """The op being made on the working copies (None between ops): the edge the
        engine reports when one hangs (`explore.engine`)."""

    def new_model(self) -> ModelManager:
        """A fresh reference model: of class `model` if one was given, else the
        contract's (`cpu_contract.make_model`, looked up now)."""
        b = self.bounds
        if self.model is not None:
            return self.model(b.slots, b.policy, b.events > 0)
        return make_model(self.contract, b.slots, b.policy, b.events > 0)

    def fresh(self, path: Sequence[int]) -> tuple[ModelManager, Any]:
        b = self.bounds
        model = self.new_model()
        impl = self.factory(b.slots, self.impl_policy, b.events > 0)
        for i in path:
            op = self.ops[i]
            pair(self.contract, model, impl, op.method, op.build)
        return model, impl

    def sides(self, model: ModelManager, impl: Any) -> tuple[Side, Side]:
        """Both sides' state under the contract (raises `ObservationError`)."""
        keys = self.alphabet.keys
        return (
            observe(self.contract, model, keys, self.counted),
            observe(self.contract, impl, keys, self.counted),
        )

    def edge(
        self, model: ModelManager, impl: Any, op: Op, m_pre: Side, i_pre: Side
    ) -> tuple[Mismatch | None, Side | None, Side | None]:
        """Make `op` on both sides and judge it: (finding, model's and impl's state after)."""
        model_before = m_pre.full if m_pre.full is not None else model.snapshot()
        rm, ri = pair(self.contract, model, impl, op.method, op.build)
        try:
            m_post, i_post = self.sides(model, impl)
        except ObservationError as exc:
            return Mismatch(Kind.STATE, str(exc)), None, None
        args, _ = op.build()
        every = judge_call(
            self.contract, op.method, args, rm, ri, m_pre, i_pre, m_post, i_post, model_before
        )
        found = next((m for m in every if m.kind not in self.masked), every[0] if every else None)
        if found is None:
            found = judge_state(self.contract, model, impl, m_post, i_post, deep=False)
        return found, m_post, i_post

    def allowed(self, model: ModelManager, op: Op) -> bool:
        """Whether the contract's input switches let the explorer make `op` now."""
        inputs = self.contract.inputs
        if op.duplicates and op.method != "touch" and not inputs.duplicates:
            return False
        return inputs.invalid or not refused_by_table(model, op.method, op.build)

    def lines(self, path: Sequence[int], last: int | None) -> list[tuple[str, str, bool]]:
        """The trace `path` (+ `last`) as snippet lines, replayed afresh on both sides."""
        return self.trace(path, last)[0]

    def trace(
        self, path: Sequence[int], last: int | None
    ) -> tuple[list[tuple[str, str, bool]], list[TraceStep]]:
        """The trace `path` (+ `last`), replayed afresh on both sides: as snippet
        lines, and as structured steps (`base.trace.TraceStep`: the implementation's
        observed state around every call)."""
        b = self.bounds
        model = self.new_model()
        impl = self.factory(b.slots, b.policy, b.events > 0)
        code = f"m = factory({b.slots!r}, {b.policy!r}, {b.events > 0!r})"
        out = [(code, "", False)]
        i_side = self._observed(impl)
        names = {"num_blocks": b.slots, "policy": b.policy, "enable_events": b.events > 0}
        steps = [
            TraceStep(
                code,
                "construct",
                names,
                after=encode_state(i_side),
                expected=encode_state(self._observed(model)),
            )
        ]
        ops = [*path, last] if last is not None else list(path)
        for n, i in enumerate(ops, 1):
            op = self.ops[i]
            rm, ri = pair(self.contract, model, impl, op.method, op.build)
            note = describe(rm)
            if n == len(ops) and last is not None:
                note = f"expected (model) {describe(rm)}; observed {describe(ri)}"
            elif describe(ri) != note:
                note += f"  (impl: {describe(ri)})"
            raised = rm.raised or ri.raised
            out.append((f"m.{op.text}", note, raised))
            before, i_side = i_side, self._observed(impl)
            args, kwargs = op.build()
            steps.append(
                TraceStep(
                    f"m.{op.text}",
                    op.method,
                    encode_args(op.method, args, kwargs),
                    outcome_of(op.method, ri.raised, ri.value),
                    outcome_of(op.method, rm.raised, rm.value),
                    encode_state(before),
                    encode_state(i_side),
                    note,
                    raised,
                    expected=encode_state(self._observed(model)),
                )
            )
        return out, steps

    def _observed(self, impl: Any) -> object:
        """A side's state as the contract observes it (None if it cannot)."""
        try:
            return observe(self.contract, impl, self.alphabet.keys, self.counted).view
        except ObservationError:
            return None

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
                copied = pickle.loads(blob)
                if self.contract.black_box:  # no snapshot(): the copy must look the same
                    keys = self.alphabet.keys
                    same = (
                        observe(self.contract, copied, keys, self.counted).view
                        == observe(self.contract, obj, keys, self.counted).view
                    )
                else:
                    same = copied.snapshot() == obj.snapshot()
                if not same:
                    raise ValueError("the copy is not equivalent")
                self.picklable[kind] = True
        except Exception:
            self.picklable[kind] = False
            return None
        return lambda: pickle.loads(blob)


def _state_failure(
    ctx: Context, model: ModelManager, impl: Any
) -> tuple[Side, Side, Mismatch | None]:
    """Both sides' state, and the finding it makes (None: it makes none)."""
    try:
        m, i = ctx.sides(model, impl)
    except ObservationError as exc:
        return Side(None, None), Side(None, None), Mismatch(Kind.STATE, str(exc))
    found = judge_state(ctx.contract, model, impl, m, i)
    if found is not None and found.kind is Kind.MODEL_BUG:
        found = Mismatch(found.kind, found.reason + " (model bug)")
    return m, i, found


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


def _post(obj: Any) -> tuple[object, str | None]:
    """`obj.snapshot()`, or why it could not be taken."""
    try:
        return obj.snapshot(), None
    except Exception as exc:  # an adapter whose snapshot crashes fails the check
        return None, f"impl.snapshot() raised {type(exc).__name__}: {exc}"


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
        model = self.new_model()
        impl = self.factory(b.slots, b.policy, b.events > 0)
        try:
            self.counted = counters(impl) is not None
        except Exception:  # a crashing counter is reported when the state is checked
            self.counted = True
        i_full = None
        if self.contract.safety and not self.contract.black_box:
            i_full = impl.snapshot()
        code, _ = self.code(model.snapshot(), i_full)
        return code, ((), 0)

    def code(self, model_full: ManagerSnapshot, impl_full: object) -> tuple[Code, list[Any]]:
        """A state's key: the model's snapshot, except under the safety contract with
        snapshots, where the implementation's own (its choices are its state)."""
        snap = impl_full if isinstance(impl_full, ManagerSnapshot) else model_full
        return encode(snap, self.canonical)

    def weight(self, payload: Payload) -> int:
        """How many states before the quotient by key renaming this one stands for: a
        canonical state mentioning m of the K keys stands for K!/(K-m)! states (the
        keys it mentions are told apart by slot or list position)."""
        return math.perm(self.bounds.keys, payload[1]) if self.canonical else 1

    @property
    def expansion_bound_s(self) -> float:
        """The engine's bound on one whole expansion: a backstop only, since every
        replay, state check and edge runs under its own per-step bound (a state has
        as many edges as ops, each of which may take up to that bound on a loaded
        machine, above all for a black box that is rebuilt by replay per edge)."""
        return STEP_BOUND_S * (len(self.ops) + 2)

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
            with step_guard():
                model, impl = self.fresh(path)
        except Exception as exc:  # the factory itself failed: report, do not crash the pool
            out.found = Found(f"building the state raised {type(exc).__name__}: {exc}")
            return out
        with step_guard():
            m_pre, i_pre, bad = _state_failure(self, model, impl)
        if bad is not None:
            if bad.kind not in self.masked:  # a class already reported: not expanded
                out.found = Found(bad.reason)
            return out
        m_full = model.snapshot()
        safety_state = self.contract.safety and isinstance(i_pre.full, ManagerSnapshot)
        reusable = not self.contract.black_box
        make_m, make_i = self.cloner(model), self.cloner(impl)
        wm: Any = None
        wi: Any = None
        hist: list[int] = []
        limit = self.bounds.events
        state = i_pre.full if safety_state and i_pre.full is not None else m_full
        for oi in self.ops_in(state):
            op = self.ops[oi]
            if wm is None:
                fm, fi = (make_m, make_i) if make_m and make_i else (None, None)
                with step_guard():
                    wm, wi = (fm(), fi()) if fm and fi else self.fresh(path)
                hist = []
            if not self.allowed(wm, op):
                continue
            self.in_flight = oi
            with step_guard(what=Called(op)), PLAN.counting() as reached:
                found, m_post, i_post = self.edge(wm, wi, op, m_pre, i_pre)
            ok = found is None and m_post is not None and i_post is not None
            if ok and self.bounds.faults and reached and i_pre.full is not None:
                # Fault attempts run on copies of the state itself: their failure is
                # this op's, whatever the working copies saw before.
                with step_guard():
                    faulted = self._faults(path, op, reached, i_pre.full, make_i, out.notes)
                if faulted is not None:
                    out.found = Found(f"{op}: {faulted}", oi)
                    return out
            self.in_flight = None
            out.edges += 1
            if found is not None or m_post is None or i_post is None:
                if found is not None and found.kind in self.masked:
                    wm = None  # a class already reported: this edge is not followed
                    continue
                why = found.reason if found is not None else "the state cannot be observed"
                if hist:  # the working copies saw earlier no-op calls: is the failure theirs?
                    with step_guard():
                        again = self.fresh(path)
                        theirs = self.edge(again[0], again[1], op, m_pre, i_pre)[0] is None
                    if theirs:
                        out.found = Found(why, oi, path + tuple(hist))
                        return out
                out.found = Found(why, oi)
                return out
            m_after = m_post.full if m_post.full is not None else wm.snapshot()
            unchanged = m_after == m_full and (not safety_state or i_post.full == i_pre.full)
            if unchanged and reusable:
                # Agreement makes both copies (observably) still the pre-state: they
                # serve the next op.
                hist.append(oi)
                continue
            wm = None
            if unchanged:
                continue
            if limit and len(m_after.pending_events) > limit:
                out.pruned += 1
                continue
            code, mentioned_now = self.code(m_after, i_post.full if safety_state else None)
            if code not in self.seen:  # this process's own filter: less to send back
                self.seen.add(code)
                out.successors.append((code, ((*path, oi), len(mentioned_now)), oi))
        return out

    def classify(self, path: Sequence[int], last: int | None) -> Kind:
        """The class of the finding at the end of `path` (+ the edge `last`)."""
        model, impl = self.fresh(path)
        try:
            m_pre, i_pre = self.sides(model, impl)
        except ObservationError:
            return Kind.STATE
        if last is None:
            found = judge_state(self.contract, model, impl, m_pre, i_pre)
        else:
            found = self.edge(model, impl, self.ops[last], m_pre, i_pre)[0]
        return found.kind if found is not None else Kind.STATE
