"""`mypyc_attr` for the compiled build, a no-op where mypy_extensions is absent.

The class decorator only instructs mypyc (docs/performance.md, "The compiled build");
the pure build needs nothing from it, so a plain install without mypy still imports.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

__all__ = ["mypyc_attr"]

_T = TypeVar("_T")

if TYPE_CHECKING:
    from mypy_extensions import mypyc_attr
else:
    try:
        from mypy_extensions import mypyc_attr
    except ImportError:  # the pure build without mypy installed

        def mypyc_attr(*_args: object, **_flags: object) -> Callable[[_T], _T]:
            """The class (or function) unchanged. Complexity: O(1)."""
            return lambda target: target
