"""Shared traversal helpers for the IR passes.

Every pass is a pure function ``Program -> Program`` (nodes are immutable; rewritten
nodes are new objects). :class:`Rewriter` walks the statement tree in order, keeps a
:class:`~vyre.ir.typing.TypeEnv` of the names in scope, and lets a pass rewrite each
expression slot, optionally inserting statements (``pre``) right before the statement
that owns the slot.
"""

from __future__ import annotations

from typing import Callable, Iterable, Iterator

from ..nodes import Assign, Eval, For, If, Let, Store, Var, VarDecl, While
from ..program import Program
from ..types import DataType
from ..typing import TypeEnv, infer

# child expression fields of each expression kind, in evaluation order
_CHILD_FIELDS: dict[str, tuple[str, ...]] = {
    "load": ("index",),
    "unary": ("arg",),
    "binary": ("lhs", "rhs"),
    "select": ("cond", "if_true", "if_false"),
    "cast": ("arg",),
    "bitcast": ("arg",),
    "fma": ("a", "b", "c"),
    "atomic": ("index", "expected", "value"),
    "extract": ("arg",),
}


def children(e) -> list:
    """Child expressions of ``e`` in evaluation order."""
    if e.kind == "vec":
        return list(e.args)
    return [c for c in (getattr(e, f) for f in _CHILD_FIELDS.get(e.kind, ())) if c is not None]


def with_children(e, new: list):
    """``e`` with its children replaced (same order as :func:`children`); ``e`` itself if unchanged."""
    old = children(e)
    if len(old) == len(new) and all(a is b for a, b in zip(old, new)):
        return e
    if e.kind == "vec":
        return e.model_copy(update={"args": list(new)})
    it = iter(new)
    update = {f: next(it) for f in _CHILD_FIELDS[e.kind] if getattr(e, f) is not None}
    return e.model_copy(update=update)


def map_expr(e, fn: Callable):
    """Post-order rebuild: children first, then ``fn(node)``."""
    kids = children(e)
    if kids:
        e = with_children(e, [map_expr(c, fn) for c in kids])
    return fn(e)


def iter_expr(e) -> Iterator:
    """Pre-order iteration over an expression tree."""
    yield e
    for c in children(e):
        yield from iter_expr(c)


def stmt_exprs(s) -> list:
    """Expressions owned directly by statement ``s`` (not those of nested blocks)."""
    k = s.kind
    if k in ("let", "assign", "eval"):
        return [s.value]
    if k == "var":
        return [] if s.value is None else [s.value]
    if k == "store":
        return [s.index, s.value]
    if k in ("if", "while"):
        return [s.cond]
    if k == "for":
        return [s.start, s.end]
    return []


def stmt_blocks(s) -> list[list]:
    k = s.kind
    if k == "if":
        return [s.then, s.otherwise]
    if k in ("for", "while"):
        return [s.body]
    return []


def iter_stmts(stmts: Iterable) -> Iterator:
    for s in stmts:
        yield s
        for b in stmt_blocks(s):
            yield from iter_stmts(b)


def iter_program_exprs(program: Program) -> Iterator:
    """Every expression node of the program, pre-order."""
    for s in iter_stmts(program.body):
        for e in stmt_exprs(s):
            yield from iter_expr(e)


def used_names(program: Program) -> set[str]:
    """Every name the program declares or references (variables, buffers, workgroup arrays)."""
    names = {b.name for b in program.buffers} | {w.name for w in program.workgroup}
    for s in iter_stmts(program.body):
        if s.kind in ("let", "var", "assign"):
            names.add(s.name)
        elif s.kind == "for":
            names.add(s.var)
        elif s.kind == "store":
            names.add(s.buffer)
    for e in iter_program_exprs(program):
        if e.kind == "var":
            names.add(e.name)
        elif e.kind in ("load", "len", "atomic"):
            names.add(e.buffer)
    return names


def rebuild(program: Program, **update) -> Program:
    """A new Program with some fields replaced.

    (Not ``model_copy``: that would carry over the cached ``fingerprint`` of the original.)
    """
    fields = {f: getattr(program, f) for f in type(program).model_fields}
    fields.update(update)
    return type(program)(**fields)


class FreshNames:
    """Deterministic fresh names (``prefix0``, ``prefix1``, ...) avoiding every name in ``taken``."""

    def __init__(self, taken: set[str]):
        self.taken = set(taken)
        self.counters: dict[str, int] = {}

    def __call__(self, prefix: str) -> str:
        n = self.counters.get(prefix, 0)
        while f"{prefix}{n}" in self.taken:
            n += 1
        name = f"{prefix}{n}"
        self.counters[prefix] = n + 1
        self.taken.add(name)
        return name


class Rewriter:
    """Rebuilds a program statement by statement.

    Override :meth:`expr` (rewrite one expression slot; append statements to ``pre`` to
    run them before the owning statement) and, if needed, :meth:`loop_expr` for slots
    that are re-evaluated on every trip of a loop (a while condition, a for end), where
    ``pre`` statements would only run once.
    """

    def __init__(self, program: Program):
        self.program = program
        self.env = TypeEnv.for_program(program)
        self.fresh = FreshNames(used_names(program))

    # ---- hooks ------------------------------------------------------------
    def expr(self, e, pre: list):
        return e

    def loop_expr(self, e, pre: list, stmt):
        return self.expr(e, pre)

    def value_expr(self, e, pre: list):
        """The value of a ``let`` or ``eval`` (the one place an atomic may stand unnested)."""
        return self.expr(e, pre)

    def hoist(self, e, pre: list, prefix: str):
        """Bind ``e`` to a fresh ``let`` appended to ``pre``; return a reference to it."""
        name = self.fresh(prefix)
        pre.append(Let(name=name, value=e))
        t = self.type_of(e)
        if t is not None:
            self.env.declare(name, t, False)
        return Var(name=name)

    def rewrite_decls(self, program: Program) -> dict:
        """Extra ``model_copy`` updates for the program (e.g. changed buffer declarations)."""
        return {}

    # ---- driver -----------------------------------------------------------
    def run(self) -> Program:
        body = self.block(self.program.body, push=False)
        return rebuild(self.program, body=body, **self.rewrite_decls(self.program))

    def type_of(self, e) -> DataType | None:
        problems: list = []
        t = infer(e, self.env, report=lambda *a: problems.append(a))
        return None if problems else t

    def block(self, stmts: list, push: bool = True) -> list:
        if push:
            self.env.push()
        out: list = []
        try:
            for s in stmts:
                out.extend(self.stmt(s))
        finally:
            if push:
                self.env.pop()
        return out

    def stmt(self, s) -> list:
        pre: list = []
        k = s.kind
        if k == "let":
            v = self.value_expr(s.value, pre)
            new = s if v is s.value else Let(name=s.name, value=v)
            t = self.type_of(v)
            if t is not None:
                self.env.declare(s.name, t, False)
            return pre + [new]
        if k == "var":
            v = None if s.value is None else self.expr(s.value, pre)
            new = s if v is s.value else VarDecl(name=s.name, dtype=s.dtype, value=v)
            self.env.declare(s.name, s.dtype, True)
            return pre + [new]
        if k == "assign":
            v = self.expr(s.value, pre)
            return pre + [s if v is s.value else Assign(name=s.name, value=v)]
        if k == "eval":
            v = self.value_expr(s.value, pre)
            return pre + [s if v is s.value else Eval(value=v)]
        if k == "store":
            return pre + self.store(s, pre)
        if k == "if":
            c = self.expr(s.cond, pre)
            then = self.block(s.then)
            other = self.block(s.otherwise)
            return pre + [If(cond=c, then=then, otherwise=other)]
        if k == "for":
            start = self.expr(s.start, pre)
            end = self.loop_expr(s.end, pre, s)
            t = self.type_of(start)
            self.env.push()
            try:
                if t is not None:
                    self.env.declare(s.var, t, False)
                body = self.block(s.body, push=False)
            finally:
                self.env.pop()
            return pre + [For(var=s.var, start=start, end=end, step=s.step, body=body)]
        if k == "while":
            return self.while_(s, pre)
        return [s]  # break, continue, barrier, return

    def store(self, s, pre: list) -> list:
        i = self.expr(s.index, pre)
        v = self.expr(s.value, pre)
        return [s if (i is s.index and v is s.value) else Store(buffer=s.buffer, index=i, value=v)]

    def while_(self, s, pre: list) -> list:
        c = self.loop_expr(s.cond, pre, s)
        body = self.block(s.body)
        return pre + [While(cond=c, body=body)]


__all__ = [
    "children", "with_children", "map_expr", "iter_expr", "stmt_exprs", "stmt_blocks", "iter_stmts",
    "iter_program_exprs", "used_names", "rebuild", "FreshNames", "Rewriter",
]
