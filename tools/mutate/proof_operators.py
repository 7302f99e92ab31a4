"""The mutation operators of the proofs: where a module of `proofs/z3` or
`proofs/refine` can be weakened, and how.

Each operator breaks the reasoning a record reports without touching the code it is
about, so a mutant that survives `evictable verify --quick` names a record that would
still print its verdict with that reasoning gone:

* `stub` -- a check or lemma (a function annotated `-> Outcome`) whose body becomes
  `return proved(...)`; one annotated `-> Outcome | None` (a search that returns its
  finding, or None) becomes `return None`: the search never finds anything;
* `claim_true` -- a claim weakened to `z3.BoolVal(True)`: a string-keyed entry of a
  dict of claims (a literal, a comprehension, `claims["name"] = ...`, a lambda per
  key), an element appended to a list of claims, whenever the value is a Boolean
  term by its shape (a comparison, `and`/`or`/`not`, or a call of `And`, `Or`,
  `Implies`, `Not`, `Distinct`, `all_keys`, `any_key`, `all_slots`, `every`, `conj`,
  `same_as` ...);
* `conjunct` -- one argument of `z3.And(a, b, ...)`, or one element of a list given
  to `conj([...])`, dropped;
* `assume_false` -- `z3.BoolVal(False)` added to the assumptions of a query: the
  `assumptions` of `z3_valid`, the assumptions of `refute_claims`, the formulas of
  `z3_sat`, the arguments of `solver.add(...)`, a list of facts or assumptions
  (`facts = [...]`, `assumptions = [...]`, `pre = [...]`, a `facts=` keyword). The
  query becomes vacuous: only a vacuity check (or a control that must be refuted by
  the same query) catches it;
* `shrink` -- a quantifier range or a bound made smaller: `range(n)` -> `range(n - 1)`
  (`range(a, n)` -> `range(a, n - 1)`), an integer constant n in 1..64 -> n - 1 (a
  world's size, a batch bound, a depth: a keyword's value, an assignment's, a
  dict's, an argument, a comparison's operand; never an operand of arithmetic
  such as `n + 1`, a subscript, an argument of `If(...)` or of `range`, which has
  its own change);
* `drop_key` -- a loop or a comprehension that stops after its first item
  (`itertools.islice(xs, 1)`), and a loop over keys (`KEYS`) after its first two
  as well (`islice(xs, 2)`): a batch whose keys at position >= 1 (>= 2) are left
  out of a relation, a claim, a fact; a quantifier range cut short.

The functions that only render text (a counterexample's description, a label:
`TEXT_SCOPE`) are never mutated: a change there changes no verdict. `sites(source)`
lists the generic operators' sites (`tools.mutate.operators`) and then these, in one
numbering; `mutate(source, index)` applies one of them.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from tools.mutate.operators import ScopedWalk, Site, finish, generic_sites, numbered

__all__ = ["PROOF_OPERATORS", "TEXT_SCOPE", "is_text", "mutate", "sites"]

PROOF_OPERATORS: tuple[str, ...] = (
    "stub",
    "claim_true",
    "conjunct",
    "assume_false",
    "shrink",
    "drop_key",
)
"""The operators of this module, in the order their sites are listed."""

TEXT_SCOPE = re.compile(
    r"^_?(describe|render|show|text|line|label|diagnose|figures)|_(text|label|name|names)$"
    r"|^__repr__$"
)
"""Functions that only render text (a counterexample, a label): not mutated."""

BOOLEAN_CALLS = frozenset(
    {
        "And",
        "Or",
        "Not",
        "Implies",
        "Distinct",
        "ForAll",
        "Exists",
        "BoolVal",
        "all_keys",
        "any_key",
        "all_slots",
        "every",
        "conj",
        "same_as",
        "same_key",
        "same_counts",
        "victims_evictable_outside",
    }
)
"""Calls whose result is a Boolean term (a claim), by the called name."""

ASSUMPTION_NAMES = re.compile(r"(^|_)(facts?|assumptions?|premises?|pre|init|hyps?)$")
"""Names of the lists that hold a query's assumptions."""

KEYS = re.compile(r"key|batch|victim|actor|\bc\.n\b|\bn\b|blocks")
"""A loop over keys, by the text of what it iterates (keys, a batch, victims, the
actors of a call, `range(n)`)."""

ARITHMETIC = "<arithmetic>"
"""The label of a constant that is an operand (`n + 1`, `-1`, `count += 1`): an
offset, not a bound, so never shrunk."""

_BIG = 64  # an integer above this is not a bound (an rlimit, a seed, a count of examples)


def is_text(scope: str) -> bool:
    """Whether a site's scope lies inside a function that only renders text."""
    return any(TEXT_SCOPE.search(part) for part in scope.split("."))


def _src(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 60 else text[:57] + "..."


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _boolean(node: ast.expr) -> bool:
    """A Boolean term by its shape."""
    if isinstance(node, ast.Compare | ast.BoolOp):
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return True
    return isinstance(node, ast.Call) and _name(node.func) in BOOLEAN_CALLS


def _stringy(key: ast.expr | None) -> bool:
    return isinstance(key, ast.JoinedStr) or (
        isinstance(key, ast.Constant) and isinstance(key.value, str)
    )


def _z3(attr: str, value: bool) -> ast.expr:
    """`__import__('z3').BoolVal(value)`: valid whatever the module calls z3."""
    z3 = ast.Call(ast.Name("__import__", ast.Load()), [ast.Constant("z3")], [])
    return ast.Call(ast.Attribute(z3, attr, ast.Load()), [ast.Constant(value)], [])


def _islice(iterable: ast.expr, n: int) -> ast.expr:
    tools = ast.Call(ast.Name("__import__", ast.Load()), [ast.Constant("itertools")], [])
    return ast.Call(ast.Attribute(tools, "islice", ast.Load()), [iterable, ast.Constant(n)], [])


def _minus_one(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return ast.Constant(node.value - 1)
    return ast.BinOp(node, ast.Sub(), ast.Constant(1))


def _with_false(node: ast.expr) -> ast.expr:
    """`[*node, BoolVal(False)]` (a list literal gets the element appended)."""
    if isinstance(node, ast.List):
        return ast.List([*node.elts, _z3("BoolVal", False)], ast.Load())
    return ast.List([ast.Starred(node, ast.Load()), _z3("BoolVal", False)], ast.Load())


def _setter(obj: object, attr: str, value: object) -> Callable[[], None]:
    return lambda: setattr(obj, attr, value)


def _item_setter(items: list[ast.expr], i: int, value: ast.expr) -> Callable[[], None]:
    def apply() -> None:
        items[i] = value

    return apply


def _appender(items: list[ast.expr] | list[ast.keyword], value: object) -> Callable[[], None]:
    return lambda: items.append(value)  # type: ignore[arg-type]


def _dropper(items: list[ast.expr], i: int) -> Callable[[], None]:
    def apply() -> None:
        del items[i]

    return apply


class ProofWalk(ScopedWalk):
    """The proof operators' sites, in walk order."""

    def __init__(self) -> None:
        super().__init__()
        self.skip: set[int] = set()  # constants handled by another operator (range args)
        self.labels: dict[int, str] = {}  # constant -> what it is the value of

    def visit_Module(self, node: ast.Module) -> None:
        self.labels = _labels(node)
        for stmt in node.body:
            if isinstance(stmt, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets
            ):
                continue
            self.visit(stmt)

    def scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        if is_text(node.name):
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            self._stub(node)
        super().scoped(node)

    # ------------------------------------------------------------ stub

    def _stub(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        returns = ast.unparse(node.returns) if node.returns is not None else ""
        if returns not in ("Outcome", "Outcome | None"):
            return
        self.scope.append(node.name)
        if returns == "Outcome":
            body: list[ast.stmt] = [
                ast.ImportFrom("evictable.proofs.base.records", [ast.alias("proved")], 0),
                ast.Return(ast.Call(ast.Name("proved", ast.Load()), [ast.Constant("mutant")], [])),
            ]
            after = "return proved()"
        else:
            body, after = [ast.Return(ast.Constant(None))], "return None"
        self.add(node, "stub", f"{node.name}(...) -> {returns}", after, _setter(node, "body", body))
        self.scope.pop()

    # ------------------------------------------------------------ claims

    def _true(self, claim: ast.expr, apply: Callable[[], None]) -> None:
        self.add(claim, "claim_true", _src(claim), "True", apply)

    def visit_Dict(self, node: ast.Dict) -> None:
        for i, (key, value) in enumerate(zip(node.keys, node.values, strict=True)):
            if not _stringy(key):
                continue
            if _boolean(value):
                self._true(value, _item_setter(node.values, i, _z3("BoolVal", True)))
            elif isinstance(value, ast.Lambda) and _boolean(value.body):
                self.add(
                    value, "claim_true", _src(value.body), "True",
                    _setter(value, "body", _z3("BoolVal", True)),
                )  # fmt: skip
        self.generic_visit(node)

    def visit_DictComp(self, node: ast.DictComp) -> None:
        if _stringy(node.key) and _boolean(node.value):
            self._true(node.value, _setter(node, "value", _z3("BoolVal", True)))
        self._generators(node.generators)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        target = node.targets[0]
        if (
            len(node.targets) == 1
            and isinstance(target, ast.Subscript)
            and _stringy(target.slice)
            and _boolean(node.value)
        ):
            self._true(node.value, _setter(node, "value", _z3("BoolVal", True)))
        if (
            len(node.targets) == 1
            and isinstance(target, ast.Name)
            and ASSUMPTION_NAMES.search(target.id)
            and isinstance(node.value, ast.List)
        ):
            self.add(
                node.value, "assume_false", f"{target.id} = [...]", "[..., False]",
                _setter(node, "value", _with_false(node.value)),
            )  # fmt: skip
        self.generic_visit(node)

    # ------------------------------------------------------------ calls

    def visit_Call(self, node: ast.Call) -> None:
        name = _name(node.func)
        args = node.args
        starred = any(isinstance(a, ast.Starred) for a in args)
        if name == "And" and len(args) >= 2 and not starred:
            for i, arg in enumerate(args):
                self.add(arg, "conjunct", _src(arg), "(dropped)", _dropper(args, i))
        if name == "conj" and len(args) == 1 and isinstance(args[0], ast.List):
            elts = args[0].elts
            if len(elts) >= 2 and not any(isinstance(e, ast.Starred) for e in elts):
                for i, elt in enumerate(elts):
                    self.add(elt, "conjunct", _src(elt), "(dropped)", _dropper(elts, i))
        if name == "append" and isinstance(node.func, ast.Attribute) and len(args) == 1:
            owner = _name(node.func.value)
            if "claim" in owner and _boolean(args[0]):
                self._true(args[0], _item_setter(args, 0, _z3("BoolVal", True)))
        self._assumptions(node, name)
        if name == "range" and 1 <= len(args) <= 2 and not starred:
            stop = args[-1]
            self.skip.update(id(n) for n in ast.walk(stop))
            shorter = _minus_one(stop)
            after = ast.unparse(ast.Call(node.func, [*args[:-1], shorter], []))
            self.add(node, "shrink", _src(node), after, _item_setter(args, len(args) - 1, shorter))
        if name == "If":
            self.skip.update(id(a) for a in args)
        self.generic_visit(node)

    def _assumptions(self, node: ast.Call, name: str) -> None:
        """`assume_false` at a query: the position of its assumptions, by callee."""
        args = node.args
        where: dict[str, int] = {"z3_valid": 3, "refute_claims": 1, "z3_sat": 0}
        if name in where:
            i = where[name]
            keyword = {"z3_valid": "assumptions", "refute_claims": "assumptions"}.get(name)
            kw = next((k for k in node.keywords if k.arg == keyword), None)
            if len(args) > i and not isinstance(args[i], ast.Starred):
                apply = _item_setter(args, i, _with_false(args[i]))
            elif kw is not None:
                apply = _setter(kw, "value", _with_false(kw.value))
            elif name == "z3_valid":
                new = ast.keyword("assumptions", ast.List([_z3("BoolVal", False)], ast.Load()))
                apply = _appender(node.keywords, new)
            else:
                return
            self.add(node, "assume_false", f"{name}(...)", f"{name}(..., False)", apply)
        elif name == "add" and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            solver = (isinstance(owner, ast.Name) and owner.id in ("s", "solver")) or (
                isinstance(owner, ast.Attribute) and owner.attr == "solver"
            )
            if solver and node.args:
                after = f"{_src(owner)}.add(..., False)"
                apply = _appender(args, _z3("BoolVal", False))
                self.add(node, "assume_false", f"{_src(owner)}.add(...)", after, apply)
        for k in node.keywords:
            if k.arg is not None and ASSUMPTION_NAMES.search(k.arg) and name not in where:
                self.add(
                    k.value, "assume_false", f"{k.arg}=...", f"{k.arg}=[..., False]",
                    _setter(k, "value", _with_false(k.value)),
                )  # fmt: skip

    # ------------------------------------------------------------ bounds and loops

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self.skip.update(id(n) for n in ast.walk(node.slice))
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        v = node.value
        if id(node) in self.skip or isinstance(v, bool) or not isinstance(v, int):
            return
        label = self.labels.get(id(node), "")
        if 1 <= v <= _BIG and label != ARITHMETIC:
            self.add(
                node, "shrink", f"{label}{v!r}", f"{label}{v - 1!r}", _setter(node, "value", v - 1)
            )

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        return  # message text

    def visit_For(self, node: ast.For) -> None:
        self._loop(node, node.iter, lambda new: setattr(node, "iter", new))
        self.generic_visit(node)

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self._generators(node.generators)
        self.generic_visit(node)

    def visit_SetComp(self, node: ast.SetComp) -> None:
        self._generators(node.generators)
        self.generic_visit(node)

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        self._generators(node.generators)
        self.generic_visit(node)

    def _generators(self, generators: list[ast.comprehension]) -> None:
        for gen in generators:
            self._loop(gen, gen.iter, _setter_of(gen))

    def _loop(self, node: ast.AST, iterable: ast.expr, put: Callable[[ast.expr], None]) -> None:
        """Every loop keeps only its first item; a loop over keys (of a batch, of a
        world) keeps only its first two as well."""
        literal = isinstance(iterable, ast.List | ast.Tuple | ast.Set)
        cuts = (1, 2) if KEYS.search(ast.unparse(iterable)) else (1,)
        for n in cuts:
            if literal and len(iterable.elts) <= n:  # type: ignore[attr-defined]
                continue
            self.add(
                iterable, "drop_key", _src(iterable), f"first {n} of {_src(iterable)}",
                _putter(put, _islice(iterable, n)),
            )  # fmt: skip


def _labels(tree: ast.Module) -> dict[int, str]:
    """What an integer constant is the value of, as a prefix of its change (`keys=`,
    `SEARCH_BATCH = `, `'quick': `), so that a bound's id names the bound."""
    out: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp | ast.UnaryOp | ast.AugAssign):
            for child in ast.iter_child_nodes(node):
                out[id(child)] = ARITHMETIC
        elif isinstance(node, ast.keyword) and node.arg is not None:
            out[id(node.value)] = f"{node.arg}="
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if len(targets) == 1 and isinstance(targets[0], ast.Name) and node.value is not None:
                out[id(node.value)] = f"{targets[0].id} = "
                if isinstance(node.value, ast.Tuple | ast.List):
                    for i, elt in enumerate(node.value.elts):
                        out[id(elt)] = f"{targets[0].id}[{i}] = "
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    out[id(value)] = f"{key.value!r}: "
    return out


def _setter_of(gen: ast.comprehension) -> Callable[[ast.expr], None]:
    return lambda new: setattr(gen, "iter", new)


def _putter(put: Callable[[ast.expr], None], new: ast.expr) -> Callable[[], None]:
    return lambda: put(new)


# ------------------------------------------------------------------ API


def _walk(source: str) -> tuple[ast.Module, list[tuple[Site, Callable[[], None]]]]:
    tree = ast.parse(source)
    generic = [(s, a) for s, a in generic_sites(tree) if not s.oracle]
    walker = ProofWalk()
    walker.visit(tree)
    found = [(s, a) for s, a in generic + walker.found if not is_text(s.scope)]
    return tree, numbered(found)


def sites(source: str) -> list[Site]:
    """Every mutation of the proofs module `source` (generic operators first, then the
    proof operators), text-rendering functions left out."""
    return [site for site, _ in _walk(source)[1]]


def mutate(source: str, index: int) -> ast.Module:
    """The module with its `index`-th mutation applied (a fresh tree)."""
    tree, found = _walk(source)
    found[index][1]()
    return finish(tree)
