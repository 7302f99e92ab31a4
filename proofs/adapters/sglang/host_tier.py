"""SGLang 0.5's HiCache host tier behind the CPU manager adapter protocol.

`SglangHostTier(num_blocks, policy, enable_events)` holds one real
`sglang.srt.mem_cache.unified_radix_cache.UnifiedRadixCache` with the FULL component
only, over SGLang's pure-Python tree core (`UnifiedTreeCore`; SGLang's default core
is a compiled one that exposes no node to read, so the adapter selects this one, as
SGLang does wherever the compiled one does not apply) and a real host pool (`HostPoolGroup` over a
`LogicalHostPool` of `num_blocks` pages: SGLang's host slot allocator, holding no KV
tensor). Each key is one node of one page (`PAGE_SIZE` tokens) directly under the root;
its slot is its host page. The adapter makes the calls SGLang's scheduler makes and
translates, nothing more:

* `prepare_store(keys)`: for each absent key in order, a new device copy is inserted
  (`UnifiedRadixCache.insert`); with the write-through policy SGLang itself issues the
  host write (its `BackupKV` action: make room with `evict_host` when the host pool is
  full, allocate host slots, lock the node until the write's ack). Keys are stored
  best-effort in order: at the first key SGLang gives no host copy (no evictable host
  leaf), the adapter drops that key's device copy with SGLang's device eviction and
  stops. The call's resident keys are locked for the call (`inc_lock_ref`), as a
  request's matched prefix is: SGLang never evicts them to make room.
* `complete_store(keys)`: for each key whose write is in flight, its ack lands
  (`writing_check`: SGLang unlocks the node), then the device copy is evicted
  (`evict_device_leaf`, SGLang's demote): the node is host-only and, unlocked and
  childless, a host leaf that SGLang may evict. SGLang's copies cannot fail (its ack
  carries no status): `success=False` is acted on like `success=True`.
* `prepare_load(keys)`: each key is matched (`match_prefix`, which refreshes its
  recency) and, if host-only, loaded back (`load_back`: host lock, device lock,
  device slots, the load queued); a key already loading is locked once more
  (`inc_lock_ref`: another request reading the device copy). Slots in key order.
* `complete_load(keys)`: one pin per key is released: another reader's lock
  (`dec_lock_ref`) if any, else the load's ack lands (`loading_check`: SGLang drops
  its locks); when the last pin goes the device copy is evicted (demote), so the key
  is host-only and evictable again.
* `touch(keys)`: a `match_prefix` of each key, last key first (so the first key ends
  most recent); `lookup` reads the tree (no recency change); `reset_cache` is
  SGLang's `reset()` (tree, copy queues, host pool) and a cleared device pool.

State is read from SGLang: a node with a write in flight (`write_through_pending_id`)
is PENDING; a host-only node with no lock READY; a node with a host copy and
`lock_ref` n >= 1 LOADING with ref n; its slot is its host page. `num_evictable` is the
size of SGLang's `evictable_host_leaves`, `num_pending` of its `ongoing_write_through`,
and the snapshot's policy state is every resident key by SGLang's `last_access_time`
and those leaves in SGLang's own eviction order (the profile's `sglang-lru` snapshot).

What it hides: the device tier (`harness.DevicePool`, big enough that SGLang never
evicts device copies on its own) and the copy engine (`harness.CopyEngine`: the
controller's allocation path, no data moved; the adapter decides when a copy lands).
There are no offloading events (SGLang's KV events are not translated). SGLang has no
batch of keys, no load of a key it did not match and no typed errors: the factories
declare valid inputs only, no repeated keys, any error type, and the `sglang-0.5`
profile (docs/semantics.md, "The SGLang 0.5 profile").
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sglang.srt.mem_cache.base_prefix_cache import InsertParams, MatchPrefixParams
from sglang.srt.mem_cache.cache_init_params import CacheInitParams
from sglang.srt.mem_cache.hicache_storage import PoolName
from sglang.srt.mem_cache.memory_pool_host import LogicalHostPool
from sglang.srt.mem_cache.pool_host.group import HostPoolGroup, PoolEntry
from sglang.srt.mem_cache.radix_cache import RadixKey
from sglang.srt.mem_cache.unified_cache.components import ComponentType
from sglang.srt.mem_cache.unified_radix_cache import UnifiedRadixCache

from evictable.model.errors import InvalidArgumentError
from evictable.model.lifecycle import CpuState
from evictable.model.sglang05 import POLICY_NAME
from evictable.model.types import (
    BlockEntry,
    Key,
    LookupResult,
    ManagerSnapshot,
    OffloadingEvent,
    OpaquePolicySnapshot,
    PrepareStoreOutput,
    SlotId,
)
from evictable.proofs.adapters.sglang.harness import CopyEngine, DevicePool

__all__ = ["PAGE_SIZE", "SglangHostTier", "host_tier"]

PAGE_SIZE = 16
"""Tokens per page, so per key. At least SGLang's `load_back_threshold` (10 tokens):
a shorter load-back is skipped (recomputed) by SGLang."""

FULL = ComponentType.FULL


class SglangHostTier:
    """One SGLang unified radix cache with a host tier, with this project's manager API
    (see the module docstring)."""

    tree_core_backend = "python"
    """The tree core SGLang builds (a name of its `register_tree_core_backend` registry)."""

    def __init__(
        self,
        num_blocks: int,
        policy: str = "lru",
        enable_events: bool = False,
    ) -> None:
        if type(num_blocks) is not int or num_blocks < 0:
            raise InvalidArgumentError(f"num_blocks must be an int >= 0, got {num_blocks!r}")
        if policy != "lru":
            raise InvalidArgumentError(f"SGLang's host tier is checked with 'lru', got {policy!r}")
        self.num_blocks = num_blocks
        self.device = DevicePool(num_blocks + 1, PAGE_SIZE)
        params = CacheInitParams(
            disable=False,
            req_to_token_pool=None,
            token_to_kv_pool_allocator=self.device,
            page_size=PAGE_SIZE,
            tree_components=(FULL,),
            eviction_policy="lru",
            tree_core_backend=self.tree_core_backend,
        )
        self.cache = UnifiedRadixCache(params)
        self.host_pool = LogicalHostPool(num_blocks * PAGE_SIZE, PAGE_SIZE)
        group = HostPoolGroup([PoolEntry(PoolName.KV, self.host_pool, None, lambda i: i, True)])
        self.copies = CopyEngine(group, self.device)
        self._attach(group)
        self._ids: dict[Key, int] = {}
        self._readers: dict[Key, list[Any]] = {}
        """Per loading key, the lock receipts of its further readers (LIFO)."""

    def _attach(self, group: HostPoolGroup) -> None:
        """What `UnifiedRadixCache.init_hicache` sets up for a FULL-only tree with the
        write-through policy, without a server: the controller, the host pool group,
        HiCache on in the tree core, SGLang's thresholds."""
        cache = self.cache
        cache.cache_controller = self.copies
        cache.host_pool_group = group
        cache.components[FULL]._full_kv_pool_host = self.host_pool
        cache.tree_core.set_hicache_enabled()
        cache.write_through_threshold = 1  # the "write_through" policy
        cache.is_write_back = False
        cache.load_back_threshold = 10
        cache.enable_storage = False

    # ------------------------------------------------------------ keys and nodes

    def _tokens(self, key: Key) -> list[int]:
        index = self._ids.setdefault(key, len(self._ids))
        return [index + 1] * PAGE_SIZE

    def _radix_key(self, key: Key) -> RadixKey:
        return RadixKey(self._tokens(key))

    def node_of(self, key: Key) -> Any:
        """The key's node under the root, or None."""
        tree = self.cache.tree_core
        child = self._radix_key(key).child_key(PAGE_SIZE)
        return tree.root_node.children.get(child)

    def _phase(self, key: Key) -> tuple[CpuState, int] | None:
        """(state, ref) of a resident key as SGLang's tree shows it; None if absent."""
        node = self.node_of(key)
        if node is None:
            return None
        cd = node.component_data[FULL]
        if node.write_through_pending_id is not None:
            return (CpuState.PENDING, -1)
        if cd.host_value is None:
            return None  # a device copy only: not in the host tier
        if cd.lock_ref == 0 and cd.host_lock_ref == 0 and node.evicted:
            return (CpuState.READY, 0)
        return (CpuState.LOADING, int(cd.lock_ref))

    def _slot(self, node: Any) -> SlotId:
        return SlotId(int(node.component_data[FULL].host_value[0]) // PAGE_SIZE)

    def _drop_device_copy(self, node: Any) -> None:
        """SGLang's device eviction of one leaf: a demote if it has a host copy, else
        its deletion (write-through)."""
        result = self.cache.tree_core.evict_device_leaf(node.id, self.cache.is_write_back)
        self.cache._apply_eviction_result(result)

    # ------------------------------------------------------------ the manager API

    def lookup(self, key: Key) -> LookupResult:
        phase = self._phase(key)
        if phase is None:
            return LookupResult.MISS
        return LookupResult.HIT_PENDING if phase[0] is CpuState.PENDING else LookupResult.HIT

    def _leaf_keys(self) -> dict[Any, Key]:
        """SGLang's host leaves (node -> key), when a store may evict one: the host pool
        has no free page. Empty otherwise (nothing to compare)."""
        if self.host_pool.available_size() >= PAGE_SIZE:
            return {}
        leaves = self.cache.tree_core.evictable_host_leaves
        return {n: k for k in self._ids if (n := self.node_of(k)) is not None and n in leaves}

    def prepare_store(self, keys: Collection[Key]) -> PrepareStoreOutput | None:
        batch = list(dict.fromkeys(keys))
        to_store = [k for k in batch if self._phase(k) is None]
        if not to_store:
            return PrepareStoreOutput([], [], [])
        held = []
        for key in batch:  # the call's resident keys: locked for the call
            node = self.node_of(key)
            if node is not None and key not in to_store:
                held.append((node.id, self.cache.inc_lock_ref(node.id).to_dec_params()))
        stored: list[Key] = []
        victims: list[Key] = []
        try:
            for key in to_store:
                before = self._leaf_keys()
                value = self.device.alloc(PAGE_SIZE)
                if value is None:
                    raise RuntimeError("the device pool ran short (the adapter's sizing)")
                self.cache.insert(InsertParams(key=self._radix_key(key), value=value))
                victims.extend(k for n, k in before.items() if self.node_of(k) is not n)
                node = self.node_of(key)
                if node is None or not node.backuped:  # SGLang gave it no host copy
                    if node is not None:
                        self._drop_device_copy(node)
                    break
                stored.append(key)
        finally:
            for node_id, receipt in held:
                self.cache.dec_lock_ref(node_id, receipt)
        if not stored:
            return None
        slots = [int(self._slot(self.node_of(k))) for k in stored]
        return PrepareStoreOutput(keys_to_store=stored, slot_ids=slots, evicted_keys=victims)

    def complete_store(self, keys: Collection[Key], success: bool = True) -> list[Key]:
        acted: list[Key] = []
        for key in dict.fromkeys(keys):
            node = self.node_of(key)
            if node is None or node.write_through_pending_id is None:
                continue
            self.copies.finish_write(node.id)
            self.cache.writing_check(finish_count=1)
            self._drop_device_copy(node)
            acted.append(key)
        return acted

    def prepare_load(self, keys: Collection[Key]) -> list[int]:
        slots: list[int] = []
        for key in keys:
            matched = self.cache.match_prefix(MatchPrefixParams(key=self._radix_key(key)))
            node = self.node_of(key)
            if node is None or matched.best_match_node != node.id:
                raise LookupError(f"match_prefix did not reach the node of {key!r}")
            if node.evicted:
                if not self.cache.load_back(node.id):
                    raise RuntimeError(f"SGLang refused the load-back of {key!r}")
            else:
                receipt = self.cache.inc_lock_ref(node.id).to_dec_params()
                self._readers.setdefault(key, []).append(receipt)
            slots.append(int(self._slot(node)))
        return slots

    def complete_load(self, keys: Collection[Key]) -> None:
        for key in keys:
            node = self.node_of(key)
            if node is None:
                raise LookupError(f"{key!r} has no node")
            readers = self._readers.get(key)
            if readers:
                self.cache.dec_lock_ref(node.id, readers.pop())
            elif node.id in self.cache.ongoing_load_back:
                self.copies.finish_load(node.id)
                self.cache.loading_check(finish_count=1)
            else:
                raise RuntimeError(f"{key!r} has no pin to release")
            cd = node.component_data[FULL]
            if cd.lock_ref == 0 and node.id not in self.cache.ongoing_load_back:
                self._readers.pop(key, None)
                self._drop_device_copy(node)

    def touch(self, keys: Collection[Key]) -> None:
        for key in reversed(list(keys)):
            self.cache.match_prefix(MatchPrefixParams(key=self._radix_key(key)))

    def reset_cache(self) -> None:
        self.cache.reset()
        self.device.clear()
        self._readers.clear()

    def take_events(self) -> list[OffloadingEvent]:
        return []

    @property
    def num_evictable(self) -> int:
        return len(self.cache.tree_core.evictable_host_leaves)

    @property
    def num_pending(self) -> int:
        return len(self.cache.ongoing_write_through)

    # ------------------------------------------------------------ introspection

    def _free_order(self) -> tuple[SlotId, ...]:
        """The host pool's free pages in the order it hands them out."""
        pool = self.host_pool
        tokens = [*pool.free_slots.tolist()]
        for part in pool.release_slots:
            tokens.extend(part.tolist())
        return tuple(SlotId(int(t) // PAGE_SIZE) for t in tokens[::PAGE_SIZE])

    def snapshot(self) -> ManagerSnapshot:
        """SGLang's state in this project's snapshot shape (see the module docstring).
        The free pages are listed in hand-out order (`free_stack`, the high-water mark
        at `num_blocks`: the profile's convention)."""
        blocks = []
        by_node: dict[int, Key] = {}
        for key in self._ids:
            phase = self._phase(key)
            if phase is None:
                continue
            node = self.node_of(key)
            by_node[node.id] = key
            blocks.append(BlockEntry(key, phase[0], phase[1], self._slot(node)))
        nodes = [self.node_of(k) for k in by_node.values()]
        recency = tuple(by_node[n.id] for n in sorted(nodes, key=_priority))
        leaves = sorted(self.cache.tree_core.evictable_host_leaves, key=_priority)
        order = tuple(by_node.get(n.id, f"<node {n.id}>") for n in leaves)
        return ManagerSnapshot(
            num_blocks=self.num_blocks,
            blocks=frozenset(blocks),
            free_stack=self._free_order(),
            high_water=self.num_blocks,
            num_evictable=self.num_evictable,
            num_pending=self.num_pending,
            pending_events=(),
            policy=OpaquePolicySnapshot(POLICY_NAME, (recency, order)),
        )


def _priority(node: Any) -> tuple[float, int]:
    """SGLang's host eviction order under its LRU strategy: last access, then node id."""
    return (float(node.last_access_time), int(node.id))


_CONTRACT = {
    "errors": "any",
    "invalid": False,
    "duplicates": False,
    "malformed": False,
    "profile": "sglang-0.5",
}


def host_tier(num_blocks: int, policy: str, enable_events: bool) -> SglangHostTier:
    """SGLang's host tier (`UnifiedRadixCache` over `UnifiedTreeCore`), its LRU strategy."""
    return SglangHostTier(num_blocks, "lru", enable_events)


host_tier.evictable_contract = dict(_CONTRACT)  # type: ignore[attr-defined]
host_tier.evictable_policy = "lru"  # type: ignore[attr-defined]
