"""Binary operators of a kernel body: constant folding, the type rules of :mod:`.exprs`, Python's ``//``
and ``%`` (floor division, the remainder takes the divisor's sign) and ``x ** n`` by multiplications."""

from __future__ import annotations

import ast
import operator
from typing import TYPE_CHECKING, Any, NoReturn

from ..ir.nodes import Binary, BinOp, Unary, UnOp
from ..ir.types import DataType
from ..ir.values import Val
from .values import Const, Value

if TYPE_CHECKING:
    from .exprs import ExprTranslator

_ARITH = {ast.Add: BinOp.ADD, ast.Sub: BinOp.SUB, ast.Mult: BinOp.MUL}
_BITS = {ast.BitAnd: BinOp.BIT_AND, ast.BitOr: BinOp.BIT_OR, ast.BitXor: BinOp.BIT_XOR}
_SHIFTS = {ast.LShift: BinOp.SHL, ast.RShift: BinOp.SHR}
CMP = {ast.Lt: BinOp.LT, ast.LtE: BinOp.LE, ast.Gt: BinOp.GT, ast.GtE: BinOp.GE, ast.Eq: BinOp.EQ,
        ast.NotEq: BinOp.NE}
PY_OPS: dict[type, Any] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_, ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_MAX_POW = 16  # x ** n with a constant integer n up to this expands to multiplications


def binop(tr: ExprTranslator, op: ast.operator, a: Value, b: Value, node: ast.AST) -> Value:
    kind = type(op)
    if isinstance(a, Const) and isinstance(b, Const) and kind in PY_OPS:
        if kind is ast.Div and not (isinstance(a.value, float) or isinstance(b.value, float)):
            _int_div(tr, node)
        try:
            return Const(PY_OPS[kind](a.value, b.value))
        except (ZeroDivisionError, OverflowError, ValueError) as exc:
            tr.fail(node, f"constant arithmetic fails: {exc}", "fix the constant expression")
    if kind is ast.Pow:
        return power(tr, a, b, node)
    if kind in _SHIFTS:
        va = tr.as_val(a, node)
        if not tr.typed(va, node).is_int:
            tr.fail(node, "shifts need an integer operand", "cast it with u32(...) or i32(...)")
        vb = tr.as_val(b, node, None if not isinstance(b, Const) else DataType.U32)
        if tr.typed(vb, node) is DataType.I32:
            vb = vb.cast("u32")
        return tr.checked(Val(tr.b, Binary(op=_SHIFTS[kind], lhs=va.node, rhs=vb.node)), node)
    va, vb, t = tr.pair(a, b, node)
    if kind in _ARITH:
        if not t.is_numeric:
            tr.fail(node, f"arithmetic on {t.value} values", "convert with u32(flag) first")
        return tr.checked(Val(tr.b, Binary(op=_ARITH[kind], lhs=va.node, rhs=vb.node)), node)
    if kind in _BITS:
        if t is DataType.BOOL:
            bop = {ast.BitAnd: BinOp.AND, ast.BitOr: BinOp.OR, ast.BitXor: BinOp.NE}[kind]
            return Val(tr.b, Binary(op=bop, lhs=va.node, rhs=vb.node))
        if not t.is_int:
            tr.fail(node, f"bitwise operators need integers, found {t.value}", "cast with u32(...)")
        return Val(tr.b, Binary(op=_BITS[kind], lhs=va.node, rhs=vb.node))
    if kind is ast.Div:
        if t.is_int:
            _int_div(tr, node)
        return tr.checked(Val(tr.b, Binary(op=BinOp.DIV, lhs=va.node, rhs=vb.node)), node)
    if kind in (ast.FloorDiv, ast.Mod):
        return floor_divmod(tr, kind is ast.Mod, va, vb, t, node)
    tr.fail(node, f"the operator {type(op).__name__} is not supported", "use + - * / // % ** & | ^ << >>")

def _int_div(tr: ExprTranslator, node: ast.AST) -> NoReturn:
    tr.fail(node, "`/` on two integers is not supported (Python would give a float)",
              "write a // b for integer division, or f32(a) / b")

def floor_divmod(tr: ExprTranslator, mod: bool, a: Val, b: Val, t: DataType, node: ast.AST) -> Val:
    """Python's ``a // b`` / ``a % b``: plain WGSL ``/`` ``%`` on u32; rounded toward -inf on i32
    and floats (the remainder takes the divisor's sign)."""
    if t is DataType.U32:
        return Val(tr.b, Binary(op=BinOp.REM if mod else BinOp.DIV, lhs=a.node, rhs=b.node))
    if not t.is_numeric:
        tr.fail(node, f"// and % need numbers, found {t.value}", "convert with u32(flag) first")
    a, b = tr.let(a, "num"), tr.let(b, "den")
    if t.is_float:
        if not mod:
            return Val(tr.b, Unary(op=UnOp.FLOOR, arg=Binary(op=BinOp.DIV, lhs=a.node, rhs=b.node)))
        r = tr.let(Val(tr.b, Binary(op=BinOp.REM, lhs=a.node, rhs=b.node)), "rem")
        zero = tr.b.lit(0.0, t)
        fix = (r != zero) & ((r < zero) != (b < zero))
        return tr.b.select(fix, r + b, r)
    r = tr.let(Val(tr.b, Binary(op=BinOp.REM, lhs=a.node, rhs=b.node)), "rem")
    zero = tr.b.lit(0, t)
    fix = (r != zero) & ((r ^ b) < zero)  # a remainder whose sign differs from the divisor's
    if mod:
        return tr.b.select(fix, r + b, r)
    q = Val(tr.b, Binary(op=BinOp.DIV, lhs=a.node, rhs=b.node))
    return tr.b.select(fix, q - tr.b.lit(1, t), q)

def power(tr: ExprTranslator, a: Value, b: Value, node: ast.AST) -> Val:
    if isinstance(b, Const) and isinstance(b.value, int) and not isinstance(b.value, bool) \
            and abs(b.value) <= _MAX_POW:
        va = tr.as_val(a, node)
        t = tr.typed(va, node)
        n = abs(b.value)
        if n == 0:
            return tr.b.lit(1, t)
        if b.value < 0 and not t.is_float:
            tr.fail(node, "an integer to a negative power", "use a float base: f32(x) ** -n")
        base, acc = tr.let(va, "base"), None
        while n:  # square and multiply, each square bound once
            if n & 1:
                acc = base if acc is None else tr.let(acc * base, "pw")
            n >>= 1
            if n:
                base = tr.let(base * base, "sq")
        assert acc is not None
        return tr.b.lit(1.0, t) / acc if b.value < 0 else acc
    va, vb, t = tr.pair(a, b, node)
    if not t.is_float:
        tr.fail(node, "** with a non-constant or large exponent needs floats",
                  f"use a constant integer exponent up to {_MAX_POW}, or f32(x) ** f32(y)")
    return Val(tr.b, Binary(op=BinOp.POW, lhs=va.node, rhs=vb.node))


__all__ = ["binop", "floor_divmod", "power", "CMP", "PY_OPS"]
