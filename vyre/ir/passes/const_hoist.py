"""Keep WGSL from constant-folding operations on literals.

WGSL evaluates an operation whose operands are all constant at shader-creation time,
and rejects the shader when that evaluation fails (``5u / 0u``, ``1.0 / 0.0``,
``sqrt(-1.0)``, ``f16(1e10)``, ...), although the same operation on runtime values is
well defined in vyre. A ``let`` is never a constant expression, so this pass binds one
constant operand of every such operation to a fresh ``let``.

Constant: literals, ``len`` of workgroup arrays and fixed-count buffers (the lowering
writes those as literals), and vector construction / component extraction / select over
constants (these cannot fail). Every other operation with only constant operands gets
its first operand hoisted.
"""

from __future__ import annotations

from ..nodes import Atomic, BufLen, Expr, Extract, Lit, Load, Node, Select, Stmt, Subgroup, VecNew
from ..program import Program
from ..traverse import expr_children, with_expr_children
from .rewriter import Rewriter

_SAFE: tuple[type[Node], ...] = (VecNew, Extract, Select)
_RUNTIME: tuple[type[Node], ...] = (Load, Atomic, Subgroup)  # a subgroup op keeps its literal lane


class _HoistConstants(Rewriter):
    def __init__(self, program: Program):
        super().__init__(program)
        self.const_len = {w.name for w in program.workgroup}
        self.const_len |= {b.name for b in program.buffers if b.count is not None}
        self.const_len -= {b.name for b in program.buffers if b.count is None}

    def expr(self, e: Expr, pre: list[Stmt]) -> Expr:
        return self._go(e, pre)[0]

    def _go(self, e: Expr, pre: list[Stmt]) -> tuple[Expr, bool]:
        """(rewritten ``e``, whether it is constant)."""
        if isinstance(e, Lit):
            return e, True
        if isinstance(e, BufLen):
            return e, e.buffer in self.const_len
        kids = expr_children(e)
        if not kids:  # var, builtin
            return e, False
        done = [self._go(c, pre) for c in kids]
        new_kids: list[Expr] = [d[0] for d in done]
        all_const = all(d[1] for d in done)
        if isinstance(e, _SAFE):
            return with_expr_children(e, new_kids), all_const
        if isinstance(e, _RUNTIME) or not all_const:
            return with_expr_children(e, new_kids), False
        new_kids[0] = self.hoist(new_kids[0], pre, "_const")
        return with_expr_children(e, new_kids), False


def hoist_constants(program: Program) -> Program:
    """Bind a constant operand of every all-constant operation to a ``let`` (see the module docstring)."""
    return _HoistConstants(program).run()


__all__ = ["hoist_constants"]
