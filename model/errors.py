"""The one error hierarchy shared by the model and the implementation.

Every error names the offending keys (CPU manager) or block ids (GPU side) both
in its message and as attributes, so that a caller or a conformance check can
compare errors by type and attributes rather than by message text.

Each error also subclasses the builtin exception that vLLM raises (or, where vLLM
merely asserts, the closest builtin) in the same situation, so that code written
against vLLM's behaviour keeps catching it.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import ClassVar

__all__ = [
    "BlockAlreadyLinkedError",
    "BlockNotFoundError",
    "BlockNotLinkedError",
    "BlockNotReadyError",
    "ConcurrentModificationError",
    "ContractViolationError",
    "DuplicateBlocksError",
    "DuplicateKeysError",
    "DuplicateRequestError",
    "ForeignBlockError",
    "InsufficientFreeBlocksError",
    "InvalidArgumentError",
    "InvariantViolationError",
    "KeyRefusal",
    "LifecycleError",
    "MirrorDivergenceError",
    "NotInFlightError",
    "NotLoadingError",
    "PolicyContractError",
    "QueueEmptyError",
    "RefCountUnderflowError",
    "RequestError",
    "RequestFinishedError",
    "ShutdownError",
    "StaleCursorError",
    "TierSubmitError",
    "TieringAssertionError",
    "UnknownJobError",
    "UnknownRequestError",
    "UnknownTierError",
    "refused",
]


class LifecycleError(Exception):
    """Base of every error raised by `model` and `impl`.

    Attributes:
        keys: the offending CPU block keys, in the order they were found.
        block_ids: the offending GPU block ids, in the order they were found.
        event, state, reason: for a call the lifecycle table refuses, the table's
            event (e.g. "load_begin"), the state it refuses it in (e.g. "PENDING")
            and the row's reason (e.g. "store still in flight"); None otherwise.
    """

    def __init__(
        self,
        message: str,
        *,
        keys: Iterable[Hashable] = (),
        block_ids: Iterable[int] = (),
        event: str | None = None,
        state: str | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.keys: tuple[Hashable, ...] = tuple(keys)
        self.block_ids: tuple[int, ...] = tuple(block_ids)
        self.event = event
        self.state = state
        self.reason = reason

    def __str__(self) -> str:
        # KeyError quotes its argument; every error here prints its message as is.
        return self.message

    def identity(self) -> tuple[object, ...]:
        """What two errors must share to count as the same error: the type and every
        attribute (the offenders, the refused event and state, counts, names), but
        not the message text."""
        attrs = sorted((k, v) for k, v in vars(self).items() if k != "message")
        return (type(self), *attrs)


def refused(
    default: str, offenders: str, event: str | None, state: str | None, reason: str | None
) -> str:
    """The message of a refused call: the table's words when it comes from a table row
    (`load_begin refused for b'a' in PENDING: store still in flight`), else `default`."""
    if event is None:
        return default
    return f"{event} refused for {offenders} in {state}: {reason}"


def _keys_text(keys: Iterable[Hashable]) -> str:
    return ", ".join(repr(k) for k in keys)


class InvalidArgumentError(LifecycleError, ValueError):
    """An argument has the wrong type or value (e.g. `num_blocks=-1`, unknown policy)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class DuplicateKeysError(LifecycleError, ValueError):
    """The same key appears more than once in one call."""

    def __init__(self, keys: Iterable[Hashable]) -> None:
        ks = tuple(keys)
        super().__init__(f"duplicate keys in one call: {_keys_text(ks)}", keys=ks)


class KeyRefusal(LifecycleError):
    """Base of the errors a key-taking call is refused with: the offending keys, and
    for a lifecycle-table refusal the event, state and reason of its row.

    `what` is the message used when the error does not come from a table row.
    """

    what: ClassVar[str] = "refused"

    def __init__(
        self,
        keys: Iterable[Hashable],
        *,
        event: str | None = None,
        state: str | None = None,
        reason: str | None = None,
    ) -> None:
        ks = tuple(keys)
        text = refused(f"{self.what}: {_keys_text(ks)}", _keys_text(ks), event, state, reason)
        super().__init__(text, keys=ks, event=event, state=state, reason=reason)


class BlockNotFoundError(KeyRefusal, KeyError):
    """A key that must be resident is ABSENT."""

    what = "block not found"


class BlockNotReadyError(KeyRefusal, AssertionError):
    """A load was asked of a block whose store is still in flight (PENDING)."""

    what = "block not ready (store in flight)"


class NotLoadingError(KeyRefusal, AssertionError):
    """`complete_load` on a block that has no load in flight (ref_cnt <= 0)."""

    what = "block has no load in flight"


class QueueEmptyError(LifecycleError, ValueError):
    """`popleft` on an empty free queue."""

    def __init__(self) -> None:
        super().__init__("No free blocks available")


class InsufficientFreeBlocksError(LifecycleError, ValueError):
    """More blocks were asked for than the free queue holds (or `n` is negative)."""

    def __init__(self, requested: int, available: int) -> None:
        super().__init__(f"cannot take {requested} blocks: {available} free blocks available")
        self.requested = requested
        self.available = available


class DuplicateBlocksError(LifecycleError, ValueError):
    """The same GPU block appears more than once in one bulk call."""

    def __init__(self, block_ids: Iterable[int]) -> None:
        ids = tuple(block_ids)
        super().__init__(f"duplicate blocks in one call: {list(ids)}", block_ids=ids)


class BlockNotLinkedError(LifecycleError, RuntimeError):
    """A block that is not in the free queue was asked to leave it."""

    def __init__(
        self,
        block_ids: Iterable[int],
        *,
        event: str | None = None,
        state: str | None = None,
        reason: str | None = None,
    ) -> None:
        ids = tuple(block_ids)
        text = refused(
            f"block not in the free queue: {list(ids)}", f"block {list(ids)}", event, state, reason
        )
        super().__init__(text, block_ids=ids, event=event, state=state, reason=reason)


class BlockAlreadyLinkedError(LifecycleError, RuntimeError):
    """A block that is already in a free queue (this one or another) was linked again."""

    def __init__(self, block_ids: Iterable[int]) -> None:
        ids = tuple(block_ids)
        super().__init__(f"block already in a free queue: {list(ids)}", block_ids=ids)


class ForeignBlockError(LifecycleError, RuntimeError):
    """A block linked in another queue was used with this one."""

    def __init__(self, block_ids: Iterable[int]) -> None:
        ids = tuple(block_ids)
        super().__init__(f"block belongs to another free queue: {list(ids)}", block_ids=ids)


class StaleCursorError(LifecycleError, ValueError):
    """A scan cursor no longer names the link it was taken from."""

    def __init__(self, block_ids: Iterable[int]) -> None:
        ids = tuple(block_ids)
        super().__init__(f"stale cursor: block {list(ids)} left the queue", block_ids=ids)


class ConcurrentModificationError(LifecycleError, RuntimeError):
    """The free queue changed while an iterator over it was live."""

    def __init__(self) -> None:
        super().__init__("free queue modified during iteration")


class NotInFlightError(LifecycleError, ValueError):
    """A lazy-offload store was completed or aborted for a block it did not select."""

    def __init__(self, block_ids: Iterable[int]) -> None:
        ids = tuple(block_ids)
        super().__init__(f"no offload in flight for block {list(ids)}", block_ids=ids)


class RefCountUnderflowError(LifecycleError, ValueError):
    """A free or release would take a ref count below its floor."""

    def __init__(
        self,
        *,
        keys: Iterable[Hashable] = (),
        block_ids: Iterable[int] = (),
        event: str | None = None,
        state: str | None = None,
        reason: str | None = None,
    ) -> None:
        ks, ids = tuple(keys), tuple(block_ids)
        what = _keys_text(ks) if ks else f"block {list(ids)}"
        text = refused(f"ref count underflow: {what}", what, event, state, reason)
        super().__init__(text, keys=ks, block_ids=ids, event=event, state=state, reason=reason)


class InvariantViolationError(LifecycleError, RuntimeError):
    """An internal consistency check failed: a bug in a manager or its policy, not bad input.

    Attributes:
        names: the names of the violated invariants (see `model.invariants`).
    """

    def __init__(self, names: Iterable[str], detail: str = "") -> None:
        ns = tuple(names)
        text = f"invariant violated: {', '.join(ns)}" + (f" ({detail})" if detail else "")
        super().__init__(text)
        self.names = ns


class ContractViolationError(LifecycleError, AssertionError):
    """A checking mode saw a call break a contract (evictable.vllm's checking mode).

    Attributes:
        call: the call that broke it, e.g. "mark_evictable" or "prepare_store".
        clause: which rule it broke, in words (e.g. "mark_evictable only at ref 0").
        keys: the keys concerned.
        detail: what was seen.
    """

    def __init__(self, call: str, clause: str, keys: Iterable[Hashable], detail: str) -> None:
        ks = tuple(keys)
        super().__init__(f"{call}: {clause}: {detail} ({_keys_text(ks)})", keys=ks)
        self.call = call
        self.clause = clause
        self.detail = detail


class PolicyContractError(ContractViolationError):
    """A cache-policy hook call broke the policy contract (`evictable.vllm.EvictableChecked`):
    a hook called at the wrong ref count, a second insert of a resident key, a victim
    that is pinned or protected, a refused eviction that changed something, a removal
    of a chunk that is not pending."""


class MirrorDivergenceError(ContractViolationError):
    """vLLM's manager and the model (vLLM 0.33 profile, safety contract) disagree after
    a call (`evictable.vllm.CheckedOffloadingSpec`).

    Attributes (besides `call`, `clause`, `keys`, `detail`):
        model_state: the model's answer and the keys' states, as text.
        vllm_state: vLLM's answer and the keys' states, as text.
    """

    def __init__(
        self,
        call: str,
        clause: str,
        keys: Iterable[Hashable],
        detail: str,
        model_state: str,
        vllm_state: str,
    ) -> None:
        super().__init__(call, clause, keys, f"{detail}; model: {model_state}; vLLM: {vllm_state}")
        self.detail = detail
        self.model_state = model_state
        self.vllm_state = vllm_state


# --------------------------------------------------------------- tiered offloading


class RequestError(LifecycleError):
    """Base of the errors about a tiering request id (`req` names it)."""

    what: ClassVar[str] = "request refused"

    def __init__(self, req: str, detail: str = "") -> None:
        super().__init__(f"{self.what}: {req!r}" + (f" ({detail})" if detail else ""))
        self.req = req


class UnknownRequestError(RequestError, KeyError):
    """A request the orchestrator does not know: never added, or already finalised
    (vLLM 0.33 raises `KeyError` from its request table)."""

    what = "unknown request"


class DuplicateRequestError(RequestError, ValueError):
    """`new_request` for a request id the orchestrator already holds (vLLM 0.33
    silently replaces its state and loses the outstanding stores)."""

    what = "request already known"


class RequestFinishedError(RequestError, ValueError):
    """A call that needs an active request on one that has finished (a second
    `finish`, or a scan after `finish`)."""

    what = "request already finished"


class UnknownTierError(LifecycleError, IndexError):
    """A tier index outside `0..T-1`, or an event a tier of that kind cannot have (a
    peer request at a tier that does not serve, a probe at a tier without probes)."""

    def __init__(self, tier: object, detail: str = "") -> None:
        super().__init__(f"no such tier: {tier!r}" + (f" ({detail})" if detail else ""))
        self.tier = tier


class UnknownJobError(LifecycleError, KeyError):
    """A job event for a job that is not in flight at its tier."""

    def __init__(self, job: object, detail: str = "") -> None:
        super().__init__(f"no job in flight: {job!r}" + (f" ({detail})" if detail else ""))
        self.job = job


class ShutdownError(LifecycleError, RuntimeError):
    """A call on an orchestrator that was shut down."""

    def __init__(self, call: str) -> None:
        super().__init__(f"{call}: the orchestrator was shut down")
        self.call = call


class TierSubmitError(LifecycleError, RuntimeError):
    """The exception a tier's `submit_store` / `submit_load` raised (armed by
    `submit_raises`); the `vllm-0.33` profile lets it escape the call, half done."""

    def __init__(self, tier: int, job: int) -> None:
        super().__init__(f"tier {tier} refused to submit job {job}")
        self.tier = tier
        self.job = job


class TieringAssertionError(LifecycleError, AssertionError):
    """Where vLLM 0.33's orchestrator fails an assertion half way through a call, the
    `vllm-0.33` profile raises this, leaving the state as vLLM leaves it.

    Attributes:
        call: the orchestrator call, e.g. "reset".
        reason: the assertion, in words.
    """

    def __init__(self, call: str, reason: str, keys: Iterable[Hashable] = ()) -> None:
        super().__init__(f"{call}: {reason}", keys=keys, reason=reason)
        self.call = call
