"""`EvictableARC`: vLLM 0.33's ARC as a vLLM cache policy whose eviction never scans a
pinned chunk (loaded by vLLM as `evictable.vllm.EvictableARC`).

The public face, and how to enable it in vLLM, is `evictable.vllm`; the idle order
is `impl.policies.arc_index`, the ghost lists `impl.policies.arc_ghosts`. Importing
this module without vLLM raises the one `ImportError` of `evictable.vllm.base`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from heapq import heappush
from typing import Any

from evictable.impl.policies.arc_ghosts import GhostList
from evictable.impl.policies.arc_index import HEAPED, ArcRecord, IdleIndex, select
from evictable.vllm.base import (  # vLLM 0.33 present, or one clear ImportError
    CachePolicy,
    ChunkStatus,
    ChunkView,
    GhostView,
    OffloadKey,
    ReqContext,
    order_request_keys,
)

__all__ = ["ArcNode", "EvictableARC"]


class ArcNode(ArcRecord):
    """One resident chunk of `EvictableARC`: vLLM's `ChunkStatus` (`chunk`) and ARC's
    place (`stamp`, `in_t2`, the idle-index links). `ref_cnt` mirrors the chunk's
    as the hooks report it: -1 pending, 0 idle, 1 pinned."""

    __slots__ = ("chunk",)

    def __init__(self, key: OffloadKey, chunk: ChunkStatus, stamp: int = 0) -> None:
        """Pre: `stamp` is fresh from the policy's clock (0: not filed yet).
        Complexity: O(1) (every slot set here: no call up the class chain)."""
        ref = chunk.ref_cnt
        self.ref_cnt = 0 if ref == 0 else (1 if ref > 0 else -1)
        self.block_id = -1
        self.key = key
        self.prev: ArcRecord | None = None
        self.next: ArcRecord | None = None
        self.stamp = stamp
        self.in_t2 = False
        self.chunk = chunk


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

    Structures: `t1`, `t2` (dicts of nodes in insertion order, least recent first; a
    move to an MRU end is a delete and a re-insert), one idle
    index per list (`impl.policies.arc_index.IdleIndex`: exactly the list's idle
    nodes, in list order), the ghost lists (`impl.policies.arc_ghosts.GhostList`).
    A node's place in its idle index is its stamp, fresh at each move to an MRU end.
    """

    def __init__(self, cache_capacity: int) -> None:
        """Pre: `cache_capacity` >= 0 (vLLM passes `num_chunks`). Complexity: O(1)."""
        super().__init__(cache_capacity)
        self.target_t1_size: float = 0.0
        self.nodes1: dict[OffloadKey, ArcNode] = {}
        self.nodes2: dict[OffloadKey, ArcNode] = {}
        self.ghosts1 = GhostList()
        self.ghosts2 = GhostList()
        self.idle1 = IdleIndex()
        self.idle2 = IdleIndex()
        self.clock = 0
        self.spare: list[ArcNode] = []
        """Nodes of evicted chunks (unlinked, unmarked), reused by `insert` (no
        allocation on a store that evicts): one eviction's victims, at most."""

    def __getstate__(self) -> dict[str, Any]:
        """A copy (pickle) carries each list's (key, chunk, stamp) in order, never the
        idle indexes' links (rebuilt from the chunks' ref counts). Complexity: O(n)."""
        state = {
            k: v
            for k, v in self.__dict__.items()
            if k not in ("nodes1", "nodes2", "idle1", "idle2", "spare")
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
        self.nodes1, self.nodes2 = {}, {}
        self.idle1, self.idle2 = IdleIndex(), IdleIndex()
        self.spare = []
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
            self.clock += 1
            node = ArcNode(key, chunk, self.clock)
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
        nodes1 = self.nodes1
        node = nodes1.get(key)
        if node is None:  # the manager's case: a key it found in neither list
            old = self.nodes2.pop(key, None)
            if old is not None:
                self.idle2.detach(old)
            self.clock = stamp = self.clock + 1
            spare = self.spare
            if spare:  # a victim's node, unlinked and unmarked: its fields anew
                node = spare.pop()
                ref = chunk.ref_cnt
                node.ref_cnt = 0 if ref == 0 else (1 if ref > 0 else -1)
                node.key = key
                node.stamp = stamp
                node.in_t2 = False
                node.chunk = chunk
            else:
                node = ArcNode(key, chunk, stamp)
            nodes1[key] = node
            if node.ref_cnt == 0:
                self.idle1.append(node)
        else:
            self.idle1.detach(node)
            node.chunk = chunk
            node.ref_cnt = 0 if chunk.ref_cnt == 0 else (1 if chunk.ref_cnt > 0 else -1)
            if node.ref_cnt == 0:
                self.idle1.admit(node)
        # the ghost lists' member dicts directly: a membership test is the common case
        if key in self.ghosts1.members:
            self.ghosts1.discard_all((key,))
        if key in self.ghosts2.members:
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
        in_b1, in_b2 = self.ghosts1.members, self.ghosts2.members  # never replaced
        for key in reversed(list(keys)):
            if key in in_b1 or key in in_b2:
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

        While no idle record sits in a late ring or a heap (nothing became idle out
        of list order: every store committed, every load ended, in list order) each
        list's idle records are its ring, and the rounds are two ring walks
        (`_select_rings`); otherwise `arc_index.select` merges rings and heaps.

        Complexity: O(n + protected idle entries skipped), plus O(log n) per victim
        from a heap; a pinned or pending chunk is never visited. (A chosen chunk
        whose ref count changed without its hook -- code that writes `ref_cnt`
        directly -- makes the indexes be rebuilt from the ref counts once, O(n).)
        """
        if n <= 0:
            return []
        one, two = self.idle1, self.idle2
        late1, late2 = one.late, two.late
        if one.marked or two.marked or late1.next is not late1 or late2.next is not late2:
            chosen = self._select(n, protected)
        else:
            chosen = self._select_rings(n, protected)
        if chosen is None:
            return None
        for node in chosen:
            if node.chunk.ref_cnt != 0:
                self._unselect(chosen)
                self._resync()
                chosen = self._select(n, protected)
                if chosen is None:
                    return None
                break
        return self._commit(chosen)

    def _select_rings(self, n: int, protected: set[OffloadKey]) -> list[ArcNode] | None:
        """`arc_index.select`'s victims when each list's idle records are its ring alone
        (no late ring, no heaped record): T1's ring while the simulated |T1| is at
        least int(target), then T2's, then T1's again. Changes nothing.
        Complexity: O(n + protected skipped)."""
        chosen: list[ArcNode] = []
        ring1: Any = self.idle1.ring
        at: Any = ring1.next
        want = len(self.nodes1) - int(self.target_t1_size) + 1  # T1's own rounds
        if want > n:
            want = n
        while want > 0 and at is not ring1:
            if at.key not in protected:
                chosen.append(at)
                want -= 1
            at = at.next
        need = n - len(chosen)
        if need:
            ring2: Any = self.idle2.ring
            at2: Any = ring2.next
            while need and at2 is not ring2:
                if at2.key not in protected:
                    chosen.append(at2)
                    need -= 1
                at2 = at2.next
            if need:
                if want > 0:  # T1 ran dry in its own rounds: the rest were T2's
                    return None
                while need and at is not ring1:
                    if at.key not in protected:
                        chosen.append(at)
                        need -= 1
                    at = at.next
                if need:
                    return None
        return chosen

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
        """Remove the victims (each unlinked, or unmarked if heaped) and make them the
        most recent ghosts of their lists, then trim both ghost lists to N.
        Complexity: O(len(chosen) + ghosts trimmed)."""
        one, two = self.idle1, self.idle2
        nodes1, nodes2 = self.nodes1, self.nodes2
        g1, g2 = self.ghosts1, self.ghosts2
        # `GhostList.extend` of one key that is not a ghost (a resident key never is),
        # inline: a member and the most recent occurrence
        b1, b2 = g1.members, g2.members
        q1, q2 = g1.order.append, g2.order.append
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
                b2[key] = None
                q2(key)
            else:
                del nodes1[key]
                b1[key] = None
                q1(key)
            victims.append((key, node.chunk))
        if not self.spare:
            # kept for `insert` (a stale heap entry of a reused node stays garbage: its
            # stamp is never given again)
            self.spare = chosen
        cap = self.cache_capacity
        extra = len(b1) - cap
        if extra > 0:
            if extra == 1 and not g1.stale:  # the steady state: one to drop
                del b1[g1.order.popleft()]
            else:
                g1.trim(cap)
        extra = len(b2) - cap
        if extra > 0:
            if extra == 1 and not g2.stale:
                del b2[g2.order.popleft()]
            else:
                g2.trim(cap)
        return victims

    def clear(self) -> None:
        """All four lists empty, target back to 0. Complexity: O(n)."""
        self.idle1.clear()
        self.idle2.clear()
        self.nodes1.clear()
        self.nodes2.clear()
        self.ghosts1.clear()
        self.ghosts2.clear()
        self.spare.clear()
        self.target_t1_size = 0.0

    def mark_evictable(self, key: OffloadKey) -> None:
        """The chunk's ref count became 0: it joins its list's idle index at its place.
        A key that is not resident is ignored (vLLM's ARC ignores the hook).
        Complexity: O(1), or O(log n) for a heap push."""
        node = self.nodes1.get(key)
        if node is None:
            node = self.nodes2.get(key)
            if node is None:
                return
            index = self.idle2
        else:
            index = self.idle1
        node.ref_cnt = 0
        if node.prev is None:
            if node.next is None:  # neither listed nor heaped
                ring: Any = index.ring
                last = ring.prev
                if last is ring or last.stamp < node.stamp:  # `IdleIndex.admit`'s ring case
                    node.prev = last
                    node.next = ring
                    last.next = node
                    ring.prev = node
                    return
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
