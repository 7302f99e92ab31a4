"""Seeded bugs made from the implementation's own source: a copy of one class, one edit.

A broken variant of an `impl/` class is not a subclass that re-implements a method
(it would read the implementation's private fields from another package, and would
go on testing a stale copy of the method when `impl/` changes): it is the real
class, compiled again from its module's source with an edit.

>>> from evictable.proofs.controls.mutant import Edit, mutant
>>> Refusing = mutant(
...     "evictable.impl.slots",
...     "SlotAllocator",
...     Edit("SlotAllocator.free_count", "return self.capacity", "return 0 * self.capacity"),
...     name="Refusing",
...     doc="`free_count` is always 0.",
...     home="doctest",
... )
>>> Refusing(3).free_count(), Refusing.__name__, Refusing.__module__
(0, 'Refusing', 'doctest')

`mutant(module, qualname, *edits, name=..., doc=...)`:

1. reads the source file of `module` (the file on disk, whatever code is loaded);
2. applies each `Edit(where, old, new)` in order: `where` is the qualified name of a
   function, method or class of the module (`"CPUOffloadingManager.complete_load"`);
   `old` must occur exactly once in its source span (else `MutantError`, naming the
   bug, the file and the text: a control fails loudly at import once `impl/`
   changes, instead of silently testing something else);
3. compiles the top-level definitions that hold `qualname` or an edit, keeping
   their line numbers, under the file name `<seeded: NAME from impl/x.py>` (the
   edited source is put in `linecache`, so tracebacks show the seeded lines);
4. runs them in a copy of the real module's namespace updated with `namespace`
   (every other name -- helpers, constants, the classes of the values it meets --
   is the real module's object, so identities and `isinstance` checks inside the
   copy hold; `namespace` injects what the edits need, or a broken collaborator);
5. returns the class `qualname` of that copy, renamed `name`, with `__module__` the
   calling module (`home`) and `__doc__` `doc`: assigned to the module attribute
   `name`, it pickles by reference and deep-copies like any class.

The result is a full copy of the real class with one mistake (an edit or two: the
same mistake in a per-key method and in its batch twin): it is not a subclass of
it (nothing in the engines asks `isinstance(x, CPUOffloadingManager)`).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import linecache
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

__all__ = ["Edit", "MutantError", "lines", "mutant", "mutant_function", "mutant_of"]

MUTANT_OF = "__mutant_of__"
"""The class attribute naming what a mutant was made from ("module:Qualname")."""


@dataclass(frozen=True)
class Edit:
    """Replace `old` (which occurs exactly once in the source span of `where`, a
    qualified name in the module) by `new`. Mark the bug in `new` with `# BUG: ...`."""

    where: str
    old: str
    new: str


def lines(text: str, indent: int = 8) -> str:
    """`text` dedented, its first and last blank lines dropped, every line indented by
    `indent` spaces and ended by a newline: a block of a method body, as in the file.

    >>> lines('''
    ...     if x:
    ...         y()
    ... ''', 4)
    '    if x:\\n        y()\\n'
    """
    body = textwrap.dedent(text).strip("\n")
    return "".join(
        (" " * indent + line if line.strip() else "") + "\n" for line in body.split("\n")
    )


class MutantError(Exception):
    """A seeded bug cannot be made: its edit no longer fits the implementation."""


def _display(module: str) -> str:
    """`evictable.impl.manager` -> `impl/manager.py`."""
    return "/".join(module.removeprefix("evictable.").split(".")) + ".py"


def _find(tree: ast.Module, qualname: str) -> ast.stmt | None:
    """The definition (class or function) named by `qualname`, top level first."""
    body: list[ast.stmt] = tree.body
    found: ast.stmt | None = None
    for part in qualname.split("."):
        found = next(
            (
                node
                for node in body
                if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                and node.name == part
            ),
            None,
        )
        if found is None:
            return None
        body = found.body
    return found


def _span(source: str, node: ast.stmt) -> tuple[int, int]:
    """Character offsets of the lines of `node` (its decorators included)."""
    first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
    last = node.end_lineno or node.lineno
    rows = source.splitlines(keepends=True)
    start = sum(len(row) for row in rows[: first - 1])
    end = start + sum(len(row) for row in rows[first - 1 : last])
    return start, end


def _apply(source: str, edit: Edit, name: str, shown: str) -> str:
    node = _find(ast.parse(source), edit.where)
    if node is None:
        raise MutantError(f"seeded bug {name}: {shown} has no definition {edit.where!r}")
    start, end = _span(source, node)
    count = source.count(edit.old, start, end)
    if count != 1:
        what = "does not contain" if count == 0 else f"contains {count} times"
        raise MutantError(
            f"seeded bug {name}: {edit.where} in {shown} {what} the text to replace "
            f"(the implementation changed? update the control):\n{edit.old}"
        )
    at = source.index(edit.old, start, end)
    return source[:at] + edit.new + source[at + len(edit.old) :]


def _build(
    module: str,
    qualname: str,
    edits: tuple[Edit, ...],
    name: str,
    namespace: Mapping[str, object],
) -> Any:
    """The object `qualname` of the edited copy of `module` (see the module doc)."""
    if not edits and not namespace:
        raise MutantError(f"seeded bug {name}: no edit and no namespace, so no bug")
    real = importlib.import_module(module)
    shown = _display(module)
    path = getattr(real, "__file__", None)
    if path is None:
        raise MutantError(f"seeded bug {name}: {module} has no source file")
    file = Path(path)
    if file.suffix != ".py":  # a compiled module (mypyc): its source is installed beside it
        file = file.with_name(file.name.split(".", 1)[0] + ".py")
    source = file.read_text(encoding="utf-8")
    for edit in edits:
        source = _apply(source, edit, name, shown)
    tree = ast.parse(source)
    wanted = {qualname.split(".")[0], *(e.where.split(".")[0] for e in edits)}
    body: list[ast.stmt] = [
        node
        for node in tree.body
        if (isinstance(node, ast.ImportFrom) and node.module == "__future__")
        or (
            isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name in wanted
        )
    ]
    if _find(tree, qualname) is None:
        raise MutantError(f"seeded bug {name}: {shown} has no definition {qualname!r}")
    text = source.splitlines(keepends=True)
    filename, copies = f"<seeded: {name} from {shown}>", 1
    while _cached(filename) not in (None, text):  # another mutant of the same name
        copies += 1
        filename = f"<seeded: {name} ({copies}) from {shown}>"
    linecache.cache[filename] = (len(source), None, text, filename)
    code = compile(ast.Module(body=body, type_ignores=[]), filename, "exec", dont_inherit=True)
    scope: dict[str, Any] = dict(vars(real))
    scope.update(namespace)
    exec(code, scope)  # the implementation's own source, edited
    obj: Any = scope[qualname.split(".")[0]]
    for part in qualname.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


def _home(home: str | None) -> str:
    if home is not None:
        return home
    frame = inspect.currentframe()
    caller = frame.f_back.f_back if frame is not None and frame.f_back is not None else None
    return str(caller.f_globals["__name__"]) if caller is not None else __name__


def mutant(
    module: str,
    qualname: str,
    *edits: Edit,
    name: str,
    doc: str,
    namespace: Mapping[str, object] = MappingProxyType({}),
    home: str | None = None,
) -> type[Any]:
    """The class `qualname` of `module` with `edits` applied, named `name` in `home`
    (default: the calling module). See the module doc. Raises `MutantError` when an
    edit does not fit, and when there is no change at all (no edit, no namespace)."""
    where = _home(home)
    cls = _build(module, qualname, edits, name, namespace)
    if not isinstance(cls, type):
        raise MutantError(f"seeded bug {name}: {qualname} in {_display(module)} is not a class")
    cls.__module__ = where
    _rename(cls, cls.__qualname__, name)
    cls.__name__ = cls.__qualname__ = name
    cls.__doc__ = doc
    setattr(cls, MUTANT_OF, f"{module}:{qualname}")
    return cls


def mutant_function(
    module: str,
    qualname: str,
    *edits: Edit,
    name: str,
    doc: str,
    namespace: Mapping[str, object] = MappingProxyType({}),
    home: str | None = None,
) -> Callable[..., Any]:
    """The module-level function `qualname` of `module` with `edits` applied, named
    `name` in `home`: a broken collaborator to inject into a `mutant` class's
    `namespace` (a class of the real module calls the real function otherwise)."""
    where = _home(home)
    fn = _build(module, qualname, edits, name, namespace)
    if not inspect.isfunction(fn):
        raise MutantError(f"seeded bug {name}: {qualname} in {_display(module)} is not a function")
    fn.__module__ = where
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    setattr(fn, MUTANT_OF, f"{module}:{qualname}")
    return fn


def _cached(filename: str) -> list[str] | None:
    """The lines `linecache` holds for `filename`, or None."""
    entry = linecache.cache.get(filename)
    return list(entry[2]) if entry is not None and len(entry) == 4 else None


def _rename(cls: type, old: str, new: str) -> None:
    """The qualified names of `cls`'s own functions, under its new name."""
    for value in vars(cls).values():
        func = getattr(value, "__func__", value)
        if inspect.isfunction(func) and func.__qualname__.startswith(old + "."):
            func.__qualname__ = new + func.__qualname__[len(old) :]
            func.__module__ = cls.__module__


def mutant_of(cls: object) -> str | None:
    """What `cls` (a class or function) is a mutant of ("module:Qualname"), or None
    for any other object."""
    if not isinstance(cls, type) and not inspect.isfunction(cls):
        return None
    made = getattr(cls, "__dict__", {}).get(MUTANT_OF)
    return made if isinstance(made, str) else None
