"""The explorer's operation alphabet: every manager call over small key batches.

An `Op` is one manager call with immutable arguments; it prints as the Python call
it stands for, so a trace of ops reads as a runnable snippet. `Alphabet` holds
every op over a key universe of `keys` keys and batches of at most `batch` keys:

* `prepare_store`, `complete_store(success=True/False)`, `prepare_load`,
  `complete_load`, `touch` over every ordered batch of distinct keys of length
  0..batch, and over *duplicate* batches (a distinct batch followed by a repeat of
  its first key), which every method but `touch` must reject;
* `lookup` of every key, `reset_cache()` and `take_events()`.

Bad inputs that must raise (absent, pending, not loading, duplicates) are part of
the alphabet: the explorer checks that both sides raise the same error and that
neither changed. The only guard on the alphabet is the ref-count bound: a
`prepare_load` batch is not generated when one of its keys already has `max_ref`
loads in flight (so that the state space stays finite).

**Key symmetry.** Keys that no part of a state mentions are interchangeable: a
permutation of them maps the state to itself, every op to an op, and (because the
model never looks at a key's value, only at its identity) every successor to an
isomorphic one. `Alphabet.ops_for` therefore uses such *fresh* keys only in
canonical order (the first fresh key a batch uses is the lowest unused one, and
so on) when `reduce` is set. This is the same symmetry the canonical state
encoding (`evictable.proofs.explore.state`) quotients by, and it is switched off with it.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evictable.model.types import Key
from evictable.proofs.base.compare import Reply
from evictable.proofs.base.compare import invoke as call

__all__ = ["KEY_NAMES", "Alphabet", "Op", "invoke"]

KEY_NAMES: tuple[str, ...] = tuple("abcdefghijklmnopqrstuvwxyz")
"""The key universe: the first `keys` letters (any hashable would do)."""

KEY_METHODS: tuple[str, ...] = (
    "prepare_store",
    "complete_store",
    "prepare_load",
    "complete_load",
    "touch",
)


@dataclass(frozen=True)
class Op:
    """One manager call: `method(list(keys))`, `complete_store(keys, success=...)`,
    `lookup(keys[0])`, or a call without arguments."""

    method: str
    keys: tuple[Key, ...] = ()
    success: bool | None = None
    text: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", self._render())

    def _render(self) -> str:
        if self.method == "lookup":
            return f"lookup({self.keys[0]!r})"
        if self.method in ("reset_cache", "take_events"):
            return f"{self.method}()"
        if self.method == "complete_store" and self.success is False:
            return f"complete_store({list(self.keys)!r}, success=False)"
        return f"{self.method}({list(self.keys)!r})"

    def __str__(self) -> str:
        return self.text

    def build(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """Fresh arguments for the call: (positional, keyword)."""
        if self.method == "lookup":
            return (self.keys[0],), {}
        if self.method in ("reset_cache", "take_events"):
            return (), {}
        if self.method == "complete_store":
            return (list(self.keys),), {"success": self.success is not False}
        return (list(self.keys),), {}

    @property
    def duplicates(self) -> bool:
        """A batch with a repeated key."""
        return len(set(self.keys)) != len(self.keys)


def invoke(target: object, op: Op) -> Reply:
    """Make the call `op` on `target`; every exception is caught and returned."""
    try:
        fn = getattr(target, op.method)
    except Exception as exc:  # a missing method is a disagreement like any other
        return Reply(True, exc)
    args, kwargs = op.build()
    return call(fn, *args, **kwargs)


def _batches(n_keys: int, batch: int) -> list[tuple[int, ...]]:
    """Distinct ordered batches (lengths 0..batch), then one duplicate batch per
    distinct batch shorter than `batch` (its first key repeated at the end)."""
    distinct = [
        perm for size in range(batch + 1) for perm in itertools.permutations(range(n_keys), size)
    ]
    dups = [(*d, d[0]) for d in distinct if 1 <= len(d) < batch]
    return distinct + dups


def _fresh_order_ok(batch: tuple[int, ...], mentioned: int, n_keys: int) -> bool:
    """The fresh keys (bits not in `mentioned`) of `batch`, in order of first use,
    are exactly the lowest fresh keys in ascending order."""
    fresh = [k for k in range(n_keys) if not mentioned >> k & 1]
    used: list[int] = []
    for k in batch:
        if not mentioned >> k & 1 and k not in used:
            used.append(k)
    return used == fresh[: len(used)]


class Alphabet:
    """Every op over `n_keys` keys and batches up to `batch`, indexed by position."""

    def __init__(self, n_keys: int, batch: int, keys: Sequence[Key] | None = None) -> None:
        names = tuple(keys) if keys is not None else KEY_NAMES[:n_keys]
        if len(names) != n_keys or len(set(names)) != n_keys:
            raise ValueError(f"need {n_keys} distinct key names")
        self.keys: tuple[Key, ...] = names
        self.n_keys = n_keys
        ops: list[Op] = []
        # (key-index batch, is prepare_load) of each op, for filtering per state.
        shapes: list[tuple[tuple[int, ...], bool]] = []
        for b in _batches(n_keys, batch):
            ks = tuple(names[i] for i in b)
            for method in KEY_METHODS:
                if method == "complete_store":
                    for success in (True, False):
                        ops.append(Op(method, ks, success))
                        shapes.append((b, False))
                else:
                    ops.append(Op(method, ks))
                    shapes.append((b, method == "prepare_load"))
        for i in range(n_keys):
            ops.append(Op("lookup", (names[i],)))
            shapes.append(((i,), False))
        for method in ("reset_cache", "take_events"):
            ops.append(Op(method))
            shapes.append(((), False))
        self.ops: tuple[Op, ...] = tuple(ops)
        self._shapes = tuple(shapes)
        self._masks = tuple(sum(1 << k for k in set(b)) for b, _ in shapes)
        self._cache: dict[tuple[int, int, bool], tuple[int, ...]] = {}

    def index(self, op: Op) -> int:
        return self.ops.index(op)

    def key_index(self, key: Key) -> int:
        return self.keys.index(key)

    def ops_for(self, mentioned: int, maxed: int, reduce: bool) -> tuple[int, ...]:
        """Indexes of the ops to try in a state.

        `mentioned`: bitmask of the keys the state mentions; `maxed`: keys with
        `max_ref` loads in flight (no `prepare_load` batch may contain one);
        `reduce`: use fresh keys only in canonical order (key symmetry).
        """
        memo = (mentioned, maxed, reduce)
        hit = self._cache.get(memo)
        if hit is not None:
            return hit
        out: list[int] = []
        for i, (b, is_load) in enumerate(self._shapes):
            if is_load and self._masks[i] & maxed:
                continue
            if reduce and not _fresh_order_ok(b, mentioned, self.n_keys):
                continue
            out.append(i)
        result = tuple(out)
        self._cache[memo] = result
        return result
