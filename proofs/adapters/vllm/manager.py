"""vLLM 0.33's `CPUOffloadingManager` (LRU and ARC) behind the manager adapter protocol.

`VllmManager(num_blocks, policy, enable_events)` holds one real
`vllm.v1.kv_offload.cpu.manager.CPUOffloadingManager(num_chunks=num_blocks,
cache_policy=policy, enable_events=...)` and translates, nothing more:

* every key-taking call is made as its own request: a fresh `ReqContext`,
  `on_new_request`, the call, `on_request_finished` (so vLLM's request-scoped
  recency and ARC's promotions run as in serving); `lookup` uses one shared context;
* results: vLLM's `LookupResult` by name; `PrepareStoreOutput` with the slot ids of
  its `store_spec` (`block_ids`); `prepare_load`'s spec as its slot ids;
  `complete_store` returns None (vLLM reports nothing, so the safety contract does
  not compare it); events as this project's `OffloadingEvent(keys, removed,
  metadata_only)` (the seed profile does not compare metadata-only ones: it has none);
* `num_evictable` / `num_pending` are vLLM's own accounting
  (`_num_evictable_cache_chunks`, `_num_write_pending_chunks`);
* `snapshot()` reads the policy's chunks (`ChunkStatus.ref_cnt`, `.chunk_id`), the
  chunk pool (`_free_list`, `_num_allocated_chunks`) and the policy's lists (LRU:
  the evictable keys by recency rank; ARC: T1, T2, B1, B2 and the target). A
  black-box run (`--black-box`) never calls it.

Errors are vLLM's own (mostly `AssertionError`): the factories declare the error
contract `any` and the safety contract, and no malformed arguments (vLLM, like most
Python code, does not validate argument types).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from vllm.v1.kv_offload.base import ReqContext
from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager

from evictable.impl.manager import state_of_ref
from evictable.model.types import (
    ArcPolicySnapshot,
    BlockEntry,
    Key,
    LookupResult,
    LruPolicySnapshot,
    ManagerSnapshot,
    OffloadingEvent,
    OpaquePolicySnapshot,
    PolicySnapshot,
    PrepareStoreOutput,
)
from evictable.proofs.adapters.vllm.keys import VLLM_KEYS

__all__ = [
    "VllmManager",
    "arc_manager",
    "evictable_arc_manager",
    "evictable_lru_manager",
    "lru_manager",
    "manager",
    "translate_events",
    "translate_store",
]

PLUGIN_MODULE = "evictable.vllm"
"""Where vLLM's factory loads evictable's policies from (by name, out of tree)."""


def translate_events(raw: Iterable[Any]) -> list[OffloadingEvent]:
    return [
        OffloadingEvent(
            keys=tuple(e.keys),
            removed=bool(e.removed),
            metadata_only=bool(getattr(e, "metadata_only", False)),
        )
        for e in raw
    ]


def translate_store(out: Any) -> PrepareStoreOutput | None:
    """vLLM's `prepare_store` answer in the protocol's terms (None stays None): the
    keys to store, the CPU slots its store spec names, the evicted keys."""
    if out is None:
        return None
    return PrepareStoreOutput(
        keys_to_store=list(out.keys_to_store),
        slot_ids=[int(s) for s in out.store_spec.block_ids],
        evicted_keys=list(out.evicted_keys),
    )


class VllmManager:
    """One vLLM `CPUOffloadingManager` with this project's manager API."""

    def __init__(
        self,
        num_blocks: int,
        policy: str = "lru",
        enable_events: bool = False,
        module: str | None = None,
    ) -> None:
        self.vllm = CPUOffloadingManager(
            num_chunks=num_blocks,
            cache_policy=policy,
            cache_policy_module_path=module,
            enable_events=enable_events,
        )
        self.num_blocks = num_blocks
        self.policy_name = policy
        self._requests = 0
        self._lookups = ReqContext(req_id="lookups")

    @classmethod
    def around(cls, manager: CPUOffloadingManager, policy: str = "") -> VllmManager:
        """This API over an existing vLLM manager (`evictable.vllm.CheckedOffloadingSpec`
        observes the manager vLLM's spec built)."""
        self = cls.__new__(cls)
        self.vllm = manager
        self.num_blocks = int(manager._num_chunks)
        self.policy_name = policy or type(manager._policy).__name__
        self._requests = 0
        self._lookups = ReqContext(req_id="lookups")
        return self

    def _request(self, method: str, keys: Collection[Key], *extra: Any) -> Any:
        self._requests += 1
        ctx = ReqContext(req_id=f"r{self._requests}")
        self.vllm.on_new_request(ctx)
        try:
            return getattr(self.vllm, method)(keys, ctx, *extra)
        finally:
            self.vllm.on_request_finished(ctx)

    # ------------------------------------------------------------ the manager API

    def lookup(self, key: Key) -> LookupResult:
        got = self.vllm.lookup(key, self._lookups)
        return LookupResult[got.name]

    def prepare_store(self, keys: Collection[Key]) -> PrepareStoreOutput | None:
        return translate_store(self._request("prepare_store", keys))

    def complete_store(self, keys: Collection[Key], success: bool = True) -> None:
        self._request("complete_store", keys, success)

    def prepare_load(self, keys: Collection[Key]) -> list[int]:
        spec = self._request("prepare_load", keys)
        return [int(s) for s in spec.block_ids]

    def complete_load(self, keys: Collection[Key]) -> None:
        self._request("complete_load", keys)

    def touch(self, keys: Collection[Key]) -> None:
        self._request("touch", keys)

    def reset_cache(self) -> None:
        self.vllm.reset_cache()

    def take_events(self) -> list[OffloadingEvent]:
        return translate_events(self.vllm.take_events())

    @property
    def num_evictable(self) -> int:
        return int(self.vllm._num_evictable_cache_chunks)

    @property
    def num_pending(self) -> int:
        return int(self.vllm._num_write_pending_chunks)

    # ------------------------------------------------------------ introspection

    def _chunks(self) -> dict[Key, Any]:
        pol = self.vllm._policy
        if hasattr(pol, "chunks"):
            return dict(pol.chunks)
        return {**pol.t1, **pol.t2}

    def _policy_snapshot(self) -> PolicySnapshot:
        pol = self.vllm._policy
        if hasattr(pol, "evictable_keys"):  # evictable.vllm.EvictableLRU
            return LruPolicySnapshot(tuple(pol.evictable_keys()))
        if hasattr(pol, "_evictable") and hasattr(pol, "_ranks"):
            ranks = pol._ranks
            return LruPolicySnapshot(tuple(sorted(pol._evictable, key=lambda k: (ranks[k], k))))
        if all(hasattr(pol, n) for n in ("t1", "t2", "b1", "b2")):
            idle = frozenset(k for k, c in self._chunks().items() if c.ref_cnt == 0)
            return ArcPolicySnapshot(
                tuple(pol.t1),
                tuple(pol.t2),
                tuple(pol.b1),
                tuple(pol.b2),
                pol.target_t1_size,
                idle,  # vLLM's ARC evicts the chunks at ref 0: that is its idle view
            )
        return OpaquePolicySnapshot(type(pol).__name__, ())

    def snapshot(self) -> ManagerSnapshot:
        """vLLM's state in this project's snapshot shape (see the module docstring)."""
        m = self.vllm
        return ManagerSnapshot(
            num_blocks=self.num_blocks,
            blocks=frozenset(
                BlockEntry(key, state_of_ref(c.ref_cnt), int(c.ref_cnt), int(c.chunk_id))
                for key, c in self._chunks().items()
            ),
            free_stack=tuple(int(s) for s in m._free_list),
            high_water=int(m._num_allocated_chunks),
            num_evictable=self.num_evictable,
            num_pending=self.num_pending,
            pending_events=tuple(translate_events(m.events or ())),
            policy=self._policy_snapshot(),
        )


def _declare(factory: Any, policy: str | None) -> Any:

    factory.evictable_contract = {
        "mode": "safety",
        "errors": "any",
        "malformed": False,
        "keys": VLLM_KEYS,
    }
    if policy is not None:
        factory.evictable_policy = policy
    return factory


def manager(num_blocks: int, policy: str, enable_events: bool) -> VllmManager:
    """vLLM's manager with the policy the engine names ("lru" or "arc")."""
    return VllmManager(num_blocks, policy, enable_events)


def lru_manager(num_blocks: int, policy: str, enable_events: bool) -> VllmManager:
    """vLLM's manager with its LRU policy (whatever policy name the engine passes)."""
    return VllmManager(num_blocks, "lru", enable_events)


def arc_manager(num_blocks: int, policy: str, enable_events: bool) -> VllmManager:
    """vLLM's manager with its ARC policy (whatever policy name the engine passes)."""
    return VllmManager(num_blocks, "arc", enable_events)


def evictable_lru_manager(num_blocks: int, policy: str, enable_events: bool) -> VllmManager:
    """vLLM's manager with evictable's `EvictableLRU` plugged in through vLLM's factory."""
    return VllmManager(num_blocks, "EvictableLRU", enable_events, PLUGIN_MODULE)


def evictable_arc_manager(num_blocks: int, policy: str, enable_events: bool) -> VllmManager:
    """vLLM's manager with evictable's `EvictableARC` plugged in through vLLM's factory."""
    return VllmManager(num_blocks, "EvictableARC", enable_events, PLUGIN_MODULE)


_declare(manager, None)
_declare(evictable_lru_manager, "lru")
_declare(evictable_arc_manager, "arc")
_declare(lru_manager, "lru")
_declare(arc_manager, "arc")
