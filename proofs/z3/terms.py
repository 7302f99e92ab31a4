"""Z3 terms built through Z3's C API: the very terms `z3.If` and `z3.And` build,
without the Python wrapper's argument coercion (several times less time per term).

The finite-world encodings build thousands of terms per relation (`manager_state.VecFn`:
a symbolic index is a chain of `If`s, an update one `If` per index), and the
refinement oracle builds a relation per shape it meets; these helpers take the fast
path only when the arguments already are terms of the right sorts, and fall back to
the wrapper otherwise, so they accept exactly what the wrapper accepts.
"""

from __future__ import annotations

from typing import Any

import z3
from z3 import z3core

__all__ = ["both", "ite"]

Term = Any


def _sort(t: Any) -> int | None:
    """The address of `t`'s sort (Z3 shares one object per sort), or None if `t` is
    not a term."""
    if not isinstance(t, z3.ExprRef):
        return None
    return int(z3core.Z3_get_sort(t.ctx.ref(), t.as_ast()).value or 0)


def _wrap(ast: Any, like: Term) -> Term:
    """The Python object for `ast`, a term of `like`'s sort."""
    if isinstance(like, z3.ArithRef):
        return z3.ArithRef(ast, like.ctx)
    if isinstance(like, z3.BoolRef):
        return z3.BoolRef(ast, like.ctx)
    if type(like) is z3.DatatypeRef:
        return z3.DatatypeRef(ast, like.ctx)
    return z3.z3._to_expr_ref(ast, like.ctx)


def ite(c: Term, a: Term, b: Term) -> Term:
    """`z3.If(c, a, b)`."""
    if (
        isinstance(c, z3.BoolRef)
        and isinstance(a, z3.ExprRef)
        and isinstance(b, z3.ExprRef)
        and a.ctx is c.ctx is b.ctx
        and _sort(a) == _sort(b)
    ):
        ctx = c.ctx
        return _wrap(z3core.Z3_mk_ite(ctx.ref(), c.as_ast(), a.as_ast(), b.as_ast()), b)
    return z3.If(c, a, b)


def both(a: Term, b: Term) -> Term:
    """`z3.And(a, b)`."""
    if isinstance(a, z3.BoolRef) and isinstance(b, z3.BoolRef) and a.ctx is b.ctx:
        args = (z3core.Ast * 2)(a.as_ast(), b.as_ast())
        return z3.BoolRef(z3core.Z3_mk_and(a.ctx.ref(), 2, args), a.ctx)
    return z3.And(a, b)
