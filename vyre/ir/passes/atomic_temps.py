"""Give every nested atomic its own ``let``.

After this pass an ``Atomic`` node only appears as the whole value of a ``Let`` or an
``Eval``, so the lowering can emit multi-statement forms (the strong compare-exchange
loop) and each atomic runs exactly once, in evaluation order (inner atomics first).

* Atomics nested in an expression are bound to a fresh ``let`` just before the statement
  (this also makes both sides of a logical and/or run, like the reference interpreter).
* A ``while`` whose condition contains an atomic becomes
  ``while true { let ...; if !(cond) { break; } body }`` so the atomic still runs on
  every trip.
* An atomic in the end bound of a ``for`` cannot be hoisted: LoweringError.
"""

from __future__ import annotations

from ...errors import LoweringError
from ..nodes import Atomic, Break, Expr, For, If, Lit, Stmt, Unary, UnOp, While
from ..program import Program
from ..text import stmt_head
from ..traverse import expr_children, iter_expr, iter_exprs, map_expr, with_expr_children
from ..types import DataType
from .rewriter import Rewriter


def _has_atomic(e: Expr) -> bool:
    return any(isinstance(n, Atomic) for n in iter_expr(e))


class _HoistAtomics(Rewriter):
    def _hoist_all(self, e: Expr, pre: list[Stmt]) -> Expr:
        def fn(node: Expr) -> Expr:
            if isinstance(node, Atomic):
                return self.hoist(node, pre, "_atomic")
            return node

        return map_expr(e, fn)

    def expr(self, e: Expr, pre: list[Stmt]) -> Expr:
        if not _has_atomic(e):
            return e
        return self._hoist_all(e, pre)

    def value_expr(self, e: Expr, pre: list[Stmt]) -> Expr:
        if isinstance(e, Atomic):  # allowed unnested: hoist only the atomics inside its operands
            return with_expr_children(e, [self.expr(c, pre) for c in expr_children(e)])
        return self.expr(e, pre)

    def loop_expr(self, e: Expr, pre: list[Stmt], stmt: For | While) -> Expr:
        if _has_atomic(e):
            raise LoweringError(
                f"the end bound of `{stmt_head(stmt)}` contains an atomic, which would run on every trip",
                fix="bind the atomic to a let inside the loop body and use a while loop with an explicit break",
            )
        return e

    def while_(self, s: While, pre: list[Stmt]) -> list[Stmt]:
        if not _has_atomic(s.cond):
            return super().while_(s, pre)
        self.env.push()
        try:
            inner: list[Stmt] = []
            c = self._hoist_all(s.cond, inner)
            body = self.block(s.body)
        finally:
            self.env.pop()
        guard = If(cond=Unary(op=UnOp.NOT, arg=c), then=[Break()])
        return pre + [While(cond=Lit(dtype=DataType.BOOL, value=True), body=inner + [guard] + body)]


def hoist_atomics(program: Program) -> Program:
    """Bind every nested atomic to a fresh ``let`` (see the module docstring)."""
    if not any(isinstance(e, Atomic) for e in iter_exprs(program.body)):
        return program
    return _HoistAtomics(program).run()


__all__ = ["hoist_atomics"]
