"""Argument validation shared by the model and the implementation.

Both `model.manager.ModelManager` and `impl.manager.CPUOffloadingManager` call these
functions, in the same order, so that the same bad call raises the same error on
both sides. The order is docs/semantics.md, "Validation order": argument shape first (types and
values), then duplicate keys, then the per-key lifecycle checks (those are the
table's rejections, raised by the callers).

These functions sit on the implementation's hot path, so the happy path is one
type test and one `set()` per batch; the detailed diagnosis (which keys are
duplicated, which one is unhashable) is computed only when a check fails.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Hashable, Mapping, Sequence

from evictable.model.errors import DuplicateKeysError, InvalidArgumentError
from evictable.model.types import Key

__all__ = [
    "check_enable_events",
    "check_key",
    "check_keys",
    "check_keys_and_success",
    "check_num_blocks",
    "check_policy_name",
    "duplicated_keys",
    "touch_keys",
]

_NOT_A_KEY_SEQUENCE = (str, bytes, bytearray)
"""Collections that are refused as a batch of keys: a lone bytes key is a classic slip."""


def check_num_blocks(num_blocks: object, what: str = "num_blocks") -> int:
    """`num_blocks` must be an int (not a bool) and >= 0; else `InvalidArgumentError`."""
    if isinstance(num_blocks, bool) or not isinstance(num_blocks, int):
        raise InvalidArgumentError(
            f"{what} must be a non-negative int, got {type(num_blocks).__name__} {num_blocks!r}"
        )
    if num_blocks < 0:
        raise InvalidArgumentError(f"{what} must be a non-negative int, got {num_blocks!r}")
    return int(num_blocks)


def check_enable_events(enable_events: object) -> bool:
    """`enable_events` must be a bool; else `InvalidArgumentError`."""
    if not isinstance(enable_events, bool):
        raise InvalidArgumentError(
            f"enable_events must be a bool, got {type(enable_events).__name__} {enable_events!r}"
        )
    return enable_events


def check_policy_name(name: object, known: Collection[str]) -> str:
    """`name` must be one of `known`; else `InvalidArgumentError` listing the known names."""
    if not isinstance(name, str) or name not in known:
        raise InvalidArgumentError(
            f"unknown policy {name!r}; known policies: {', '.join(sorted(known))}"
        )
    return name


def check_key(key: object) -> Key:
    """A single key must be hashable; else `InvalidArgumentError`."""
    try:
        hash(key)
    except TypeError:
        raise InvalidArgumentError(
            f"key {key!r} is not hashable (keys must be hashable, e.g. bytes)"
        ) from None
    return key


def _shape_error(keys: object) -> InvalidArgumentError:
    return InvalidArgumentError(
        f"keys must be a collection of hashable keys (a list, tuple, set, ...; not str, "
        f"bytes, bytearray, a mapping or an iterator), got {type(keys).__name__}"
    )


def _unhashable_error(keys: Sequence[object]) -> InvalidArgumentError:
    for key in keys:
        try:
            hash(key)
        except TypeError:
            return InvalidArgumentError(
                f"key {key!r} is not hashable (keys must be hashable, e.g. bytes)"
            )
    # Unreachable unless a key's hash is not deterministic; still a bad key.
    return InvalidArgumentError("keys could not be hashed consistently")


def _as_sequence(keys: object) -> Sequence[Key]:
    """The keys in their iteration order: a list or tuple as it is, any other
    collection (a set, a dict's keys view, ...) as a list; `InvalidArgumentError`
    for anything else (a lone str or bytes key, a mapping, an iterator)."""
    if type(keys) is list or type(keys) is tuple:
        return keys
    if isinstance(keys, (*_NOT_A_KEY_SEQUENCE, Mapping)) or not isinstance(keys, Collection):
        raise _shape_error(keys)
    return list(keys)


def _unique(keys: Sequence[Key]) -> set[Key]:
    try:
        return set(keys)
    except TypeError:
        raise _unhashable_error(keys) from None


def duplicated_keys(keys: Sequence[Key]) -> list[Key]:
    """Every key that occurs more than once, once each, in first-occurrence order."""
    counts = Counter(keys)
    out: list[Key] = []
    reported: set[Hashable] = set()
    for key in keys:
        if counts[key] > 1 and key not in reported:
            reported.add(key)
            out.append(key)
    return out


def check_keys(keys: object) -> tuple[Sequence[Key], set[Key]]:
    """Validate a batch of keys: shape, hashability, then no duplicates.

    Returns the keys as a list or tuple (the input itself when it is one) and the set
    of them (callers reuse it, e.g. as the protected set of `prepare_store`).
    Raises `InvalidArgumentError` (bad shape, unhashable key) or `DuplicateKeysError`
    naming every duplicated key in first-occurrence order.
    Complexity: O(len(keys)), one `set()` on the happy path.
    """
    seq = keys if type(keys) is list or type(keys) is tuple else _as_sequence(keys)
    try:
        unique = set(seq)
    except TypeError:
        raise _unhashable_error(seq) from None
    if len(unique) != len(seq):
        raise DuplicateKeysError(duplicated_keys(seq))
    return seq, unique


def check_keys_and_success(keys: object, success: object) -> tuple[Sequence[Key], set[Key]]:
    """`check_keys` for `complete_store`: the shape of both arguments before duplicates.

    `success` must be a bool (else `InvalidArgumentError`).
    """
    seq = _as_sequence(keys)
    unique = _unique(seq)
    if type(success) is not bool:
        raise InvalidArgumentError(
            f"success must be a bool, got {type(success).__name__} {success!r}"
        )
    if len(unique) != len(seq):
        raise DuplicateKeysError(duplicated_keys(seq))
    return seq, unique


def touch_keys(keys: object) -> Sequence[Key]:
    """The keys of a `touch` hint, which never raises: a malformed batch is ignored.

    A list/tuple/sequence gives its hashable keys in order (unhashable ones are
    dropped, they can never be resident); any other shape gives no keys.
    """
    try:
        seq = _as_sequence(keys)
    except InvalidArgumentError:
        return []
    out: list[Key] = []
    for key in seq:
        try:
            hash(key)
        except Exception:  # a hint never raises, whatever a key's __hash__ does
            continue
        out.append(key)
    return out
