"""Two exhaustive probes of the CPU manager over small catalogues.

* `construct_probe(factory, policy)`: every constructor call with one, two or three
  bad arguments (`lockstep.inputs.BAD_NUM_BLOCKS`, an unknown policy name,
  `BAD_ENABLE_EVENTS`) must be refused by the model class and the factory with the
  same error -- the same type and the same message up to its first ';' (both sides
  check their arguments with `evictable.model.validate`), so the first bad argument
  (in signature order) decides on both.
* `evict_contract_probe(factory)`: a pluggable policy whose `evict` answers wrongly
  (`BAD_ANSWERS`: not a list, the wrong number of victims, malformed items, a
  duplicate, a protected, pinned, pending or non-resident key, another key's
  record) must make `prepare_store` raise `InvariantViolationError`
  ("policy_evict_contract") and change nothing (snapshot, counters and
  `check_invariants` as before); the honest answer must be accepted. It runs with
  the policy sharing its table and not: the manager checks residency differently
  in the two cases. The scripted policies are known by name only while a manager is
  built (`policy_scope`): nothing is registered.
* `registry_probe(registry)`: every bad registration, permanent or scoped, is
  refused with `InvalidArgumentError` and changes nothing, on a fresh
  `PolicyRegistry` (never the global one).

Each returns None when every case holds, else the first failing case.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from contextlib import AbstractContextManager
from typing import Any, ClassVar

from evictable.impl.block import BlockStatus
from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.policies.factory import PolicyRegistry, policy_scope
from evictable.impl.policies.lru import LRUCachePolicy
from evictable.model.errors import InvalidArgumentError, InvariantViolationError
from evictable.model.manager import ModelManager
from evictable.model.types import Key
from evictable.proofs.base.compare import invoke
from evictable.proofs.lockstep.inputs import BAD_ENABLE_EVENTS, BAD_NUM_BLOCKS

__all__ = [
    "BAD_ANSWERS",
    "LIAR",
    "ScriptedEvictLru",
    "ScriptedEvictLruOwnTable",
    "construct_probe",
    "evict_contract_probe",
    "registry_probe",
]

UNKNOWN = "no-such-policy"

Factory = Callable[..., Any]


def _head(error: BaseException) -> str:
    """The message up to its first ';': the refused argument and its value (after it,
    an unknown-policy error lists the known names, which differ: the implementation
    knows every registered variant, the model its own policies)."""
    return str(error).partition(";")[0]


def construct_probe(factory: Factory, policy: str = "lru") -> str | None:
    """The first constructor call the two sides refuse differently, or None.

    Cases: (num_blocks, policy, enable_events) over (2, *BAD_NUM_BLOCKS) x
    (policy, UNKNOWN) x (False, *BAD_ENABLE_EVENTS), all but the valid one.
    """
    for num_blocks in (2, *BAD_NUM_BLOCKS):
        for name in (policy, UNKNOWN):
            for events in (False, *BAD_ENABLE_EVENTS):
                if (num_blocks, name, events) == (2, policy, False):
                    continue
                text = f"({num_blocks!r}, {name!r}, {events!r})"
                rm = invoke(ModelManager, num_blocks, name, events)
                ri = invoke(factory, num_blocks, name, events)
                if not rm.raised:
                    return f"construction {text}: the model accepted it (model bug)"
                if not ri.raised:
                    return f"construction {text}: impl accepted it"
                m, i = rm.value, ri.value
                if type(m) is not type(i) or _head(m) != _head(i):
                    return (
                        f"construction {text}: model raised {type(m).__name__}: {m}, "
                        f"impl raised {type(i).__name__}: {i}"
                    )
    return None


# ------------------------------------------------------------------ evict contract

Answer = Callable[[Any, int, Set[Key]], object]
"""A scripted `evict` answer: (policy, n, protected) -> what `evict` returns."""


class ScriptedEvictLru(LRUCachePolicy):
    """An LRU whose `evict` returns `ScriptedEvictLru.answer(self, n, protected)` when
    one is set (a deliberately wrong answer), else the LRU's own."""

    __slots__ = ()

    answer: ClassVar[Answer | None] = None

    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:  # type: ignore[override]
        script = type(self).answer
        if script is None:
            return super().evict(n, protected)
        return script(self, n, protected)  # type: ignore[return-value]


class ScriptedEvictLruOwnTable(ScriptedEvictLru):
    """`ScriptedEvictLru` that shares no key table: the manager keeps its own."""

    __slots__ = ()

    def shared_table(self) -> None:  # type: ignore[override]
        return None


LIAR = "lru-scripted-evict"
LIAR_OWN = LIAR + "+own"


def _liar(own: bool) -> str:
    return LIAR_OWN if own else LIAR


def _liars() -> AbstractContextManager[None]:
    """The scripted policies, known by name inside the `with` block only."""
    return policy_scope({LIAR: ScriptedEvictLru, LIAR_OWN: ScriptedEvictLruOwnTable})


def _rec(p: Any, key: Key) -> BlockStatus:
    rec: BlockStatus = p.get(key)
    return rec


def _forged(ref: int) -> Answer:
    def answer(p: Any, n: int, protected: Set[Key]) -> object:
        block = BlockStatus(7, b"zz")
        block.ref_cnt = ref
        return [(b"zz", block)]

    return answer


BAD_ANSWERS: dict[str, tuple[Answer, bool]] = {
    "a tuple, not a list": (lambda p, n, s: ((b"b", _rec(p, b"b")),), True),
    "no victims": (lambda p, n, s: [], True),
    "one victim too many": (lambda p, n, s: [(b"b", _rec(p, b"b")), (b"c", _rec(p, b"c"))], True),
    "a bare record": (lambda p, n, s: [_rec(p, b"b")], True),
    "a 3-tuple": (lambda p, n, s: [(b"b", _rec(p, b"b"), 0)], True),
    "not a record": (lambda p, n, s: [(b"b", "record")], True),
    "a protected key": (lambda p, n, s: [(b"a", _rec(p, b"a"))], True),
    "a pinned key": (lambda p, n, s: [(b"p", _rec(p, b"p"))], True),
    "another key's record": (lambda p, n, s: [(b"b", _rec(p, b"c"))], True),
    "a non-resident key (forged idle record)": (_forged(0), False),
    "a non-resident key (forged pending record)": (_forged(-1), True),
}
"""Wrong `evict` answers for a `prepare_store([a, d])` that needs one victim, from a
state with `a`, `b`, `c` idle and `p` pinned (4 slots). The flag: whether the manager
can tell even when the policy shares its table (a forged idle record with a matching
key is indistinguishable from a victim the policy just removed from its table)."""

DUPLICATE: Answer = lambda p, n, s: [(b"b", _rec(p, b"b"))] * n  # noqa: E731
"""Asked for two victims: the same one twice."""


def _setup(factory: Factory, own: bool) -> Any:
    with _liars():
        m = factory(4, _liar(own), False)
    m.prepare_store([b"a", b"b", b"c", b"p"])
    m.complete_store([b"a", b"b", b"c", b"p"])
    m.prepare_load([b"p"])
    return m


def _one(factory: Factory, own: bool, label: str, answer: Answer, keys: list[Key]) -> str | None:
    m = _setup(factory, own)
    before = (m.snapshot(), m.num_evictable, m.num_pending)
    ScriptedEvictLru.answer = answer
    try:
        r = invoke(m.prepare_store, keys)
    finally:
        ScriptedEvictLru.answer = None
    where = f"evict answering {label} ({'own' if own else 'shared'} table)"
    if not r.raised:
        return f"{where}: prepare_store accepted it: {r.describe()}"
    err = r.value
    if not isinstance(err, InvariantViolationError) or err.names != ("policy_evict_contract",):
        return f"{where}: prepare_store raised {type(err).__name__}: {err}"
    after = (m.snapshot(), m.num_evictable, m.num_pending)
    if after != before:
        return f"{where}: the refused call changed the manager"
    try:
        m.check_invariants()
    except Exception as exc:
        return f"{where}: check_invariants failed after the refusal: {exc}"
    return None


def evict_contract_probe(factory: Factory = CPUOffloadingManager) -> str | None:
    """The first wrong `evict` answer the manager built by `factory` (called as
    `factory(num_blocks, policy_name, enable_events)`) accepts or mishandles, or None."""
    for own in (False, True):
        m = _setup(factory, own)
        honest = invoke(m.prepare_store, [b"a", b"d"])
        if honest.raised or honest.value.evicted_keys != [b"b"]:
            return f"the honest evict answer was not taken: {honest.describe()}"
        for label, (answer, shared_too) in BAD_ANSWERS.items():
            if own or shared_too:
                why = _one(factory, own, label, answer, [b"a", b"d"])
                if why is not None:
                    return why
        why = _one(factory, own, "one victim twice", DUPLICATE, [b"d", b"e"])
        if why is not None:
            return why
    return None


# ------------------------------------------------------------------ the registry


class _Valid(LRUCachePolicy):
    """A concrete policy class the registry probe registers (under a fresh name)."""

    __slots__ = ()


class _Other(LRUCachePolicy):
    __slots__ = ()


REGISTRY_NAME = "probe-registry-policy"

Registries = PolicyRegistry | Callable[[], Any]
"""A registry to probe, or a factory of fresh ones (a registry class)."""


def bad_registrations() -> list[tuple[str, object, object]]:
    from evictable.impl.policies.base import CachePolicy

    return [
        ("an empty name", "", _Valid),
        ("a name with a space", "a b", _Valid),
        ("a name that is no str", 3, _Valid),
        ("a class that is no CachePolicy", REGISTRY_NAME, int),
        ("an object, not a class", REGISTRY_NAME, _Valid(1)),
        ("an abstract class", REGISTRY_NAME, CachePolicy),
        ("a built-in name", "lru", _Valid),
        ("a name registered to another class", REGISTRY_NAME + "-taken", _Other),
    ]


def _entering(registry: Any) -> Callable[[object, object], None]:
    """`(name, cls)` -> enter and leave `registry.scope({name: cls})`."""

    def enter(name: object, cls: object) -> None:
        with registry.scope({name: cls}):
            pass

    return enter


def registry_probe(registry: Registries | None = None) -> str | None:
    """Every bad `register` call is refused with `InvalidArgumentError` and registers
    nothing; registering the same class under the same name again is a no-op; every
    bad entry of a `scope`, and a registered name, is refused the same way. Returns
    the first failing case, or None.

    `registry`: the registry to probe, or a factory of one (called once); by default
    a fresh `PolicyRegistry()`, so the names the probe registers are registered
    nowhere else. `register_policy` and `policy_scope` are the default registry's
    `register` and `scope`."""
    if registry is None:
        reg: Any = PolicyRegistry()
    elif isinstance(registry, PolicyRegistry):
        reg = registry
    else:
        reg = registry()
    taken = REGISTRY_NAME + "-taken"
    reg.register(taken, _Valid)
    reg.register(taken, _Valid)  # the same again: a no-op
    scoped = [*bad_registrations(), ("a registered name", taken, _Valid)]
    for how, call, cases in (
        ("register_policy", reg.register, bad_registrations()),
        ("policy_scope", _entering(reg), scoped),
    ):
        for label, name, cls in cases:
            before = reg.known()
            r = invoke(call, name, cls)
            after = reg.known()
            if not r.raised or not isinstance(r.value, InvalidArgumentError):
                return f"{how} with {label}: {r.describe()}, want InvalidArgumentError"
            if after != before:
                return f"{how} with {label}: refused, but registered {name!r}"
    return None


# ------------------------------------------------------------------ obligations
