"""Our tiering orchestrator inside vLLM 0.33: `EvictableTieringSpec`.

Enable it through vLLM's out-of-tree spec loader (no fork), with vLLM's own
`secondary_tiers` configuration:

    kv_connector_extra_config={
        "spec_name": "EvictableTieringSpec",
        "spec_module_path": "evictable.vllm",
        "secondary_tiers": [{"type": "fs", "root_dir": "/mnt/kv"}],
        "cpu_bytes_to_use": ...,                 # as for vLLM's tiering spec
    }

Everything but the orchestrator is vLLM's `TieringOffloadingSpec` (the same extra-config
keys, the same shared primary region, the same workers, the same metric definitions),
and each secondary tier is built by vLLM's `SecondaryTierFactory` from the same entry
(fs, obj, p2p, kvcr, example, or an out-of-tree class by `module_path`). The
orchestrator is `evictable.impl.tiering.TieringManager` (our `CPUOffloadingManager` as
the primary, policy `lru` or `arc`), each vLLM tier behind our tier protocol
(`evictable.vllm.tiers.VllmTier`), and the connector sees `EvictableTieringManager`, an
`OffloadingManager` with the calls vLLM's tiering manager offers (per-key `lookup`,
`prepare_load`, `prepare_store`, `complete_*`, `on_new_request`,
`on_request_finished`, `on_schedule_end`, `has_pending_work`, `take_events`,
`get_stats`, `config_info`, `reset_cache`, `on_reset_flushed`, `shutdown`, and
`poll_tiers`). Its `lock` is the orchestrator's: while the connector holds it (its
step region), the keys `lookup` reported HIT are kept resident against promotions --
so a prefix longer than the primary answers the part that fits (docs/interop.md,
"Our orchestrator", for every difference from vLLM's orchestrator).
"""

from __future__ import annotations

# first, before anything of vLLM: vLLM 0.33 present, or one clear ImportError
from evictable.vllm.base import VLLM_VERSION  # noqa: F401

# isort: split
import logging
import threading
from collections.abc import Collection, Iterable, Sequence
from types import TracebackType
from typing import Any

from vllm.distributed.kv_transfer.kv_connector.v1.offloading.metrics import (
    OffloadingConnectorStats,
)
from vllm.v1.kv_offload.base import (
    Medium,
    OffloadingEvent,
    OffloadingManager,
    PrepareStoreOutput,
    RequestOffloadingContext,
)
from vllm.v1.kv_offload.cpu.common import CPULoadStoreSpec, CPUOffloadingMetrics
from vllm.v1.kv_offload.cpu.shared_offload_region import SharedOffloadRegion
from vllm.v1.kv_offload.tiering.base import TIER_LABEL
from vllm.v1.kv_offload.tiering.factory import SecondaryTierFactory
from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec
from vllm.v1.metrics.cache_hit_source import CacheHitSource

from evictable.impl.manager import CPUOffloadingManager
from evictable.impl.tiering import TieringManager
from evictable.model.errors import InvalidArgumentError
from evictable.model.tiering_types import ReqId, RequestPhase
from evictable.vllm.tiers import Contexts, VllmTier, lookup_result

__all__ = ["EvictableTieringManager", "EvictableTieringSpec", "RegionLock"]

log = logging.getLogger("evictable.vllm")

POLICIES = {"lru": "lru", "arc": "arc", "evictablelru": "lru", "evictablearc": "arc"}
"""vLLM's `eviction_policy` names -> our primary's policy."""


class RegionLock:
    """The orchestrator's lock as vLLM's callers enter it: the outermost entry opens
    the orchestrator's region (a lookup hold spanning every call until the exit)."""

    def __init__(self, orch: TieringManager) -> None:
        self.orch = orch
        self.depth = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not self.orch.lock.acquire(blocking, timeout):
            return False
        self.depth += 1
        if self.depth == 1:
            self.orch.open_region()
        return True

    def release(self) -> None:
        try:
            if self.depth == 1:
                self.orch.close_region()
        finally:
            self.depth -= 1
            self.orch.lock.release()

    def __enter__(self) -> RegionLock:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


class EvictableTieringManager(OffloadingManager):  # type: ignore[misc]
    """Our orchestrator over vLLM's tiers, as vLLM's connector calls a manager."""

    def __init__(
        self,
        num_chunks: int,
        tiers: Sequence[Any] = (),
        policy: str = "lru",
        *,
        enable_events: bool = False,
        tier_poll_interval_s: float = 0.0,
        region: Any = None,
        view: memoryview | None = None,
        primary_info: dict[str, Any] | None = None,
    ) -> None:
        self.contexts = Contexts()
        self.secondary_tiers = list(tiers)
        self.wrapped = [VllmTier(t, self.contexts) for t in self.secondary_tiers]
        primary = CPUOffloadingManager(num_chunks, policy, enable_events)
        self.orch = TieringManager(primary=primary, tiers=self.wrapped)
        self.orch.max_gone = 0  # vLLM reuses nothing of a finalised request
        self.num_chunks = num_chunks
        self.region_lock = RegionLock(self.orch)
        self.mmap_region = region
        self.view = view
        self.primary_info = dict(primary_info or {})
        self.stop = threading.Event()
        self.poller: threading.Thread | None = None
        if tier_poll_interval_s > 0 and any(w.serving for w in self.wrapped):
            self.poller = threading.Thread(
                target=self.poll_loop,
                args=(tier_poll_interval_s,),
                name="evictable_tier_poll",
                daemon=True,
            )
            self.poller.start()

    @property
    def lock(self) -> RegionLock:
        return self.region_lock

    # ------------------------------------------------------------ requests

    def req(self, ctx: Any) -> ReqId:
        """The request of `ctx`, added on first sight (vLLM's manager needs no
        `on_new_request` before a lookup)."""
        rid = ReqId(ctx.req_id)
        if rid not in self.orch.requests:
            self.contexts.put(ctx)
            self.orch.new_request(rid)
        return rid

    def settle(self, rid: str) -> None:
        """Forget the context of a request the orchestrator no longer holds."""
        if rid not in self.orch.requests:
            self.contexts.drop(rid)

    def on_new_request(self, req_context: Any, **_: Any) -> Any:
        rid = ReqId(req_context.req_id)
        self.contexts.put(req_context)
        if rid not in self.orch.requests:
            self.orch.new_request(rid)
        return RequestOffloadingContext()

    def on_request_finished(self, req_context: Any, **_: Any) -> None:
        rid = ReqId(req_context.req_id)
        r = self.orch.requests.get(rid)
        if r is not None and r.phase is RequestPhase.ACTIVE:
            self.orch.finish(rid)
        self.settle(rid)

    # ------------------------------------------------------------ scheduler calls

    def lookup(self, key: Any, req_context: Any) -> Any:
        return lookup_result(self.orch.lookup_key(self.req(req_context), key))

    def get_load_source(self, key: Any, req_context: Any) -> Any:
        return CacheHitSource.HOST

    def prepare_load(self, keys: Collection[Any], req_context: Any) -> Any:
        return CPULoadStoreSpec(self.orch.load(self.req(req_context), list(keys)))

    def touch(self, keys: Collection[Any], req_context: Any) -> None:
        batch = list(keys)
        self.orch.touch(batch)
        for tier in self.secondary_tiers:
            try:
                tier.touch(batch, req_context)
            except Exception:
                self.orch.tier_errors += 1

    def complete_load(self, keys: Collection[Any], req_context: Any) -> None:
        rid = ReqId(req_context.req_id)
        self.orch.complete_load(rid, list(keys))
        self.settle(rid)

    def prepare_store(self, keys: Collection[Any], req_context: Any) -> Any:
        out = self.orch.store(self.req(req_context), list(keys))
        if out is None:
            return None
        return PrepareStoreOutput(
            keys_to_store=list(out.keys_to_store),
            store_spec=CPULoadStoreSpec(list(out.slot_ids)),
            evicted_keys=list(out.evicted_keys),
        )

    def complete_store(self, keys: Collection[Any], req_context: Any, success: bool = True) -> None:
        rid = ReqId(req_context.req_id)
        self.orch.complete_store(rid, list(keys), bool(success))
        self.settle(rid)

    def on_schedule_end(self, context: Any) -> None:
        for w in self.wrapped:
            w.schedule_end = context
        self.orch.end_step()

    def has_pending_work(self) -> bool:
        return self.orch.has_pending_work()

    def poll_tiers(self) -> None:
        """One poll round of the serving tiers (what the poll thread runs)."""
        self.orch.poll()

    def poll_loop(self, interval: float) -> None:
        while not self.stop.is_set():
            try:
                with self.region_lock:
                    self.orch.poll()
            except Exception:
                log.exception("evictable tier-poll round failed")
            self.stop.wait(interval)

    # ------------------------------------------------------------ events, stats

    def take_events(self) -> Iterable[Any]:
        for ev in self.orch.primary.take_events():
            yield OffloadingEvent(
                keys=list(ev.keys),
                medium=Medium.CPU,
                removed=ev.removed,
                metadata_only=ev.metadata_only,
            )
        for tier in self.secondary_tiers:
            yield from tier.take_events()

    def get_stats(self) -> Any:
        p = self.orch.primary
        stats = OffloadingConnectorStats()
        used = self.num_chunks - p.num_free - p.num_evictable
        usage = used / self.num_chunks if self.num_chunks > 0 else 0.0
        stats.set_gauge(CPUOffloadingMetrics.CPU_CACHE_USAGE_PERC, usage)
        for tier in self.secondary_tiers:
            got = tier.get_stats()
            if got is not None and not got.is_empty():
                stats.aggregate(got)
        return None if stats.is_empty() else stats

    def config_info(self) -> Sequence[Any]:
        primary = dict(self.primary_info)
        primary[TIER_LABEL] = "0:primary"
        infos: list[Any] = [primary]
        for i, tier in enumerate(self.secondary_tiers):
            info = dict(tier.config_info())
            info[TIER_LABEL] = f"{i + 1}:{tier.tier_type}"
            infos.append(info)
        return infos

    # ------------------------------------------------------------ reset, shutdown

    def reset_cache(self) -> None:
        self.orch.reset()
        for rid in list(self.contexts.by_id):
            self.settle(rid)

    def on_reset_flushed(self) -> None:
        self.orch.reset_flushed()

    def shutdown(self) -> None:
        """Stop the poll thread, shut the tiers down, then release the primary's
        region (kept when a tier failed to shut down: it may still use it)."""
        self.stop.set()
        if self.poller is not None:
            self.poller.join(timeout=5.0)
        errors = self.orch.tier_errors
        if not self.orch.closed:
            self.orch.shutdown()
        if self.orch.tier_errors != errors:
            log.error("a secondary tier failed to shut down; the primary region is kept")
            return
        if self.view is not None:
            self.view.release()
            self.view = None
        if self.mmap_region is not None:
            self.mmap_region.cleanup()
            self.mmap_region = None


class EvictableTieringSpec(TieringOffloadingSpec):  # type: ignore[misc]
    """vLLM's tiering spec whose manager is our orchestrator (module doc)."""

    _manager: Any  # vLLM's spec's own cache of the manager it built

    def get_manager(self) -> Any:
        if self._manager:
            return self._manager
        if int(self.extra_config.get("store_threshold", 0)) >= 2:
            raise ValueError("store_threshold is not supported for EvictableTieringSpec")
        name = str(self.eviction_policy)
        policy = POLICIES.get(name.lower())
        if policy is None:
            raise InvalidArgumentError(
                f"EvictableTieringSpec's primary is evictable's CPU manager: eviction_policy "
                f"must be one of {sorted(POLICIES)}, got {name!r}"
            )
        region = SharedOffloadRegion(
            engine_id=self.config.engine_id,
            num_chunks=self.num_chunks,
            rank=None,
            kv_bytes_per_chunk=self.kv_bytes_per_chunk,
            cpu_page_size=self.cpu_page_size_per_worker,
        )
        view = region.create_kv_memoryview()
        tiers: list[Any] = []
        try:
            for entry in self.secondary_tier_configs:
                tiers.append(SecondaryTierFactory.create_secondary_tier(entry, view, self))
            self._manager = EvictableTieringManager(
                self.num_chunks,
                tiers,
                policy,
                enable_events=bool(self.kv_events_config.enable_kv_cache_events),
                tier_poll_interval_s=float(self.tier_poll_interval_s),
                region=region,
                view=view,
                primary_info=dict(self.cpu_info.as_config_info()),
            )
        except Exception:
            for tier in reversed(tiers):
                try:
                    tier.shutdown()
                except Exception:
                    log.exception("a secondary tier failed to shut down")
            view.release()
            region.cleanup()
            raise
        return self._manager
