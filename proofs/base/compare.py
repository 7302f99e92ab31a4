"""The one comparator: a call made on the model and on an implementation, judged.

Every lock-step engine -- the conformance machines (CPU manager, free queue, block
pool, lazy scanner) and the exhaustive explorer -- makes each call on both sides
through `invoke`, observes both sides' state before and after (a snapshot, or any
comparable value), and asks `judge` whether the implementation did what the model
did:

* the model rejected the call (raised one of this project's errors): the
  implementation must reject it with the same error, and neither side may have
  changed (all-or-nothing). What "the same error" means is the *error contract*
  (`Errors`): this project's typed error with the same `identity()` (`typed`, the
  default), an exception of the builtin class the model's error subclasses
  (`builtin`: a `BlockNotFoundError` is a `KeyError`), or any exception (`any`);
* the model accepted it: the implementation must accept it, return an equal
  result, and end in an equal state.

Results and events are compared as the collections they are (`canonical`): the
keys of an event in a list equal the same keys in a tuple (in the same order), and
keys given as a set equal any collection of the same keys, since the protocol takes
and gives any collection of keys.

A disagreement is a `Mismatch`: a kind (what went wrong, see `Kind`) and a
readable reason. `diff` renders how two states differ, field by field.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evictable.model.errors import LifecycleError
from evictable.model.types import OffloadingEvent, PrepareStoreOutput

__all__ = [
    "Errors",
    "Kind",
    "Mismatch",
    "Reply",
    "UnorderedKeys",
    "builtin_bases",
    "canonical",
    "describe",
    "diff",
    "invoke",
    "judge",
    "same_error",
]


@dataclass(frozen=True)
class Reply:
    """What one call did: returned `value`, or raised it (`raised`)."""

    raised: bool
    value: Any

    def describe(self) -> str:
        return describe(self)


def invoke(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Reply:
    """Call `fn`; every exception (`StopIteration` included) is caught and returned, and
    so is a `SystemExit` (a call of the subject that exits the process is compared like
    any other failure, with its trace; a `KeyboardInterrupt` is left to stop the run)."""
    try:
        return Reply(False, fn(*args, **kwargs))
    except (Exception, SystemExit) as exc:  # compared with the other side, never swallowed
        return Reply(True, exc)


def describe(reply: Reply) -> str:
    """`-> value`, or `raises Type(keys=...)` for this project's errors, `raises Type: msg`
    for any other exception."""
    if not reply.raised:
        return f"-> {reply.value!r}"
    exc = reply.value
    if isinstance(exc, LifecycleError):
        ids = f", block_ids={exc.block_ids!r}" if exc.block_ids else ""
        return f"raises {type(exc).__name__}(keys={exc.keys!r}{ids})"
    if isinstance(exc, StopIteration):
        return "raises StopIteration"
    return f"raises {type(exc).__name__}: {exc}"


class Errors(enum.Enum):
    """The error contract: which exception of the implementation counts as the model's
    rejection."""

    TYPED = "typed"  # this project's error, the same type and identity()
    BUILTIN = "builtin"  # an instance of a builtin class the model's error subclasses
    ANY = "any"  # any exception


def builtin_bases(error: type[BaseException]) -> tuple[type[BaseException], ...]:
    """The builtin exception classes this project's `error` type names as its bases
    (`BlockNotFoundError` -> `(KeyError,)`), most derived first; empty if none."""
    out: list[type[BaseException]] = []
    for cls in error.__mro__:
        if not issubclass(cls, LifecycleError):
            continue
        for base in cls.__bases__:
            if (
                base.__module__ == "builtins"
                and issubclass(base, BaseException)
                and base not in (Exception, BaseException)
                and base not in out
            ):
                out.append(base)
    return tuple(out)


def same_error(model: BaseException, impl: BaseException, errors: Errors = Errors.TYPED) -> bool:
    """The implementation's error counts as the model's under the error contract.

    `typed`: same type, same attributes (message text aside); `builtin`: an
    instance of a builtin class the model's error subclasses (any exception when it
    subclasses none); `any`: any `Exception`. Two `StopIteration`s (both iterators
    ended) are the same under every contract.
    """
    if isinstance(model, StopIteration):
        return isinstance(impl, StopIteration)
    if not isinstance(model, LifecycleError):
        return False
    if errors is Errors.TYPED:
        return isinstance(impl, LifecycleError) and model.identity() == impl.identity()
    if errors is Errors.BUILTIN:
        return isinstance(impl, builtin_bases(type(model)) or Exception)
    return isinstance(impl, Exception)


class Kind(enum.Enum):
    """What kind of disagreement a `Mismatch` is."""

    MODEL_BUG = "model bug"  # the model broke its own contract: never the impl's fault
    ACCEPTED_BAD_CALL = "accepted a call the model rejects"
    REJECTED_GOOD_CALL = "rejected a call the model accepts"
    ERROR = "error type"
    # The tier contract's classes (`check.tier`: a secondary tier on its own):
    TIER_UNREPORTED = "job not reported"  # submitted before drain_jobs, not reported after
    TIER_TWICE = "job reported twice"
    TIER_UNKNOWN = "unknown job reported"  # a result for a job never submitted
    TIER_RAISED = "failure raised, not reported"  # a call raised instead of a failed result
    TIER_GARBAGE = "malformed answer"  # a lookup or a result outside the API's values
    TIER_UNSTABLE = "lookup unstable within a hold"
    TIER_EVENTS = "inconsistent events"
    # The tiering orchestrator's classes (`check.tiering`, `model.tiering_invariants`):
    EVICTED_WHILE_HIT = "evicted while reported HIT"
    EVICTED_WHILE_PINNED = "evicted while pinned"
    STALE_WRITE = "stale write"  # a job writes a chunk its key no longer owns
    DOUBLE_OWNER = "double owner"  # a pending chunk with two parties completing it
    OWNER_LOST = "owner lost"  # a pending or read chunk whose owner is gone
    RESET_LEFT_WORK = "reset left work in flight"
    CRASH = "crash"  # a legal call raised
    FINALISED_TWICE = "finalised twice"  # a request told to a tier not exactly once
    PENDING_HIDDEN = "pending work hidden"
    NEVER_ANSWERS = "never answers"  # a fair cycle on which something stays pending
    DIVERGENCE = "diverges from the model"
    ATOMICITY = "atomicity"
    RESULT = "different result"
    STATE = "different state"
    # Finer classes of the CPU manager's findings (`base.findings.classify`):
    LEAKED_PIN = "leaked pin"
    SLOT = "orphaned or doubly used slot"
    EVICTED_PINNED = "pinned or protected block evicted"
    UNWRITTEN_LOAD = "load of unwritten data"  # a load of a block whose store is in flight
    STORE_VERDICT = "wrong prepare_store verdict"
    WRONG_LOOKUP = "wrong lookup"
    ACCOUNTING = "accounting"
    INVARIANT = "broken invariant"
    SCAN = "scan completeness"  # the lazy scanner left a block unvisited
    HANG = "spinning"  # a call ran past the per-step CPU-time bound (`base.guard`)
    BLOCKED = "blocked"  # a call waited past the per-step bound without CPU (`base.guard`)
    UNLISTED = "idle block not evictable"  # an idle block missing from the evictable set


class UnorderedKeys:
    """The keys of an event given as a set: equal to any collection of the same keys
    (a list, a tuple or a set), since a set has no order to compare."""

    __slots__ = ("keys",)

    def __init__(self, keys: object) -> None:
        self.keys: frozenset[Any] = frozenset(keys)  # type: ignore[call-overload]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, UnorderedKeys):
            return self.keys == other.keys
        if isinstance(other, list | tuple | set | frozenset):
            try:
                return len(set(other)) == len(other) == len(self.keys) and set(other) == self.keys
            except TypeError:
                return False
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.keys)

    def __repr__(self) -> str:
        return "{" + ", ".join(sorted(map(repr, self.keys))) + "}"


def _event(ev: OffloadingEvent) -> OffloadingEvent:
    keys: Any = ev.keys
    if type(keys) is tuple:
        return ev
    try:
        if isinstance(keys, set | frozenset):
            return OffloadingEvent(UnorderedKeys(keys), ev.removed)  # type: ignore[arg-type]
        return OffloadingEvent(tuple(keys), ev.removed)
    except TypeError:  # not a collection: compared as it is
        return ev


def canonical(value: Any) -> Any:
    """`value` in the form results and events are compared in: an event's keys as a
    tuple (or, given as a set, as `UnorderedKeys`); lists and tuples of values as
    lists; a `PrepareStoreOutput`'s fields as lists. Anything else as it is."""
    if isinstance(value, OffloadingEvent):
        return _event(value)
    if isinstance(value, list | tuple) and not hasattr(value, "_fields"):
        return [canonical(v) for v in value]
    if isinstance(value, PrepareStoreOutput):
        try:
            return PrepareStoreOutput(
                list(value.keys_to_store), list(value.slot_ids), list(value.evicted_keys)
            )
        except TypeError:
            return value
    return value


@dataclass(frozen=True)
class Mismatch:
    """One disagreement between model and implementation."""

    kind: Kind
    reason: str


def judge(
    rm: Reply,
    ri: Reply,
    m_pre: object,
    i_pre: object,
    m_post: object,
    i_post: object,
    convert: Callable[[Any], Any] = lambda x: x,
    errors: Errors = Errors.TYPED,
) -> Mismatch | None:
    """Why the implementation's call (`ri`, state `i_pre` -> `i_post`) is not the
    model's (`rm`, `m_pre` -> `m_post`), or None when they agree.

    `convert` maps the implementation's returned value into the model's terms (GPU
    blocks to block ids, say) before results are compared; `errors` is the error
    contract (`same_error`). The states are whatever the engine observes: snapshots,
    or their projection under a contract, or what a black box shows through its API.
    """
    if rm.raised:
        exc = rm.value
        if not isinstance(exc, LifecycleError | StopIteration):
            return Mismatch(Kind.MODEL_BUG, f"model raised a foreign {type(exc).__name__}: {exc}")
        if m_post != m_pre:
            return Mismatch(
                Kind.MODEL_BUG, f"model changed state on an error: {diff(m_pre, m_post)}"
            )
        if not ri.raised:
            return Mismatch(
                Kind.ACCEPTED_BAD_CALL,
                f"model {describe(rm)}, but impl accepted the call {describe(ri)}",
            )
        if not same_error(exc, ri.value, errors):
            how = "" if errors is Errors.TYPED else f" ({errors.value} error contract)"
            return Mismatch(
                Kind.ERROR, f"errors differ{how}: model {describe(rm)}, impl {describe(ri)}"
            )
        if i_post != i_pre:
            return Mismatch(
                Kind.ATOMICITY,
                f"impl changed state on an error (before != after): {diff(i_pre, i_post)}",
            )
        return None
    if ri.raised:
        return Mismatch(
            Kind.REJECTED_GOOD_CALL, f"impl {describe(ri)}, but the model returned {describe(rm)}"
        )
    got = convert(ri.value)
    if canonical(rm.value) != canonical(got):
        return Mismatch(
            Kind.RESULT, f"results differ: model {describe(rm)}, impl {describe(Reply(False, got))}"
        )
    if i_post != m_post:
        return Mismatch(
            Kind.STATE, f"states differ after the call (model != impl): {diff(m_post, i_post)}"
        )
    return None


def diff(expected: object, observed: object) -> str:
    """How two states differ, `field: expected ... != observed ...`, field by field.

    Dataclass snapshots are compared field by field (recursively); for a set-valued
    field only the members on one side are shown; tuples of snapshots position by
    position; anything else as a whole.
    """
    if expected == observed:
        return "(no difference)"
    return "; ".join(_diff("", expected, observed)) or "(no difference)"


_NAMED = {"counters": "counters (num_evictable, num_pending)"}
"""Fields shown with what they hold (a black box's counters are a pair)."""


def _diff(path: str, a: object, b: object) -> list[str]:
    if a == b:
        return []
    if dataclasses.is_dataclass(a) and type(a) is type(b) and not isinstance(a, type):
        out: list[str] = []
        for f in dataclasses.fields(a):
            sub = f"{path}.{f.name}" if path else f.name
            out += _diff(sub, getattr(a, f.name), getattr(b, f.name))
        return out
    if isinstance(a, frozenset | set) and isinstance(b, frozenset | set):
        only_a = sorted(map(repr, a - b))
        only_b = sorted(map(repr, b - a))
        return [
            f"{path or 'value'}: expected [{', '.join(only_a)}] != observed [{', '.join(only_b)}]"
        ]
    if (
        isinstance(a, tuple)
        and isinstance(b, tuple)
        and len(a) == len(b)
        and any(dataclasses.is_dataclass(x) for x in a)
    ):
        return [
            line
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for line in _diff(f"{path}[{i}]", x, y)
        ]
    return [f"{_NAMED.get(path, path) or 'value'}: expected {a!r} != observed {b!r}"]
