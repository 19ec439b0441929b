"""Mask shift amounts to their low 5 bits (6 bits for the 64-bit integers).

vyre's ``shl``/``shr`` use only the low 5 bits of the amount; WGSL rejects (constant) or
leaves undefined (runtime) amounts >= 32. Literal amounts are folded, others become
``amount & 31u`` (splatted for vector amounts); a shift of an i64/u64 uses ``& 63u``.
"""

from __future__ import annotations

from dataclasses import replace

from ..nodes import Binary, BinOp, Expr, Lit, Stmt, VecNew
from ..program import Program
from ..traverse import iter_exprs, map_expr
from ..types import DataType
from .rewriter import Rewriter

_MASK = Lit(dtype=DataType.U32, value=31)
_MASK64 = Lit(dtype=DataType.U32, value=63)


def _is_shift(e: Expr) -> bool:
    return isinstance(e, Binary) and e.op in (BinOp.SHL, BinOp.SHR)


def _is_masked(e: Expr, mask: Lit = _MASK) -> bool:
    if isinstance(e, Lit):
        return isinstance(e.value, int) and 0 <= e.value <= int(mask.value)
    if isinstance(e, Binary) and e.op is BinOp.BIT_AND:
        m = e.rhs
        if isinstance(m, VecNew) and len(m.args) == 1:
            m = m.args[0]
        return isinstance(m, Lit) and m == mask
    return False


class _MaskShifts(Rewriter):
    def expr(self, e: Expr, pre: list[Stmt]) -> Expr:
        def fn(node: Expr) -> Expr:
            if not isinstance(node, Binary) or not _is_shift(node):
                return node
            lt = self.type_of(node.lhs)
            word = _MASK64 if lt is not None and lt.is_64bit else _MASK
            if _is_masked(node.rhs, word):
                return node
            amt = node.rhs
            masked: Expr
            if isinstance(amt, Lit) and isinstance(amt.value, int) and not isinstance(amt.value, bool):
                masked = Lit(dtype=amt.dtype, value=amt.value & int(word.value))
            else:
                t = self.type_of(amt)
                mask = word if t is None or not t.is_vector else VecNew(dtype=t, args=[word])
                masked = Binary(op=BinOp.BIT_AND, lhs=amt, rhs=mask)
            return replace(node, rhs=masked)

        return map_expr(e, fn)


def mask_shifts(program: Program) -> Program:
    """Make every shift amount explicitly ``& 31u`` (see the module docstring)."""
    if not any(_is_shift(e) for e in iter_exprs(program.body)):
        return program
    return _MaskShifts(program).run()


__all__ = ["mask_shifts"]
