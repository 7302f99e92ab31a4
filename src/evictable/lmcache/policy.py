"""`EvictableLRUPolicy`: LMCache 0.5's LRU as an LMCache cache policy whose victim search
never visits a pinned or read chunk.

The public face, and how to enable it in LMCache, is `evictable.lmcache`; the order
structure is `impl.policies.idle_order`. Importing this module without LMCache raises
the one `ImportError` of `evictable.lmcache`.
"""

from __future__ import annotations

import importlib
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

try:
    from lmcache.v1.memory_management import TensorMemoryObj
    from lmcache.v1.storage_backend.cache_policy.base_policy import BaseCachePolicy
except ImportError:  # without LMCache: the adapters' one clear ImportError instead
    importlib.import_module("evictable.proofs.adapters.lmcache")
    raise

from evictable.impl.policies.idle_order import IdleOrder
from evictable.impl.policies.rank_index import RankEntry

__all__ = ["EvictableLRUPolicy", "IndexMap", "watched_class"]

_WATCH = "_evictable_watch"
"""The attribute a watched memory object carries: (its policy's `dirty.append`, its
`RankEntry`)."""

_WATCHED: dict[type, type] = {}
"""Each memory object class -> its watched subclass (made once)."""

_ORIGINAL: dict[type, type] = {}
"""Each watched subclass -> the class it watches."""

_MISSING = object()


def _idle(obj: Any) -> bool:
    """LMCache's `can_evict`, read without the object's lock when its counters are plain
    fields (a change made meanwhile notifies again, so the last reading is the truth)."""
    if isinstance(obj, TensorMemoryObj):
        meta = obj.meta
        return bool(meta.pin_count == 0 and meta.ref_count == 1)
    return bool(obj.can_evict)


def _busy(entry: RankEntry) -> bool:
    """Whether the entry's object is pinned or read now (not LMCache's `can_evict`)."""
    obj: Any = entry.payload
    if type(obj) is _TENSOR_WATCHED:
        meta = obj.meta
        return not (meta.pin_count == 0 and meta.ref_count == 1)
    return not _idle(obj)


_COUNTERS = ("pin", "unpin", "ref_count_up", "ref_count_down")
"""The memory object's methods that change its pin and reference counters."""


def _marking(base: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`base` (one of `_COUNTERS`), then the object's parked entry marked: it may be
    idle again (see `watched_class`)."""

    def method(self: Any) -> Any:
        out = base(self)
        watch = self.__dict__.get(_WATCH)
        if watch is not None:
            entry = watch[1]
            if entry.prev is None and not entry.heaped:  # parked: it may be idle again
                watch[0](entry)
        return out

    method.__name__ = method.__qualname__ = base.__name__
    return method


def watched_class(cls: type) -> type:
    """The subclass of a memory object class whose pin and reference counter changes
    mark the object's entry in its policy when the entry is parked (found busy by a
    victim search; `impl.policies.idle_order`): an atomic deque append, safe from any
    thread, that the policy drains, re-reading the counters, before it next looks for
    victims. The four: `pin`, `unpin`, `ref_count_up`, `ref_count_down`. It adds no field, so an
    object's class can be switched to it (`__class__`) when it enters the index.
    Complexity: O(1) (cached)."""
    got = _WATCHED.get(cls)
    if got is not None:
        return got
    marked = {name: _marking(getattr(cls, name)) for name in _COUNTERS}
    got = type(
        f"{cls.__name__}_watched",
        (cls,),
        {
            "__slots__": (),
            "__module__": __name__,
            **marked,
        },
    )
    _WATCHED[cls] = got
    _ORIGINAL[got] = cls
    return got


_TENSOR_WATCHED: Any = watched_class(TensorMemoryObj)
"""The watched class of LMCache's usual memory object (the fast path of `_idle`)."""


class IndexMap(dict):  # type: ignore[type-arg]
    """LMCache's hot cache for `EvictableLRUPolicy`: a dict in LRU order (least recent
    first, as LMCache's LRU `OrderedDict`) that tells its policy of every object that
    enters or leaves it. Lookups are plain dict lookups (C speed); every change hashes
    the key once, as the dict would."""

    __slots__ = ("policy",)

    def __init__(self, policy: EvictableLRUPolicy) -> None:
        super().__init__()
        self.policy = policy

    def __setitem__(self, key: Hashable, obj: Any) -> None:
        old = dict.setdefault(self, key, obj)
        if old is not obj:  # a replacement (LMCache never makes one): keeps its place
            self.policy.unwatch(old)
            dict.__setitem__(self, key, obj)
        if type(obj) is not _TENSOR_WATCHED:  # the usual case inlined: `policy.watch`
            self.policy.watch(key, obj)
            return
        policy = self.policy
        order = policy.order
        order.rank += 1
        entry = RankEntry(key, obj, order.rank)  # IdleOrder.add: believed idle
        order.size += 1
        order.idle.admit(entry)
        obj.__dict__[_WATCH] = (policy.dirty.append, entry)

    def __delitem__(self, key: Hashable) -> None:
        self.policy.unwatch(dict.pop(self, key))

    def pop(self, key: Hashable, default: Any = _MISSING) -> Any:
        obj = dict.pop(self, key, _MISSING)
        if obj is _MISSING:
            if default is _MISSING:
                raise KeyError(key)
            return default
        watch = obj.__dict__.pop(_WATCH, None)  # `policy.unwatch`, inlined
        if watch is not None:
            entry = watch[1]
            order = self.policy.order
            order.idle.discard(entry)
            order.size -= 1
            entry.payload = None
        return obj

    def popitem(self) -> tuple[Hashable, Any]:
        key, obj = dict.popitem(self)
        self.policy.unwatch(obj)
        return key, obj

    def setdefault(self, key: Hashable, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return dict.__getitem__(self, key)

    def update(self, *args: Any, **kwargs: Any) -> None:
        for key, obj in dict(*args, **kwargs).items():
            self[key] = obj

    def clear(self) -> None:
        for obj in list(dict.values(self)):
            self.policy.unwatch(obj)
        dict.clear(self)

    def move_to_end(self, key: Hashable) -> None:
        """Make `key` the most recent (LMCache's `OrderedDict.move_to_end`)."""
        dict.__setitem__(self, key, dict.pop(self, key))


class EvictableLRUPolicy(BaseCachePolicy):  # type: ignore[misc]
    """LMCache 0.5's LRU, whose victim search does not walk past pinned or read chunks.

    Semantics (LMCache 0.5's `LRUCachePolicy`, exactly): the hot cache is in recency
    order -- a put goes to the most recent end, a hit (`update_on_hit`, from
    `touch_cache`) moves the key there -- and `get_evict_candidates(cache, n)` offers
    the `n` least recent chunks that can be evicted (no lookup pin, no reader: LMCache's
    `can_evict`), fewer when there are fewer, without changing the cache.

    Structures: the hot cache is an `IndexMap` (a dict in LRU order) and `order` an
    `IdleOrder` (`impl.policies.idle_order`) of the same chunks, those believed idle
    indexed apart in that order. A victim search takes the least recent believed-idle
    chunk and reads its counters; a busy one is *parked* (out of the index) and not
    visited again until its counters change. A memory object in the cache is switched
    to its watched class (`watched_class`), whose `pin`, `unpin`, `ref_count_up` and
    `ref_count_down` mark the object's entry when it is parked; marked entries whose
    object is idle again go back to their place before the next search. An object that
    leaves the cache is forgotten (it keeps the watched class, which then marks
    nothing). So each busy chunk is visited at most once per busy period, and finding
    `n` victims costs O(n log N) amortised whatever the number of pinned or read chunks
    (LMCache's LRU walks past every one of them at every eviction, under the backend's
    lock).

    Threads: `LocalCPUBackend` changes its hot cache and asks for victims only under
    its own lock (`cpu_lock`), so `order` is changed there only. Counters change on any
    thread (a reader's `ref_count_down`, the pin monitor's forced unpin); a change marks
    a parked entry with an atomic deque append (`dirty`). Parking reads the counters
    once more after the entry left the index, so a change made meanwhile by a thread
    that still saw it indexed is not lost.

    Differences that are not semantics: a hit on a key no longer cached is ignored
    (LMCache's LRU raises `KeyError` out of `touch_cache`, docs/interop.md), and the
    chunk reuse statistics of LMCache's LRU (`on_chunk_reuse`) are not reported.
    """

    def __init__(self) -> None:
        self.order = IdleOrder()
        self.dirty: deque[RankEntry] = deque()
        self.cache = IndexMap(self)

    # ------------------------------------------------------------ the index

    def watch(self, key: Hashable, obj: Any) -> None:
        """`obj` entered the cache under `key` (most recent). Complexity: O(1)."""
        cls = type(obj)
        if cls not in _ORIGINAL:
            obj.__class__ = watched_class(cls)
        entry = self.order.add(key, obj)
        obj.__dict__[_WATCH] = (self.dirty.append, entry)

    def unwatch(self, obj: Any) -> None:
        """`obj` left the cache: its entry forgotten. It keeps its watched class (a
        change of its counters finds no watch and tells nobody), so that an object the
        allocator hands out again costs no second switch. Complexity: O(1)."""
        watch = obj.__dict__.pop(_WATCH, None)
        if watch is not None:
            entry = watch[1]
            order = self.order
            order.idle.discard(entry)  # IdleOrder.discard, inlined (the hot path)
            order.size -= 1
            entry.payload = None  # a dirty mark left behind is skipped

    def drain(self) -> None:
        """Believe idle again every parked entry marked since the last drain whose object
        is idle now. Complexity: O(1) amortised per mark (paid by the change that made it)."""
        dirty, order = self.dirty, self.order
        while dirty:
            entry = dirty.popleft()
            if entry.payload is not None and not _busy(entry):
                order.mark_idle(entry)

    def evictable_keys(self) -> list[Hashable]:
        """The idle keys, least recent first (for tests and snapshots)."""
        self.drain()
        return [e.key for e in self.order.idle_entries() if not _busy(e)]

    # ------------------------------------------------------------ LMCache's interface

    def init_mutable_mapping(self) -> IndexMap:
        return self.cache

    def update_on_hit(self, key: Hashable, cache_dict: Any) -> None:
        """`key` becomes the most recent; a key no longer cached is ignored."""
        obj = dict.get(self.cache, key)
        watch = None if obj is None else obj.__dict__.get(_WATCH)
        if watch is None:
            return
        self.order.hit(watch[1])
        self.cache.move_to_end(key)

    def update_on_put(self, key: Hashable) -> None:
        """Nothing: the put itself (`IndexMap.__setitem__`) placed the key."""

    def update_on_force_evict(self, key: Hashable) -> None:
        """Nothing: the removal from the cache (`IndexMap`) forgets the key."""

    def get_evict_candidates(self, cache_dict: Any, num_candidates: int = 1) -> list[Hashable]:
        """Up to `num_candidates` evictable keys, least recent first; nothing changes."""
        if self.dirty:
            self.drain()
        if num_candidates == 1:  # LocalCPUBackend.allocate's one victim at a time
            first = self.order.first(_busy)
            return [] if first is None else [first.key]
        return [entry.key for entry in self.order.candidates(num_candidates, _busy)]
