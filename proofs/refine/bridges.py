"""Refinement bridges, run inside `evictable verify`: the Z3 relations hold on the code.

The lifecycle and free-queue proofs are about relations built in Z3; these
obligations evaluate those same relations on what the code does, over every input
within small bounds (so each is an exhaustive exploration, `Kind.EXPLORED`):

* `bridge.block.<m>` -- every phase (ref counts up to `REF_BOUND`) and every event of
  each table: `model.lifecycle.step`'s result satisfies `encode.step_term`, every
  perturbed result (another state, a ref off by one, the list flag flipped) does not,
  and a step that raised is one `encode.rejects_term` names. Control: a step
  function that ignores the ref guards (`controls.tables.step_ignoring_guards`).
* `judge_keys`, one of the judges of `refine.manager.<policy>`
  (`proofs.refine.manager_walk`): on a call of the model manager, each key's (before,
  event, after), read off the snapshots (state, ref, membership in the policy's
  evictable view) and the events the model gave it, satisfies `step_term`, perturbed
  ones do not, a key without an event is unchanged, and a refused call names a pair
  `rejects_term` rejects and changed nothing.
* `bridge.free_queue` -- every queue of up to K blocks and every operation on it:
  the Z3 queue operations of `proofs.z3.free_queue`, evaluated on the concrete
  queue, give exactly the queue `impl/free_queue.py` leaves, and every queue is
  well formed in Z3. Control: a queue whose `prepend_n` reverses its blocks.
* `judge_counters`, another judge of that walk: the implementation's counters
  change as `counter_rules.counters_after` says (the rule the Z3 proofs use), from
  what the call did, and equal the counts.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable
from typing import Any

import z3

from evictable.impl.free_queue import FreeKVCacheBlockQueue, KVCacheBlock
from evictable.model.errors import DuplicateKeysError, LifecycleError
from evictable.model.lifecycle import (
    CpuEvent,
    CpuState,
    Event,
    Machine,
    Phase,
    step,
)
from evictable.model.types import ManagerSnapshot, PrepareStoreOutput, evictable_view
from evictable.proofs.base.records import (
    HANG_BACKSTOP_S,
    Outcome,
    check_deadline,
    proved,
    refuted,
)
from evictable.proofs.explore.coverage import Call
from evictable.proofs.z3 import free_queue as fq
from evictable.proofs.z3.counter_rules import CallCounts, counters_after
from evictable.proofs.z3.encode import concrete_terms, rejects_term, state_sort, step_term
from evictable.proofs.z3.solver import check, solver, unknown

__all__ = [
    "REF_BOUND",
    "Oracle",
    "check_block_bridge",
    "check_free_queue",
    "encode_queue",
    "ground_queue",
    "judge_counters",
    "judge_keys",
]

REF_BOUND = 4
"""The largest ref count `bridge.block.*` steps from (every guard is met below it)."""


StepFn = Callable[[Machine, Phase, Event, Hashable], Phase]


def _holds(term: Any) -> bool:
    """Decide a closed Z3 formula (concrete values only)."""
    value = z3.simplify(term)
    if z3.is_true(value):
        return True
    if z3.is_false(value):
        return False
    s = solver(HANG_BACKSTOP_S)
    s.add(term)
    r = check(s)
    if r == z3.unknown:
        raise RuntimeError(f"a concrete relation was not decided: {unknown(s).counterexample}")
    return bool(r == z3.sat)


class Oracle:
    """The Z3 relation of one table, decided on concrete blocks (and remembered)."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self.ss = state_sort(machine)
        self._related: dict[tuple[Any, ...], bool] = {}
        self._rejected: dict[tuple[Any, ...], bool] = {}
        self._fails: dict[tuple[Any, ...], str | None] = {}

    def related(
        self, pre: Phase, pre_in: bool, event: Event | None, post: Phase, post_in: bool
    ) -> bool:
        """T(pre, event, post) in Z3 (event None: nothing changes)."""
        key = (pre, pre_in, event, post, post_in)
        if key not in self._related:
            a, b = concrete_terms(self.ss, pre, pre_in), concrete_terms(self.ss, post, post_in)
            term = (
                z3.And(b.state == a.state, b.ref == a.ref, b.in_list == a.in_list)
                if event is None
                else step_term(self.machine, event, a, b)
            )
            self._related[key] = _holds(term)
        return self._related[key]

    def rejected(self, pre: Phase, pre_in: bool, event: Event) -> bool:
        key = (pre, pre_in, event)
        if key not in self._rejected:
            terms = concrete_terms(self.ss, pre, pre_in)
            self._rejected[key] = _holds(rejects_term(self.machine, event, terms))
        return self._rejected[key]

    def step_fails(
        self, pre: Phase, pre_in: bool, event: Event | None, post: Phase, post_in: bool
    ) -> str | None:
        """Why (pre, event, post) is not a step of T, or a perturbed one is."""
        key = (pre, pre_in, event, post, post_in)
        if key not in self._fails:
            self._fails[key] = self._step_fails(pre, pre_in, event, post, post_in)
        return self._fails[key]

    def _step_fails(
        self, pre: Phase, pre_in: bool, event: Event | None, post: Phase, post_in: bool
    ) -> str | None:
        label = "no event" if event is None else event.value
        if not self.related(pre, pre_in, event, post, post_in):
            return f"{label}: {pre} (listed {pre_in}) -> {post} (listed {post_in}) is not in T"
        for wrong, wrong_in in _perturbed(self.machine, post, post_in):
            if self.related(pre, pre_in, event, wrong, wrong_in):
                return f"{label}: the perturbed {pre} -> {wrong} (listed {wrong_in}) is in T too"
        return None


def _perturbed(m: Machine, post: Phase, in_list: bool) -> list[tuple[Phase, bool]]:
    """Wrong successors: every other state, a ref off by one (if resident), flipped list."""
    out = [(post, not in_list)]
    out += [(Phase(s.state, post.ref), in_list) for s in m.states if s.state is not post.state]
    if m.spec(post.state).resident and post.ref is not None:
        out.append((Phase(post.state, post.ref + 1), in_list))
    return out


# ------------------------------------------------------------------ one block


def _phases(m: Machine) -> list[Phase]:
    out = []
    for s in m.states:
        if not s.resident:
            out.append(Phase(s.state, None))
        elif s.ref_min is not None:
            top = s.ref_max if s.ref_max is not None else REF_BOUND
            out += [Phase(s.state, r) for r in range(s.ref_min, top + 1)]
    return out


def check_block_bridge(machine: Machine, step_fn: StepFn = step) -> Outcome:
    """Every phase and event of `machine`: the executed step is a step of T (see above)."""
    oracle = Oracle(machine)
    checked = 0
    for pre in _phases(machine):
        flag = machine.spec(pre.state).flag
        for event in machine.events:
            checked += 1
            try:
                after = step_fn(machine, pre, event, "k")
            except LifecycleError:
                if not oracle.rejected(pre, flag, event):
                    return refuted(f"{event.value} on {pre} raised, but T does not reject it")
                continue
            if oracle.rejected(pre, flag, event):
                return refuted(f"{event.value} on {pre} stepped, but T rejects it")
            why = oracle.step_fails(pre, flag, event, after, machine.spec(after.state).flag)
            if why is not None:
                return refuted(why)
    return proved(f"{checked} (phase, event) pairs")


# ------------------------------------------------------------------ the whole manager


def _view(snap: ManagerSnapshot, key: Hashable) -> tuple[Phase, bool]:
    view = evictable_view(snap.policy)
    listed = view is not None and key in view
    for e in snap.blocks:
        if e.key == key:
            return Phase(e.state, e.ref_cnt), listed
    return Phase(CpuState.ABSENT, None), listed


def _keys(snap: ManagerSnapshot) -> set[Hashable]:
    return {e.key for e in snap.blocks} | set(evictable_view(snap.policy) or ())


def judge_keys(oracle: Oracle, call: Call) -> str | None:
    """Each key's step of the model's `call` is a step of T (see the module docstring)."""
    side = call.model
    before, after = side.before, side.after
    if side.reply.raised:
        if after != before:
            return f"{call.op} raised and changed the state"
        err = side.reply.value
        if isinstance(err, LifecycleError) and not isinstance(err, DuplicateKeysError):
            if err.event is None or err.state is None or not err.keys:
                return None  # an argument error, not a table refusal
            pre, pre_in = _view(before, err.keys[0])
            refused = oracle.rejected(pre, pre_in, CpuEvent(err.event))
            if pre.state.name != err.state or not refused:
                return f"{call.op} raised {type(err).__name__} for {pre}, which T does not reject"
        return None
    given: dict[Hashable, set[CpuEvent]] = {}
    for e in call.events:
        given.setdefault(e.key, set()).add(e.event)
    for key in sorted(_keys(before) | _keys(after) | set(given), key=repr):
        events = given.get(key, set())
        if len(events) > 1:
            return f"{call.op}: key {key!r} took {sorted(e.value for e in events)} in one call"
        event = next(iter(events)) if events else None
        pre, pre_in = _view(before, key)
        post, post_in = _view(after, key)
        why = oracle.step_fails(pre, pre_in, event, post, post_in)
        if why is not None:
            return f"{call.op}: key {key!r}: {why}"
    return None


# ------------------------------------------------------------------ counters of the impl


def _call_counts(call: Call) -> CallCounts:
    """What the call did, counted from its reply and the snapshot before it."""
    impl = call.impl
    if impl is None:
        raise ValueError("the counters are checked with the implementation stepped")
    value = impl.reply.value
    keys = list(call.op.keys)
    refs = {e.key: e.ref_cnt for e in impl.before.blocks}
    if isinstance(value, PrepareStoreOutput):
        return CallCounts(victims=len(value.evicted_keys), stored=len(value.keys_to_store))
    if call.op.method == "complete_store" and isinstance(value, list):
        return CallCounts(acted=len(value))
    return CallCounts(
        pinned=sum(1 for k in keys if refs.get(k) == 0),
        unpinned=sum(1 for k in keys if refs.get(k) == 1),
    )


def judge_counters(call: Call) -> str | None:
    """The implementation's counters after `call` follow `counters_after` and the counts."""
    impl = call.impl
    if impl is None:
        return "no implementation was stepped"
    if impl.reply.raised:
        return None
    method = call.op.method
    op = (
        f"complete_store.{'failure' if call.op.success is False else 'success'}"
        if method == "complete_store"
        else method
    )
    before = (impl.before.num_evictable, impl.before.num_pending)
    want = counters_after(op, *before, _call_counts(call))
    got = impl.counters
    if got != tuple(want):
        return (
            f"{call.op}: the implementation's counters (num_evictable, num_pending) went "
            f"{before} -> {got}; the rule says {tuple(want)}"
        )
    counted = (
        sum(1 for e in impl.after.blocks if e.state is CpuState.READY),
        sum(1 for e in impl.after.blocks if e.state is CpuState.PENDING),
    )
    if got != counted:
        return f"{call.op}: counters {got} but {counted} keys are READY / PENDING"
    return None


# ------------------------------------------------------------------ the free queue


def encode_queue(q: FreeKVCacheBlockQueue, blocks: list[KVCacheBlock], k: int) -> fq.QState:
    """The concrete queue `q` over `blocks` (ids 0..k-1) as ground Z3 arrays."""

    def node(b: KVCacheBlock | None) -> int:
        if b is None:
            return fq.NIL
        if b is q.fake_free_list_head:
            return k
        if b is q.fake_free_list_tail:
            return k + 1
        return b.block_id

    nodes = [*blocks, q.fake_free_list_head, q.fake_free_list_tail]
    nxt: Any = z3.K(z3.IntSort(), z3.IntVal(fq.NIL))
    prv: Any = z3.K(z3.IntSort(), z3.IntVal(fq.NIL))
    linked: Any = z3.K(z3.IntSort(), z3.BoolVal(False))
    for i, b in enumerate(nodes):
        nxt = z3.Store(nxt, i, node(b.next_free_block))
        prv = z3.Store(prv, i, node(b.prev_free_block))
        if i < k:
            linked = z3.Store(linked, i, b.owner is q)
    return fq.QState(k, nxt, prv, linked, z3.IntVal(q.num_free_blocks))


def ground_queue(s: fq.QState, k: int) -> tuple[Any, ...]:
    """A ground queue state as Python values (next, prev, linked, count)."""

    def val(t: Any) -> Any:
        v = z3.simplify(t)
        return z3.is_true(v) if z3.is_bool(v) else v.as_long()

    return (
        tuple(val(z3.Select(s.nxt, i)) for i in range(k + 2)),
        tuple(val(z3.Select(s.prv, i)) for i in range(k + 2)),
        tuple(val(z3.Select(s.linked, i)) for i in range(k)),
        val(s.count),
    )


def _sequences(items: list[int]) -> list[tuple[int, ...]]:
    return [p for n in range(len(items) + 1) for p in itertools.permutations(items, n)]


QueueFactory = Callable[[list[KVCacheBlock]], FreeKVCacheBlockQueue]


def check_free_queue(k: int, make: QueueFactory = FreeKVCacheBlockQueue) -> Outcome:
    """Every queue of up to `k` blocks and every operation: Z3 == `impl/free_queue.py`."""
    checked = 0
    for order in _sequences(list(range(k))):
        check_deadline("bridge.free_queue")
        unlinked = [i for i in range(k) if i not in order]
        calls: list[tuple[str, Any]] = [("popleft", None)] if order else []
        calls += [("remove", b) for b in order]
        calls += [("popleft_n", m) for m in range(len(order) + 1)]
        calls += [(op, seq) for op in ("append_n", "prepend_n") for seq in _sequences(unlinked)]
        for op, arg in calls:
            blocks = [KVCacheBlock(i) for i in range(k)]
            q = make([blocks[i] for i in order])
            pre = encode_queue(q, blocks, k)
            if not z3.is_true(z3.simplify(fq.well_formed(pre))):
                return refuted(f"queue {list(order)} is not well formed in Z3")
            if op == "popleft":
                post, _ = fq.op_popleft(pre)
                q.popleft()
            elif op == "remove":
                post = fq.op_remove(pre, z3.IntVal(arg))
                q.remove(blocks[arg])
            elif op == "popleft_n":
                post, _ = fq.op_popleft_n(pre, arg)
                q.popleft_n(arg)
            else:
                link = fq.op_append_n if op == "append_n" else fq.op_prepend_n
                post = link(pre, [z3.IntVal(b) for b in arg])
                getattr(q, op)([blocks[b] for b in arg])
            checked += 1
            if ground_queue(post, k) != ground_queue(encode_queue(q, blocks, k), k):
                return refuted(
                    f"{op}({arg!r}) on queue {list(order)}: the Z3 operation and the "
                    "implementation leave different queues"
                )
    return proved(f"{checked} (queue, operation) pairs")


# ------------------------------------------------------------------ obligations
