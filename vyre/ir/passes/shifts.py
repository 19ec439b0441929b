"""Mask shift amounts to their low 5 bits.

vyre's ``shl``/``shr`` use only the low 5 bits of the amount; WGSL rejects (constant) or
leaves undefined (runtime) amounts >= 32. Literal amounts are folded, others become
``amount & 31u`` (splatted for vector amounts).
"""

from __future__ import annotations

from ..nodes import Binary, BinOp, Lit, VecNew
from ..program import Program
from ..types import DataType
from ._walk import Rewriter, iter_program_exprs, map_expr

_MASK = Lit(dtype=DataType.U32, value=31)


def _is_masked(e) -> bool:
    if e.kind == "lit":
        return isinstance(e.value, int) and 0 <= e.value < 32
    if e.kind == "binary" and e.op is BinOp.BIT_AND:
        m = e.rhs
        if m.kind == "vec" and len(m.args) == 1:
            m = m.args[0]
        return m.kind == "lit" and m == _MASK
    return False


class _MaskShifts(Rewriter):
    def expr(self, e, pre):
        def fn(node):
            if node.kind != "binary" or node.op not in (BinOp.SHL, BinOp.SHR) or _is_masked(node.rhs):
                return node
            amt = node.rhs
            if amt.kind == "lit" and isinstance(amt.value, int) and not isinstance(amt.value, bool):
                masked = Lit(dtype=amt.dtype, value=amt.value & 31)
            else:
                t = self.type_of(amt)
                mask = _MASK if t is None or not t.is_vector else VecNew(dtype=t, args=[_MASK])
                masked = Binary(op=BinOp.BIT_AND, lhs=amt, rhs=mask)
            return node.model_copy(update={"rhs": masked})

        return map_expr(e, fn)


def mask_shifts(program: Program) -> Program:
    """Make every shift amount explicitly ``& 31u`` (see the module docstring)."""
    if not any(e.kind == "binary" and e.op in (BinOp.SHL, BinOp.SHR) for e in iter_program_exprs(program)):
        return program
    return _MaskShifts(program).run()


__all__ = ["mask_shifts"]
