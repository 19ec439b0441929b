"""Store bool buffers and bool workgroup arrays as u32 words.

WGSL has no host-shareable bool, and the host layout stores each bool as one u32 word
(0 or 1). This pass retypes every bool buffer (storage or uniform) to u32, turns its loads
into ``load != 0u`` and its stored values into ``select(0u, 1u, v)``. Workgroup arrays of
bool get the same treatment although WGSL allows them: NVIDIA's Vulkan driver (H200) loses
the stores of neighbouring invocations into a ``var<workgroup> array<bool, N>`` (sub-word
elements; found by the fuzzer), and a u32 word per element costs nothing that matters.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..nodes import Binary, BinOp, Expr, Lit, Load, Select, Stmt, Store
from ..program import Program
from ..traverse import map_expr
from ..types import DataType
from .rewriter import Rewriter

_ZERO = Lit(dtype=DataType.U32, value=0)
_ONE = Lit(dtype=DataType.U32, value=1)


class _BoolStorage(Rewriter):
    def __init__(self, program: Program, names: frozenset[str]):
        super().__init__(program)
        self.names = names

    def expr(self, e: Expr, pre: list[Stmt]) -> Expr:
        def fn(node: Expr) -> Expr:
            if isinstance(node, Load) and node.buffer in self.names:
                return Binary(op=BinOp.NE, lhs=node, rhs=_ZERO)
            return node

        return map_expr(e, fn)

    def store(self, s: Store, pre: list[Stmt]) -> list[Stmt]:
        i = self.expr(s.index, pre)
        v = self.expr(s.value, pre)
        if s.buffer in self.names:
            v = Select(cond=v, if_true=_ONE, if_false=_ZERO)
        return [Store(buffer=s.buffer, index=i, value=v)]

    def rewrite_decls(self, program: Program) -> dict[str, Any]:
        return {
            "buffers": [
                replace(b, dtype=DataType.U32) if b.name in self.names else b
                for b in program.buffers
            ],
            "workgroup": [
                replace(w, dtype=DataType.U32) if w.name in self.names else w
                for w in program.workgroup
            ],
        }


def bool_buffers(program: Program) -> frozenset[str]:
    return frozenset(b.name for b in program.buffers if b.dtype is DataType.BOOL)


def bool_storage(program: Program) -> Program:
    """Retype bool buffers to u32 and convert their loads and stores (see the module docstring)."""
    names = bool_buffers(program) | {w.name for w in program.workgroup if w.dtype is DataType.BOOL}
    if not names:
        return program
    return _BoolStorage(program, names).run()


__all__ = ["bool_storage", "bool_buffers"]
