"""The eviction-policy interface of the CPU offloading manager.

A policy owns the key -> `BlockStatus` mapping (of `record_class` records, which the
manager creates) and the recency order. The manager owns ref counts and slots and
tells the policy, through `mark_evictable` / `mark_non_evictable`, exactly when a
block's ref count enters or leaves 0 (the hooks derived from the lifecycle table).
Policies that keep a dedicated list of evictable blocks (the fast LRU, ARC) use those
hooks; others may ignore them.

**Batches.** The manager validates a whole call, updates its records (ref counts,
slots), and then reports the call's lifecycle changes to the policy as one batch
per kind (the records concerned): `stored` (keys became PENDING), `aborted`
(failed stores), `became_evictable` (ref counts reached 0) and `became_pinned`
(ref counts left 0). The defaults call the
per-key method for each key, in key order, exactly as the model does; a policy may
override a batch method with a faster equivalent (the LRU does). If a policy method
raises, the manager restores its own records and the policy (`checkpoint` /
`rollback`) and re-raises: the call changes nothing.
"""

from __future__ import annotations

import copy
import types
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence, Set
from typing import ClassVar, cast

from evictable.impl._compat import mypyc_attr
from evictable.impl.block import BlockStatus, sharing_records
from evictable.model.types import Key, PolicySnapshot

__all__ = ["CachePolicy", "own_abc_caches"]

_FIELD_TYPES = (types.GetSetDescriptorType, types.MemberDescriptorType)


@mypyc_attr(allow_interpreted_subclasses=True)
class CachePolicy(ABC):
    """Base class of every eviction policy; resolved by name through the factory.

    The batch methods default to the per-key methods, record by record, in order.
    A subclass of the LRU gets these defaults, so its per-key overrides are honoured:

    >>> from evictable.impl.block import BlockStatus
    >>> from evictable.impl.policies.lru import LRUCachePolicy
    >>> class Noisy(LRUCachePolicy):
    ...     def insert(self, key, block):
    ...         print("insert", key)
    ...         super().insert(key, block)
    >>> Noisy(2).stored([b"a", b"b"], [BlockStatus(0), BlockStatus(1)])
    insert b'a'
    insert b'b'
    """

    __slots__ = ("cache_capacity",)

    name: ClassVar[str] = "abstract"

    releases_evicted_records: ClassVar[bool] = False
    """True when the policy keeps no reference to a record once `evict` returned it
    (or `remove` dropped it): the manager may then reuse the record for a new key."""

    record_class: ClassVar[type[BlockStatus]] = BlockStatus
    """The class of the records the manager creates for this policy's keys, called as
    `record_class(slot_id, key)`: a `BlockStatus` subclass when the policy keeps fields
    of its own in every record (ARC: a position stamp and a list)."""

    def __init__(self, cache_capacity: int) -> None:
        self.cache_capacity = cache_capacity

    @abstractmethod
    def get(self, key: Key) -> BlockStatus | None:
        """The key's block, or None. No recency change. Complexity: O(1)."""

    @abstractmethod
    def insert(self, key: Key, block: BlockStatus) -> None:
        """Add a new (PENDING, ref -1) key. Pre: key absent. Complexity: O(1)."""

    @abstractmethod
    def remove(self, key: Key) -> None:
        """Drop a key (failed store). Pre: key present. Complexity: O(1)."""

    @abstractmethod
    def touch(self, keys: Iterable[Key]) -> None:
        """Recency hint; must accept any keys and never raise. Complexity: O(len(keys))."""

    @abstractmethod
    def evict(self, n: int, protected: Set[Key]) -> list[tuple[Key, BlockStatus]] | None:
        """Remove and return `n` idle (ref 0) unprotected blocks, or None with no change."""

    @abstractmethod
    def clear(self) -> None:
        """Forget every key and all adaptive state."""

    def mark_evictable(self, key: Key) -> None:  # noqa: B027 - optional hook
        """The key's ref count just became 0. Default: nothing."""

    def mark_non_evictable(self, key: Key) -> None:  # noqa: B027 - optional hook
        """The key's ref count just went 0 -> 1. Default: nothing."""

    # ------------------------------------------------------------ batches

    def shared_table(self) -> dict[Key, BlockStatus] | None:
        """The policy's own dict of exactly the resident keys' records, or None.

        A policy that files every resident record in one dict, and keeps it in step
        with `stored`, `aborted`, `evict` and `clear` itself, may offer it: the
        manager then reads it as its own key table instead of keeping a second one.
        Default: None (the manager keeps its own). Complexity: O(1).
        """
        return None

    def stored(self, keys: Sequence[Key], blocks: Sequence[BlockStatus]) -> None:
        """New PENDING keys and their records (`blocks[i].key == keys[i]`), in key
        order: `insert` each. Complexity: O(len(keys)) calls of `insert`."""
        for key, block in zip(keys, blocks, strict=True):
            self.insert(key, block)

    def aborted(self, blocks: Sequence[BlockStatus]) -> None:
        """Failed stores (PENDING keys that left), in key order: `remove` each."""
        for block in blocks:
            self.remove(block.key)

    def became_evictable(self, blocks: Sequence[BlockStatus]) -> None:
        """Records whose ref count just reached 0, in key order: `mark_evictable` each."""
        for block in blocks:
            self.mark_evictable(block.key)

    def became_pinned(self, blocks: Sequence[BlockStatus]) -> None:
        """Records whose ref count just left 0, in key order: `mark_non_evictable` each."""
        for block in blocks:
            self.mark_non_evictable(block.key)

    # ------------------------------------------------------------ undo

    def checkpoint(self) -> object:
        """Capture the policy's state so that `rollback` can restore it exactly.

        The manager calls this before a call that may invoke several policy methods
        (for any policy that is not one of the built-in classes), and
        `rollback(saved)` if one of them raises, so that a hook failing half-way
        through a batch leaves the policy as it was (all-or-nothing). The manager
        restores the ref counts of its `BlockStatus` records itself.
        Default: one deep copy of every attribute, with `BlockStatus` records kept
        shared (they are identities, see `impl.block.sharing_records`).
        Complexity: O(n); override with an undo journal to make it O(1).
        """
        with sharing_records():
            return copy.deepcopy({name: getattr(self, name) for name in _state_names(self)})

    def rollback(self, saved: object) -> None:
        """Restore the state captured by `checkpoint` (each token is used at most once)."""
        for name, value in cast(dict[str, object], saved).items():
            setattr(self, name, value)

    @abstractmethod
    def snapshot(self) -> PolicySnapshot:
        """The observable policy state (see `model.types`)."""

    def check_invariants(self) -> None:  # noqa: B027 - optional
        """Raise `AssertionError`-free `RuntimeError` on internal inconsistency. Default: none."""


def own_abc_caches(cls: type[object]) -> None:
    """Give a compiled policy class ABC caches of its own (a no-op on the pure build).

    `issubclass(x, cls)` on an ABC reads and fills the caches in `cls._abc_impl`, which
    `ABCMeta` creates for every class it makes. mypyc makes its classes without that
    step, so a compiled `CachePolicy`, `LRUCachePolicy` and `ARCCachePolicy` would all
    inherit `ABC`'s one `_abc_impl`: an answer cached for one of them (say
    `issubclass(mutant, CachePolicy)`, True for an interpreted copy of the ARC) would
    then be the answer for all (`issubclass(mutant, ARCCachePolicy)` True as well).
    Only the caches are made: the class's `__abstractmethods__` stay as they are.
    Complexity: O(1).
    """
    shared = getattr(ABC, "_abc_impl", None)  # CPython's C `_abc`; absent with `_py_abc`
    if shared is not None and "_abc_impl" not in vars(cls):
        setattr(cls, "_abc_impl", type(shared)())  # noqa: B010 - a dunder-ish private name


def _state_names(policy: CachePolicy) -> Iterator[str]:
    """The names of a policy's set attributes: its `__slots__` (every class) and `__dict__`.

    A compiled class (mypyc) keeps no `__slots__`: its fields are the data descriptors
    of its type, which stand for the slots there."""
    seen: set[str] = set()
    for cls in type(policy).__mro__:
        own = vars(cls)
        slots = own.get("__slots__", None)
        if slots is None:
            slots = tuple(n for n, v in own.items() if isinstance(v, _FIELD_TYPES))
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__") or name in seen:
                continue
            seen.add(name)
            if hasattr(policy, name):
                yield name
    for name in getattr(policy, "__dict__", {}):
        if name not in seen:
            seen.add(name)
            yield name


own_abc_caches(CachePolicy)
