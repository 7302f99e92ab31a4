"""Eviction policies by name: the built-in ones and third-party registrations.

`create_policy("lru", capacity)` builds a policy; `register_policy(name, cls)` adds a
third-party `CachePolicy` subclass; `known_policies()` lists every name. An unknown
name is an `InvalidArgumentError` whose message lists the known names.

Built-in policies are imported lazily from `_BUILTIN` (name -> "module:Class"), so
adding one is one line here.
"""

from __future__ import annotations

import importlib
import inspect

from evictable.impl.policies.base import CachePolicy
from evictable.model.errors import InvalidArgumentError
from evictable.model.validate import check_num_blocks, check_policy_name

__all__ = [
    "builtin_class",
    "create_policy",
    "is_builtin",
    "known_policies",
    "register_policy",
]

_BUILTIN: dict[str, str] = {
    "lru": "evictable.impl.policies.lru:LRUCachePolicy",
    "arc": "evictable.impl.policies.arc:ARCCachePolicy",
}
"""Built-in policies: name -> "module:Class", imported on first use."""

_registered: dict[str, type[CachePolicy]] = {}
"""Third-party policies registered at run time."""


def known_policies() -> list[str]:
    """Every policy name, built-in and registered, sorted."""
    return sorted({*_BUILTIN, *_registered})


def builtin_class(name: str) -> type[CachePolicy] | None:
    """The class of a built-in policy (imported on demand), or None for other names.

    Complexity: O(1) after the first import.
    """
    path = _BUILTIN.get(name)
    if path is None:
        return None
    module_name, _, class_name = path.partition(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    if not (isinstance(cls, type) and issubclass(cls, CachePolicy)):
        raise InvalidArgumentError(f"built-in policy {name!r} ({path}) is not a CachePolicy")
    return cls


def is_builtin(cls: type[CachePolicy]) -> bool:
    """Whether `cls` is exactly one of the built-in policy classes (not a subclass)."""
    return any(builtin_class(name) is cls for name in _BUILTIN)


def register_policy(name: str, cls: type[CachePolicy]) -> None:
    """Make `cls` available as `name`.

    Pre: `name` is a non-empty str without whitespace, not a built-in name, and not
    registered to another class; `cls` is a concrete `CachePolicy` subclass. Any
    violation raises `InvalidArgumentError` and registers nothing. Registering the
    same class under the same name again is a no-op.
    Complexity: O(1).
    """
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise InvalidArgumentError(
            f"policy name must be a non-empty str without whitespace, got {name!r}"
        )
    if not (isinstance(cls, type) and issubclass(cls, CachePolicy)):
        raise InvalidArgumentError(f"policy {name!r}: {cls!r} is not a CachePolicy subclass")
    if inspect.isabstract(cls):
        raise InvalidArgumentError(
            f"policy {name!r}: {cls.__name__} is abstract (missing "
            f"{', '.join(sorted(cls.__abstractmethods__))})"
        )
    if name in _BUILTIN:
        raise InvalidArgumentError(f"policy name {name!r} is built in and cannot be replaced")
    current = _registered.get(name)
    if current is not None and current is not cls:
        raise InvalidArgumentError(
            f"policy name {name!r} is already registered to {current.__name__}"
        )
    _registered[name] = cls


def create_policy(name: str, capacity: int) -> CachePolicy:
    """A new, empty policy `name` for `capacity` blocks.

    Raises `InvalidArgumentError` for an unknown name (listing the known ones) or a
    capacity that is not an int >= 0.
    Complexity: O(1) plus the policy's constructor.
    """
    check_policy_name(name, known_policies())
    capacity = check_num_blocks(capacity, "capacity")
    cls = builtin_class(name) or _registered[name]
    policy = cls(capacity)
    return policy
