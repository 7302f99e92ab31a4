"""The `sglang-0.5` profile: SGLang 0.5's HiCache host tier as a specification.

SGLang keeps cached KV in a radix tree whose nodes may hold a device copy, a host
copy, or both, and two lock counts (`lock_ref`, held by requests on their matched
path, and `host_lock_ref`, held by a load-back on its host copy). A node's host copy is
evictable exactly when the node is a *host leaf*: it has a host copy and no device
copy, no children, and neither lock. SGLang keeps these leaves in a set and evicts
them, least recently accessed first, from a heap it rebuilds on every eviction. This
module states what that means for keys that are each one page-sized node under the
root (so every node is childless), so that `evictable check --profile sglang-0.5`
holds SGLang's real host tier to it exactly (docs/semantics.md, "The SGLang 0.5
profile").

How the seed's vocabulary maps onto SGLang (`Sglang05Manager`):

* **The lifecycle.** PENDING is a node whose host write is in flight (it also holds
  the device copy and the write's lock); READY is a host leaf (host copy only, no
  lock): the host-leaf rule; LOADING with ref n is a node whose host copy is being or
  has been loaded back and that n readers still lock. Only READY keys are evicted.
* **Recency is last access** (SGLang's LRU strategy, `last_access_time`), not the
  time a key became evictable: a key's stamp is renewed when it is stored (its node is
  created), when a load matches it, and when it is touched (matched) -- in any state --
  and it keeps that stamp when it later becomes evictable. `touch` stamps the keys
  last first (the first key ends most recent); a load stamps them in order.
* **Best-effort stores.** SGLang stores node by node, making room for each with its
  host eviction and stopping at the first it cannot place (its backup chain stops
  there too): the absent keys are placed in order, each on a free page or on the
  page of the least recent READY key outside the call, until one finds neither. The
  keys placed stay placed; the answer lists them (None when no key could be placed,
  and then nothing changed).
* **Writes cannot fail.** SGLang's copy acknowledgement has no status:
  `complete_store(keys, success=False)` commits like `success=True`.
* **Host pages** come from SGLang's host pool, a queue: every page in ascending
  order at first (and after a reset), a freed page joining the back. The snapshot
  lists the free pages in hand-out order (`free_stack`) with the high-water mark at
  `num_blocks`.
* **The snapshot's policy** is `OpaquePolicySnapshot("sglang-lru", (recency,
  leaves))`: every resident key by last access, and the evictable ones (SGLang's host
  leaves) in eviction order.
* There are no offloading events.

Left out (the adapter drives none of it): multi-page paths (a node with children is
never a host leaf), the write-back policy (a device eviction that writes the host
copy first), host-copy duplicates kept beside a device copy, storage (L3) prefetch
and backup, sessions, and SGLang's other eviction strategies.
"""

from __future__ import annotations

from collections.abc import Sequence, Set

from evictable.model.errors import InvalidArgumentError
from evictable.model.lifecycle import CpuEvent
from evictable.model.manager import ModelManager
from evictable.model.policy import RefOf
from evictable.model.types import Key, OpaquePolicySnapshot, PrepareStoreOutput, SlotId
from evictable.model.validate import check_keys, check_keys_and_success, touch_keys

__all__ = ["POLICY_NAME", "SGLANG_VERSION", "HostLeafLru", "Sglang05Manager"]

SGLANG_VERSION = "0.5"
"""The SGLang release series this profile describes (the adapters follow it)."""

POLICY_NAME = "sglang-lru"
"""The name of the profile's policy snapshot (`OpaquePolicySnapshot`)."""


class HostLeafLru:
    """SGLang's host-leaf eviction under its LRU strategy: the evictable keys (the host
    leaves), least recently accessed first. Implements `model.policy.ModelPolicy`."""

    name = "lru"

    def __init__(self, capacity: int) -> None:
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 0:
            raise InvalidArgumentError(f"LRU capacity must be an int >= 0, got {capacity!r}")
        self.capacity = capacity
        self.clock = 0
        self.stamps: dict[Key, int] = {}
        self.leaves: set[Key] = set()

    def access(self, key: Key) -> None:
        """A resident key is accessed (created or matched): its stamp is renewed."""
        self.clock += 1
        self.stamps[key] = self.clock

    def insert(self, key: Key) -> None:
        """A key's node is created (PENDING): its first access."""
        self.access(key)

    def remove(self, key: Key) -> None:
        """Never called: SGLang's writes do not fail."""
        self.stamps.pop(key, None)

    def mark_evictable(self, key: Key) -> None:
        """The key's node became a host leaf."""
        self.leaves.add(key)

    def mark_non_evictable(self, key: Key) -> None:
        """The key's node stopped being a host leaf (a load locked it)."""
        self.leaves.discard(key)

    def touch(self, keys: Sequence[Key], ref_of: RefOf) -> None:
        """Each resident key is matched, last key first: the first ends most recent."""
        for key in reversed(keys):
            if ref_of(key) is not None:
                self.access(key)

    def order(self) -> list[Key]:
        """The host leaves in eviction order: least recent access first."""
        return sorted(self.leaves, key=lambda k: self.stamps[k])

    def evict(self, n: int, protected: Set[Key], ref_of: RefOf) -> list[Key] | None:
        """The `n` least recent host leaves outside `protected`, removed; else None."""
        victims = [k for k in self.order() if k not in protected][:n]
        if len(victims) < n:
            return None
        for key in victims:
            self.leaves.discard(key)
            del self.stamps[key]
        return victims

    def clear(self) -> None:
        self.stamps.clear()
        self.leaves.clear()

    def recency(self) -> list[Key]:
        """Every resident key, least recent access first."""
        return sorted(self.stamps, key=lambda k: self.stamps[k])

    def snapshot(self) -> OpaquePolicySnapshot:
        """(every resident key, the host leaves), each least recent first. The order
        of keys that are not evictable is state too: it decides their rank once they
        are, so it is observed (and the explorer tells such states apart)."""
        return OpaquePolicySnapshot(POLICY_NAME, (tuple(self.recency()), tuple(self.order())))


class Sglang05Manager(ModelManager):
    """SGLang 0.5's host tier as a specification (see the module docstring)."""

    profile = "sglang-0.5"

    def __init__(self, num_blocks: int, policy: str = "lru", enable_events: bool = False) -> None:
        super().__init__(num_blocks, policy, enable_events)
        if policy != "lru":
            raise InvalidArgumentError(
                f"the sglang-0.5 profile has the 'lru' policy, not {policy!r}"
            )
        self.policy: HostLeafLru = HostLeafLru(self.num_blocks)
        self._fresh_pages()

    def _fresh_pages(self) -> None:
        """Every host page free, in ascending order (SGLang's host pool, cleared)."""
        self.free_stack = [SlotId(i) for i in range(self.num_blocks)]
        self.high_water = self.num_blocks

    def take_slot(self) -> SlotId:
        """The page at the front of the host pool's queue (freed pages join the back)."""
        return self.free_stack.pop(0)

    def _emit(self, keys: list[Key], removed: bool) -> None:
        """SGLang's host tier reports no offloading events."""

    # ------------------------------------------------------------ the API

    def prepare_store(self, keys: object) -> PrepareStoreOutput | None:
        """Place the absent keys in order, best-effort (see the module docstring)."""
        batch, protected = check_keys(keys)
        for key in batch:
            self.check_event(key, CpuEvent.STORE_BEGIN)
        to_store = [k for k in batch if self.fires(k, CpuEvent.STORE_BEGIN)]
        if not to_store:
            return PrepareStoreOutput([], [], [])
        placed: list[Key] = []
        victims: list[Key] = []
        for key in to_store:
            if self.free_slot_count() == 0:
                got = self.policy.evict(1, protected, self.ref_of)
                if got is None:
                    break  # no free page and no host leaf to evict: stop here
                self.fire(got[0], CpuEvent.EVICT)
                victims.extend(got)
            self.fire(key, CpuEvent.STORE_BEGIN)
            self.policy.insert(key)
            placed.append(key)
        if not placed:
            return None
        slots = [int(self.blocks[key].slot) for key in placed]
        return PrepareStoreOutput(keys_to_store=placed, slot_ids=slots, evicted_keys=victims)

    def complete_store(self, keys: object, success: bool = True) -> list[Key]:
        """PENDING keys commit (their writes land); `success` changes nothing."""
        batch, _ = check_keys_and_success(keys, success)
        acted = [k for k in batch if self.fires(k, CpuEvent.STORE_COMMIT)]
        for key in acted:
            self.fire(key, CpuEvent.STORE_COMMIT)
        return acted

    def prepare_load(self, keys: object) -> list[int]:
        """Pin every key for one more load, all or nothing; each load matches (stamps)
        its key, in order."""
        slots = super().prepare_load(keys)
        for key in check_keys(keys)[0]:
            self.policy.access(key)
        return slots

    def touch(self, keys: object) -> None:
        """Match every resident key (any state), last key first. Never raises."""
        self.policy.touch(touch_keys(keys), self.ref_of)

    def reset_cache(self) -> None:
        """Every key ABSENT, every host page free again in ascending order."""
        super().reset_cache()
        self._fresh_pages()
