"""`EvictableLRUPolicy`: LMCache 0.5's LRU as an LMCache cache policy whose victim search
never visits a pinned or read chunk.

The public face, and how to enable it in LMCache, is `evictable.lmcache`; the order
structure is `impl.policies.idle_order`. Importing this module without LMCache raises
the one `ImportError` of `evictable.lmcache`.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any

from lmcache.v1.memory_management import TensorMemoryObj
from lmcache.v1.storage_backend.cache_policy.base_policy import BaseCachePolicy

from evictable.impl.policies.idle_order import IdleOrder

__all__ = ["EvictableLRUPolicy", "IndexMap", "watched_class"]

_WATCH = "_evictable_watch"
"""The attribute a watched memory object carries: (policy, key)."""

_WATCHED: dict[type, type] = {}
"""Each memory object class -> its watched subclass (made once)."""


def _idle(obj: Any) -> bool:
    """LMCache's `can_evict`, read without the object's lock when its counters are plain
    fields (a change made meanwhile notifies again, so the last reading is the truth)."""
    if isinstance(obj, TensorMemoryObj):
        meta = obj.meta
        return bool(meta.pin_count == 0 and meta.ref_count == 1)
    return bool(obj.can_evict)


def _notify(obj: Any) -> None:
    watch = obj.__dict__.get(_WATCH)
    if watch is not None:
        watch[0].changed(watch[1], obj)


def watched_class(cls: type) -> type:
    """The subclass of a memory object class whose pin and reference counter changes
    tell the object's policy (`_notify`): `pin`, `unpin`, `ref_count_up`,
    `ref_count_down`. It adds no field, so an object's class can be switched to it
    and back (`__class__`) while it sits in the index. Complexity: O(1) (cached)."""
    got = _WATCHED.get(cls)
    if got is not None:
        return got

    def pin(self: Any) -> Any:
        out = cls.pin(self)  # type: ignore[attr-defined]
        _notify(self)
        return out

    def unpin(self: Any) -> Any:
        out = cls.unpin(self)  # type: ignore[attr-defined]
        _notify(self)
        return out

    def ref_count_up(self: Any) -> Any:
        out = cls.ref_count_up(self)  # type: ignore[attr-defined]
        _notify(self)
        return out

    def ref_count_down(self: Any) -> Any:
        out = cls.ref_count_down(self)  # type: ignore[attr-defined]
        _notify(self)
        return out

    got = type(
        f"{cls.__name__}_watched",
        (cls,),
        {
            "__slots__": (),
            "__module__": __name__,
            "pin": pin,
            "unpin": unpin,
            "ref_count_up": ref_count_up,
            "ref_count_down": ref_count_down,
        },
    )
    _WATCHED[cls] = got
    return got


class IndexMap(dict):  # type: ignore[type-arg]
    """LMCache's hot cache for `EvictableLRUPolicy`: a dict in LRU order (least recent
    first, as LMCache's LRU `OrderedDict`) that tells its policy of every object that
    enters or leaves it. Lookups are plain dict lookups (C speed)."""

    __slots__ = ("policy",)

    def __init__(self, policy: EvictableLRUPolicy) -> None:
        super().__init__()
        self.policy = policy

    def __setitem__(self, key: Hashable, obj: Any) -> None:
        old = dict.get(self, key)
        if old is not None:
            self.policy.unwatch(key, old)
            dict.__delitem__(self, key)
        dict.__setitem__(self, key, obj)
        self.policy.watch(key, obj)

    def __delitem__(self, key: Hashable) -> None:
        obj = dict.pop(self, key)
        self.policy.unwatch(key, obj)

    _MISSING = object()

    def pop(self, key: Hashable, default: Any = _MISSING) -> Any:
        if key in self:
            obj = dict.pop(self, key)
            self.policy.unwatch(key, obj)
            return obj
        if default is IndexMap._MISSING:
            raise KeyError(key)
        return default

    def popitem(self) -> tuple[Hashable, Any]:
        key, obj = dict.popitem(self)
        self.policy.unwatch(key, obj)
        return key, obj

    def setdefault(self, key: Hashable, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, obj in dict(*args, **kwargs).items():
            self[key] = obj

    def clear(self) -> None:
        for key, obj in list(dict.items(self)):
            self.policy.unwatch(key, obj)
        dict.clear(self)

    def move_to_end(self, key: Hashable) -> None:
        """Make `key` the most recent (LMCache's `OrderedDict.move_to_end`)."""
        dict.__setitem__(self, key, dict.pop(self, key))


class EvictableLRUPolicy(BaseCachePolicy):  # type: ignore[misc]
    """LMCache 0.5's LRU, whose victim search never visits a pinned or read chunk.

    Semantics (LMCache 0.5's `LRUCachePolicy`, exactly): the hot cache is in recency
    order -- a put goes to the most recent end, a hit (`update_on_hit`, from
    `touch_cache`) moves the key there -- and `get_evict_candidates(cache, n)` offers
    the `n` least recent chunks that can be evicted (no lookup pin, no reader: LMCache's
    `can_evict`), fewer when there are fewer, without changing anything.

    Structures: the hot cache is an `IndexMap` (a dict in LRU order) and `order` an
    `IdleOrder` of the same keys whose idle ones are indexed apart. A memory object in
    the cache is switched to its watched class (`watched_class`), whose `pin`, `unpin`,
    `ref_count_up` and `ref_count_down` tell the policy, which re-reads the object's
    counters and links or unlinks the key; an object that leaves the cache gets its
    own class back. So `get_evict_candidates` costs O(n log N) whatever the number of
    pinned or read chunks (LMCache's LRU walks past every one of them, under the
    backend's lock). One lock of its own guards `order`: counters change outside the
    backend's lock (a reader's `ref_count_down`, the pin monitor's forced unpin).

    Differences that are not semantics: a hit on a key no longer cached is ignored
    (LMCache's LRU raises `KeyError` out of `touch_cache`, docs/interop.md), and the
    chunk reuse statistics of LMCache's LRU (`on_chunk_reuse`) are not reported.
    """

    def __init__(self) -> None:
        self.order = IdleOrder()
        self.lock = threading.Lock()
        self.cache = IndexMap(self)

    # ------------------------------------------------------------ the index

    def watch(self, key: Hashable, obj: Any) -> None:
        """`obj` entered the cache under `key` (most recent). Complexity: O(1)."""
        cls = type(obj)
        if cls not in _WATCHED.values():
            obj.__class__ = watched_class(cls)
        obj.__dict__[_WATCH] = (self, key)
        with self.lock:
            self.order.add(key, obj, _idle(obj))

    def unwatch(self, key: Hashable, obj: Any) -> None:
        """`obj` left the cache: its own class back, `key` forgotten. Complexity: O(1)."""
        obj.__dict__.pop(_WATCH, None)
        base = type(obj).__mro__[1]
        if _WATCHED.get(base) is type(obj):
            obj.__class__ = base
        with self.lock:
            if self.order.entries.get(key) is not None:
                self.order.discard(key)

    def changed(self, key: Hashable, obj: Any) -> None:
        """`obj`'s counters changed: re-read them. Complexity: O(log N) at most."""
        with self.lock:
            entry = self.order.entries.get(key)
            if entry is not None and entry.payload is obj:
                self.order.update(key, _idle(obj))

    def evictable_keys(self) -> list[Hashable]:
        """The idle keys, least recent first (for tests and snapshots)."""
        with self.lock:
            return self.order.idle_keys()

    # ------------------------------------------------------------ LMCache's interface

    def init_mutable_mapping(self) -> IndexMap:
        return self.cache

    def update_on_hit(self, key: Hashable, cache_dict: Any) -> None:
        """`key` becomes the most recent; a key no longer cached is ignored."""
        with self.lock:
            if not self.order.hit(key):
                return
        if isinstance(cache_dict, IndexMap) and key in cache_dict:
            cache_dict.move_to_end(key)

    def update_on_put(self, key: Hashable) -> None:
        """Nothing: the put itself (`IndexMap.__setitem__`) placed the key."""

    def update_on_force_evict(self, key: Hashable) -> None:
        """Nothing: the removal from the cache (`IndexMap`) forgets the key."""

    def get_evict_candidates(self, cache_dict: Any, num_candidates: int = 1) -> list[Hashable]:
        """Up to `num_candidates` evictable keys, least recent first; nothing changes."""
        with self.lock:
            return self.order.candidates(num_candidates)
