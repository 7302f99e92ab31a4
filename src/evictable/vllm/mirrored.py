"""A checking mode for vLLM 0.33's CI: `CheckedOffloadingSpec`, vLLM's CPU offloading
spec whose manager is vLLM's own, mirrored call by call on the model.

Enable it through vLLM's out-of-tree spec loader (no fork):

    kv_connector_extra_config={
        "spec_name": "CheckedOffloadingSpec",
        "spec_module_path": "evictable.vllm",
        "cpu_bytes_to_use": ...,                 # as for vLLM's CPU spec
        "mirror_on_violation": "raise",          # or "log"
    }

Everything else is vLLM's `CPUOffloadingSpec` (the same extra-config keys, the same
worker). Its scheduler-side manager is vLLM's `CPUOffloadingManager`, wrapped in a
`MirroredManager`: each call (`lookup`, `prepare_load`, `touch`, `complete_load`,
`prepare_store`, `complete_store`, `reset_cache`, `take_events`) runs on vLLM's
manager and then on the model (the `vllm-0.33` profile under the safety contract,
`proofs.base.safety.FollowingVllm033`: the victims and slots vLLM chooses are
followed, the lifecycle, the slots' partition, atomicity and the counters are
compared), and both states are compared with the conformance engine's comparator
(`proofs.base.cpu_contract`). The first divergence raises -- or logs, with
`mirror_on_violation="log"` (logger `evictable.vllm`, and `MirroredManager.violations`)
-- a `MirrorDivergenceError` naming the call, its keys, what broke and both sides'
answers and key states; after it the mirror stops (the two sides no longer share a
state) and calls go straight to vLLM. vLLM's own answer (or exception) is what the
caller gets, in raise mode after the error is raised instead.

Cost: two snapshots of each side per call, O(resident chunks): a checking mode for
CI and tests, not for serving (bench/ measures it).
"""

from __future__ import annotations

# first, before the adapters import vLLM: vLLM 0.33 present, or one clear ImportError
from evictable.vllm.base import VLLM_VERSION  # noqa: F401

# isort: split
import logging
from collections.abc import Callable, Collection, Sequence
from typing import Any

from evictable.model.errors import MirrorDivergenceError
from evictable.model.types import Key, LookupResult, ManagerSnapshot
from evictable.proofs.adapters.vllm.manager import (
    VllmManager,
    lru_manager,
    translate_events,
    translate_store,
)
from evictable.proofs.base.compare import Mismatch, Reply, describe
from evictable.proofs.base.contract import Contract, resolve
from evictable.proofs.base.cpu_contract import (
    Side,
    judge_call,
    judge_state,
    make_model,
    model_reply,
    observe,
)

__all__ = ["CheckedOffloadingSpec", "MirroredManager", "mirror_contract"]

from vllm.v1.kv_offload.base import ReqContext
from vllm.v1.kv_offload.cpu.manager import CPUOffloadingManager
from vllm.v1.kv_offload.cpu.spec import CPUOffloadingSpec

LOG = logging.getLogger("evictable.vllm")


def mirror_contract() -> Contract:
    """The contract the mirror holds vLLM's manager to: the shipped adapter's (safety,
    any exception as a rejection, vLLM's key format) under the `vllm-0.33` profile."""
    return resolve(lru_manager, profile="vllm-0.33")


def _key_states(snap: ManagerSnapshot | None, keys: Sequence[Key]) -> str:
    if snap is None:
        return "?"
    have = {e.key: e for e in snap.blocks}
    parts = []
    for key in dict.fromkeys(keys):
        e = have.get(key)
        parts.append(f"{key!r} absent" if e is None else f"{key!r} {e.state.name} ref {e.ref_cnt}")
    counters = f"evictable {snap.num_evictable}, pending {snap.num_pending}"
    return "; ".join([*parts, counters])


class MirroredManager:
    """vLLM's manager (`vllm`), every call mirrored on the model (see the module doc).

    `violations` lists the divergences seen (log mode); `diverged` is set at the first.
    Any attribute it does not define reads through to vLLM's manager.
    """

    def __init__(self, manager: CPUOffloadingManager, on_violation: str = "raise") -> None:
        if on_violation not in ("raise", "log"):
            raise ValueError(f"on_violation must be 'raise' or 'log', not {on_violation!r}")
        self.vllm = manager
        self.on_violation = on_violation
        self.view = VllmManager.around(manager)
        self.contract = mirror_contract()
        self.model = make_model(
            self.contract, self.view.num_blocks, "lru", manager.events is not None
        )
        self.violations: list[MirrorDivergenceError] = []
        self.diverged = False

    def __getattr__(self, name: str) -> Any:
        vllm = self.__dict__.get("vllm")
        if vllm is None:
            raise AttributeError(name)
        return getattr(vllm, name)

    # ------------------------------------------------------------ the mirror

    def _mirror(
        self,
        method: str,
        args: tuple[Any, ...],
        call: Callable[[], Any],
        translate: Callable[[Any], Any],
    ) -> Any:
        if self.diverged:
            return call()
        keys: list[Key] = list(args[0]) if args and isinstance(args[0], list) else []
        m_pre, i_pre = self._sides(keys)
        raised: Exception | None = None
        try:
            raw = call()
        except Exception as exc:
            ri, raised = Reply(True, exc), exc
        else:
            ri, raised = Reply(False, translate(raw)), None
        rm = model_reply(self.contract, self.model, method, lambda: (args, {}), ri)
        m_post, i_post = self._sides(keys)
        model_before = m_pre.full if m_pre.full is not None else self.model.snapshot()
        every = judge_call(
            self.contract, method, args, rm, ri, m_pre, i_pre, m_post, i_post, model_before
        )
        found = every[0] if every else None
        if found is None:
            found = judge_state(self.contract, self.model, self.view, m_post, i_post, deep=False)
        if found is not None:
            self._diverged(method, keys, found, rm, ri, m_post, i_post)
        if raised is not None:
            raise raised
        return raw

    def _sides(self, keys: Sequence[Key]) -> tuple[Side, Side]:
        return (
            observe(self.contract, self.model, keys, True),
            observe(self.contract, self.view, keys, True),
        )

    def _diverged(
        self,
        method: str,
        keys: Sequence[Key],
        found: Mismatch,
        rm: Reply,
        ri: Reply,
        m_post: Side,
        i_post: Side,
    ) -> None:
        self.diverged = True
        err = MirrorDivergenceError(
            method,
            found.kind.value,
            keys,
            found.reason,
            f"{describe(rm)}; {_key_states(m_post.full, keys)}",
            f"{describe(ri)}; {_key_states(i_post.full, keys)}",
        )
        if self.on_violation == "raise":
            raise err
        self.violations.append(err)
        LOG.error("vLLM's manager diverged from the model: %s", err)

    # ------------------------------------------------------------ vLLM's manager API

    def lookup(self, key: Key, req_context: ReqContext) -> Any:
        return self._mirror(
            "lookup",
            (key,),
            lambda: self.vllm.lookup(key, req_context),
            lambda got: LookupResult[got.name],
        )

    def prepare_load(self, keys: Collection[Key], req_context: ReqContext) -> Any:
        batch = list(keys)
        return self._mirror(
            "prepare_load",
            (batch,),
            lambda: self.vllm.prepare_load(batch, req_context),
            lambda spec: [int(s) for s in spec.block_ids],
        )

    def touch(self, keys: Collection[Key], req_context: ReqContext) -> None:
        batch = list(keys)
        self._mirror(
            "touch", (batch,), lambda: self.vllm.touch(batch, req_context), lambda got: got
        )

    def complete_load(self, keys: Collection[Key], req_context: ReqContext) -> None:
        batch = list(keys)
        self._mirror(
            "complete_load",
            (batch,),
            lambda: self.vllm.complete_load(batch, req_context),
            lambda got: got,
        )

    def prepare_store(self, keys: Collection[Key], req_context: ReqContext) -> Any:
        batch = list(keys)
        return self._mirror(
            "prepare_store",
            (batch,),
            lambda: self.vllm.prepare_store(batch, req_context),
            translate_store,
        )

    def complete_store(
        self, keys: Collection[Key], req_context: ReqContext, success: bool = True
    ) -> None:
        batch = list(keys)
        self._mirror(
            "complete_store",
            (batch, success),
            lambda: self.vllm.complete_store(batch, req_context, success),
            lambda got: got,
        )

    def reset_cache(self) -> None:
        self._mirror("reset_cache", (), self.vllm.reset_cache, lambda got: got)

    def take_events(self) -> list[Any]:
        return self._mirror(  # type: ignore[no-any-return]
            "take_events", (), lambda: list(self.vllm.take_events()), translate_events
        )


class CheckedOffloadingSpec(CPUOffloadingSpec):  # type: ignore[misc]
    """vLLM's CPU offloading spec whose manager is mirrored on the model (see the
    module doc); `mirror_on_violation` in the extra config: `raise` (default) or `log`."""

    def get_manager(self) -> Any:
        got = self.__dict__.get("_mirrored")
        if got is None:
            how = str(self.extra_config.get("mirror_on_violation", "raise"))
            got = MirroredManager(super().get_manager(), how)
            self._mirrored = got
        return got
