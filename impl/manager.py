"""The CPU offloading manager: fast, strict, atomic (docs/semantics.md, "The CPU manager").

Semantics are exactly `evictable.model.manager.ModelManager`'s (checked step by step
by the conformance engine and the explorer); this module is the fast path. Every
method has one path, in three phases:

1. **validate** the whole call -- argument shape, then duplicates (`impl.batches`),
   then the per-key table checks in key order (`impl.refusals`); a refused call
   raises before anything changes;
2. **update the manager's own state** -- the records' ref counts, the key table, the
   slots (`impl.slots.SlotAllocator`); none of this can fail;
3. **report the changes to the policy**, one batch per kind (`stored`, `aborted`,
   `became_evictable`, `became_pinned`, see `impl.policies.base`), then the counters
   and events.

If the policy raises in phase 3 (a pluggable policy may), the manager inverts phase 2
from the call's plan, restores the policy from the `checkpoint()` taken just before
(for every policy that is not exactly a built-in class: built-in policies cannot
fail once the call is validated, and only the others' victims are checked,
`impl.manager_checks`) and re-raises the original exception: the call changed
nothing observable. The key table is the policy's own dict when the policy offers
one (`shared_table()`: the LRU and ARC do, so a resident block costs one hash-table
entry); otherwise the manager keeps its own. The manager creates the records, of
the policy's `record_class`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence, Set

from evictable.impl._compat import mypyc_attr
from evictable.impl.batches import check_keys, check_keys_and_success
from evictable.impl.block import BlockStatus
from evictable.impl.manager_checks import accept_victims, check_policy_tracks, check_records
from evictable.impl.policies.base import CachePolicy
from evictable.impl.policies.factory import create_policy, is_builtin, known_policies
from evictable.impl.refusals import refusal, state_of_ref
from evictable.impl.slots import SlotAllocator, SlotMark
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
    check_num_blocks,
    check_policy_name,
    touch_keys,
)

__all__ = ["CPUOffloadingManager", "refusal", "state_of_ref"]

_MISS, _HIT_PENDING, _HIT = LookupResult.MISS, LookupResult.HIT_PENDING, LookupResult.HIT
_FIELDS = (
    *("_blocks", "_events", "_guarded", "_num_blocks", "_num_evictable", "_num_pending"),
    *("_own_table", "_policy", "_record", "_reuse", "_slots"),
)
"""The fields a copy carries: all but the bound hooks `_pin` / `_unpin`."""


@mypyc_attr(allow_interpreted_subclasses=True)
class CPUOffloadingManager:
    """Tracks CPU blocks (one per key): ref counts, slots, eviction through a policy.

    >>> m = CPUOffloadingManager(num_blocks=2)
    >>> m.prepare_store([b"a", b"b"]).slot_ids
    [0, 1]
    >>> m.complete_store([b"a", b"b"])
    [b'a', b'b']
    >>> m.prepare_load([b"a"])         # a is pinned: never evicted while loading
    [0]
    >>> m.prepare_store([b"c"]).evicted_keys
    [b'b']

    Pre/post of each method: docs/semantics.md. A call that raises changes nothing.
    Complexity: O(batch) per call (plus O(victims + protected keys skipped) for an
    eviction with the LRU or ARC); `snapshot` and `check_invariants` are O(n).
    """

    __slots__ = (*_FIELDS, "_pin", "_unpin")

    def __init__(
        self, num_blocks: object, policy: object = "lru", enable_events: object = False
    ) -> None:
        """Pre: `num_blocks` an int >= 0 (not a bool), `policy` a known name,
        `enable_events` a bool; else `InvalidArgumentError` (the parameters are typed
        `object` so that a compiled build validates them as the pure one does).
        Complexity: O(1)."""
        capacity = check_num_blocks(num_blocks)
        name = check_policy_name(policy, known_policies())
        events = check_enable_events(enable_events)
        chosen = create_policy(name, capacity)
        table = chosen.shared_table()
        self._policy: CachePolicy = chosen
        self._num_blocks = capacity
        self._slots = SlotAllocator(capacity)
        self._num_evictable = 0
        self._num_pending = 0
        self._events: list[OffloadingEvent] | None = [] if events else None
        self._own_table = table is None
        self._blocks: dict[Key, BlockStatus] = {} if table is None else table
        self._guarded = not is_builtin(type(chosen))
        self._record = chosen.record_class
        # Reusing a victim's record is safe when nothing else refers to it, and cannot
        # need undoing: a built-in policy never fails once a call is validated.
        self._reuse = chosen.releases_evicted_records and not self._guarded
        # The two load reports, bound once (the policy never changes), for `complete_load`
        # and the guarded flips; `complete_store` and `prepare_load` call the policy's
        # method by name instead (a direct, native call on the compiled build).
        self._pin = chosen.became_pinned
        self._unpin = chosen.became_evictable

    def __getstate__(self) -> dict[str, object]:
        """Copies carry every field but the two bound policy hooks (rebound on restore:
        a compiled policy's bound methods are atomic to `copy.deepcopy`). Complexity: O(1)."""
        state = dict(getattr(self, "__dict__", {}))  # a subclass's own attributes
        for name in _FIELDS:
            state[name] = getattr(self, name)
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        """Restore `__getstate__`'s fields and rebind the hooks. Complexity: O(1)."""
        for name, value in state.items():
            setattr(self, name, value)
        self._pin = self._policy.became_pinned
        self._unpin = self._policy.became_evictable

    # ------------------------------------------------------------------ queries

    @property
    def num_evictable(self) -> int:
        """Number of READY blocks (ref 0). Complexity: O(1)."""
        return self._num_evictable

    @property
    def num_pending(self) -> int:
        """Number of PENDING blocks (store in flight). Complexity: O(1)."""
        return self._num_pending

    @property
    def num_free(self) -> int:
        """Number of slots no block holds (never used, or freed). Complexity: O(1)."""
        slots = self._slots
        return slots.capacity - slots.high_water + len(slots.freed)

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

    # ------------------------------------------------------------------ guarding

    def _checkpoint(self) -> object:
        """The policy's state, for a policy that may fail (else None). Complexity: O(n)
        for such a policy (its `checkpoint`), O(1) for a built-in one."""
        return self._policy.checkpoint() if self._guarded else None

    def _rollback(self, saved: object) -> None:
        """Restore the policy from `_checkpoint`'s answer. Complexity: O(n) or O(1)."""
        if saved is not None:
            self._policy.rollback(saved)

    # ------------------------------------------------------------------ stores

    def prepare_store(self, keys: Sequence[Key]) -> PrepareStoreOutput | None:
        """Make room for the absent keys and mark them PENDING.

        Post: the ABSENT input keys, in order, each with a slot (fresh ids first, then
        freed ids LIFO); victims are the policy's, never an input key, and their slots
        are freed in victim order. Returns None with no change when the policy cannot
        supply enough victims. Raises `InvalidArgumentError` / `DuplicateKeysError`
        for a bad batch, with no change.
        Complexity: O(len(keys) + victims (+ protected keys skipped, LRU)).
        """
        batch, protected = check_keys(keys)
        blocks = self._blocks
        to_store = [key for key in batch if key not in blocks]
        count = len(to_store)
        if not count:
            return PrepareStoreOutput([], [], [])
        slots = self._slots
        need = count - (slots.capacity - slots.high_water) - len(slots.freed)
        if need > self._num_evictable:
            return None  # fewer idle blocks than victims needed: no policy can help
        policy = self._policy
        guarded = self._guarded
        saved = policy.checkpoint() if guarded else None
        mark = slots.mark(count) if guarded else None
        victims: list[tuple[Key, BlockStatus]] = []
        try:
            if need > 0:
                # A pluggable policy's answer is read untyped (`_accept` checks it), so
                # a compiled build sees it as the pure one does.
                if guarded:
                    ask: Callable[[int, Set[Key]], object] = policy.evict
                    answer = ask(need, protected)
                    if answer is None:
                        return None
                    victims = self._accept(answer, need, protected)
                else:
                    chosen = policy.evict(need, protected)
                    if chosen is None:
                        return None
                    victims = chosen
            own = self._own_table
            evicted: list[Key] = []
            freed: list[int] = []
            records: list[BlockStatus] = []
            for key, block in victims:  # one pass: keys, slots, records (and own table)
                if own:
                    del blocks[key]
                evicted.append(key)
                freed.append(block.block_id)
                records.append(block)
            ids = slots.take(count, freed)
            # Victims' records are referenced nowhere any more (`_reuse`): reset them
            # for the first new keys instead of allocating (no per-key allocation).
            reused = min(len(records), count) if self._reuse else 0
            del records[reused:]
            for i in range(reused):
                block = records[i]
                block.ref_cnt = -1
                block.key = to_store[i]
                block.block_id = ids[i]
            if reused < count:
                records += map(self._record, ids[reused:], to_store[reused:])
            if self._own_table:
                blocks.update(zip(to_store, records, strict=True))
            policy.stored(to_store, records)
        except BaseException:
            if mark is not None:
                self._undo_store(to_store, victims, mark, saved)
            raise
        self._num_evictable -= len(victims)
        self._num_pending += count
        if victims and self._events is not None:
            self._events.append(OffloadingEvent(tuple(evicted), True))
        return PrepareStoreOutput(to_store, ids, evicted)

    def _undo_store(
        self,
        to_store: list[Key],
        victims: list[tuple[Key, BlockStatus]],
        mark: SlotMark,
        saved: object,
    ) -> None:
        """Undo a `prepare_store` whose policy raised: table, slots, then the policy.
        Complexity: O(len(to_store) + victims), plus the policy's `rollback`."""
        if self._own_table:
            blocks = self._blocks
            for key in to_store:
                blocks.pop(key, None)
            blocks.update(victims)
        self._slots.restore(mark)
        self._rollback(saved)

    def _accept(
        self, chosen: object, need: int, protected: Set[Key]
    ) -> list[tuple[Key, BlockStatus]]:
        """A pluggable policy's victims, checked (`impl.manager_checks.accept_victims`).
        Complexity: O(need)."""
        return accept_victims(chosen, need, protected, self._blocks, self._own_table)

    def complete_store(self, keys: Sequence[Key], success: object = True) -> list[Key]:
        """PENDING keys become READY (success) or ABSENT (failure); others are ignored.

        Post: on success each acted key is evictable (for the LRU: at the most-recent
        end, in key order) and one `removed=False` event lists them; on failure their
        slots are freed in key order. Returns the acted keys in input order.
        Complexity: O(len(keys)).
        """
        batch, _ = check_keys_and_success(keys, success)
        get = self._blocks.get
        acted: list[Key] = []
        records: list[BlockStatus] = []
        ready = 0 if success else -1  # the ref count an acted key ends the loop with
        for key in batch:
            block = get(key)
            if block is not None and block.ref_cnt < 0:
                block.ref_cnt = ready
                acted.append(key)
                records.append(block)
        if not acted:
            return acted
        policy = self._policy
        saved = policy.checkpoint() if self._guarded else None
        if success:
            try:
                policy.became_evictable(records)
            except BaseException:
                for block in records:
                    block.ref_cnt = -1
                self._rollback(saved)
                raise
            self._num_evictable += len(acted)
            if self._events is not None:
                self._events.append(OffloadingEvent(tuple(acted), False))
        else:
            blocks, slots = self._blocks, self._slots
            mark = slots.mark(0)
            if self._own_table:
                for key in acted:
                    del blocks[key]
            slots.release([block.block_id for block in records])
            try:
                policy.aborted(records)
            except BaseException:
                if self._own_table:
                    blocks.update(zip(acted, records, strict=True))
                slots.restore(mark)
                self._rollback(saved)
                raise
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
        blocks = self._blocks
        slots: list[int] = []
        flipped: list[BlockStatus] = []
        for key in batch:
            block = blocks.get(key)
            if block is None or block.ref_cnt < 0:
                self._shift(batch[: len(slots)], -1)  # undo the keys before it
                raise refusal(key, block, CpuEvent.LOAD_BEGIN)
            ref = block.ref_cnt
            block.ref_cnt = ref + 1
            if not ref:
                flipped.append(block)
            slots.append(block.block_id)
        if flipped:
            if self._guarded:
                self._guarded_flips(self._pin, flipped, batch, +1)
            else:
                self._policy.became_pinned(flipped)
            self._num_evictable -= len(flipped)
        return slots

    def complete_load(self, keys: Sequence[Key]) -> None:
        """Unpin every key once.

        Pre: every key LOADING (ABSENT: `BlockNotFoundError`, READY or PENDING:
        `NotLoadingError`; the first offending key decides, nothing changes).
        Post: each ref_cnt - 1; keys reaching 0 become evictable in key order (for
        the LRU: at the most-recent end). Complexity: O(len(keys)).
        """
        batch, _ = check_keys(keys)
        blocks = self._blocks
        flipped: list[BlockStatus] = []
        for done, key in enumerate(batch):
            block = blocks.get(key)
            if block is None or block.ref_cnt <= 0:
                self._shift(batch[:done], +1)  # undo the keys before it
                raise refusal(key, block, CpuEvent.LOAD_END)
            ref = block.ref_cnt - 1
            block.ref_cnt = ref
            if not ref:
                flipped.append(block)
        if flipped:
            if self._guarded:
                self._guarded_flips(self._unpin, flipped, batch, -1)
            else:
                self._unpin(flipped)
            self._num_evictable += len(flipped)

    def _shift(self, keys: Sequence[Key], delta: int) -> None:
        """Add `delta` to the ref count of each (resident) key. Complexity: O(len(keys))."""
        blocks = self._blocks
        for key in keys:
            blocks[key].ref_cnt += delta

    def _guarded_flips(
        self,
        report: Callable[[list[BlockStatus]], None],
        flipped: list[BlockStatus],
        batch: Sequence[Key],
        delta: int,
    ) -> None:
        """`report(flipped)` for a policy that may fail: if it raises, every key of
        the batch has its ref change `delta` undone and the policy is restored."""
        saved = self._policy.checkpoint()
        try:
            report(flipped)
        except BaseException:
            self._shift(batch, -delta)
            self._policy.rollback(saved)
            raise

    # ------------------------------------------------------------------ hints, reset, events

    def touch(self, keys: Sequence[Key]) -> None:
        """A recency hint handed to the policy (LRU: keys walked in reverse).

        Never raises on bad input: a malformed batch and unhashable keys are ignored
        (a policy that raises is restored and its exception re-raised).
        Complexity: O(len(keys)).
        """
        # Built-in policies skip unhashable keys themselves; others get them filtered.
        plain = type(keys) is list or type(keys) is tuple
        seq = keys if plain and not self._guarded else touch_keys(keys)
        saved = self._checkpoint()
        try:
            self._policy.touch(seq)
        except BaseException:
            self._rollback(saved)
            raise

    def reset_cache(self) -> None:
        """Every block ABSENT, all slots fresh, policy cleared; buffered events stay.

        Complexity: O(n).
        """
        saved = self._checkpoint()
        try:
            self._policy.clear()
        except BaseException:
            self._rollback(saved)
            raise
        if self._own_table:
            self._blocks.clear()
        self._slots.reset()
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
            free_stack=tuple(self._slots.freed),
            high_water=self._slots.high_water,
            num_evictable=self._num_evictable,
            num_pending=self._num_pending,
            pending_events=tuple(self._events or ()),
            policy=self._policy.snapshot(),
        )

    def check_invariants(self) -> None:
        """Check every named invariant and the internal bookkeeping.

        Raises `InvariantViolationError` naming the violated invariant(s): ref counts
        and slot ids of the records, the model's snapshot invariants
        (`evictable.model.invariants.check_snapshot`: counters, slot partition,
        capacity, the policy's lists), that the policy holds exactly the manager's
        records, and the policy's own `check_invariants`.
        Complexity: O(n).
        """
        blocks = self._blocks
        check_records(blocks, self._slots.high_water)
        violated = check_snapshot(self.snapshot())
        if violated:
            raise InvariantViolationError(violated)
        check_policy_tracks(self._policy, blocks, self._own_table)
        self._policy.check_invariants()
