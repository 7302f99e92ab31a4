"""Eviction policies by name: the built-in ones, third-party registrations and scopes.

`create_policy("lru", capacity)` builds a policy; `register_policy(name, cls)` adds a
third-party `CachePolicy` subclass for good; `policy_scope({name: cls})` makes it
known only inside a `with` block; `known_policies()` lists every name. An unknown
name is an `InvalidArgumentError` whose message lists the known names.

Built-in policies are imported lazily from `_BUILTIN` (name -> "module:Class"), so
adding one is one line here.

The module functions act on one default `PolicyRegistry`, the one the manager reads.
A fresh `PolicyRegistry()` knows the built-in names only and shares nothing with it
(the verification's registry probe checks one).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from types import MappingProxyType

from evictable.impl.policies.base import CachePolicy
from evictable.model.errors import InvalidArgumentError
from evictable.model.validate import check_num_blocks, check_policy_name

__all__ = [
    "PolicyRegistry",
    "builtin_class",
    "create_policy",
    "is_builtin",
    "known_policies",
    "policy_scope",
    "register_policy",
]

_BUILTIN: dict[str, str] = {
    "lru": "evictable.impl.policies.lru:LRUCachePolicy",
    "arc": "evictable.impl.policies.arc:ARCCachePolicy",
}
"""Built-in policies: name -> "module:Class", imported on first use."""

_registered: dict[str, type[CachePolicy]] = {}
"""Third-party policies registered at run time (the default registry's table)."""

_NO_SCOPE: Mapping[str, type[CachePolicy]] = MappingProxyType({})


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


_ABSTRACT = ("clear", "evict", "get", "insert", "remove", "snapshot", "touch")
"""The abstract methods of `CachePolicy`: a compiled `CachePolicy` (mypyc) keeps no
`__abstractmethods__` for its subclasses to inherit, so they are named here."""


def _missing_methods(cls: type[CachePolicy]) -> list[str]:
    """The abstract methods `cls` does not implement, sorted. Complexity: O(1)."""
    if inspect.isabstract(cls):
        return sorted(cls.__abstractmethods__)
    return [name for name in _ABSTRACT if getattr(cls, name, None) is getattr(CachePolicy, name)]


def _check_entry(name: object, cls: object) -> None:
    """The checks of a name and a class, wherever they are made known: a non-empty str
    without whitespace, a concrete `CachePolicy` subclass, a name that is not built in
    (else `InvalidArgumentError`)."""
    if not isinstance(name, str) or not name or any(c.isspace() for c in name):
        raise InvalidArgumentError(
            f"policy name must be a non-empty str without whitespace, got {name!r}"
        )
    if not (isinstance(cls, type) and issubclass(cls, CachePolicy)):
        raise InvalidArgumentError(f"policy {name!r}: {cls!r} is not a CachePolicy subclass")
    missing = _missing_methods(cls)
    if missing:
        raise InvalidArgumentError(
            f"policy {name!r}: {cls.__name__} is abstract (missing {', '.join(missing)})"
        )
    if name in _BUILTIN:
        raise InvalidArgumentError(f"policy name {name!r} is built in and cannot be replaced")


class PolicyRegistry:
    """Policy names and their classes: the built-in policies, the registered ones, and
    those of the enclosing `scope`s.

    >>> from evictable.impl.policies.lru import LRUCachePolicy
    >>> class MyLru(LRUCachePolicy):
    ...     pass
    >>> registry = PolicyRegistry()
    >>> with registry.scope({"my-lru": MyLru}):
    ...     type(registry.create("my-lru", 4)).__name__
    'MyLru'
    >>> registry.known()  # the scope is over
    ['arc', 'lru']
    >>> registry.register("my-lru", MyLru)  # for good
    >>> registry.known()
    ['arc', 'lru', 'my-lru']

    A scope is seen by the thread (the context) that entered it, not by others.
    Complexity: O(1) memory per name.
    """

    __slots__ = ("_scoped", "_table")

    def __init__(self) -> None:
        self._table: dict[str, type[CachePolicy]] = {}
        self._scoped: ContextVar[Mapping[str, type[CachePolicy]]] = ContextVar(
            "policy_scope", default=_NO_SCOPE
        )

    def _registrations(self) -> dict[str, type[CachePolicy]]:
        """The names registered for good (the dict itself)."""
        return self._table

    def known(self) -> list[str]:
        """Every policy name, built-in, registered and scoped, sorted."""
        return sorted({*_BUILTIN, *self._registrations(), *self._scoped.get()})

    def lookup(self, name: str) -> type[CachePolicy] | None:
        """The class known as `name`, or None (no error). Complexity: O(1)."""
        return (
            builtin_class(name) or self._registrations().get(name) or self._scoped.get().get(name)
        )

    def register(self, name: str, cls: type[CachePolicy]) -> None:
        """Make `cls` available as `name`, for good.

        Pre: `name` is a non-empty str without whitespace, not a built-in name, not
        registered to another class and not in use by a scope; `cls` is a concrete
        `CachePolicy` subclass. Any violation raises `InvalidArgumentError` and
        registers nothing. Registering the same class under the same name again is a
        no-op.
        Complexity: O(1).
        """
        _check_entry(name, cls)
        table = self._registrations()
        current = table.get(name)
        if current is not None and current is not cls:
            raise InvalidArgumentError(
                f"policy name {name!r} is already registered to {current.__name__}"
            )
        scoped = self._scoped.get().get(name)
        if scoped is not None:
            raise InvalidArgumentError(
                f"policy name {name!r} is in use by a policy scope ({scoped.__name__}) "
                "and cannot be registered"
            )
        table[name] = cls

    @contextmanager
    def scope(self, extra: Mapping[str, type[CachePolicy]]) -> Iterator[None]:
        """Make every class of `extra` available under its name inside the `with`
        block only: `known`, `create` (and so the manager's constructor) see them
        there, and nothing is left behind on exit, even on an exception.

        Pre: each entry as for `register`, and its name neither built in, nor
        registered, nor bound to another class by an enclosing scope (the same class
        again is allowed: scopes nest). Any violation raises `InvalidArgumentError`
        when the block is entered, and nothing changes.
        Complexity: O(len(extra) + names of the enclosing scopes).
        """
        if not isinstance(extra, Mapping):
            raise InvalidArgumentError(
                f"a policy scope takes a mapping of names to policy classes, got {extra!r}"
            )
        outer = self._scoped.get()
        table = self._registrations()
        for name, cls in extra.items():
            _check_entry(name, cls)
            current = table.get(name)
            if current is not None:
                raise InvalidArgumentError(
                    f"policy name {name!r} is already registered to {current.__name__}"
                )
            enclosing = outer.get(name)
            if enclosing is not None and enclosing is not cls:
                raise InvalidArgumentError(
                    f"policy name {name!r} is already scoped to {enclosing.__name__}"
                )
        token = self._scoped.set(MappingProxyType({**outer, **extra}))
        try:
            yield
        finally:
            self._scoped.reset(token)

    def create(self, name: str, capacity: int) -> CachePolicy:
        """A new, empty policy `name` for `capacity` blocks.

        Raises `InvalidArgumentError` for an unknown name (listing the known ones) or
        a capacity that is not an int >= 0.
        Complexity: O(1) plus the policy's constructor.
        """
        check_policy_name(name, self.known())
        capacity = check_num_blocks(capacity, "capacity")
        cls = builtin_class(name) or self._registrations().get(name) or self._scoped.get()[name]
        return cls(capacity)


class _ModuleRegistry(PolicyRegistry):
    """The registry of the module functions: its registrations are the module's
    `_registered` dict, read at each call."""

    __slots__ = ()

    def _registrations(self) -> dict[str, type[CachePolicy]]:
        return _registered


_DEFAULT: PolicyRegistry = _ModuleRegistry()
"""The registry the module functions (and so the manager) use."""


def known_policies() -> list[str]:
    """Every policy name, built-in and registered (and scoped, inside a
    `policy_scope`), sorted."""
    return _DEFAULT.known()


def register_policy(name: str, cls: type[CachePolicy]) -> None:
    """Make `cls` available as `name`.

    Pre: `name` is a non-empty str without whitespace, not a built-in name, and not
    registered to another class; `cls` is a concrete `CachePolicy` subclass. Any
    violation raises `InvalidArgumentError` and registers nothing. Registering the
    same class under the same name again is a no-op.
    Complexity: O(1).
    """
    _DEFAULT.register(name, cls)


def policy_scope(extra: Mapping[str, type[CachePolicy]]) -> AbstractContextManager[None]:
    """A context manager: inside its `with` block, every class of `extra` is a known
    policy under its name (`known_policies`, `create_policy`, the manager's
    constructor); on exit, even on an exception, they are gone. Nothing is
    registered.

    >>> from evictable.impl.manager import CPUOffloadingManager
    >>> from evictable.impl.policies.lru import LRUCachePolicy
    >>> class MyLru(LRUCachePolicy):
    ...     pass
    >>> with policy_scope({"my-lru-doctest": MyLru}):
    ...     manager = CPUOffloadingManager(4, "my-lru-doctest")
    >>> "my-lru-doctest" in known_policies()
    False

    Pre: as `register_policy` for each entry, and no name registered already or bound
    to another class by an enclosing scope (scopes nest); else `InvalidArgumentError`
    when the block is entered, and nothing changes. A scope is seen by the thread
    (the context) that entered it only.
    Complexity: O(len(extra)) to enter and to leave.
    """
    return _DEFAULT.scope(extra)


def create_policy(name: str, capacity: int) -> CachePolicy:
    """A new, empty policy `name` for `capacity` blocks.

    Raises `InvalidArgumentError` for an unknown name (listing the known ones) or a
    capacity that is not an int >= 0.
    Complexity: O(1) plus the policy's constructor.
    """
    return _DEFAULT.create(name, capacity)
