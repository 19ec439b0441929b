"""The base of the rewriting passes.

Every pass is a pure function ``Program -> Program`` (nodes are immutable; rewritten
nodes are new objects). :class:`Rewriter` walks the statement tree in order (a
:class:`~vyre.ir.traverse.Visitor` with a handler for every statement class), keeps a
:class:`~vyre.ir.typing.TypeEnv` of the names in scope, and lets a pass rewrite each
expression slot, optionally inserting statements (``pre``) right before the statement
that owns the slot. Expression trees are walked with :mod:`vyre.ir.traverse`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..nodes import (
    STMT_TYPES,
    Assign,
    Atomic,
    Barrier,
    Break,
    BufLen,
    Continue,
    Eval,
    Expr,
    For,
    If,
    Let,
    Load,
    Return,
    Stmt,
    Store,
    Var,
    VarDecl,
    While,
)
from ..program import Program
from ..traverse import Visitor, iter_exprs, iter_stmts
from ..types import DataType
from ..typing import TypeEnv, infer


def used_names(program: Program) -> set[str]:
    """Every name the program declares or references (variables, buffers, workgroup arrays)."""
    names = {b.name for b in program.buffers} | {w.name for w in program.workgroup}
    for s in iter_stmts(program.body):
        if isinstance(s, (Let, VarDecl, Assign)):
            names.add(s.name)
        elif isinstance(s, For):
            names.add(s.var)
        elif isinstance(s, Store):
            names.add(s.buffer)
    for e in iter_exprs(program.body):
        if isinstance(e, Var):
            names.add(e.name)
        elif isinstance(e, (Load, BufLen, Atomic)):
            names.add(e.buffer)
    return names


def rebuild(program: Program, **update: Any) -> Program:
    """A new Program with some fields replaced (a new object, so it computes its own ``fingerprint``)."""
    return dataclasses.replace(program, **update)


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


class Rewriter(Visitor[list[Stmt]], covers=STMT_TYPES):
    """Rebuilds a program statement by statement (each handler returns the replacement statements).

    Override :meth:`expr` (rewrite one expression slot; append statements to ``pre`` to
    run them before the owning statement) and, if needed, :meth:`loop_expr` for slots
    that are re-evaluated on every trip of a loop (a while condition, a for end), where
    ``pre`` statements would only run once; :meth:`store` and :meth:`while_` for whole
    statements.
    """

    def __init__(self, program: Program):
        self.program = program
        self.env = TypeEnv.for_program(program)
        self.fresh = FreshNames(used_names(program))

    # ---- hooks ------------------------------------------------------------
    def expr(self, e: Expr, pre: list[Stmt]) -> Expr:
        return e

    def loop_expr(self, e: Expr, pre: list[Stmt], stmt: For | While) -> Expr:
        return self.expr(e, pre)

    def value_expr(self, e: Expr, pre: list[Stmt]) -> Expr:
        """The value of a ``let`` or ``eval`` (the one place an atomic may stand unnested)."""
        return self.expr(e, pre)

    def hoist(self, e: Expr, pre: list[Stmt], prefix: str) -> Var:
        """Bind ``e`` to a fresh ``let`` appended to ``pre``; return a reference to it."""
        name = self.fresh(prefix)
        pre.append(Let(name=name, value=e))
        t = self.type_of(e)
        if t is not None:
            self.env.declare(name, t, False)
        return Var(name=name)

    def rewrite_decls(self, program: Program) -> dict[str, Any]:
        """Extra field updates for the program (e.g. changed buffer declarations)."""
        return {}

    def store(self, s: Store, pre: list[Stmt]) -> list[Stmt]:
        i = self.expr(s.index, pre)
        v = self.expr(s.value, pre)
        return [s if (i is s.index and v is s.value) else Store(buffer=s.buffer, index=i, value=v)]

    def while_(self, s: While, pre: list[Stmt]) -> list[Stmt]:
        c = self.loop_expr(s.cond, pre, s)
        body = self.block(s.body)
        return pre + [While(cond=c, body=body)]

    # ---- driver -----------------------------------------------------------
    def run(self) -> Program:
        body = self.block(self.program.body, push=False)
        return rebuild(self.program, body=body, **self.rewrite_decls(self.program))

    def type_of(self, e: Expr) -> DataType | None:
        problems: list[object] = []
        t = infer(e, self.env, report=lambda *a: problems.append(a))
        return None if problems else t

    def block(self, stmts: list[Stmt], push: bool = True) -> list[Stmt]:
        if push:
            self.env.push()
        out: list[Stmt] = []
        try:
            for s in stmts:
                out.extend(self.visit(s))
        finally:
            if push:
                self.env.pop()
        return out

    # ---- statements -------------------------------------------------------
    def visit_Let(self, s: Let) -> list[Stmt]:
        pre: list[Stmt] = []
        v = self.value_expr(s.value, pre)
        new = s if v is s.value else Let(name=s.name, value=v)
        t = self.type_of(v)
        if t is not None:
            self.env.declare(s.name, t, False)
        return pre + [new]

    def visit_VarDecl(self, s: VarDecl) -> list[Stmt]:
        pre: list[Stmt] = []
        v = None if s.value is None else self.expr(s.value, pre)
        new = s if v is s.value else VarDecl(name=s.name, dtype=s.dtype, value=v)
        self.env.declare(s.name, s.dtype, True)
        return pre + [new]

    def visit_Assign(self, s: Assign) -> list[Stmt]:
        pre: list[Stmt] = []
        v = self.expr(s.value, pre)
        return pre + [s if v is s.value else Assign(name=s.name, value=v)]

    def visit_Eval(self, s: Eval) -> list[Stmt]:
        pre: list[Stmt] = []
        v = self.value_expr(s.value, pre)
        return pre + [s if v is s.value else Eval(value=v)]

    def visit_Store(self, s: Store) -> list[Stmt]:
        pre: list[Stmt] = []
        return pre + self.store(s, pre)

    def visit_If(self, s: If) -> list[Stmt]:
        pre: list[Stmt] = []
        c = self.expr(s.cond, pre)
        then = self.block(s.then)
        other = self.block(s.otherwise)
        return pre + [If(cond=c, then=then, otherwise=other)]

    def visit_For(self, s: For) -> list[Stmt]:
        pre: list[Stmt] = []
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

    def visit_While(self, s: While) -> list[Stmt]:
        return self.while_(s, [])

    def keep(self, s: Break | Continue | Barrier | Return) -> list[Stmt]:
        return [s]

    visit_Break = visit_Continue = visit_Barrier = visit_Return = keep


__all__ = ["used_names", "rebuild", "FreshNames", "Rewriter"]
