"""`EvictableLRU`: vLLM 0.33's request-scoped LRU as a vLLM cache policy whose eviction
never visits a pinned chunk (loaded by vLLM as `evictable.vllm.EvictableLRU`).

The public face, and how to enable it in vLLM, is `evictable.vllm`; the order
structure is `impl.policies.rank_index`. Importing this module without vLLM raises
the one `ImportError` of `evictable.vllm.base`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from evictable.impl.policies.rank_index import RankEntry, RankIndex
from evictable.vllm.base import (  # vLLM 0.33 present, or one clear ImportError
    CachePolicy,
    ChunkStatus,
    ChunkView,
    OffloadKey,
    ReqContext,
    order_request_keys,
)

__all__ = ["EvictableLRU"]


@dataclass(slots=True)
class _RequestRank:
    """A request's LRU rank, kept on its `ReqContext` (one per policy and cache generation)."""

    owner: object
    cache_generation: int
    rank: int


class EvictableLRU(CachePolicy):  # type: ignore[misc]
    """vLLM 0.33's request-scoped LRU, whose eviction never visits a pinned chunk.

    Semantics (vLLM 0.33's `LRUCachePolicy`, exactly): every resident key has a rank
    `(r, p)`; eviction takes idle (ref 0) unprotected keys in increasing
    `(r, p, key)`. A key gets a fresh global rank `(next, 0)` when it is inserted
    without a token position, touched, or finished by a request (keys in the
    request's prefix order, walked tail first, so the head ends most recent); a key
    stored or read at a token position gets its request's rank `(R, -position)`
    (`R` drawn once per request), so within one unfinished request tails go before
    heads. Ranks change while a chunk is pinned or pending too; it is evicted by
    its rank once idle again.

    Structures: `entries` (key -> `RankEntry` carrying the chunk and its order) and
    `idle` (`RankIndex`: exactly the idle entries, in order). `chunks` is a
    read-only view of the resident chunks, as vLLM's LRU exposes.
    """

    def __init__(self, cache_capacity: int) -> None:
        """Pre: `cache_capacity` >= 0 (vLLM passes `num_chunks`). Complexity: O(1)."""
        super().__init__(cache_capacity)
        self.entries: dict[OffloadKey, RankEntry] = {}
        self.idle = RankIndex()
        self.next_rank = 0
        self.cache_generation = 0

    @property
    def chunks(self) -> Mapping[OffloadKey, ChunkStatus]:
        """Every resident key -> its chunk (read-only). Complexity: O(1)."""
        return ChunkView(self.entries, "payload")

    def evictable_keys(self) -> list[OffloadKey]:
        """The idle keys in eviction order (for tests and snapshots). Complexity: O(n log n)."""
        return [entry.key for entry in self.idle.ordered()]

    def rank_of(self, key: OffloadKey) -> tuple[int, int] | None:
        """The key's rank `(r, p)`, None when it is not resident. Complexity: O(1)."""
        entry = self.entries.get(key)
        return None if entry is None else (entry.order[0], entry.order[1])

    # ------------------------------------------------------------ ranks

    def _request_rank(self, req_context: ReqContext) -> int:
        state = req_context.get_state(_RequestRank)
        if (
            state is None
            or state.owner is not self
            or state.cache_generation != self.cache_generation
        ):
            self.next_rank += 1
            state = _RequestRank(self, self.cache_generation, self.next_rank)
            req_context.set_state(state)
        return int(state.rank)

    def _rerank(self, entry: RankEntry, rank: int, position: int) -> None:
        idle = self.idle
        if idle.discard(entry):
            entry.order = (rank, position, entry.key)
            idle.admit(entry)
        else:
            entry.order = (rank, position, entry.key)

    def _update_recency(self, keys: Iterable[OffloadKey]) -> None:
        get = self.entries.get
        for key in keys:
            entry = get(key)
            if entry is not None:
                self.next_rank += 1
                self._rerank(entry, self.next_rank, 0)

    # ------------------------------------------------------------ CachePolicy

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        """The key's chunk, or None. No recency change. Complexity: O(1)."""
        entry = self.entries.get(key)
        return None if entry is None else entry.payload

    def insert(self, key: OffloadKey, chunk: ChunkStatus, req_context: ReqContext) -> None:
        """A newly allocated chunk: its request's rank at its token position, else a
        fresh rank; idle at once if its ref count is 0. A key inserted again (vLLM's
        manager does this for a key repeated in one `prepare_store`) gets the new
        chunk and rank, as in vLLM. Complexity: O(1), O(log n) if it goes to the heap.
        """
        position = req_context.get_offload_key_position(key)
        if position is None:
            self.next_rank += 1
            rank, pos = self.next_rank, 0
        else:
            rank, pos = self._request_rank(req_context), -position
        old = self.entries.get(key)
        if old is not None:
            self.idle.discard(old)
        entry = RankEntry(key, chunk, (rank, pos, key))
        self.entries[key] = entry
        if chunk.ref_cnt == 0:
            self.idle.admit(entry)

    def remove(self, key: OffloadKey) -> None:
        """Drop a chunk (a failed store). Pre: resident (else `KeyError`, as vLLM).
        Complexity: O(1)."""
        entry = self.entries.pop(key)
        self.idle.discard(entry)

    def touch(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        """Fresh ranks for the resident keys, walked in reverse (the first ends most
        recent). Complexity: O(len(keys))."""
        self._update_recency(reversed(list(keys)))

    def on_request_access(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        """A request's first accesses: each resident key at a token position rises to
        the request's rank `(R, -position)` (never falls). Complexity: O(len(keys))."""
        rank = self._request_rank(req_context)
        position_of = req_context.get_offload_key_position
        get = self.entries.get
        for key in keys:
            position = position_of(key)
            if position is None:
                continue
            entry = get(key)
            if entry is None:
                continue
            order = entry.order
            if (order[0], order[1]) >= (rank, -position):
                continue
            self._rerank(entry, rank, -position)

    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[OffloadKey]],
        insertion_only_keys: set[OffloadKey],
        reused_keys: set[OffloadKey],
        req_context: ReqContext,
    ) -> None:
        """Commit the request's recency: its keys in prefix order, tail first, each a
        fresh rank. Complexity: O(keys)."""
        self._update_recency(reversed(order_request_keys(key_groups, req_context)))

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        """The `n` idle unprotected chunks of least rank, removed; None with nothing
        changed when there are fewer. Complexity: O(n + protected skipped), plus
        O(log n) per victim from the heap; a pinned or pending chunk is never visited.
        """
        if n <= 0:
            return []
        idle = self.idle
        chosen = idle.select(n, protected)
        if chosen is None:
            return None
        for entry in chosen:
            if entry.payload.ref_cnt != 0:  # vLLM asserts the same of its choice
                idle.restore(chosen)
                raise AssertionError(
                    f"EvictableLRU: chunk {entry.key!r} is idle here but has ref_cnt "
                    f"{entry.payload.ref_cnt} (a ref-count change without its hook)"
                )
        idle.commit(chosen)
        entries = self.entries
        victims: list[tuple[OffloadKey, ChunkStatus]] = []
        for entry in chosen:
            del entries[entry.key]
            victims.append((entry.key, entry.payload))
        return victims

    def clear(self) -> None:
        """Forget every chunk; ranks start again (a new cache generation). Complexity: O(n)."""
        self.idle.clear()
        self.entries.clear()
        self.next_rank = 0
        self.cache_generation += 1

    def mark_evictable(self, key: OffloadKey) -> None:
        """The chunk's ref count became 0: it joins the idle entries at its rank.
        Pre: resident (else `KeyError`, as vLLM). Complexity: O(1), or O(log n)."""
        entry = self.entries[key]
        if entry not in self.idle:
            self.idle.admit(entry)

    def mark_non_evictable(self, key: OffloadKey) -> None:
        """The chunk's ref count leaves 0: out of the idle entries. Pre: it was idle
        (else `KeyError`, as vLLM's set). Complexity: amortised O(1)."""
        entry = self.entries.get(key)
        if entry is None or not self.idle.discard(entry):
            raise KeyError(key)
