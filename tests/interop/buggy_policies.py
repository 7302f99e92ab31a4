"""Small vLLM cache policies, each with one seeded bug against the policy contract
(`evictable.vllm.EvictableChecked` must catch each), and their correct base."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from vllm.v1.kv_offload.cpu.policies.base import CachePolicy, ChunkStatus

Key = Any


class TinyLRU(CachePolicy):  # type: ignore[misc]
    """A plain LRU: chunks least recent first; eviction scans for idle, unprotected."""

    def __init__(self, cache_capacity: int) -> None:
        super().__init__(cache_capacity)
        self.chunks: OrderedDict[Key, ChunkStatus] = OrderedDict()

    def get(self, key: Key) -> ChunkStatus | None:
        return self.chunks.get(key)

    def insert(self, key: Key, chunk: ChunkStatus, req_context: Any) -> None:
        self.chunks[key] = chunk

    def remove(self, key: Key) -> None:
        self.chunks.pop(key, None)

    def touch(self, keys: Iterable[Key], req_context: Any) -> None:
        for key in reversed(list(keys)):
            if key in self.chunks:
                self.chunks.move_to_end(key)

    def candidates(self, protected: set[Key]) -> list[Key]:
        return [k for k, c in self.chunks.items() if c.ref_cnt == 0 and k not in protected]

    def evict(self, n: int, protected: set[Key]) -> list[tuple[Key, ChunkStatus]] | None:
        chosen = self.candidates(protected)[:n]
        if len(chosen) < n:
            return None
        return [(k, self.chunks.pop(k)) for k in chosen]

    def clear(self) -> None:
        self.chunks.clear()


class EvictsProtected(TinyLRU):
    """Seeded bug: eviction ignores `protected`."""

    def candidates(self, protected: set[Key]) -> list[Key]:
        return [k for k, c in self.chunks.items() if c.ref_cnt == 0]


class EvictsPinned(TinyLRU):
    """Seeded bug: eviction takes any ready chunk, pinned ones included."""

    def candidates(self, protected: set[Key]) -> list[Key]:
        return [k for k, c in self.chunks.items() if c.ref_cnt >= 0 and k not in protected]


class NotAtomic(TinyLRU):
    """Seeded bug: a refused eviction has already removed what it found."""

    def evict(self, n: int, protected: set[Key]) -> list[tuple[Key, ChunkStatus]] | None:
        chosen = [(k, self.chunks.pop(k)) for k in self.candidates(protected)[:n]]
        return chosen if len(chosen) == n else None


class KeepsVictims(TinyLRU):
    """Seeded bug: victims are reported but stay resident."""

    def evict(self, n: int, protected: set[Key]) -> list[tuple[Key, ChunkStatus]] | None:
        chosen = self.candidates(protected)[:n]
        if len(chosen) < n:
            return None
        return [(k, self.chunks[k]) for k in chosen]
