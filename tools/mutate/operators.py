"""The mutation operators: where a module of `impl/` can be mutated, and how.

`sites(source)` lists every mutation of a module in a fixed order (the order of a
walk of its syntax tree); `mutate(source, index)` returns the module's code with the
`index`-th one applied. A mutant's `id` names the enclosing function, the operator
and the change (`Class.method:compare:<->'<='#0`, the last number counting equal
changes before it in the same function), so it stays the same when code elsewhere
in the file moves.

Operators: comparison operators (`<`/`<=`, `>`/`>=`, `==`/`!=`, `is`/`is not`,
`in`/`not in`), arithmetic (`+`/`-`, `*`/`//`), augmented assignment (`+=`/`-=`),
`and`/`or`, dropping `not` and unary minus, integer constants (0 -> 1, 1 -> 0,
n -> n + 1), booleans, negating an `if` test, `break`/`continue`, a `return`
value replaced by None, and deleting a statement (replaced by `pass`). Docstrings,
strings, annotations, decorators and `__all__` are never mutated. The bodies of
`check_invariants` and `__repr__` (the engines' oracle and debug output, not
behaviour) are *oracle* sites, reported apart.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

__all__ = [
    "ORACLE_FUNCTIONS",
    "ScopedWalk",
    "Site",
    "finish",
    "generic_sites",
    "mutate",
    "numbered",
    "sites",
]

ORACLE_FUNCTIONS = frozenset({"check_invariants", "__repr__"})

_COMPARE: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BINOP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
}
_SYMBOL: dict[type[ast.AST], str] = {
    ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
    ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//",
}  # fmt: skip


@dataclass(frozen=True)
class Site:
    """One possible mutation of a module."""

    index: int
    scope: str
    operator: str
    before: str
    after: str
    line: int
    oracle: bool
    ordinal: int = 0

    @property
    def key(self) -> str:
        return f"{self.scope}:{self.operator}:{self.before!r}->{self.after!r}#{self.ordinal}"


def _src(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


class ScopedWalk(ast.NodeVisitor):
    """Collects (site, apply) pairs in walk order, each named by the enclosing
    function or class; `apply` mutates the walked tree. A subclass adds the visitors
    of its operators (`tools.mutate.proof_operators` adds the proofs' own)."""

    def __init__(self) -> None:
        self.found: list[tuple[Site, Callable[[], None]]] = []
        self.scope: list[str] = []
        self.oracle = 0
        self.functions = 0  # how many function bodies the walk is inside

    def add(
        self, node: ast.AST, op: str, before: str, after: str, apply: Callable[[], None]
    ) -> None:
        scope = ".".join(self.scope) or "<module>"
        line = getattr(node, "lineno", 0)
        site = Site(len(self.found), scope, op, before, after, line, self.oracle > 0)
        self.found.append((site, apply))

    # ------------------------------------------------------------ scopes

    def scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        """Walk `node`'s body inside its scope."""
        self.scope.append(node.name)
        oracle = node.name in ORACLE_FUNCTIONS
        function = not isinstance(node, ast.ClassDef)
        self.oracle += oracle
        self.functions += function
        self.body(node, node.body)
        self.functions -= function
        self.oracle -= oracle
        self.scope.pop()

    def body(self, owner: ast.AST, body: list[ast.stmt]) -> None:
        """Walk the statements of a body (a subclass may add sites per statement)."""
        for stmt in body:
            self.visit(stmt)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.scoped(node)

    def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
        self.scoped(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.scoped(node)


class _Walk(ScopedWalk):
    """The generic operators."""

    def visit_Module(self, node: ast.Module) -> None:
        for stmt in node.body:
            if _is_docstring(stmt) or _assigns_all(stmt) or _type_checking(stmt):
                continue
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.visit(stmt)
            else:
                self.visit(stmt)

    def body(self, owner: ast.AST, body: list[ast.stmt]) -> None:
        for i, stmt in enumerate(body):
            if i == 0 and _is_docstring(stmt):
                continue
            if self.functions and _deletable(stmt):
                self.add(stmt, "delete", _src(stmt), "pass", _replace_in(body, i, ast.Pass()))
            self.visit(stmt)

    # ------------------------------------------------------------ statements

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        self.add(node, "negate_if", _src(test), f"not ({_src(test)})", _negate(node))
        self.visit(node.test)
        self.body(node, node.body)
        self.body(node, node.orelse)

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self.body(node, node.body)
        self.body(node, node.orelse)

    def visit_While(self, node: ast.While) -> None:
        self.visit(node.test)
        self.body(node, node.body)
        self.body(node, node.orelse)

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            self.visit(item.context_expr)
        self.body(node, node.body)

    def visit_Try(self, node: ast.Try) -> None:
        self.body(node, node.body)
        for handler in node.handlers:
            self.body(handler, handler.body)
        self.body(node, node.orelse)
        self.body(node, node.finalbody)

    def visit_Break(self, node: ast.Break) -> None:
        self.add(node, "loop_jump", "break", "continue", _swap_jump(node, ast.Continue))

    def visit_Continue(self, node: ast.Continue) -> None:
        self.add(node, "loop_jump", "continue", "break", _swap_jump(node, ast.Break))

    def visit_Return(self, node: ast.Return) -> None:
        value = node.value
        if value is not None and not (isinstance(value, ast.Constant) and value.value is None):
            self.add(
                node, "return_none", _src(value), "None", _set(node, "value", ast.Constant(None))
            )
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        new = _BINOP.get(type(node.op))
        if new is not None and type(node.op) in (ast.Add, ast.Sub):
            before, after = _SYMBOL[type(node.op)] + "=", _SYMBOL[new] + "="
            self.add(node, "augassign", before, after, _set(node, "op", new()))
        self.visit(node.value)

    def visit_Assert(self, node: ast.Assert) -> None:
        return

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.body)

    # ------------------------------------------------------------ expressions

    def visit_Compare(self, node: ast.Compare) -> None:
        for i, op in enumerate(node.ops):
            new = _COMPARE.get(type(op))
            if new is not None:
                self.add(
                    node, "compare", _SYMBOL[type(op)], _SYMBOL[new], _set_item(node.ops, i, new())
                )
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        new = _BINOP.get(type(node.op))
        if new is not None and not _is_str(node):
            self.add(node, "binop", _SYMBOL[type(node.op)], _SYMBOL[new], _set(node, "op", new()))
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        new: ast.boolop = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        before, after = ("and", "or") if isinstance(node.op, ast.And) else ("or", "and")
        self.add(node, "boolop", before, after, _set(node, "op", new))
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not | ast.USub):
            name = "not" if isinstance(node.op, ast.Not) else "-"
            self.add(
                node, "unary", f"{name} {_src(node.operand)}", _src(node.operand), _unwrap(node)
            )
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        v = node.value
        if isinstance(v, bool):
            self.add(node, "constant", repr(v), repr(not v), _set(node, "value", not v))
        elif isinstance(v, int):
            new = 1 if v == 0 else 0 if v == 1 else v + 1
            self.add(node, "constant", repr(v), repr(new), _set(node, "value", new))

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        return  # message text

    def visit_Call(self, node: ast.Call) -> None:
        self.visit(node.func)
        for arg in node.args:
            self.visit(arg)
        for kw in node.keywords:
            self.visit(kw.value)


# ------------------------------------------------------------------ helpers


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def _assigns_all(stmt: ast.stmt) -> bool:
    targets = stmt.targets if isinstance(stmt, ast.Assign) else []
    return any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets)


def _type_checking(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test)


def _deletable(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Expr):
        return not _is_docstring(stmt)
    # A `return` is mutated by `return_none` instead.
    return isinstance(
        stmt, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Raise | ast.Delete
    ) and not (isinstance(stmt, ast.AnnAssign) and stmt.value is None)


def _is_str(node: ast.BinOp) -> bool:
    return any(
        isinstance(x, ast.Constant) and isinstance(x.value, str) for x in (node.left, node.right)
    )


def _set(node: ast.AST, attr: str, value: object) -> Callable[[], None]:
    return lambda: setattr(node, attr, value)


def _set_item(items: list[ast.cmpop], i: int, value: ast.cmpop) -> Callable[[], None]:
    def apply() -> None:
        items[i] = value

    return apply


def _replace_in(body: list[ast.stmt], i: int, new: ast.stmt) -> Callable[[], None]:
    def apply() -> None:
        body[i] = ast.copy_location(new, body[i])

    return apply


def _negate(node: ast.If) -> Callable[[], None]:
    def apply() -> None:
        node.test = ast.copy_location(ast.UnaryOp(ast.Not(), node.test), node.test)

    return apply


def _unwrap(node: ast.UnaryOp) -> Callable[[], None]:
    # Replace the node's operator with unary plus on a bool-preserving path: `not x` -> `x`
    # (an ast.UnaryOp(UAdd) would change `not x` into `+x`, wrong for non-numbers).
    def apply() -> None:
        node.op = ast.UAdd() if isinstance(node.op, ast.USub) else _Keep()

    return apply


class _Keep(ast.unaryop):
    """A marker operator replaced by the operand itself (see `_Unwrap`)."""


class _Unwrap(ast.NodeTransformer):
    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        self.generic_visit(node)
        return node.operand if isinstance(node.op, _Keep) else node


def _swap_jump(node: ast.stmt, new: type[ast.stmt]) -> Callable[[], None]:
    def apply() -> None:
        node.__class__ = new

    return apply


# ------------------------------------------------------------------ API


def numbered(found: list[tuple[Site, Callable[[], None]]]) -> list[tuple[Site, Callable[[], None]]]:
    """The sites in order, each with its index in the list and its ordinal (how many
    equal changes come before it in the same scope)."""
    counts: dict[tuple[str, str, str, str], int] = {}
    out = []
    for i, (site, apply) in enumerate(found):
        k = (site.scope, site.operator, site.before, site.after)
        out.append((replace(site, index=i, ordinal=counts.get(k, 0)), apply))
        counts[k] = counts.get(k, 0) + 1
    return out


def generic_sites(tree: ast.Module) -> list[tuple[Site, Callable[[], None]]]:
    """The generic operators' sites of `tree` (not numbered), in walk order."""
    walker = _Walk()
    walker.visit(tree)
    return walker.found


def finish(tree: ast.Module) -> ast.Module:
    """A mutated tree made compilable (markers resolved, locations filled in)."""
    fixed: ast.Module = _Unwrap().visit(tree)
    return ast.fix_missing_locations(fixed)


def _walk(source: str) -> tuple[ast.Module, list[tuple[Site, Callable[[], None]]]]:
    tree = ast.parse(source)
    return tree, numbered(generic_sites(tree))


def sites(source: str) -> list[Site]:
    """Every mutation of the module `source`, in walk order."""
    return [site for site, _ in _walk(source)[1]]


def mutate(source: str, index: int) -> ast.Module:
    """The module with its `index`-th mutation applied (a fresh tree)."""
    tree, found = _walk(source)
    found[index][1]()
    return finish(tree)


def iter_sources(tree: ast.Module) -> Iterator[str]:
    """The mutated module as source text (for showing a mutant)."""
    yield ast.unparse(copy.deepcopy(tree))
