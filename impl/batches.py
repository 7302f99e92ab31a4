"""The manager's batch arguments, validated: `evictable.model.validate`'s checks, fast.

`check_keys` and `check_keys_and_success` keep the contract of the functions of the
same names in `evictable.model.validate` (the model calls those, so a bad call
raises the same error on both sides), with one difference: the batch comes back as
a list. A plain list of hashable, distinct keys (every call of a serving engine) is
accepted here with one `set()` and no call into the model's module; anything else
(another collection, an unhashable key, a repeated key, a `success` that is not a
bool) is handed to the model's function, which accepts it or raises its error.
On the compiled build (docs/performance.md, "The compiled build") this keeps the
interpreted validation module off the hot path.
"""

from __future__ import annotations

from evictable.model import validate
from evictable.model.types import Key

__all__ = ["check_keys", "check_keys_and_success"]


def check_keys(keys: object) -> tuple[list[Key], set[Key]]:
    """`evictable.model.validate.check_keys`, the batch as a list.

    Pre: none (any object). Post: (the keys in order, the set of them): the input
    itself when it is a list, else a new list; `InvalidArgumentError` (bad shape,
    unhashable key) or `DuplicateKeysError` exactly as the model's function.
    Complexity: O(len(keys)), one `set()` on the happy path.
    """
    if type(keys) is list:
        batch: list[Key] = keys
        try:
            unique = set(batch)
        except TypeError:
            unique = set()  # an unhashable key: the model's function names it
        if len(unique) == len(batch):
            return batch, unique
    seq, unique = validate.check_keys(keys)
    return (seq if type(seq) is list else list(seq)), unique


def check_keys_and_success(keys: object, success: object) -> tuple[list[Key], set[Key]]:
    """`evictable.model.validate.check_keys_and_success`, the batch as a list.

    Pre: none. Post: as `check_keys`, and `success` is a bool (else the model's
    `InvalidArgumentError`, checked in the model's order). Complexity: O(len(keys)).
    """
    if type(keys) is list and type(success) is bool:
        batch: list[Key] = keys
        try:
            unique = set(batch)
        except TypeError:
            unique = set()
        if len(unique) == len(batch):
            return batch, unique
    seq, unique = validate.check_keys_and_success(keys, success)
    return (seq if type(seq) is list else list(seq)), unique
