"""What a call did inside vLLM's `TieringOffloadingManager`, as the record of an
operation (`TieringSnapshot.log`): its lookup holds, answers, evictions, pins and
completions, in order, plus the facts a snapshot cannot read back from vLLM (which
requests a serving tier opened, how often each tier was told a request ended).

`Recorder(adapter)` sets wrappers, as instance attributes, on the manager
(`lookup`, `on_new_request`, `on_request_finished`, `create_store_job`,
`_complete_promotion`), on its primary tier (`prepare_store` and its alias
`prepare_write`, `_prepare_load` -- behind both `prepare_load` and `prepare_read` --,
`complete_store` and its alias `complete_write`) and on each tier
(`on_request_finished`, `serve_external_requests`). A lookup hold is a scan, or one
peer lookup inside a serve: within a serve, a lookup for another request than the
open hold's closes that hold and opens the next (vLLM's p2p server role resolves one
LookupMsg, pins its hits, then takes the next). Every wrapper calls vLLM's own
method with the same arguments and returns what it returns (or lets its exception
through); it only notes what happened. vLLM reaches these through attribute lookups
(`self.manager.lookup`, `self._m.lookup` in its `ParentManager`,
`self.primary_tier.prepare_write`, `self._prepare_load`), so every path is seen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable
from typing import Any

from evictable.model.states import CpuState
from evictable.model.tiering_types import (
    Cascade,
    GpuLoad,
    GpuStore,
    JobId,
    Micro,
    MicroKind,
    PeerStore,
    PendingOwner,
    PinOwner,
    ReqId,
    SubmittedPromotion,
    TierAnswer,
    owner_order,
)

__all__ = ["Recorder"]


class Recorder:
    """The operation log and the side facts of one `VllmTiering` (module docstring)."""

    def __init__(self, adapter: Any) -> None:
        self.adapter = adapter
        self.log: list[Micro] = []
        self.last: tuple[Micro, ...] = ()
        self.origin: dict[str, int] = {}
        """Requests a serving tier opened through its `ParentManager`, and that tier."""
        self.told: Counter[tuple[str, int]] = Counter()
        """(request, tier) -> how many times the tier's `on_request_finished` ran."""
        self.finish_calls: Counter[str] = Counter()
        self.completing: PendingOwner | None = None
        self.hold: str | None = None
        """The request whose lookup hold is open (a scan, or a peer lookup in a serve)."""
        self.serving = False
        self._install()

    # ----------------------------------------------------------------- the log

    def begin(self, call: str) -> None:
        self.log = []

    def end(self) -> None:
        self.last = tuple(self.log)

    def open(self, who: str) -> None:
        self.hold = who
        self.log.append(Micro(MicroKind.OPEN, who=ReqId(who)))

    def close(self) -> None:
        self.hold = None
        self.log.append(Micro(MicroKind.CLOSE))

    # ------------------------------------------------------------- the wrappers

    def _install(self) -> None:
        a = self.adapter
        m, p = a.vllm, a.primary
        _wrap(m, "lookup", self._lookup)
        _wrap(m, "on_new_request", self._on_new_request)
        _wrap(m, "on_request_finished", self._on_request_finished)
        _wrap(m, "create_store_job", self._create_store_job)
        _wrap(m, "_complete_promotion", self._complete_promotion)
        for name in ("prepare_store", "prepare_write"):
            _wrap(p, name, self._prepare_store)
        _wrap(p, "_prepare_load", self._prepare_load)
        for name in ("complete_store", "complete_write"):
            _wrap(p, name, self._complete_store)
        for i, tier in enumerate(a.tiers):
            _wrap(tier, "on_request_finished", self._told(i))
            if type(tier).tolerates_off_thread_polling:
                _wrap(tier, "serve_external_requests", self._serve)

    def _lookup(self, original: Callable[..., Any], key: Hashable, ctx: Any, **kw: Any) -> Any:
        if self.serving and self.hold != ctx.req_id:  # a serve's next peer lookup
            if self.hold is not None:
                self.close()
            self.open(ctx.req_id)
        got = original(key, ctx, **kw)
        self.log.append(
            Micro(MicroKind.LOOKUP, key=self.adapter.key(key), answer=TierAnswer[got.name])
        )
        return got

    def _on_new_request(self, original: Callable[..., Any], ctx: Any, **kw: Any) -> Any:
        if kw.get("exclude_tier_idx") is not None:
            self.origin[ctx.req_id] = int(kw["exclude_tier_idx"])
        return original(ctx, **kw)

    def _on_request_finished(self, original: Callable[..., Any], ctx: Any, **kw: Any) -> Any:
        self.finish_calls[ctx.req_id] += 1
        return original(ctx, **kw)

    def _create_store_job(self, original: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        start = len(self.log)
        job = original(*args, **kw)
        ctx = args[1] if len(args) > 1 else kw["req_context"]
        owner: PinOwner = (
            PeerStore(JobId(int(job.job_id)))
            if ctx.req_id in self.origin
            else Cascade(JobId(int(job.job_id)))
        )
        self.log[start:] = [
            Micro(MicroKind.PIN, key=e.key, owner=owner)
            if e.kind is MicroKind.PIN and e.owner is None
            else e
            for e in self.log[start:]
        ]
        return job

    def _complete_promotion(self, original: Callable[..., Any], meta: Any, result: Any) -> Any:
        self.completing = SubmittedPromotion(JobId(int(meta.transfer_job.job_id)))
        try:
            return original(meta, result)
        finally:
            self.completing = None

    def _prepare_store(self, original: Callable[..., Any], keys: Any, ctx: Any) -> Any:
        out = original(keys, ctx)
        for k in out.evicted_keys if out is not None else ():
            self.log.append(Micro(MicroKind.EVICT, key=self.adapter.key(k), state=CpuState.READY))
        return out

    def _prepare_load(self, original: Callable[..., Any], keys: Any, ctx: Any, **kw: Any) -> Any:
        keys = list(keys)
        before = self._refs(keys)
        owner = GpuLoad(ReqId(ctx.req_id)) if kw.get("record_access") else None
        try:
            return original(keys, ctx, **kw)
        finally:
            after = self._refs(keys)
            for k in dict.fromkeys(keys):
                gained = (after.get(k) or 0) - (before.get(k) or 0)
                for _ in range(max(gained, 0)):
                    self.log.append(Micro(MicroKind.PIN, key=self.adapter.key(k), owner=owner))

    def _complete_store(self, original: Callable[..., Any], keys: Any, ctx: Any, *rest: Any) -> Any:
        keys = list(keys)
        pending = [k for k, r in self._refs(keys).items() if r == -1]
        by: PendingOwner = self.completing or GpuStore(ReqId(ctx.req_id))
        owners = {k: self._owners_before(k, by) for k in pending}
        try:
            return original(keys, ctx, *rest)
        finally:
            for k in pending:
                self.log.append(
                    Micro(
                        MicroKind.COMPLETE,
                        key=self.adapter.key(k),
                        owner=by,
                        owners=owners[k],
                    )
                )

    def _owners_before(self, key: Hashable, by: PendingOwner) -> tuple[PendingOwner, ...]:
        """The pending owners of `key` just before a completion by `by`: vLLM pops a
        promotion job from its table before completing its chunks, so the job being
        completed is put back."""
        owners = self.adapter.pending_owners(self.adapter.key(key))
        if isinstance(by, SubmittedPromotion) and by not in owners:
            owners = tuple(sorted((*owners, by), key=owner_order))
        return tuple(owners)

    def _told(self, index: int) -> Callable[..., Any]:
        def told(original: Callable[..., Any], ctx: Any) -> Any:
            self.told[(ctx.req_id, index)] += 1
            return original(ctx)

        return told

    def _serve(self, original: Callable[..., Any], parent: Any) -> Any:
        self.serving = True
        try:
            return original(parent)
        finally:
            self.end_serve()

    def end_serve(self) -> None:
        """A serve (or a peer's give-up) ends: so does its last peer lookup's hold."""
        self.serving = False
        if self.hold is not None:
            self.close()

    def _refs(self, keys: Iterable[Hashable]) -> dict[Hashable, int | None]:
        policy = self.adapter.primary._policy
        out: dict[Hashable, int | None] = {}
        for k in keys:
            chunk = policy.get(k)
            out[k] = None if chunk is None else int(chunk.ref_cnt)
        return out


def _wrap(obj: Any, name: str, hook: Callable[..., Any]) -> None:
    """Set `obj.name` to call `hook(original, *args, **kwargs)`."""
    original = getattr(obj, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return hook(original, *args, **kwargs)

    setattr(obj, name, wrapper)
