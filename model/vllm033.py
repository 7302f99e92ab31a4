"""The `vllm-0.33` profile: vLLM 0.33's CPU offloading manager as a specification.

The seed profile (`model.manager.ModelManager`, the default) specifies the
evictable-list design. vLLM 0.33 keeps the same lifecycle, slots and atomicity
contract but moved recency to request scope; this module states what 0.33 means,
so that `evictable check --profile vllm-0.33` holds vLLM's real manager (and any
policy plugged into it) to it exactly (docs/semantics.md, "The vLLM 0.33 profile").

What the profile adds to the seed manager (`Vllm033Manager`):

* **Requests.** `Request(req_id, positions)` stands for vLLM's `ReqContext`: an id
  and the end-token position of some keys. Every key-taking call takes an optional
  request; without one the call is a request of its own (`on_new_request`, the
  call, `on_request_finished`). A request records the keys it stores or reuses, per
  KV cache group (the last 4 bytes of a vLLM key, big-endian; 0 for other keys),
  each once, and on `on_request_finished` hands them to the policy in prefix order
  (by token position when every key of a group has one) with the insertion-only
  and the reused keys told apart. A reset starts a new cache generation: what a
  request recorded before it is forgotten.
* **prepare_store** (vLLM's order): partition the offer into keys to store (absent)
  and ready residents (reuses); report the store misses the request has not
  reported yet to the policy (`on_store_miss`: ARC's ghost hits adapt here); record
  the access; then evict and insert as the seed does. A refused store (None) keeps
  these side effects. A repeated key is stored once, at its first occurrence (what
  vLLM 0.33 should do; it allocates a chunk per occurrence and orphans all but the
  last).
* **Batches with a repeated key** elsewhere are processed occurrence by occurrence,
  all or nothing (a load pins twice; a release of a key loaded once, named twice, is
  refused whole).
* **complete_store** returns None (0.33 reports nothing); a failed store emits a
  metadata-only removal event, and `take_events` drops from such an event the keys a
  retry has made resident again (an event left with no key is dropped).
* **touch** hands every key to the policy (not only the ready ones).
* **LRU** (`Lru033`): ranks. A key gets a fresh global rank `(n, 0)` when inserted
  without a position, touched, or finished by a request; `(R, -position)` (the
  request's own rank `R`, drawn once) when stored or first accessed at a position
  by an unfinished request (never lowering a rank). Idle keys are evicted in
  increasing `(rank, key)`.
* **ARC** (`Arc033`): the seed's lists, touch and eviction; ghost hits adapt only
  through `touch` and `on_store_miss`; on `on_request_finished` an insertion-only
  key moves to its list's MRU end and a reused one to T2's.

Left out: vLLM's store threshold (`store_threshold`, `max_tracker_size`: admission
filtering before the manager's lifecycle; vLLM's spec turns it off by default) and
its metrics; keys first observed after a request finished (vLLM asserts; the
model ignores them).
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from evictable.model.arc import ModelArc, target_after_b1_hit, target_after_b2_hit
from evictable.model.errors import DuplicateKeysError, InvalidArgumentError
from evictable.model.lifecycle import CpuEvent, step
from evictable.model.manager import ModelManager
from evictable.model.policy import RefOf
from evictable.model.types import (
    Key,
    LruPolicySnapshot,
    OffloadingEvent,
    PrepareStoreOutput,
)
from evictable.model.validate import (
    check_keys,
    check_keys_and_success,
    check_policy_name,
    touch_keys,
)

__all__ = [
    "POLICIES_033",
    "PROFILES",
    "VLLM_VERSION",
    "Arc033",
    "Lru033",
    "Request",
    "Vllm033Manager",
    "check_profile",
    "group_of",
    "order_request_keys",
]

PROFILES = ("seed", "vllm-0.33", "sglang-0.5", "lmcache-0.5")
"""The model's profiles: the seed's semantics (the default), vLLM 0.33's, SGLang 0.5's
host tier (`model.sglang05`) and LMCache 0.5's CPU tier (`model.lmcache05`)."""

VLLM_VERSION = "0.33"
"""The vLLM release this profile describes, and the one `evictable.vllm` and the vLLM
adapters of `evictable check` follow (each refuses any other)."""


class Request:
    """A request as vLLM 0.33 sees it (its `ReqContext`): an id, the end-token
    position of some of its keys, and per-object state (`state`, by owner)."""

    def __init__(self, req_id: str = "", positions: dict[Key, int] | None = None) -> None:
        self.req_id = req_id
        self.positions: dict[Key, int] = dict(positions or {})
        self.state: dict[object, Any] = {}

    def position(self, key: Key) -> int | None:
        """The key's end-token position in this request, or None."""
        return self.positions.get(key)

    def __repr__(self) -> str:
        return f"Request({self.req_id!r})"


def group_of(key: Key) -> int:
    """The KV cache group of a key: its last 4 bytes (at most), big-endian, as vLLM
    reads them from any `bytes` key; 0 for other keys."""
    if isinstance(key, bytes):
        return int.from_bytes(key[-4:], "big")
    return 0


def order_request_keys(groups: Sequence[Sequence[Key]], req: Request) -> list[Key]:
    """The keys of all groups, in token order when every key has a position (stable)."""
    keys = [k for g in groups for k in g]
    if all(req.position(k) is not None for k in keys):
        keys.sort(key=lambda k: req.positions[k])
    return keys


def _sortable(key: Key) -> tuple[str, Any]:
    """A total order on keys for rank ties (vLLM's keys are bytes: compared as bytes)."""
    if isinstance(key, bytes | str | int):
        return (type(key).__name__, key)
    return (type(key).__name__, repr(key))


@dataclass
class _Access:
    """What one request recorded (vLLM's per-request cache access)."""

    generation: int
    groups: dict[int, list[Key]] = field(default_factory=dict)
    seen: set[Key] = field(default_factory=set)
    inserted: set[Key] = field(default_factory=set)
    reused: set[Key] = field(default_factory=set)
    store_misses: set[Key] = field(default_factory=set)
    finished: bool = False


class Lru033:
    """vLLM 0.33's request-ranked LRU (see the module docstring)."""

    name = "lru"

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.ranks: dict[Key, tuple[int, int]] = {}
        self.evictable: set[Key] = set()
        self.next_rank = 0
        self.generation = 0

    def request_rank(self, req: Request) -> int:
        got = req.state.get(self)
        if got is None or got[0] != self.generation:
            self.next_rank += 1
            got = (self.generation, self.next_rank)
            req.state[self] = got
        return int(got[1])

    def fresh(self, keys: Sequence[Key]) -> None:
        for key in keys:
            if key in self.ranks:
                self.next_rank += 1
                self.ranks[key] = (self.next_rank, 0)

    def insert(self, key: Key, req: Request) -> None:
        position = req.position(key)
        if position is None:
            self.next_rank += 1
            self.ranks[key] = (self.next_rank, 0)
        else:
            self.ranks[key] = (self.request_rank(req), -position)

    def remove(self, key: Key) -> None:
        self.ranks.pop(key, None)
        self.evictable.discard(key)

    def mark_evictable(self, key: Key) -> None:
        self.evictable.add(key)

    def mark_non_evictable(self, key: Key) -> None:
        self.evictable.discard(key)

    def touch(self, keys: Sequence[Key], ref_of: RefOf, req: Request | None = None) -> None:
        self.fresh(list(reversed(keys)))

    def on_store_miss(self, keys: Sequence[Key], ref_of: RefOf, req: Request) -> None:
        self.touch(keys, ref_of, req)

    def on_request_access(self, keys: Sequence[Key], req: Request) -> None:
        rank = self.request_rank(req)
        for key in keys:
            position = req.position(key)
            if position is None or key not in self.ranks:
                continue
            if self.ranks[key] < (rank, -position):
                self.ranks[key] = (rank, -position)

    def on_request_finished(
        self,
        groups: Sequence[Sequence[Key]],
        inserted_only: Set[Key],
        reused: Set[Key],
        req: Request,
        ref_of: RefOf,
    ) -> None:
        self.fresh(list(reversed(order_request_keys(groups, req))))

    def order(self) -> list[Key]:
        """The idle keys in eviction order: increasing (rank, key)."""
        return sorted(self.evictable, key=lambda k: (self.ranks[k], _sortable(k)))

    def evict(self, n: int, protected: Set[Key], ref_of: RefOf) -> list[Key] | None:
        victims = [k for k in self.order() if k not in protected][:n]
        if len(victims) < n:
            return None
        for key in victims:
            self.evictable.discard(key)
            del self.ranks[key]
        return victims

    def clear(self) -> None:
        self.ranks.clear()
        self.evictable.clear()
        self.next_rank = 0
        self.generation += 1

    def snapshot(self) -> LruPolicySnapshot:
        return LruPolicySnapshot(evictable=tuple(self.order()))


class Arc033(ModelArc):
    """vLLM 0.33's ARC: the seed's lists, touch and eviction, with request hooks."""

    def insert(self, key: Key, req: Request | None = None) -> None:
        super().insert(key)

    def touch(self, keys: Sequence[Key], ref_of: RefOf, req: Request | None = None) -> None:
        super().touch(keys, ref_of)

    def ghost_hit(self, key: Key) -> None:
        """A B1 hit grows the target, a B2 hit shrinks it; the ghost moves to its MRU end."""
        if key in self.b1:
            b1, b2 = len(self.b1), len(self.b2)
            self.target = target_after_b1_hit(self.target, b1, b2, self.capacity)
            self.b1.remove(key)
            self.b1.append(key)
        elif key in self.b2:
            self.target = target_after_b2_hit(self.target, len(self.b1), len(self.b2))
            self.b2.remove(key)
            self.b2.append(key)

    def on_store_miss(self, keys: Sequence[Key], ref_of: RefOf, req: Request) -> None:
        for key in reversed(keys):
            self.ghost_hit(key)

    def on_request_access(self, keys: Sequence[Key], req: Request) -> None:
        """ARC learns nothing from a first access."""

    def on_request_finished(
        self,
        groups: Sequence[Sequence[Key]],
        inserted_only: Set[Key],
        reused: Set[Key],
        req: Request,
        ref_of: RefOf,
    ) -> None:
        for key in reversed(order_request_keys(groups, req)):
            if key in inserted_only:
                for entries in (self.t1, self.t2):
                    if key in entries:
                        entries.remove(key)
                        entries.append(key)
                        break
            elif key in reused and (key in self.t1 or key in self.t2):
                (self.t1 if key in self.t1 else self.t2).remove(key)
                self.t2.append(key)


POLICIES_033 = {"lru": Lru033, "arc": Arc033}


def _batch(keys: object) -> list[Key]:
    """A batch's keys in order, repeats kept (shape and hashability checked)."""
    try:
        seq, _ = check_keys(keys)
    except DuplicateKeysError:
        seq = list(keys)  # type: ignore[call-overload]
    return list(seq)


class Vllm033Manager(ModelManager):
    """vLLM 0.33's CPU offloading manager as a specification (see the module doc)."""

    profile = "vllm-0.33"

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False) -> None:
        check_policy_name(policy, POLICIES_033)
        super().__init__(num_blocks, policy, enable_events)
        self.policy: Any = POLICIES_033[policy](self.num_blocks)
        self.generation = 0

    # ------------------------------------------------------------ requests

    def on_new_request(self, req: Request) -> None:
        """A request is first seen (its access record starts)."""
        self.access(req)

    def access(self, req: Request) -> _Access:
        got = req.state.get(self)
        if not isinstance(got, _Access) or got.generation != self.generation:
            got = _Access(self.generation)
            req.state[self] = got
        return got

    def record(self, keys: Sequence[Key], req: Request, reused: Sequence[Key] = ()) -> None:
        """Record a request's accesses: new keys by group, once each; reuses."""
        state = self.access(req)
        new: list[Key] = []
        for key in keys:
            if key in state.seen or state.finished:
                continue
            state.groups.setdefault(group_of(key), []).append(key)
            state.seen.add(key)
            new.append(key)
        if new:
            self.policy.on_request_access(new, req)
        state.reused.update(k for k in reused if k not in state.inserted)

    def on_request_finished(self, req: Request) -> None:
        """Hand the request's accesses to the policy, once (see the module doc)."""
        state = req.state.get(self)
        if not isinstance(state, _Access) or state.generation != self.generation:
            return
        if state.finished:
            return
        state.finished = True
        groups: list[tuple[Key, ...]] = []
        for group in sorted(state.groups):
            keys = state.groups[group]
            if all(req.position(k) is not None for k in keys):
                keys = sorted(keys, key=lambda k: req.positions[k])
            groups.append(tuple(keys))
        self.policy.on_request_finished(
            tuple(groups), state.inserted - state.reused, set(state.reused), req, self.ref_of
        )

    def _in_request(self, req: Request | None, call: Any) -> Any:
        if req is not None:
            return call(req)
        own = Request("call")
        self.on_new_request(own)
        try:
            return call(own)
        finally:
            self.on_request_finished(own)

    # ------------------------------------------------------------ the API

    def prepare_store(self, keys: object, req: Request | None = None) -> PrepareStoreOutput | None:
        """vLLM 0.33's store (see the module doc); a repeated key counts once."""
        batch = list(dict.fromkeys(_batch(keys)))
        protected = set(batch)
        for key in batch:
            self.check_event(key, CpuEvent.STORE_BEGIN)
        got: PrepareStoreOutput | None = self._in_request(
            req, lambda r: self._store(list(batch), protected, r)
        )
        return got

    def _store(self, batch: list[Key], protected: set[Key], req: Request) -> Any:
        to_store = [k for k in batch if self.fires(k, CpuEvent.STORE_BEGIN)]
        ready = [k for k in batch if self.fires(k, CpuEvent.LOAD_BEGIN)]
        state = self.access(req)
        misses = [k for k in to_store if k not in state.store_misses]
        if misses:
            self.policy.on_store_miss(misses, self.ref_of, req)
            state.store_misses.update(misses)
        chosen = set(to_store) | set(ready)
        self.record([k for k in batch if k in chosen], req, reused=ready)
        if not to_store:
            return PrepareStoreOutput([], [], [])
        need = len(to_store) - self.free_slot_count()
        victims: list[Key] = []
        if need > 0:
            if need > self.num_evictable:
                return None
            got = self.policy.evict(need, protected, self.ref_of)
            if got is None:
                return None
            victims = got
        for key in victims:
            self.fire(key, CpuEvent.EVICT)
        self._emit(victims, removed=True)
        for key in to_store:
            self.fire(key, CpuEvent.STORE_BEGIN)
            self.policy.insert(key, req)
        state.inserted.update(to_store)
        slots = [int(self.blocks[key].slot) for key in to_store]
        return PrepareStoreOutput(keys_to_store=to_store, slot_ids=slots, evicted_keys=victims)

    def complete_store(  # type: ignore[override]
        self, keys: object, success: bool = True, req: Request | None = None
    ) -> None:
        """PENDING keys commit or abort, each once; a failure's removal is a
        metadata-only event. Returns None (0.33 reports nothing)."""
        try:
            batch = list(check_keys_and_success(keys, success)[0])
        except DuplicateKeysError:
            batch = _batch(keys)
        event = CpuEvent.STORE_COMMIT if success else CpuEvent.STORE_ABORT
        for key in batch:
            self.check_event(key, event)
        acted: list[Key] = []
        for key in batch:
            if self.fires(key, event):
                self.fire(key, event)
                if not success:
                    self.policy.remove(key)
                acted.append(key)
        if self.enable_events and acted:
            self.events.append(
                OffloadingEvent(keys=tuple(acted), removed=not success, metadata_only=not success)
            )

    def _sequential(self, batch: list[Key], event: CpuEvent) -> None:
        """Check that every occurrence, in order, is accepted (the table's error for
        the first that is not); nothing changes."""
        phases: dict[Key, Any] = {}
        for key in batch:
            phases[key] = step(self.machine, phases.get(key, self.phase(key)), event, key)

    def prepare_load(self, keys: object, req: Request | None = None) -> list[int]:
        """Pin each occurrence once more (all or nothing); the keys are this request's
        reuses. Returns their slots in key order."""
        batch = _batch(keys)
        self._sequential(batch, CpuEvent.LOAD_BEGIN)
        for key in batch:
            self.fire(key, CpuEvent.LOAD_BEGIN)
        slots = [int(self.blocks[key].slot) for key in batch]
        self._in_request(req, lambda r: self.record(batch, r, reused=batch))
        return slots

    def complete_load(self, keys: object, req: Request | None = None) -> None:
        """Release each occurrence once (all or nothing)."""
        batch = _batch(keys)
        self._sequential(batch, CpuEvent.LOAD_END)
        for key in batch:
            self.fire(key, CpuEvent.LOAD_END)

    def touch(self, keys: object, req: Request | None = None) -> None:
        """A recency hint: every key goes to the policy. Never raises."""
        batch = list(touch_keys(keys))
        self._in_request(req, lambda r: self.policy.touch(batch, self.ref_of, r))

    def reset_cache(self) -> None:
        """The seed's reset, and a new cache generation (request records forgotten)."""
        super().reset_cache()
        self.generation += 1

    def take_events(self) -> list[OffloadingEvent]:
        """The buffered events, oldest first; a metadata-only event keeps only the keys
        that are not resident again (none left: dropped)."""
        out: list[OffloadingEvent] = []
        for event in super().take_events():
            if event.metadata_only:
                keys = tuple(k for k in event.keys if k not in self.blocks)
                if not keys:
                    continue
                event = OffloadingEvent(keys=keys, removed=True, metadata_only=True)
            out.append(event)
        return out


def check_profile(name: object) -> str:
    """`name` must be a known profile; else `InvalidArgumentError` listing them."""
    if name not in PROFILES:
        raise InvalidArgumentError(f"unknown profile {name!r} (known: {', '.join(PROFILES)})")
    return str(name)
