"""The typed errors of evictable, for callers: one hierarchy for the model and the
implementation (docs/semantics.md, "Errors").

Every error subclasses `LifecycleError` and, where vLLM raises a builtin in the same
situation, that builtin too (`BlockNotFoundError` is a `KeyError`), so code written
against vLLM keeps working. Each carries the offending keys or block ids
(`keys`, `block_ids`) and names them in its message.

    from evictable.errors import BlockNotReadyError
"""

from __future__ import annotations

from evictable.model.errors import (
    BlockAlreadyLinkedError,
    BlockNotFoundError,
    BlockNotLinkedError,
    BlockNotReadyError,
    ConcurrentModificationError,
    ContractViolationError,
    DuplicateBlocksError,
    DuplicateKeysError,
    DuplicateRequestError,
    ForeignBlockError,
    InsufficientFreeBlocksError,
    InvalidArgumentError,
    InvariantViolationError,
    KeyRefusal,
    LifecycleError,
    MirrorDivergenceError,
    NotInFlightError,
    NotLoadingError,
    PolicyContractError,
    QueueEmptyError,
    RefCountUnderflowError,
    RequestError,
    RequestFinishedError,
    ShutdownError,
    StaleCursorError,
    TieringAssertionError,
    TierSubmitError,
    UnknownJobError,
    UnknownRequestError,
    UnknownTierError,
)

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
]
