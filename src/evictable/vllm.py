"""evictable inside vLLM 0.33: cache policies for vLLM's own CPU offloading manager.

Enable one in vLLM with no fork, through vLLM's out-of-tree policy loader:

    kv_connector_extra_config={
        "eviction_policy": "EvictableARC",            # or "EvictableLRU"
        "cache_policy_module_path": "evictable.vllm",
    }

(vLLM 0.33's `CPUOffloadingSpec` reads the policy's name from `eviction_policy` and
hands it, with `cache_policy_module_path`, to
`CachePolicyFactory.get_cache_policy_cls`; docs/interop.md, "Inside vLLM".)

* `EvictableLRU` and `EvictableARC` are subclasses of vLLM's `CachePolicy` with
  vLLM 0.33's exact semantics -- request-scoped recency (`on_request_access`,
  `on_request_finished` with insertion-only and reused keys, `on_store_miss`,
  `ReqContext` key positions), every hook, `evict(n, protected)` atomic -- whose
  eviction costs O(victims) however many chunks are pinned: the idle chunks of
  each list are kept in an order structure of their own (`impl.policies.rank_index`
  for the LRU's ranks, `impl.policies.arc_index` for ARC's lists), so a pinned or
  pending chunk is never visited. They hold vLLM's `ChunkStatus` objects as vLLM's
  manager hands them over. ARC's `t1`, `t2`, `b1`, `b2` read as vLLM's ARC reads
  them (ordered, least recent first; `t1[key]` is the chunk) and `target_t1_size`
  is readable and settable.
* `EvictableChecked` (a checking mode for vLLM's CI; `eviction_policy` =
  `"EvictableChecked(<policy>[, raise|log])"`) wraps any cache policy and holds
  every hook call to the policy contract as it happens, raising (or logging)
  `evictable.errors.PolicyContractError` (evictable.vllm_checked).
* `CheckedOffloadingSpec` (vLLM's `spec_name` + `spec_module_path`) is vLLM's CPU
  spec whose manager is vLLM's own, mirrored call by call on the model's vLLM 0.33
  profile under the safety contract; the first divergence raises (or logs)
  `evictable.errors.MirrorDivergenceError` naming the call, the keys and both states.

vLLM is imported here and in the two checking-mode modules (which import this one
first); without it this module raises one `ImportError` that names the extra to
install (`pip install evictable[vllm]`).
"""

from __future__ import annotations

try:
    import vllm as _vllm
    from vllm.v1.kv_offload.base import OffloadKey, ReqContext
    from vllm.v1.kv_offload.cpu.policies.base import (
        CachePolicy,
        ChunkStatus,
        order_request_keys,
    )
except ImportError as _exc:  # one clear error, not vLLM's (or torch's) traceback
    raise ImportError(
        "evictable.vllm needs vLLM 0.33 (and torch): `pip install evictable[vllm]` "
        f"({type(_exc).__name__}: {_exc})"
    ) from None

VLLM_VERSION = "0.33"
"""The vLLM release these policies follow (its `CachePolicy` hooks and semantics)."""

if not str(getattr(_vllm, "__version__", "")).startswith(VLLM_VERSION):
    raise ImportError(
        f"evictable.vllm is written for vLLM {VLLM_VERSION}.x, found "
        f"{getattr(_vllm, '__version__', '?')}: `pip install evictable[vllm]`"
    )

from collections import OrderedDict  # noqa: E402
from collections.abc import Iterable, Iterator, Mapping, Sequence  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from heapq import heappush  # noqa: E402
from typing import Any, cast  # noqa: E402

from evictable.impl.policies.arc_ghosts import GhostList  # noqa: E402
from evictable.impl.policies.arc_index import HEAPED, ArcRecord, IdleIndex, select  # noqa: E402
from evictable.impl.policies.rank_index import RankEntry, RankIndex  # noqa: E402

__all__ = [
    "VLLM_VERSION",
    "ChunkView",
    "EvictableARC",
    "EvictableLRU",
    "GhostView",
]


# ---------------------------------------------------------------- views


class ChunkView(Mapping[OffloadKey, ChunkStatus]):
    """A read-only, ordered view of a resident list: key -> vLLM's `ChunkStatus`.

    Iterates least recent first, as vLLM's `OrderedDict`s do; `len`, `in`, `[key]`,
    `items()` and truth value as a dict. Complexity: O(1) per item.
    """

    __slots__ = ("field", "nodes")

    def __init__(self, nodes: Mapping[OffloadKey, Any], field: str = "chunk") -> None:
        self.nodes = nodes
        self.field = field

    def __getitem__(self, key: OffloadKey) -> ChunkStatus:
        return cast("ChunkStatus", getattr(self.nodes[key], self.field))

    def __iter__(self) -> Iterator[OffloadKey]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, key: object) -> bool:
        return key in self.nodes

    def __repr__(self) -> str:
        return f"ChunkView({list(self.nodes)!r})"


class GhostView(Mapping[OffloadKey, None]):
    """A read-only, ordered view of a ghost list (B1 or B2): key -> None, least recent
    first, as vLLM's `OrderedDict[key, None]`. Complexity: O(1) per item."""

    __slots__ = ("ghosts",)

    def __init__(self, ghosts: GhostList) -> None:
        self.ghosts = ghosts

    def __getitem__(self, key: OffloadKey) -> None:
        if key not in self.ghosts:
            raise KeyError(key)
        return None

    def __iter__(self) -> Iterator[OffloadKey]:
        return iter(self.ghosts)

    def __len__(self) -> int:
        return len(self.ghosts)

    def __contains__(self, key: object) -> bool:
        return key in self.ghosts

    def __repr__(self) -> str:
        return f"GhostView({list(self.ghosts)!r})"


# ---------------------------------------------------------------- LRU


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


# ---------------------------------------------------------------- ARC


class ArcNode(ArcRecord):
    """One resident chunk of `EvictableARC`: vLLM's `ChunkStatus` (`chunk`) and ARC's
    place (`stamp`, `in_t2`, the idle-index links). `ref_cnt` mirrors the chunk's
    as the hooks report it: -1 pending, 0 idle, 1 pinned."""

    __slots__ = ("chunk",)

    def __init__(self, key: OffloadKey, chunk: ChunkStatus) -> None:
        super().__init__(-1, key)
        self.chunk = chunk
        self.ref_cnt = 0 if chunk.ref_cnt == 0 else (1 if chunk.ref_cnt > 0 else -1)


class EvictableARC(CachePolicy):  # type: ignore[misc]
    """vLLM 0.33's ARC, whose eviction never scans a pinned chunk.

    Semantics (vLLM 0.33's `ARCCachePolicy`, exactly): T1/T2 resident, B1/B2 ghosts
    (each at most N), `target_t1_size` from 0. `insert` -> T1's MRU end, out of the
    ghosts. `touch` (keys in reverse): T1 and ready -> T2 MRU, T1 and pending -> T1
    MRU, T2 -> T2 MRU, a ghost hit adapts the target and moves the ghost to its
    list's MRU end. `on_store_miss`: the ghost hits only. `on_request_finished` (the
    request's keys in prefix order, tail first): an insertion-only key goes to its
    list's MRU end, a reused key T1 -> T2 or to T2's MRU end. `evict`: n rounds,
    each taking T1's next idle unprotected entry while the simulated |T1| >=
    int(target), else T2's, else T1's; all or nothing; victims become MRU ghosts,
    then both ghost lists are trimmed to N.

    Structures: `t1`, `t2` (OrderedDicts of nodes, least recent first), one idle
    index per list (`impl.policies.arc_index.IdleIndex`: exactly the list's idle
    nodes, in list order), the ghost lists (`impl.policies.arc_ghosts.GhostList`).
    A node's place in its idle index is its stamp, fresh at each move to an MRU end.
    """

    def __init__(self, cache_capacity: int) -> None:
        """Pre: `cache_capacity` >= 0 (vLLM passes `num_chunks`). Complexity: O(1)."""
        super().__init__(cache_capacity)
        self.target_t1_size: float = 0.0
        self.nodes1: OrderedDict[OffloadKey, ArcNode] = OrderedDict()
        self.nodes2: OrderedDict[OffloadKey, ArcNode] = OrderedDict()
        self.ghosts1 = GhostList()
        self.ghosts2 = GhostList()
        self.idle1 = IdleIndex()
        self.idle2 = IdleIndex()
        self.clock = 0

    def __getstate__(self) -> dict[str, Any]:
        """A copy (pickle) carries each list's (key, chunk, stamp) in order, never the
        idle indexes' links (rebuilt from the chunks' ref counts). Complexity: O(n)."""
        state = {
            k: v
            for k, v in self.__dict__.items()
            if k not in ("nodes1", "nodes2", "idle1", "idle2")
        }
        state["lists"] = tuple(
            [(key, node.chunk, node.stamp, node.ref_cnt) for key, node in nodes.items()]
            for nodes in (self.nodes1, self.nodes2)
        )
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Rebuild from `__getstate__`: the lists in order, each idle index in stamp
        order. Complexity: O(n log n)."""
        lists = state.pop("lists")
        self.__dict__.update(state)
        self.nodes1, self.nodes2 = OrderedDict(), OrderedDict()
        self.idle1, self.idle2 = IdleIndex(), IdleIndex()
        for in_t2, entries in enumerate(lists):
            nodes = self.nodes2 if in_t2 else self.nodes1
            index = self.idle2 if in_t2 else self.idle1
            for key, chunk, stamp, ref in entries:
                node = ArcNode(key, chunk)
                node.stamp, node.in_t2, node.ref_cnt = stamp, bool(in_t2), ref
                nodes[key] = node
            for node in sorted(nodes.values(), key=lambda n: n.stamp):
                if node.ref_cnt == 0:
                    index.append(node)

    # ------------------------------------------------------------ views

    @property
    def t1(self) -> ChunkView:
        """T1, least recent first: key -> chunk. Complexity: O(1)."""
        return ChunkView(self.nodes1)

    @t1.setter
    def t1(self, entries: Mapping[OffloadKey, ChunkStatus]) -> None:
        """Replace T1 with `entries` (key -> chunk, least recent first). Complexity: O(n)."""
        self._replace(False, entries)

    @property
    def t2(self) -> ChunkView:
        """T2, least recent first: key -> chunk. Complexity: O(1)."""
        return ChunkView(self.nodes2)

    @t2.setter
    def t2(self, entries: Mapping[OffloadKey, ChunkStatus]) -> None:
        """Replace T2 with `entries` (key -> chunk, least recent first). Complexity: O(n)."""
        self._replace(True, entries)

    def _replace(self, in_t2: bool, entries: Mapping[OffloadKey, ChunkStatus]) -> None:
        items = list(entries.items())
        nodes = self.nodes2 if in_t2 else self.nodes1
        index = self.idle2 if in_t2 else self.idle1
        index.clear()
        nodes.clear()
        for key, chunk in items:
            node = ArcNode(key, chunk)
            self.clock += 1
            node.stamp = self.clock
            node.in_t2 = in_t2
            nodes[key] = node
            if node.ref_cnt == 0:
                index.append(node)

    @property
    def b1(self) -> GhostView:
        """B1, least recent first: key -> None (read-only). Complexity: O(1)."""
        return GhostView(self.ghosts1)

    @property
    def b2(self) -> GhostView:
        """B2, least recent first: key -> None (read-only). Complexity: O(1)."""
        return GhostView(self.ghosts2)

    # ------------------------------------------------------------ places

    def _node(self, key: OffloadKey) -> ArcNode | None:
        node = self.nodes1.get(key)
        return node if node is not None else self.nodes2.get(key)

    def _to_mru(self, node: ArcNode, to_t2: bool) -> None:
        """Move a resident node to the MRU end of T2 (`to_t2`) or T1. Complexity: O(1)."""
        idle = (self.idle2 if node.in_t2 else self.idle1).detach(node)
        key = node.key
        if node.in_t2:
            del self.nodes2[key]
        else:
            del self.nodes1[key]
        self.clock += 1
        node.stamp = self.clock
        node.in_t2 = to_t2
        (self.nodes2 if to_t2 else self.nodes1)[key] = node
        if idle:
            (self.idle2 if to_t2 else self.idle1).append(node)

    def _adapt_to_ghost_hit(self, key: OffloadKey) -> bool:
        b1, b2 = self.ghosts1, self.ghosts2
        if key in b1:
            delta = max(1, len(b2) / len(b1))
            self.target_t1_size = min(self.target_t1_size + delta, self.cache_capacity)
            b1.move_to_end(key)
            return True
        if key in b2:
            delta = max(1, len(b1) / len(b2))
            self.target_t1_size = max(self.target_t1_size - delta, 0)
            b2.move_to_end(key)
            return True
        return False

    # ------------------------------------------------------------ CachePolicy

    def get(self, key: OffloadKey) -> ChunkStatus | None:
        """The key's chunk (T1 or T2), or None. No recency change. Complexity: O(1)."""
        node = self.nodes1.get(key)
        if node is None:
            node = self.nodes2.get(key)
            if node is None:
                return None
        return node.chunk

    def insert(self, key: OffloadKey, chunk: ChunkStatus, req_context: ReqContext) -> None:
        """A new chunk at T1's MRU end; its key stops being a ghost. A key already in
        T1 (vLLM's manager inserts a key repeated in one `prepare_store` twice) keeps
        its place and takes the new chunk, as in vLLM. Complexity: O(1)."""
        node = self.nodes1.get(key)
        if node is not None:
            self.idle1.detach(node)
            node.chunk = chunk
            node.ref_cnt = 0 if chunk.ref_cnt == 0 else (1 if chunk.ref_cnt > 0 else -1)
            if node.ref_cnt == 0:
                self.idle1.admit(node)
        else:
            old = self.nodes2.pop(key, None)
            if old is not None:
                self.idle2.detach(old)
            node = ArcNode(key, chunk)
            self.clock += 1
            node.stamp = self.clock
            self.nodes1[key] = node
            if node.ref_cnt == 0:
                self.idle1.append(node)
        if key in self.ghosts1:
            self.ghosts1.discard_all((key,))
        if key in self.ghosts2:
            self.ghosts2.discard_all((key,))

    def remove(self, key: OffloadKey) -> None:
        """Drop a chunk (a failed store) from T1 or T2, with no ghost; a key that is not
        resident is ignored, as in vLLM. Complexity: amortised O(1)."""
        node = self.nodes1.pop(key, None)
        if node is not None:
            self.idle1.detach(node)
            return
        node = self.nodes2.pop(key, None)
        if node is not None:
            self.idle2.detach(node)

    def touch(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        """ARC's hit rules, keys in reverse (see the class doc). Complexity: O(len(keys))."""
        nodes1, nodes2 = self.nodes1, self.nodes2
        for key in reversed(list(keys)):
            node = nodes1.get(key)
            if node is not None:
                if node.chunk.ref_cnt < 0:  # just prepared to be stored, not a second use
                    self._to_mru(node, False)
                else:
                    self._to_mru(node, True)
                continue
            node = nodes2.get(key)
            if node is not None:
                self._to_mru(node, True)
            else:
                self._adapt_to_ghost_hit(key)

    def on_store_miss(self, keys: Iterable[OffloadKey], req_context: ReqContext) -> None:
        """Store misses, in reverse: a ghost hit adapts the target and moves the ghost to
        its list's MRU end (before `insert` removes it). Complexity: O(len(keys))."""
        for key in reversed(list(keys)):
            self._adapt_to_ghost_hit(key)

    def on_request_finished(
        self,
        key_groups: Sequence[Sequence[OffloadKey]],
        insertion_only_keys: set[OffloadKey],
        reused_keys: set[OffloadKey],
        req_context: ReqContext,
    ) -> None:
        """The request's access, keys in prefix order, tail first: an insertion-only
        key to its list's MRU end; a reused key T1 -> T2, or to T2's MRU end.
        Complexity: O(keys)."""
        nodes1, nodes2 = self.nodes1, self.nodes2
        for key in reversed(order_request_keys(key_groups, req_context)):
            if key in insertion_only_keys:
                node = nodes1.get(key)
                if node is not None:
                    self._to_mru(node, False)
                else:
                    node = nodes2.get(key)
                    if node is not None:
                        self._to_mru(node, True)
                continue
            if key in reused_keys:
                node = nodes1.get(key)
                if node is None:
                    node = nodes2.get(key)
                if node is not None:
                    self._to_mru(node, True)

    def evict(
        self, n: int, protected: set[OffloadKey]
    ) -> list[tuple[OffloadKey, ChunkStatus]] | None:
        """`n` idle unprotected chunks in ARC's order (see the class doc), removed and
        made ghosts; None with nothing changed when there are fewer.

        Complexity: O(n + protected idle entries skipped), plus O(log n) per victim
        from a heap; a pinned or pending chunk is never visited. (A chosen chunk
        whose ref count changed without its hook -- code that writes `ref_cnt`
        directly -- makes the indexes be rebuilt from the ref counts once, O(n).)
        """
        if n <= 0:
            return []
        chosen = self._select(n, protected)
        if chosen is None:
            return None
        if any(node.chunk.ref_cnt != 0 for node in chosen):
            self._unselect(chosen)
            self._resync()
            chosen = self._select(n, protected)
            if chosen is None:
                return None
        return self._commit(chosen)

    def _select(self, n: int, protected: set[OffloadKey]) -> list[ArcNode] | None:
        got = select(
            self.idle1, self.idle2, len(self.nodes1), int(self.target_t1_size), n, protected
        )
        return got  # type: ignore[return-value]

    def _unselect(self, chosen: list[ArcNode]) -> None:
        for node in chosen:
            if node.next is HEAPED:
                heappush((self.idle2 if node.in_t2 else self.idle1).heap, (node.stamp, node))

    def _resync(self) -> None:
        """Rebuild both idle indexes from the chunks' own ref counts. Complexity: O(n)."""
        for index, nodes in ((self.idle1, self.nodes1), (self.idle2, self.nodes2)):
            index.clear()
            for node in nodes.values():
                ref = node.chunk.ref_cnt
                node.ref_cnt = 0 if ref == 0 else (1 if ref > 0 else -1)
                if node.ref_cnt == 0:
                    index.append(node)

    def _commit(self, chosen: list[ArcNode]) -> list[tuple[OffloadKey, ChunkStatus]]:
        one, two = self.idle1, self.idle2
        nodes1, nodes2 = self.nodes1, self.nodes2
        victims: list[tuple[OffloadKey, ChunkStatus]] = []
        for node in chosen:
            before = node.prev
            if before is not None:
                after = node.next
                before.next = after
                after.prev = before  # type: ignore[union-attr]
                node.prev = None
            else:  # heaped; its entry is already popped
                (two if node.in_t2 else one).marked -= 1
            node.next = None
            key = node.key
            if node.in_t2:
                del nodes2[key]
                self.ghosts2.extend((key,))
            else:
                del nodes1[key]
                self.ghosts1.extend((key,))
            victims.append((key, node.chunk))
        self.ghosts1.trim(self.cache_capacity)
        self.ghosts2.trim(self.cache_capacity)
        return victims

    def clear(self) -> None:
        """All four lists empty, target back to 0. Complexity: O(n)."""
        self.idle1.clear()
        self.idle2.clear()
        self.nodes1.clear()
        self.nodes2.clear()
        self.ghosts1.clear()
        self.ghosts2.clear()
        self.target_t1_size = 0.0

    def mark_evictable(self, key: OffloadKey) -> None:
        """The chunk's ref count became 0: it joins its list's idle index at its place.
        A key that is not resident is ignored (vLLM's ARC ignores the hook).
        Complexity: O(1), or O(log n) for a heap push."""
        node = self.nodes1.get(key)
        index = self.idle1
        if node is None:
            node = self.nodes2.get(key)
            index = self.idle2
            if node is None:
                return
        node.ref_cnt = 0
        if node.prev is None:
            index.admit(node)

    def mark_non_evictable(self, key: OffloadKey) -> None:
        """The chunk's ref count leaves 0: out of its idle index (a heaped entry goes
        dormant). Complexity: O(1)."""
        node = self._node(key)
        if node is None:
            return
        node.ref_cnt = 1
        before = node.prev
        if before is not None:
            after = node.next
            before.next = after
            after.prev = before  # type: ignore[union-attr]
            node.prev = node.next = None


# The checking mode lives in evictable.vllm_checked (EvictableChecked) and
# evictable.vllm_spec (CheckedOffloadingSpec); both load from here by name, as vLLM's
# factories look them up, without this module importing them (they import it).
_LAZY = {
    "EvictableChecked": "evictable.vllm_checked",
    "CheckedOffloadingSpec": "evictable.vllm_spec",
}


def __getattr__(name: str) -> Any:
    """`EvictableChecked`, `EvictableChecked(<policy>[, raise|log])` (the checked policy
    that name asks for) and `CheckedOffloadingSpec`, loaded on first use."""
    import importlib

    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    if name.startswith("EvictableChecked("):
        checked = importlib.import_module("evictable.vllm_checked")
        got = checked.checked_policy_class(name)
        if got is not None:
            return got
    raise AttributeError(f"module 'evictable.vllm' has no attribute {name!r}")
