"""Inputs of the conformance engine: the key pool, calls, and the bad-input catalogue.

A `Call` is one manager call that can be *built afresh* for each side (so that an
implementation that mutates or consumes its argument cannot influence the other
side), and that prints as the Python expression it stands for (so that traces read
as runnable code).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evictable.model.types import Key

__all__ = [
    "BAD_ENABLE_EVENTS",
    "BAD_NUM_BLOCKS",
    "KEYS",
    "Call",
    "bad_key_calls",
    "bad_lookup_calls",
    "bad_success_calls",
    "show",
]

KEYS: tuple[bytes, ...] = tuple(f"k{i}".encode() for i in range(10))
"""The key pool: few keys, so that hits, re-stores and evictions happen often."""

BAD_NUM_BLOCKS: tuple[object, ...] = (-1, -7, 1.0, 2.5, True, False, "3", None, [2])
"""Constructor `num_blocks` values that both sides must reject with the same error."""

BAD_ENABLE_EVENTS: tuple[object, ...] = (1, 0, "yes", None)
"""Constructor `enable_events` values (not a bool) that both sides must reject."""

Built = tuple[tuple[Any, ...], dict[str, Any]]


def show(value: object) -> str:
    return repr(value)


@dataclass(frozen=True)
class Call:
    """One call: the method name ("" = call the target itself), its text, a builder."""

    method: str
    text: str
    build: Callable[[], Built] = field(compare=False)
    key_list: tuple[Key, ...] | None = None
    """For `Call.keys` calls: the keys (so that a shrinker can drop some)."""
    options: tuple[tuple[str, Any], ...] = ()

    def __repr__(self) -> str:
        return self.text

    @staticmethod
    def keys(method: str, keys: Sequence[Key], **kwargs: Any) -> Call:
        """`method(list(keys), **kwargs)`, with a fresh list for each side."""
        frozen = tuple(keys)
        extra = "".join(f", {k}={v!r}" for k, v in kwargs.items())
        return Call(
            method,
            f"{method}({list(frozen)!r}{extra})",
            lambda: ((list(frozen),), dict(kwargs)),
            frozen,
            tuple(kwargs.items()),
        )

    def without_key(self, index: int) -> Call | None:
        """The same `Call.keys` call with the `index`-th key dropped (None if not one)."""
        if self.key_list is None or not 0 <= index < len(self.key_list):
            return None
        rest = self.key_list[:index] + self.key_list[index + 1 :]
        return Call.keys(self.method, rest, **dict(self.options))

    @staticmethod
    def plain(method: str, *args: Any) -> Call:
        """`method(*args)` with immutable arguments."""
        return Call(
            method, f"{method}({', '.join(repr(a) for a in args)})", lambda: (tuple(args), {})
        )

    @staticmethod
    def shaped(method: str, text: str, make_arg: Callable[[], object], **kwargs: Any) -> Call:
        """`method(make_arg(), **kwargs)`; `text` is the argument's source."""
        extra = "".join(f", {k}={v!r}" for k, v in kwargs.items())
        return Call(method, f"{method}({text}{extra})", lambda: ((make_arg(),), dict(kwargs)))

    @staticmethod
    def construct(text: str, num_blocks: object, policy: str, events: object) -> Call:
        """Calling a factory (or the model class) with possibly bad arguments."""
        return Call("", text, lambda: ((num_blocks, policy, events), {}))


def _copy(key: Key) -> Key:
    """An equal key that is a different object (duplicates are found by equality)."""
    return type(key)(bytearray(key)) if isinstance(key, bytes) else key


def bad_key_calls(method: str, keys: Sequence[Key]) -> list[Call]:
    """`method` called with malformed `keys` arguments built around `keys`.

    Duplicates, non-collections (int, None, an iterator), a mapping, a str or a single
    bytes key instead of a list, unhashable members; plus a tuple, a set and a
    frozenset, valid collections that must be accepted exactly like a list (a set
    in its iteration order, the same on both sides).
    """
    ks = tuple(keys)
    first = ks[0] if ks else KEYS[0]
    lst = list(ks)
    return [
        Call(  # the keys listed, so that a shrinker can drop the repeat
            method,
            f"{method}({[*lst, first]!r})",
            lambda: (([*ks, _copy(first)],), {}),
            (*ks, first),
        ),
        Call.shaped(method, "7", lambda: 7),
        Call.shaped(method, "None", lambda: None),
        Call.shaped(method, f"set({lst!r})", lambda: set(ks)),
        Call.shaped(method, f"iter({lst!r})", lambda: iter(ks)),
        Call.shaped(method, f"dict.fromkeys({lst!r})", lambda: dict.fromkeys(ks)),
        Call.shaped(method, "'k0'", lambda: "k0"),
        Call.shaped(method, repr(first), lambda: _copy(first)),
        Call.shaped(method, f"{[*lst, [1]]!r}", lambda: [*ks, [1]]),
        Call.shaped(
            method, f"[bytearray({KEYS[0]!r}), *{lst!r}]", lambda: [bytearray(KEYS[0]), *ks]
        ),
        Call.shaped(method, f"{tuple(ks)!r}", lambda: tuple(ks)),
        Call.shaped(method, f"frozenset({lst!r})", lambda: frozenset(ks)),
    ]


def bad_success_calls(keys: Sequence[Key]) -> list[Call]:
    """`complete_store(keys, success=<not a bool>)`."""
    return [Call.keys("complete_store", keys, success=v) for v in (1, 0, None, "yes", 1.0)]


def bad_lookup_calls() -> list[Call]:
    """`lookup` with unhashable keys (and a str, which is a valid, absent key)."""
    k = KEYS[0]
    return [
        Call.shaped("lookup", f"[{k!r}]", lambda: [k]),
        Call.shaped("lookup", f"bytearray({k!r})", lambda: bytearray(k)),
        Call.shaped("lookup", "{}", dict),
        Call.plain("lookup", "k0"),
    ]
