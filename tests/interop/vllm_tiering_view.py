"""Our orchestrator inside vLLM (`evictable.vllm`'s `EvictableTieringManager`) seen
through the names the standalone finding scripts (interop/tiering/) read of vLLM's
own manager, so each script runs unchanged on ours: `as_vllm_spec()` makes vLLM's
`TieringOffloadingSpec.get_manager` build ours, wrapped in `VllmShaped`.

Test support only: the names below are vLLM's, read-only, computed from our
orchestrator's records on every access.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any

from evictable.model.tiering_types import JobKind, RequestPhase

__all__ = ["VllmShaped", "as_vllm_spec"]


class PolicyView:
    """vLLM's policy's `chunks` / `get(key)`: each resident chunk's `ref_cnt`."""

    def __init__(self, m: Any) -> None:
        self.m = m

    @property
    def chunks(self) -> dict[Any, Any]:
        return {
            b.key: SimpleNamespace(ref_cnt=b.ref_cnt) for b in self.m.orch.primary.snapshot().blocks
        }

    def get(self, key: Any) -> Any:
        return self.chunks.get(key)


class PrimaryView:
    """vLLM's primary tier: `lookup(key, ctx)` and `_policy`."""

    def __init__(self, m: Any) -> None:
        self.m = m
        self._policy = PolicyView(m)

    def lookup(self, key: Any, ctx: Any) -> Any:
        from vllm.v1.kv_offload.base import LookupResult

        return LookupResult[self.m.orch.primary.lookup(key).name]


class VllmShaped:
    """Ours, with vLLM's manager's introspection names (module doc)."""

    def __init__(self, m: Any) -> None:
        self.m = m
        self.primary_tier = PrimaryView(m)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.m, name)

    @property
    def _jobs(self) -> dict[int, Any]:
        return {
            int(j): SimpleNamespace(
                transfer_job=SimpleNamespace(
                    keys=list(r.job.keys), is_promotion=r.job.kind is JobKind.PROMOTION
                ),
                tier_idx=int(r.job.tier),
            )
            for j, r in self.m.orch.jobs.items()
        }

    @property
    def _req_state(self) -> dict[str, Any]:
        return {
            str(q): r
            for q, r in self.m.orch.requests.items()
            if r.phase is not RequestPhase.FINALISED
        }

    @property
    def _pending_load_submissions(self) -> dict[int, dict[str, Any]]:
        return {int(t): dict(by_req) for t, by_req in self.m.orch.staged.items() if by_req}

    @property
    def _promotions_held(self) -> bool:
        return bool(self.m.orch.held)


@contextmanager
def as_vllm_spec() -> Iterator[None]:
    """Within the block, vLLM's `TieringOffloadingSpec` builds our orchestrator."""
    from vllm.v1.kv_offload.tiering.spec import TieringOffloadingSpec

    from evictable.vllm.tiering import EvictableTieringSpec

    saved = TieringOffloadingSpec.get_manager

    def ours(spec: Any) -> Any:
        return VllmShaped(EvictableTieringSpec.get_manager(spec))

    TieringOffloadingSpec.get_manager = ours
    try:
        yield
    finally:
        TieringOffloadingSpec.get_manager = saved
