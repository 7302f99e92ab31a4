"""The proved manager relation as the oracle of every call the code makes.

`manager.consecution.*` and `bmc.manager` prove their claims of one relation,
`z3.manager_ops.relation`. `ManagerOracle` evaluates that very relation on concrete
calls -- the model's and the implementation's, on every edge the explorer visits
and on every conformance step -- and requires what the code did to be the one thing
the relation admits (docs/proofs.md, "Refinement"):

* the **pre-state** is read off the snapshot before the call (`abstraction`): each
  key's state, ref count, membership in the policy's evictable view (`listed`) and
  slot; the free stack, high-water mark, capacity and counters (slot owners and
  stack positions follow from them);
* the **inputs** are the call's batch, taken as the code's own argument checks take
  it (`model.validate`: argument shape is not part of the relation, so a malformed
  call must raise `InvalidArgumentError` and change nothing), and for
  `prepare_store` the policy's choice, read off the reply (`evicted_keys` in order;
  a None reply or a refused call: the policy supplied none);
* in a finite world of exactly the keys the call and both snapshots mention (plus
  one absent key) and the manager's slots, the relation must admit the **observed**
  outcome: every key's state, ref count (when resident), listed bit and slot (when
  resident), the free stack in order, the high-water mark, both counters; whether
  the call was refused, and why (a repeated key raises `DuplicateKeysError`, else
  the first refused key in input order raises the table's error for its state);
  and the reply (the keys stored and their slots, the victims, the keys committed,
  the slots of a load);
* and what the relation admits must be the **only** outcome it admits: Z3 shows once
  per operation and batch bound, over keys of an uninterpreted sort, that two
  outcomes of one pre-state and one input agree on every field a snapshot shows, on
  the refusal and on the reply (`manager_shape.functional`; a longer call is shown
  unique on its own). So every perturbed outcome is refused, and a relation that
  leaves a field free fails at the first call that meets it.

A call that raised anything else (an injected policy fault, for instance) must have
changed nothing: the relation's all-or-nothing. Calls that change no state
(`lookup`, `take_events`) must leave it as it was.

Cost: the relation of a shape is built once with a symbolic pre-state; a call is one
solver check under assumptions (the concrete values, as literals cached per shape),
under the rlimit (`z3.solver`). Only a call the relation refuses is solved again,
without the observations, to say which field left it.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import z3

from evictable.model.errors import DuplicateKeysError, InvalidArgumentError, LifecycleError
from evictable.model.lifecycle import CPU_MACHINE, Machine
from evictable.model.types import ManagerSnapshot, PrepareStoreOutput, evictable_view
from evictable.model.validate import check_keys, check_keys_and_success, touch_keys
from evictable.proofs.base.compare import Reply
from evictable.proofs.refine.manager_outcome import CallValues, diagnose, outcome_literals
from evictable.proofs.refine.manager_shape import (
    FUNCTIONAL_BATCH,
    Shape,
    build_shape,
    functional,
    observed_values,
    pre_values,
)
from evictable.proofs.refine.policy_shape import (
    policy_keys,
    policy_of,
    policy_values,
)
from evictable.proofs.z3.manager_ops import MANAGER, Variant
from evictable.proofs.z3.policy_arc import ARC_HOOKS, ArcHooks
from evictable.proofs.z3.policy_lru import LRU_HOOKS, LruHooks
from evictable.proofs.z3.solver import check_assumed, unknown

__all__ = ["STATE_METHODS", "ManagerOracle", "OracleCache", "op_name"]

Term = Any

STATE_METHODS: frozenset[str] = frozenset(
    {"prepare_store", "complete_store", "prepare_load", "complete_load", "touch", "reset_cache"}
)
"""The methods the relation speaks about (the others change no state)."""

_KEY_SIZES = (4, 6, 8, 10, 12, 16, 24, 32, 48, 64)
_BATCH_SIZES = (1, 2, 4, 6, 8, 16, 32)
_SLOT_SIZES = (2, 4, 5, 6, 8, 12, 16, 32, 64)
"""A shape's world is rounded up (keys, slot ids, batch) so that few shapes serve
many calls; the manager's capacity is a value of the pre-state."""


def op_name(method: str, success: object = True) -> str:
    """The relation's name of a call (`complete_store.success` / `.failure`)."""
    if method == "complete_store":
        return f"complete_store.{'failure' if success is False else 'success'}"
    return method


def _round(n: int, sizes: Sequence[int]) -> int:
    return next((s for s in sizes if n <= s), n)


@dataclass
class OracleCache:
    """What oracles of one relation (one machine, one variant, one set of policy hook
    relations) can share: the shapes
    built, the functionality shown, the calls admitted. Pass one to several
    `ManagerOracle`s of the same relation (the runs of one process) to build each
    shape once."""

    shapes: dict[tuple[str, int, int, int, str | None], Shape] = field(default_factory=dict)
    admitted: set[tuple[Any, ...]] = field(default_factory=set)
    calls: set[tuple[Any, ...]] = field(default_factory=set)
    """Calls admitted, by their arguments, reply and both snapshots (a call met again
    with the same snapshots is not taken apart again)."""
    functional: dict[tuple[str, int], str | None] = field(default_factory=dict)


class ManagerOracle:
    """Judges concrete calls by `manager_ops.relation` (see the module docstring)."""

    def __init__(
        self,
        machine: Machine = CPU_MACHINE,
        variant: Variant = MANAGER,
        cache: OracleCache | None = None,
        lru: LruHooks | None = LRU_HOOKS,
        arc: ArcHooks | None = ARC_HOOKS,
    ) -> None:
        self.machine = machine
        self.variant = variant
        self.lru = lru
        """The LRU's hook relations composed with the manager's on an LRU's calls
        (None: the manager relation alone)."""
        self.arc = arc
        """ARC's hook relations composed with the manager's on an ARC's calls (None:
        the manager relation alone)."""
        cache = cache if cache is not None else OracleCache()
        self._shapes = cache.shapes
        self._admitted = cache.admitted
        self._calls = cache.calls
        self._functional = cache.functional
        self.calls = 0
        """Calls judged."""
        self.solved = 0
        """Calls that step the state (the others change no state or were malformed)."""
        self.checks = 0
        """Solver checks made (a call judged before is not checked again)."""
        self.functional_batch = FUNCTIONAL_BATCH
        """Up to this batch length the relation's functionality is shown once per
        operation (`manager_shape.functional`); a longer call on its own."""

    @property
    def shapes(self) -> int:
        """Shapes built (in this oracle's cache, shared or not)."""
        return len(self._shapes)

    def functional(self, op: str, batch: int) -> str | None:
        """`manager_shape.functional` of this oracle's relation, once per (op, batch)."""
        if (op, batch) not in self._functional:
            self._functional[op, batch] = functional(self.machine, self.variant, op, batch)
        return self._functional[op, batch]

    def _shape(self, op: str, keys: int, slots: int, batch: int, policy: str | None) -> Shape:
        key = (op, keys, slots, batch, policy)
        if key not in self._shapes:
            hooks = self.lru if self.lru is not None else LRU_HOOKS
            arc = self.arc if self.arc is not None else ARC_HOOKS
            self._shapes[key] = build_shape(
                self.machine, self.variant, op, keys, slots, batch, policy, hooks, arc
            )
        return self._shapes[key]

    def judge(
        self,
        method: str,
        args: Sequence[Any],
        kwargs: dict[str, Any],
        reply: Reply,
        before: ManagerSnapshot,
        after: ManagerSnapshot,
    ) -> str | None:
        """None when the call is a step of the relation, else why not (one line).

        A relation that admits two outcomes for the call is reported the same way
        (a defect of the relation, not of the code: the message says so)."""
        self.calls += 1
        if method not in STATE_METHODS:
            return _unchanged(method, before, after, "changes no state")
        batch = _batch(method, args, kwargs)
        if isinstance(batch, InvalidArgumentError):
            if not reply.raised or not isinstance(reply.value, InvalidArgumentError):
                return (
                    f"{method}: its arguments are malformed ({batch}), but the call did not "
                    "raise InvalidArgumentError"
                )
            return _unchanged(method, before, after, "raised on malformed arguments")
        keys, success = batch
        if reply.raised and not isinstance(reply.value, LifecycleError):
            return _unchanged(method, before, after, f"raised {type(reply.value).__name__}")
        self.solved += 1
        call = _call_key(method, keys, success, reply, before, after, (self.lru, self.arc))
        if call is not None and call in self._calls:
            return None
        why = self._judge(op_name(method, success), keys, reply, before, after)
        if why is None and call is not None:
            self._calls.add(call)
        return why

    def _judge(
        self,
        op: str,
        keys: list[Hashable],
        reply: Reply,
        before: ManagerSnapshot,
        after: ManagerSnapshot,
    ) -> str | None:
        victims: list[Hashable] = []
        supplied = not reply.raised  # a refused call asks the policy for nothing
        if op == "prepare_store" and not reply.raised:
            if reply.value is None:
                supplied = False
            elif isinstance(reply.value, PrepareStoreOutput):
                victims = list(reply.value.evicted_keys)
            else:
                return f"prepare_store returned {reply.value!r}, not a PrepareStoreOutput or None"
        universe = _universe(before, after, keys, victims)
        index = {k: i for i, k in enumerate(universe)}
        size = _round(len(universe) + 1, _KEY_SIZES)
        batch = _round(max(len(keys), len(victims), 1), _BATCH_SIZES)
        if len(victims) > len(keys):
            return f"{op}{_args(keys)}: {len(victims)} victims for a call of {len(keys)} keys"
        slots = _round(max(before.num_blocks, 1), _SLOT_SIZES)
        policy = policy_of(before)
        if (policy == "lru" and self.lru is None) or (policy == "arc" and self.arc is None):
            policy = None
        shape = self._shape(op, size, slots, batch, policy)
        names = {i: repr(k) for k, i in index.items()}
        names[size - 1] = "(an absent key)"
        call = CallValues(op, keys, victims, supplied, index, names)
        call.pre = pre_values(before, index, size, slots)
        call.post = observed_values(after, index, size, slots)
        if policy is not None:
            values = policy_values(policy, before, after, index, size)
            if isinstance(values, str):
                return f"{op}{_args(keys)}: {values}"
            call.pre.update(values[0])
            call.post.update(values[1])
        seen = (
            (shape.op, shape.world.keys, shape.slots, shape.batch),
            tuple(call.pre.values()),
            tuple(index[k] for k in keys),
            tuple(index[v] for v in victims),
            supplied,
            reply.describe(),
            (getattr(reply.value, "state", None), getattr(reply.value, "event", None)),
            tuple(call.post.values()),
        )
        if seen in self._admitted:  # this very call was judged before (the other side's)
            return None
        inputs = shape.input_literals(keys, victims, supplied, index)
        if inputs is None:
            return f"{op}{_args(keys)}: a key of the call is outside the shape's world"
        given = [*shape.pre_literals(call.pre), *inputs]
        outcome = outcome_literals(shape, call, reply)
        if isinstance(outcome, str):
            return f"{op}{_args(keys)} left the proved relation: {outcome}"
        literals = [*given, *outcome, *shape.post_literals(call.post)]
        self.checks += 1
        result = check_assumed(shape.solver, literals)
        if result == z3.unknown:
            raise RuntimeError(
                f"{op}: the relation was not decided: {unknown(shape.solver).detail}"
            )
        if result != z3.sat:
            why = diagnose(shape, call, given, reply)
            return f"{op}{_args(keys)} left the proved relation: {why}"
        if shape.batch <= self.functional_batch:
            loose = self.functional(op, shape.batch)
        elif not shape.unique(given):
            loose = f"{op}: the relation admits two outcomes of this call"
        else:
            loose = None
        if loose is not None:
            return (
                f"{op}{_args(keys)}: the relation is not functional, so it checks nothing: {loose}"
            )
        self._admitted.add(seen)
        return None


def _call_key(
    method: str,
    keys: list[Hashable],
    success: object,
    reply: Reply,
    before: ManagerSnapshot,
    after: ManagerSnapshot,
    hooks: tuple[Any, ...],
) -> tuple[Any, ...] | None:
    """Everything the judgement of a call reads, as one hashable value (None when a
    part is not hashable: such a call is judged every time); `hooks`, the policy
    relations composed."""
    err = reply.value if reply.raised else None
    key = (
        hooks,
        method,
        tuple(keys),
        success,
        reply.raised,
        reply.describe(),
        getattr(err, "state", None),
        getattr(err, "event", None),
        before,
        after,
    )
    try:
        hash(key)
    except TypeError:
        return None
    return key


# ------------------------------------------------------------------ inputs


def _batch(
    method: str, args: Sequence[Any], kwargs: dict[str, Any]
) -> tuple[list[Hashable], object] | InvalidArgumentError:
    """The batch as the code's argument checks take it, or their error."""
    if method == "reset_cache":
        return [], True
    raw: Any = args[0] if args else kwargs.get("keys")
    success = args[1] if len(args) > 1 else kwargs.get("success", True)
    try:
        if method == "touch":
            return list(touch_keys(raw)), True
        if method == "complete_store":
            keys, _ = check_keys_and_success(raw, success)
            return list(keys), success
        keys, _ = check_keys(raw)
        return list(keys), True
    except DuplicateKeysError:
        return list(raw), success  # a well-formed batch: duplicates are the relation's
    except InvalidArgumentError as exc:
        return exc


def _universe(
    before: ManagerSnapshot,
    after: ManagerSnapshot,
    keys: Sequence[Hashable],
    victims: Sequence[Hashable],
) -> list[Hashable]:
    """Every key the call or either snapshot mentions, each once, in a stable order."""
    seen: dict[Hashable, None] = {}
    for snap in (before, after):
        for e in sorted(snap.blocks, key=lambda e: e.slot):
            seen.setdefault(e.key, None)
        for k in (*(evictable_view(snap.policy) or ()), *policy_keys(snap)):
            seen.setdefault(k, None)
    for k in (*keys, *victims):
        seen.setdefault(k, None)
    return list(seen)


def _args(keys: Sequence[Hashable]) -> str:
    return f"({list(keys)!r})" if keys else "()"


def _unchanged(
    method: str, before: ManagerSnapshot, after: ManagerSnapshot, why: str
) -> str | None:
    """A call that must change nothing (the buffered events aside)."""
    if replace(before, pending_events=()) != replace(after, pending_events=()):
        return f"{method} {why}, but the state changed (the relation's step is no change)"
    return None
