"""ARC's ghost lists (B1, B2): keys recently evicted, least recent first, at most N long.

A ghost list is, in ARC's steady state, a queue: every victim is appended and the
least recent ghosts are trimmed, 2 operations per evicted block. So a `GhostList`
keeps its keys in a plain dict (`members`, for membership) and its order in a
`deque` (`order`): an append is one dict insert and one deque append, a trim one
deque pop and one dict delete, all C-level, and no per-ghost node is allocated (an
`OrderedDict` allocates one and keeps a second index; on this benchmark's trace it
made the ghost lists a third of ARC's cost).

The two rarer operations leave *stale* occurrences in the deque instead of
searching it: removing a ghost (its key is stored again) and moving one to the
most-recent end (a ghost hit, on a touch: the key is appended again). `stale` counts
each key's stale occurrences. Every stale occurrence of a key is older than its live
one (the last), so a trim that pops a key with a stale count consumes one of those
and goes on. The deque is rebuilt once stale occurrences outnumber the members, so
it holds at most `2 * len + STALE_SLACK` keys.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from evictable.model.errors import InvariantViolationError
from evictable.model.types import Key

__all__ = ["STALE_SLACK", "GhostList"]

STALE_SLACK = 32
"""Stale occurrences tolerated on top of the members before the deque is rebuilt."""


class GhostList:
    """One ghost list: `members` (key -> None) in the order of `order` (live
    occurrences only), least recent first.

    >>> g = GhostList()
    >>> g.extend([b"a", b"b", b"c"])
    >>> g.move_to_end(b"a"); g.discard_all([b"b"]); g.trim(1)
    >>> list(g)
    [b'a']

    Complexity: O(1) memory per member (a dict entry and a deque slot), plus at most
    `len + STALE_SLACK` stale deque slots.
    """

    __slots__ = ("members", "order", "stale")

    def __init__(self) -> None:
        self.members: dict[Key, None] = {}
        self.order: deque[Key] = deque()
        self.stale: dict[Key, int] = {}

    def __len__(self) -> int:
        return len(self.members)

    def __contains__(self, key: object) -> bool:
        return key in self.members

    def __iter__(self) -> Iterator[Key]:
        """The members, least recent first. Complexity: O(len(order))."""
        skip = dict(self.stale)
        for key in self.order:
            count = skip.get(key)
            if count:
                skip[key] = count - 1
            else:
                yield key

    def extend(self, keys: Iterable[Key]) -> None:
        """Append keys that are not members, in order (the last is most recent).

        Complexity: O(len(keys)).
        """
        keys = list(keys)
        self.members.update(dict.fromkeys(keys))
        self.order.extend(keys)

    def discard_all(self, keys: Iterable[Key]) -> None:
        """Remove every member among `keys` (their occurrences become stale).

        Complexity: O(len(keys)) amortised.
        """
        members, stale = self.members, self.stale
        for key in keys:
            if key in members:
                del members[key]
                stale[key] = stale.get(key, 0) + 1
        self._maybe_compact()

    def move_to_end(self, key: Key) -> None:
        """Make a member the most recent. Pre: `key` is a member. Complexity: O(1) amortised."""
        stale = self.stale
        stale[key] = stale.get(key, 0) + 1
        self.order.append(key)
        self._maybe_compact()

    def trim(self, limit: int) -> None:
        """Drop the least recent members until at most `limit` remain.

        Complexity: O(dropped + stale occurrences popped).
        """
        extra = len(self.members) - limit
        if extra <= 0:
            return
        members, pop, stale = self.members, self.order.popleft, self.stale
        if not stale:
            for _ in range(extra):
                del members[pop()]
            return
        while extra:
            key = pop()
            count = stale.get(key)
            if count:
                if count == 1:
                    del stale[key]
                else:
                    stale[key] = count - 1
            else:
                del members[key]
                extra -= 1

    def clear(self) -> None:
        """No member. Complexity: O(n)."""
        self.members.clear()
        self.order.clear()
        self.stale.clear()

    def copy(self) -> GhostList:
        """An independent list with the same members in the same order. Complexity: O(n)."""
        clone = GhostList()
        clone.extend(self)
        return clone

    def _maybe_compact(self) -> None:
        if len(self.order) > 2 * len(self.members) + STALE_SLACK:
            live = list(self)
            self.order = deque(live)
            self.stale = {}

    def __getstate__(self) -> list[Key]:
        """Copies carry the members in order (no stale occurrence)."""
        return list(self)

    def __setstate__(self, state: list[Key]) -> None:
        self.members, self.order, self.stale = {}, deque(), {}
        self.extend(state)

    def check(self, name: str) -> None:
        """Raise `InvariantViolationError` unless every key occurs in `order` exactly
        its stale count times, plus once (last) if it is a member. Complexity: O(n)."""
        counts: dict[Key, int] = {}
        for key in self.order:
            counts[key] = counts.get(key, 0) + 1
        for key, count in counts.items():
            expected = self.stale.get(key, 0) + (key in self.members)
            if count != expected:
                raise InvariantViolationError(
                    ["arc_internal"],
                    f"ARCCachePolicy: {name}: {key!r} occurs {count} times, expected {expected}",
                )
        if any(key not in counts for key in self.members) or any(
            count <= 0 or key not in counts for key, count in self.stale.items()
        ):
            raise InvariantViolationError(
                ["arc_internal"], f"ARCCachePolicy: {name}: members or stale counts out of order"
            )
