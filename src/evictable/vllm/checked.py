"""A checking mode for vLLM 0.33's CI: `EvictableChecked`, a cache policy that wraps
any other and holds every hook call to the policy contract as it happens.

Enable it in vLLM through its own out-of-tree policy loader (no fork):

    kv_connector_extra_config={
        "eviction_policy": "EvictableChecked(arc, raise)",
        "cache_policy_module_path": "evictable.vllm",
    }

The name carries the options, since vLLM builds a policy from its name and
capacity only: `EvictableChecked` alone wraps vLLM's `lru` and raises;
`EvictableChecked(<policy>[, raise|log])` wraps `<policy>`: a name vLLM's factory
knows (`lru`, `arc`), one of `evictable.vllm` (`EvictableLRU`, `EvictableARC`), or
`module:Class` for any other. From Python: `EvictableChecked.of(policy, on_violation)`.

The clauses (each a `PolicyContractError` naming the call, the clause, the keys and
what was seen):

* `insert` -- no second insert of a resident key;
* `remove` -- only of a pending chunk (ref count -1);
* `mark_evictable` -- only at ref 0, of a resident chunk not already evictable;
* `mark_non_evictable` -- only of an evictable chunk, still at ref 0 (leaving it);
* `evict(n, protected)` -- `n` distinct resident chunks, none pinned, pending or
  protected, none left resident; `None` only when fewer than `n` idle unprotected
  chunks exist, and then nothing changed (membership, and the policy's own order
  where it exposes one: ARC's lists and target, an LRU's ranks);
* `get` -- the chunk inserted for the key, or None when it is not resident.

With `raise`, a caller's violation (insert, remove, the marks) raises before the
wrapped policy sees the call (nothing changes); a policy's violation (evict, get)
raises after its call, with the policy as it left itself. With `log`, each is logged
(logger `evictable.vllm`) and kept in `violations`, and every call goes through.

Cost: O(1) per hook call besides the wrapped policy's, O(|protected|) per `evict`,
plus O(n) for a refused eviction (its atomicity is checked against a fingerprint).
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from evictable.model.errors import PolicyContractError
from evictable.vllm.arc import EvictableARC
from evictable.vllm.base import (  # vLLM 0.33 present, or one clear ImportError
    CachePolicy,
    ChunkStatus,
    OffloadKey,
    ReqContext,
)
from evictable.vllm.lru import EvictableLRU

__all__ = ["ON_VIOLATION", "EvictableChecked", "checked_policy_class", "resolve_policy"]

ON_VIOLATION = ("raise", "log")
"""What a violation does: raise it, or log it and carry on."""

LOG = logging.getLogger("evictable.vllm")

OURS: dict[str, type[Any]] = {"EvictableLRU": EvictableLRU, "EvictableARC": EvictableARC}
"""The policies of `evictable.vllm`, by the name a config gives them."""

_NAME = re.compile(r"^EvictableChecked\(\s*([^,()\s]+)\s*(?:,\s*(raise|log)\s*)?\)$")


def resolve_policy(name: str) -> type[Any]:
    """The cache-policy class `name` names: `module:Class`, a class of
    `evictable.vllm`, or a name vLLM's factory knows. Raises `ValueError`."""
    if ":" in name:
        module, _, cls = name.partition(":")
        got = getattr(importlib.import_module(module), cls, None)
    else:
        got = OURS.get(name)
        if got is None:
            from vllm.v1.kv_offload.cpu.policies.factory import CachePolicyFactory

            got = CachePolicyFactory.get_cache_policy_cls(name)
    if not (isinstance(got, type) and issubclass(got, CachePolicy)):
        raise ValueError(f"{name!r} names no vLLM cache policy")
    return got


_CLASSES: dict[tuple[str, str], type[EvictableChecked]] = {}


def checked_policy_class(name: str) -> type[EvictableChecked] | None:
    """The class `EvictableChecked(<policy>[, raise|log])` names, or None when `name`
    is not of that form."""
    m = _NAME.match(name)
    if m is None:
        return None
    return EvictableChecked.of(m.group(1), m.group(2) or "raise")


def _fingerprint(policy: Any, keys: Iterable[OffloadKey]) -> tuple[Any, ...]:
    """What a refused eviction must leave as it was: each key's chunk, and the
    policy's order where it exposes one. Complexity: O(n)."""
    parts: list[Any] = [tuple((k, id(policy.get(k))) for k in keys)]
    if all(hasattr(policy, n) for n in ("t1", "t2", "b1", "b2")):
        parts += [tuple(policy.t1), tuple(policy.t2), tuple(policy.b1), tuple(policy.b2)]
        parts.append(getattr(policy, "target_t1_size", None))
    evictable_keys = getattr(policy, "evictable_keys", None)
    if callable(evictable_keys):
        parts.append(tuple(evictable_keys()))
    ranks = getattr(policy, "_ranks", None)
    if isinstance(ranks, dict):
        parts.append(tuple(sorted(ranks.items(), key=repr)))
    return tuple(parts)


class EvictableChecked(CachePolicy):  # type: ignore[misc]
    """A vLLM cache policy that forwards every hook to a wrapped one (`inner`) and
    holds each call to the policy contract (see the module doc).

    Class options (set by `of`): `policy` (which policy to wrap) and
    `on_violation` (`raise` or `log`). `violations` lists what was seen (log mode).
    Attributes the wrapper lacks (ARC's `t1`, `t2`, `b1`, `b2`, `target_t1_size`)
    read through to the wrapped policy.
    """

    policy: ClassVar[str] = "lru"
    on_violation: ClassVar[str] = "raise"

    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.inner: Any = resolve_policy(self.policy)(cache_capacity=cache_capacity)
        self.chunks: dict[OffloadKey, ChunkStatus] = {}
        self.idle: set[OffloadKey] = set()
        self.violations: list[PolicyContractError] = []

    @classmethod
    def of(cls, policy: str = "lru", on_violation: str = "raise") -> type[EvictableChecked]:
        """The checked policy wrapping `policy`, violations raised or logged. The
        wrapped class is resolved now: an unknown name raises `ValueError`."""
        if on_violation not in ON_VIOLATION:
            raise ValueError(f"on_violation must be one of {ON_VIOLATION}, not {on_violation!r}")
        resolve_policy(policy)
        key = (policy, on_violation)
        got = _CLASSES.get(key)
        if got is None:
            name = f"EvictableChecked({policy}, {on_violation})"
            got = type(name, (cls,), {"policy": policy, "on_violation": on_violation})
            _CLASSES[key] = got
        return got

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__.get("inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    # ------------------------------------------------------------ violations

    def _violated(self, call: str, clause: str, keys: Sequence[OffloadKey], detail: str) -> None:
        err = PolicyContractError(call, clause, keys, detail)
        if self.on_violation == "raise":
            raise err
        self.violations.append(err)
        LOG.error("policy contract violated: %s", err)

    def _state(self, key: OffloadKey) -> str:
        chunk = self.chunks.get(key)
        if chunk is None:
            return "not resident"
        idle = "evictable" if key in self.idle else "not evictable"
        return f"ref {chunk.ref_cnt}, {idle}"

    # ------------------------------------------------------------ hooks

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        got = self.inner.get(key)
        mine = self.chunks.get(key)
        if got is not mine:
            self._violated(
                "get", "get answers the chunk inserted", [key], f"got {got!r}, inserted {mine!r}"
            )
        return got

    def insert(self, key: OffloadKey, chunk: ChunkStatus, req_context: ReqContext) -> None:
        if key in self.chunks:
            self._violated("insert", "no second insert of a resident key", [key], self._state(key))
        self.inner.insert(key, chunk, req_context)
        self.chunks[key] = chunk
        self.idle.discard(key)

    def remove(self, key: OffloadKey) -> None:
        chunk = self.chunks.get(key)
        if chunk is None or chunk.ref_cnt != -1:
            self._violated("remove", "remove only of a pending chunk", [key], self._state(key))
        self.inner.remove(key)
        self.chunks.pop(key, None)
        self.idle.discard(key)

    def touch(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        self.inner.touch(keys, req_context)

    def on_store_miss(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        self.inner.on_store_miss(keys, req_context)

    def on_request_access(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        self.inner.on_request_access(keys, req_context)

    def on_request_finished(self, *args: Any, **kwargs: Any) -> None:
        self.inner.on_request_finished(*args, **kwargs)

    def mark_evictable(self, key: OffloadKey) -> None:
        chunk = self.chunks.get(key)
        if chunk is None or chunk.ref_cnt != 0 or key in self.idle:
            self._violated(
                "mark_evictable", "mark_evictable only at ref 0", [key], self._state(key)
            )
        self.inner.mark_evictable(key)
        if key in self.chunks:
            self.idle.add(key)

    def mark_non_evictable(self, key: OffloadKey) -> None:
        chunk = self.chunks.get(key)
        if chunk is None or key not in self.idle or chunk.ref_cnt != 0:
            self._violated(
                "mark_non_evictable",
                "mark_non_evictable only when leaving ref 0",
                [key],
                self._state(key),
            )
        self.inner.mark_non_evictable(key)
        self.idle.discard(key)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        shielded = sum(1 for k in protected if k in self.idle)
        room = len(self.idle) - shielded
        before = _fingerprint(self.inner, self.chunks) if room < n else None
        got = self.inner.evict(n, protected)
        if got is None:
            if room >= n:
                self._violated(
                    "evict",
                    "evict refuses only when fewer than n idle unprotected chunks exist",
                    [],
                    f"refused n={n} with {room} idle unprotected chunk(s)",
                )
            after = _fingerprint(self.inner, self.chunks)
            if before is not None:
                changed = after != before
            else:
                changed = after[0] != tuple((k, id(c)) for k, c in self.chunks.items())
            if changed:
                self._violated(
                    "evict", "a refused eviction changes nothing", [], f"n={n}: state changed"
                )
            return None
        self._check_victims(n, protected, got)
        for key, _ in got:
            self.chunks.pop(key, None)
            self.idle.discard(key)
        return got  # type: ignore[no-any-return]

    def _check_victims(
        self, n: int, protected: set[OffloadKey], got: list[tuple[OffloadKey, ChunkStatus]]
    ) -> None:
        keys = [k for k, _ in got]
        if len(keys) != n or len(set(keys)) != n:
            self._violated("evict", "evict returns n distinct chunks", keys, f"n={n}")
        for key, chunk in got:
            mine = self.chunks.get(key)
            if mine is None or mine is not chunk:
                self._violated(
                    "evict", "evict returns resident chunks", [key], f"{key!r} is not resident"
                )
            elif key in protected:
                self._violated(
                    "evict", "evict never returns a protected chunk", [key], self._state(key)
                )
            elif chunk.ref_cnt != 0 or key not in self.idle:
                self._violated(
                    "evict",
                    "evict never returns a pinned or pending chunk",
                    [key],
                    self._state(key),
                )
            elif self.inner.get(key) is not None:
                self._violated(
                    "evict", "an evicted chunk is no longer resident", [key], "still resident"
                )

    def clear(self) -> None:
        self.inner.clear()
        self.chunks.clear()
        self.idle.clear()
