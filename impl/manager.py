"""The CPU offloading manager: fast, strict, atomic (DESIGN.md §4).

Semantics are exactly `model.manager.ModelManager`'s (checked step by step by the
conformance engine); this module is the fast path.

Two code paths share validation, slot bookkeeping and counters:

* the **fast path**, for a policy of exactly `LRUCachePolicy`: the manager updates the
  policy's `blocks` dict and its intrusive evictable list directly (C-level dict
  operations, and one `link_last` / `unlink` call per batch from
  `impl.policies.lru`, no per-key method call); batch-level calls (`evict`,
  `touch`, `clear`) still go through the policy;
* the **generic path**, for any other policy (ARC, subclasses, third-party): the
  manager keeps its own key -> `BlockStatus` dict and calls the policy's methods per
  key, in the order the model calls them.

All-or-nothing: every method validates its whole input (argument shape, then
duplicates, then the per-key table checks in input order) before the state changes.
On the generic path, a policy method raising half way through a batch is undone:
the manager restores its own state from values saved at the start of the call
(O(batch)) and the policy from `checkpoint()` (taken just before the first policy
call, for every policy that is not exactly a built-in class), then re-raises the
original exception. Nothing is copied on the happy path beyond those saved values.
On the fast path nothing can raise once validation has passed.
"""

from __future__ import annotations

from collections.abc import Sequence

from evictable.impl.block import BlockStatus
from evictable.impl.manager_core import ManagerCore, refusal, state_of_ref
from evictable.impl.policies.factory import create_policy, is_builtin, known_policies
from evictable.impl.policies.lru import LRUCachePolicy, link_last, unlink
from evictable.model.errors import InvariantViolationError
from evictable.model.invariants import check_snapshot
from evictable.model.lifecycle import CpuEvent
from evictable.model.types import (
    BlockEntry,
    Key,
    LookupResult,
    ManagerSnapshot,
    OffloadingEvent,
    PrepareStoreOutput,
)
from evictable.model.validate import (
    check_enable_events,
    check_key,
    check_keys,
    check_keys_and_success,
    check_num_blocks,
    check_policy_name,
    touch_keys,
)

__all__ = ["CPUOffloadingManager"]

_MISS, _HIT_PENDING, _HIT = LookupResult.MISS, LookupResult.HIT_PENDING, LookupResult.HIT


class CPUOffloadingManager(ManagerCore):
    """Tracks CPU blocks (one per key): ref counts, slots, eviction through a policy.

    Pre/post of each method: DESIGN.md §4. A call that raises changes nothing.
    Complexity: O(batch) per call (plus O(victims + protected keys skipped) for an
    eviction); `snapshot` and `check_invariants` are O(n).
    """

    __slots__ = ()

    def __init__(
        self, num_blocks: int, policy: str = "lru", enable_events: bool = False
    ) -> None:
        capacity = check_num_blocks(num_blocks)
        check_policy_name(policy, known_policies())
        check_enable_events(enable_events)
        chosen = create_policy(policy, capacity)
        self._policy = chosen
        self._num_blocks = capacity
        self._free = []
        self._high_water = 0
        self._num_evictable = 0
        self._num_pending = 0
        self._events = [] if enable_events else None
        if type(chosen) is LRUCachePolicy:
            self._blocks, self._lru = chosen.blocks, chosen.ring
            self._guarded = False
        else:
            self._blocks, self._lru = {}, None
            self._guarded = not is_builtin(type(chosen))

    # ------------------------------------------------------------------ queries

    @property
    def num_evictable(self) -> int:
        """Number of READY blocks (ref 0). Complexity: O(1)."""
        return self._num_evictable

    @property
    def num_pending(self) -> int:
        """Number of PENDING blocks (store in flight). Complexity: O(1)."""
        return self._num_pending

    def lookup(self, key: Key) -> LookupResult:
        """MISS (absent), HIT_PENDING (store in flight) or HIT. No side effect.

        Raises `InvalidArgumentError` for an unhashable key. Complexity: O(1).
        """
        try:
            block = self._blocks.get(key)
        except TypeError:
            check_key(key)
            raise
        if block is None:
            return _MISS
        return _HIT_PENDING if block.ref_cnt < 0 else _HIT

    # ------------------------------------------------------------------ stores

    def prepare_store(self, keys: Sequence[Key]) -> PrepareStoreOutput | None:
        """Make room for the absent keys and mark them PENDING.

        Post: see DESIGN.md §4 (fresh slots first, then freed ones LIFO; victims are
        the policy's, never an input key). Returns None with no change when the
        policy cannot supply enough victims. Raises `InvalidArgumentError` /
        `DuplicateKeysError` for a bad batch, with no change.
        Complexity: O(len(keys) + victims + protected keys skipped).
        """
        batch, protected = check_keys(keys)
        blocks = self._blocks
        to_store = [key for key in batch if key not in blocks]
        count = len(to_store)
        if not count:
            return PrepareStoreOutput([], [], [])
        lru = self._lru
        if lru is None:
            return self._prepare_store_generic(to_store, protected)
        free = self._free
        need = count - (self._num_blocks - self._high_water) - len(free)
        evicted: list[Key] = []
        records: list[BlockStatus] = []
        if need > 0:
            if need > self._num_evictable:
                return None
            victims = self._policy.evict(need, protected)
            if victims is None:
                return None
            evicted = [key for key, _ in victims]
            records = [block for _, block in victims]
            free.extend([block.block_id for block in records])
            self._num_evictable -= need
            if self._events is not None:
                self._events.append(OffloadingEvent(tuple(evicted), True))
        slots = self._take_slots(count)
        # The victims' records (unlinked, out of `blocks`, referenced nowhere else) are
        # reset for the first new keys instead of allocating new ones: no allocation,
        # and no growth of the collector's old generation, per stored key.
        reused = len(records)
        for block, key, slot in zip(records, to_store, slots, strict=False):
            block.ref_cnt = -1
            block.key = key
            block.block_id = slot
        records += map(BlockStatus, slots[reused:], to_store[reused:])
        blocks.update(zip(to_store, records, strict=True))
        self._num_pending += count
        return PrepareStoreOutput(to_store, slots, evicted)

    def complete_store(self, keys: Sequence[Key], success: bool = True) -> list[Key]:
        """PENDING keys become READY (success) or ABSENT (failure); others are ignored.

        Post: on success each acted key is evictable (most-recent end, in key order)
        and one `removed=False` event lists them; on failure their slots are freed in
        key order. Returns the acted keys in input order. Complexity: O(len(keys)).
        """
        batch, _ = check_keys_and_success(keys, success)
        lru = self._lru
        if lru is None:
            return self._complete_store_generic(batch, success)
        get = self._blocks.get
        acted: list[Key] = []
        if success:
            ready: list[BlockStatus] = []
            for key in batch:
                block = get(key)
                if block is not None and block.ref_cnt < 0:
                    block.ref_cnt = 0
                    ready.append(block)
                    acted.append(key)
            link_last(lru, ready)  # the most-recent end, in key order
            if acted:
                self._num_pending -= len(acted)
                self._num_evictable += len(acted)
                if self._events is not None:
                    self._events.append(OffloadingEvent(tuple(acted), False))
        else:
            blocks, free = self._blocks, self._free
            for key in batch:
                block = get(key)
                if block is not None and block.ref_cnt < 0:
                    del blocks[key]
                    free.append(block.block_id)
                    acted.append(key)
            self._num_pending -= len(acted)
        return acted

    # ------------------------------------------------------------------ loads

    def prepare_load(self, keys: Sequence[Key]) -> list[int]:
        """Pin every key for one more load; return their slot ids in key order.

        Pre: every key READY or LOADING (ABSENT: `BlockNotFoundError`, PENDING:
        `BlockNotReadyError`; the first offending key decides, nothing changes).
        Post: each ref_cnt + 1; a key leaving 0 leaves the evictable list.
        Complexity: O(len(keys)).
        """
        batch, _ = check_keys(keys)
        lru = self._lru
        if lru is None:
            return self._prepare_load_generic(batch)
        get = self._blocks.get
        slots: list[int] = []
        pinned: list[BlockStatus] = []
        for key in batch:
            block = get(key)
            if block is None or block.ref_cnt < 0:
                self._unpin(batch, len(slots))
                raise refusal(key, block, CpuEvent.LOAD_BEGIN)
            ref = block.ref_cnt
            block.ref_cnt = ref + 1
            if not ref:
                pinned.append(block)
            slots.append(block.block_id)
        if pinned:
            unlink(pinned)
            self._num_evictable -= len(pinned)
        return slots

    def _unpin(self, batch: Sequence[Key], done: int) -> None:
        """Undo the ref increments of the first `done` keys of a refused prepare_load."""
        blocks = self._blocks
        for key in batch[:done]:
            blocks[key].ref_cnt -= 1

    def complete_load(self, keys: Sequence[Key]) -> None:
        """Unpin every key once.

        Pre: every key LOADING (ABSENT: `BlockNotFoundError`, READY or PENDING:
        `NotLoadingError`; the first offending key decides, nothing changes).
        Post: each ref_cnt - 1; keys reaching 0 become evictable in key order
        (most-recent end). Complexity: O(len(keys)).
        """
        batch, _ = check_keys(keys)
        lru = self._lru
        if lru is None:
            self._complete_load_generic(batch)
            return
        get = self._blocks.get
        idle: list[BlockStatus] = []
        for done, key in enumerate(batch):
            block = get(key)
            if block is None or block.ref_cnt <= 0:
                self._repin(batch, done)
                raise refusal(key, block, CpuEvent.LOAD_END)
            ref = block.ref_cnt - 1
            block.ref_cnt = ref
            if not ref:
                idle.append(block)
        if idle:
            link_last(lru, idle)  # the most-recent end, in key order
            self._num_evictable += len(idle)

    def _repin(self, batch: Sequence[Key], done: int) -> None:
        """Undo the ref decrements of the first `done` keys of a refused complete_load."""
        blocks = self._blocks
        for key in batch[:done]:
            blocks[key].ref_cnt += 1

    # ------------------------------------------------------------------ hints, reset, events

    def touch(self, keys: Sequence[Key]) -> None:
        """A recency hint handed to the policy (LRU: keys walked in reverse).

        Never raises on bad input: a malformed batch and unhashable keys are ignored
        (a policy hook that raises is undone and its exception re-raised).
        Complexity: O(len(keys)).
        """
        policy = self._policy
        if self._lru is not None:  # the LRU's touch filters unhashable keys itself
            policy.touch(keys if type(keys) is list or type(keys) is tuple else touch_keys(keys))
            return
        seq = touch_keys(keys)
        if not self._guarded:
            policy.touch(seq)
            return
        saved = policy.checkpoint()
        try:
            policy.touch(seq)
        except BaseException:
            policy.rollback(saved)
            raise

    def reset_cache(self) -> None:
        """Every block ABSENT, all slots fresh, policy cleared; buffered events stay.

        Complexity: O(n).
        """
        policy = self._policy
        if self._guarded:
            saved = policy.checkpoint()
            try:
                policy.clear()
            except BaseException:
                policy.rollback(saved)
                raise
        else:
            policy.clear()
        if self._lru is None:
            self._blocks.clear()
        self._free.clear()
        self._high_water = 0
        self._num_evictable = 0
        self._num_pending = 0

    def take_events(self) -> list[OffloadingEvent]:
        """Buffered events, oldest first; the buffer is emptied ([] when events are off).

        Complexity: O(1).
        """
        events = self._events
        if events is None:
            return []
        self._events = []
        return events

    # ------------------------------------------------------------------ introspection

    def snapshot(self) -> ManagerSnapshot:
        """Everything observable, as a frozen value (same shape as the model's).

        Complexity: O(n).
        """
        return ManagerSnapshot(
            num_blocks=self._num_blocks,
            blocks=frozenset(
                BlockEntry(key, state_of_ref(block.ref_cnt), block.ref_cnt, block.block_id)
                for key, block in self._blocks.items()
            ),
            free_stack=tuple(self._free),
            high_water=self._high_water,
            num_evictable=self._num_evictable,
            num_pending=self._num_pending,
            pending_events=tuple(self._events or ()),
            policy=self._policy.snapshot(),
        )

    def check_invariants(self) -> None:
        """Check every named invariant and the internal bookkeeping.

        Raises `InvariantViolationError` naming the violated invariant(s): ref counts,
        the model's snapshot invariants (`model.invariants.check_snapshot`), the
        counters against the blocks and the evictable list, slot ids, the policy's
        own `check_invariants`, and that manager and policy track the same records.
        Complexity: O(n).
        """
        blocks = self._blocks
        for key, block in blocks.items():
            if not isinstance(block, BlockStatus):
                raise InvariantViolationError(["block_record"], f"{key!r} -> {block!r}")
            if type(block.ref_cnt) is not int or block.ref_cnt < -1:
                raise InvariantViolationError(
                    ["ref_at_least_minus_one"], f"{key!r} has ref {block.ref_cnt!r}"
                )
            if type(block.block_id) is not int or not 0 <= block.block_id < self._high_water:
                raise InvariantViolationError(
                    ["slot_partition"], f"{key!r} has slot {block.block_id!r}"
                )
        violated = check_snapshot(self.snapshot())
        if violated:
            raise InvariantViolationError(violated)
        policy = self._policy
        if self._lru is not None:
            if not (
                isinstance(policy, LRUCachePolicy)
                and policy.blocks is blocks
                and policy.ring is self._lru
            ):
                raise InvariantViolationError(["fast_path_shares_policy_state"])
            listed = sum(1 for _ in policy.listed())
            if listed != self._num_evictable:
                raise InvariantViolationError(
                    ["counters_match"],
                    f"{listed} evictable listed, counter {self._num_evictable}",
                )
        else:
            for key, block in blocks.items():
                if policy.get(key) is not block:
                    raise InvariantViolationError(
                        ["policy_tracks_blocks"], f"policy does not hold {key!r}'s record"
                    )
            if isinstance(policy, LRUCachePolicy) and len(policy.blocks) != len(blocks):
                raise InvariantViolationError(
                    ["policy_tracks_blocks"], "the policy holds keys the manager does not"
                )
        if len(blocks) > self._num_blocks:
            raise InvariantViolationError(["capacity"])
        policy.check_invariants()
