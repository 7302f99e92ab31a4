"""One vLLM 0.33 `SecondaryTierManager` driven on its own, in plain values: what
`evictable check --target tier` holds to the tier contract (`proofs.check.tier`).

`TierDriver(factory)` builds the tier the way vLLM's `SecondaryTierFactory` does:
`factory` is a `SecondaryTierManager` subclass, called with vLLM's arguments
(`offloading_spec`, `primary_kv_view`, `tier_type="checked"`), or any callable
`(offloading_spec, primary_kv_view) -> SecondaryTierManager` (for a tier that needs
configuration: `fs_tier` below gives vLLM's fs tier its `root_dir`). The offloading
spec is vLLM's own `TieringOffloadingSpec` for the smallest CPU configuration
(`tiering_build.offloading_config`); the primary view is `NUM_SLOTS` page-sized rows of
an anonymous, page-aligned mapping (as vLLM's `SharedOffloadRegion` view is), each row
filled with its own byte so a copy is recognisable.

Calls take plain values: keys (vLLM's `OffloadKey` bytes, `K(i)`), job ids, primary
slots, request ids; each is vLLM's method with vLLM's types (`TransferJob`,
`ReqContext`, `ScheduleEndContext`), nothing more, and returns what the tier returned
(a `LookupResult`, an iterable of `JobResult`, of `OffloadingEvent`), unchanged: the
engine reads them by attribute and judges whatever came back.
"""

from __future__ import annotations

import mmap
import shutil
import tempfile
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
from vllm.v1.kv_offload.base import ReqContext, ScheduleEndContext
from vllm.v1.kv_offload.tiering.base import SecondaryTierManager, TransferJob
from vllm.v1.kv_offload.tiering.example.manager import ExampleSecondaryTierManager
from vllm.v1.kv_offload.tiering.fs.manager import FileSystemTierManager
from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec

from evictable.proofs.adapters.vllm.keys import K
from evictable.proofs.adapters.vllm.tiering_build import (
    PAGE,
    offloading_config,
    stub_p2p_transports,
)

__all__ = ["NUM_SLOTS", "K", "TierDriver", "example_tier", "fs_tier", "p2p_prefill_tier"]

NUM_SLOTS = 8
"""Rows of the primary view the driven tier reads and writes."""


def example_tier(offloading_spec: Any, primary_kv_view: memoryview) -> Any:
    """vLLM's example tier (`ExampleSecondaryTierManager`)."""
    return ExampleSecondaryTierManager(offloading_spec, primary_kv_view, "example")


def fs_tier(offloading_spec: Any, primary_kv_view: memoryview) -> Any:
    """vLLM's fs tier (`FileSystemTierManager`) on a fresh temporary directory, removed
    at its shutdown, with one read and one write thread."""
    root = tempfile.mkdtemp(prefix="evictable-tier-")
    tier = FileSystemTierManager(
        offloading_spec, primary_kv_view, "fs", root, n_read_threads=1, n_write_threads=1
    )
    shutdown = tier.shutdown

    def shutdown_and_remove() -> None:
        try:
            shutdown()
        finally:
            shutil.rmtree(root, ignore_errors=True)

    tier.shutdown = shutdown_and_remove
    return tier


def p2p_prefill_tier(offloading_spec: Any, primary_kv_view: memoryview) -> Any:
    """vLLM's p2p tier (`P2PSecondaryTierManager`, its transports stubbed: no network)
    on the prefill side of disaggregated serving: every request names a remote decoder
    (`kv_transfer_params={"remote_decoder": {"kv_request_id": <request id>}}`), so a
    store waits, pinned, for the decoder's fetch -- which never comes here."""
    from vllm.v1.kv_offload.tiering.p2p.manager import P2PSecondaryTierManager

    class PrefillSide(P2PSecondaryTierManager):  # type: ignore[misc]
        def on_new_request(self, req_context: Any) -> Any:
            req_context.kv_transfer_params = {
                "remote_decoder": {"kv_request_id": req_context.req_id}
            }
            return super().on_new_request(req_context)

    with stub_p2p_transports():
        return PrefillSide(offloading_spec, primary_kv_view, "p2p")


_END = ScheduleEndContext(new_req_ids=[], preempted_req_ids=())


class TierDriver:
    """A tier made by `factory`, driven in plain values (see the module docstring)."""

    def __init__(self, factory: Callable[..., Any]) -> None:
        self.spec = TieringOffloadingSpec(offloading_config(NUM_SLOTS, []))
        self.region = mmap.mmap(-1, NUM_SLOTS * PAGE)
        rows = np.frombuffer(self.region, dtype=np.int8).reshape(NUM_SLOTS, PAGE)
        for i in range(NUM_SLOTS):
            rows[i, :] = i + 1
        self.view = rows.data
        if isinstance(factory, type):
            self.tier = factory(self.spec, self.view, "checked")
        else:
            self.tier = factory(self.spec, self.view)
        if not isinstance(self.tier, SecondaryTierManager):
            raise TypeError(
                f"the factory made a {type(self.tier).__name__}, not a vLLM SecondaryTierManager"
            )
        self.contexts: dict[str, Any] = {}

    def _ctx(self, req: str) -> Any:
        ctx = self.contexts.get(req)
        if ctx is None:
            ctx = self.contexts[req] = ReqContext(req_id=req)
        return ctx

    def _job(
        self, job: int, keys: Sequence[Hashable], slots: Sequence[int], req: str, load: bool
    ) -> Any:
        return TransferJob(
            job_id=job,
            keys=list(keys),
            chunk_ids=np.array(list(slots), dtype=np.int32),
            is_promotion=load,
            req_context=self._ctx(req),
        )

    # ------------------------------------------------------------ the tier's API

    def new_request(self, req: str) -> None:
        self.tier.on_new_request(self._ctx(req))

    def request_finished(self, req: str) -> None:
        self.tier.on_request_finished(self._ctx(req))

    def lookup(self, key: Hashable, req: str) -> Any:
        return self.tier.lookup(key, self._ctx(req))

    def submit_store(
        self, job: int, keys: Sequence[Hashable], slots: Sequence[int], req: str
    ) -> None:
        self.tier.submit_store(self._job(job, keys, slots, req, load=False))

    def submit_load(
        self, job: int, keys: Sequence[Hashable], slots: Sequence[int], req: str
    ) -> None:
        self.tier.submit_load(self._job(job, keys, slots, req, load=True))

    def finished(self) -> Any:
        return self.tier.get_finished_jobs()

    def drain(self) -> None:
        self.tier.drain_jobs()

    def end_step(self) -> None:
        self.tier.on_schedule_end(_END)

    def events(self) -> Any:
        return self.tier.take_events()

    def has_pending_work(self) -> bool:
        return bool(self.tier.has_pending_work())

    def shutdown(self) -> None:
        self.tier.shutdown()
