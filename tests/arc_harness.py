"""Drive the model ARC (`model.arc.ModelArc`) or the fast one (`ARCCachePolicy`) alike.

`ArcHarness(kind, capacity)` plays the manager's part: it owns the ref counts and
calls the policy's hooks exactly when the lifecycle table says (store begins ->
`insert`, commit -> `mark_evictable`, first load -> `mark_non_evictable`, last load
end -> `mark_evictable`, abort -> `remove`), so one scenario runs on both.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from evictable.impl.block import BlockStatus
from evictable.impl.policies.arc import ARCCachePolicy, ArcRecord
from evictable.model.arc import ModelArc
from evictable.model.types import ArcPolicySnapshot, Key

Kind = Literal["model", "impl"]
KINDS: tuple[Kind, ...] = ("model", "impl")


class ArcHarness:
    def __init__(self, kind: Kind, capacity: int) -> None:
        self.kind = kind
        self.capacity = capacity
        self.blocks: dict[Key, BlockStatus] = {}
        self.model = ModelArc(capacity) if kind == "model" else None
        self.impl = ARCCachePolicy(capacity) if kind == "impl" else None

    def ref_of(self, key: Key) -> int | None:
        block = self.blocks.get(key)
        return None if block is None else block.ref_cnt

    def store(self, *keys: Key) -> None:
        for key in keys:
            block = ArcRecord(len(self.blocks))
            self.blocks[key] = block
            if self.model is not None:
                self.model.insert(key)
            else:
                assert self.impl is not None
                self.impl.insert(key, block)

    def _hook(self, name: str, key: Key) -> None:
        getattr(self.model if self.model is not None else self.impl, name)(key)

    def commit(self, *keys: Key) -> None:
        for key in keys:
            self.blocks[key].ref_cnt = 0
            self._hook("mark_evictable", key)

    def abort(self, *keys: Key) -> None:
        for key in keys:
            del self.blocks[key]
            self._hook("remove", key)

    def ready(self, *keys: Key) -> None:
        """Store and commit, in order."""
        for key in keys:
            self.store(key)
            self.commit(key)

    def load(self, *keys: Key) -> None:
        for key in keys:
            block = self.blocks[key]
            block.ref_cnt += 1
            if block.ref_cnt == 1:
                self._hook("mark_non_evictable", key)

    def unload(self, *keys: Key) -> None:
        for key in keys:
            block = self.blocks[key]
            block.ref_cnt -= 1
            if block.ref_cnt == 0:
                self._hook("mark_evictable", key)

    def touch(self, *keys: Key) -> None:
        if self.model is not None:
            self.model.touch(list(keys), self.ref_of)
        else:
            assert self.impl is not None
            self.impl.touch(list(keys))

    def evict(self, n: int, protected: Iterable[Key] = ()) -> list[Key] | None:
        prot = frozenset(protected)
        if self.model is not None:
            victims = self.model.evict(n, prot, self.ref_of)
        else:
            assert self.impl is not None
            chosen = self.impl.evict(n, prot)
            if chosen is not None:
                for key, block in chosen:
                    assert self.blocks[key] is block
            victims = None if chosen is None else [key for key, _ in chosen]
        for key in victims or ():
            del self.blocks[key]
        return victims

    def clear(self) -> None:
        self.blocks.clear()
        if self.model is not None:
            self.model.clear()
        else:
            assert self.impl is not None
            self.impl.clear()

    def snap(self) -> ArcPolicySnapshot:
        if self.model is not None:
            return self.model.snapshot()
        assert self.impl is not None
        self.impl.check_invariants()
        return self.impl.snapshot()

    def lists(self) -> tuple[list[Key], list[Key], list[Key], list[Key]]:
        s = self.snap()
        return list(s.t1), list(s.t2), list(s.b1), list(s.b2)

    @property
    def target(self) -> float:
        return self.snap().target
