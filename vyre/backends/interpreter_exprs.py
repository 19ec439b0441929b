"""Expressions of the reference interpreter (:mod:`vyre.backends.interpreter`): one
``visit_<Expr class>`` per expression class, each returning one value per lane (see the
execution model there) with the value semantics of :mod:`vyre.backends.semantics`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import DispatchError
from ..ir.nodes import (
    EXPR_TYPES,
    Atomic,
    Binary,
    BinOp,
    Bitcast,
    BufLen,
    Builtin,
    BuiltinName,
    Cast,
    Extract,
    Fma,
    Lit,
    Load,
    Select,
    Subgroup,
    SubgroupOp,
    Unary,
    UnOp,
    Var,
    VecNew,
)
from ..ir.program import Program
from ..ir.traverse import Visitor
from . import semantics as sem
from .interpreter_subgroup import subgroup_op
from .memory import Memory


class ExprEval(Visitor[np.ndarray], covers=EXPR_TYPES):
    """Expression evaluation over the lanes of a chunk; the state lives in :class:`~vyre.backends.interpreter.Chunk`."""

    program: Program
    grid: tuple[int, int, int]
    wg_start: int
    inv: int
    wg_local: np.ndarray
    local: np.ndarray
    mem: dict[str, Memory]
    mask: np.ndarray  # active lanes (atomics only act on them)
    scopes: list[dict[str, np.ndarray]]  # innermost last
    _builtins: dict[tuple[Any, ...], np.ndarray]
    n_wg: int
    sg_size: int  # the simulated subgroup size (see vyre.backends.interpreter_subgroup)

    def lookup_scope(self, name: str) -> dict[str, np.ndarray]:
        scope: dict[str, np.ndarray]
        for scope in reversed(self.scopes):
            if name in scope:
                return scope
        raise DispatchError(f"program {self.program.name!r} uses undefined variable {name!r}",
                            fix="validate the program: vyre.validate(program)")

    def visit_Lit(self, e: Lit) -> np.ndarray:
        return np.array([e.value], dtype=e.dtype.numpy_dtype)

    def visit_Var(self, e: Var) -> np.ndarray:
        return self.lookup_scope(e.name)[e.name]

    def visit_Load(self, e: Load) -> np.ndarray:
        return self.mem[e.buffer].load(self.visit(e.index))

    def visit_BufLen(self, e: BufLen) -> np.ndarray:
        return np.array([self.mem[e.buffer].count], dtype=np.uint32)

    def visit_Builtin(self, e: Builtin) -> np.ndarray:
        key = (e.name, e.axis)
        if key not in self._builtins:
            self._builtins[key] = self._builtin(e.name, e.axis)
        return self._builtins[key]

    def _builtin(self, name: BuiltinName, axis: int | None) -> np.ndarray:
        w = self.wg_start + self.wg_local
        loc = self.local
        if name is BuiltinName.LOCAL_INDEX:
            return loc.astype(np.uint32)
        if name is BuiltinName.GLOBAL_INDEX:
            index: np.ndarray = (w * self.inv + loc).astype(np.uint32)  # wraps like u32 arithmetic on the GPU
            return index
        if name is BuiltinName.SUBGROUP_INVOCATION_ID:
            return (loc % self.sg_size).astype(np.uint32)
        if name is BuiltinName.SUBGROUP_SIZE:
            return np.array([self.sg_size], dtype=np.uint32)
        assert axis is not None  # the vec3 built-ins have an axis (validated)
        if name is BuiltinName.NUM_WORKGROUPS:
            return np.array([self.grid[axis]], dtype=np.uint32)
        gx, gy, _ = self.grid
        wx, wy, _ = self.program.workgroup_size
        wid = (w % gx, (w // gx) % gy, w // (gx * gy))[axis]
        lid = (loc % wx, (loc // wx) % wy, loc // (wx * wy))[axis]
        if name is BuiltinName.WORKGROUP_ID:
            v = wid
        elif name is BuiltinName.LOCAL_ID:
            v = lid
        else:  # GLOBAL_ID
            v = wid * self.program.workgroup_size[axis] + lid
        return v.astype(np.uint32)  # wraps like u32 arithmetic on the GPU

    def visit_Unary(self, e: Unary) -> np.ndarray:
        return self.unary(e.op, self.visit(e.arg))

    def unary(self, op: UnOp, x: np.ndarray) -> np.ndarray:
        """``op`` applied to a lane value (also the float model's reference result)."""
        fn = _UNARY.get(op)
        if fn is not None:
            return fn(x)
        out: np.ndarray
        if op is UnOp.NEG:
            out = sem.float_op(np.negative, x) if x.dtype.kind == "f" else np.negative(x)
            return out
        if op is UnOp.NOT:
            out = np.logical_not(x) if x.dtype == np.bool_ else np.invert(x)
            return out
        if op is UnOp.ABS:
            if x.dtype == np.uint32:
                return x
            out = np.abs(x)  # i32::MIN stays i32::MIN
            return out
        raise DispatchError(f"unknown unary operator {op}")  # pragma: no cover

    def visit_Binary(self, e: Binary) -> np.ndarray:
        return self.binary(e.op, self.visit(e.lhs), self.visit(e.rhs))

    def binary(self, op: BinOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``a op b`` on lane values (also the float model's reference result)."""
        cmp = _COMPARE.get(op)
        if cmp is not None:
            return cmp(a, b)
        out: np.ndarray
        if op is BinOp.AND:
            out = np.logical_and(a, b)
        elif op is BinOp.OR:
            out = np.logical_or(a, b)
        elif op is BinOp.SHL:
            out = sem.shl(a, b)
        elif op is BinOp.SHR:
            out = sem.shr(a, b)
        elif op is BinOp.BIT_AND:
            out = a & b
        elif op is BinOp.BIT_OR:
            out = a | b
        elif op is BinOp.BIT_XOR:
            out = a ^ b
        else:
            out = self.arith(op, a, b)
        return out

    def arith(self, op: BinOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if a.ndim != b.ndim:  # scalar with vector: broadcast the scalar over the components
            a = a[:, None] if a.ndim == 1 else a
            b = b[:, None] if b.ndim == 1 else b
        if a.dtype.kind == "f":
            if op is BinOp.REM:
                return sem.float_rem(a, b)
            return sem.float_op(_FLOAT_ARITH[op], a, b)
        if op is BinOp.DIV:
            return sem.int_div(a, b)
        if op is BinOp.REM:
            return sem.int_rem(a, b)
        return _INT_ARITH[op](a, b)  # numpy wraps u32/i32 arrays

    def visit_Select(self, e: Select) -> np.ndarray:
        c = self.visit(e.cond)
        t = self.visit(e.if_true)
        f = self.visit(e.if_false)
        if t.ndim == 2:
            c = c[:, None]
        return np.where(c, t, f)

    def visit_Cast(self, e: Cast) -> np.ndarray:
        return sem.cast(self.visit(e.arg), e.dtype)

    def visit_Bitcast(self, e: Bitcast) -> np.ndarray:
        return sem.bitcast(self.visit(e.arg), e.dtype)

    def visit_Fma(self, e: Fma) -> np.ndarray:
        a, b, c = (self.visit(x) for x in (e.a, e.b, e.c))
        return sem.fma(a, b, c)

    def visit_Atomic(self, e: Atomic) -> np.ndarray:
        # operands in the evaluation order of vyre.ir.traverse.CHILD_FIELDS (index, expected, value),
        # the order the WGSL lowering runs atomics nested in them
        index = self.visit(e.index)
        expected = None if e.expected is None else self.visit(e.expected)
        value = None if e.value is None else self.visit(e.value)
        return self.mem[e.buffer].atomic(e.op, index, value, expected, self.mask)

    def visit_Subgroup(self, e: Subgroup) -> np.ndarray:
        return self.subgroup(e.op, self.visit(e.value), None if e.lane is None else self.visit(e.lane))

    def subgroup(self, op: SubgroupOp, value: np.ndarray, lane: np.ndarray | None) -> np.ndarray:
        """``op`` across the active lanes (``self.mask``) of each simulated subgroup."""
        size = self.sg_size
        per_wg = -(-self.inv // size)  # subgroups per workgroup: consecutive local indices
        mask = np.broadcast_to(self.mask, self.local.shape)
        return subgroup_op(op, value, lane, mask, self.wg_local * per_wg + self.local // size,
                           self.local % size, size, self.n_wg * per_wg)

    def visit_VecNew(self, e: VecNew) -> np.ndarray:
        return vec_new([self.visit(a) for a in e.args], e.dtype.lanes)

    def visit_Extract(self, e: Extract) -> np.ndarray:
        return self.visit(e.arg)[:, e.lane]


def vec_new(args: list[np.ndarray], n: int) -> np.ndarray:
    """A vector value of ``n`` components from one (splat) or ``n`` component values."""
    if len(args) == 1:
        return np.repeat(args[0][:, None], n, axis=1)
    return np.stack(np.broadcast_arrays(*args), axis=1)


_UnaryFn = Callable[[np.ndarray], np.ndarray]
_BinaryFn = Callable[[np.ndarray, np.ndarray], np.ndarray]

_UNARY: dict[UnOp, _UnaryFn] = {
    UnOp.SQRT: lambda x: sem.float_op(np.sqrt, x),
    UnOp.INVERSE_SQRT: sem.inverse_sqrt,
    UnOp.EXP: lambda x: sem.float_op(np.exp, x),
    UnOp.EXP2: lambda x: sem.float_op(np.exp2, x),
    UnOp.LOG: lambda x: sem.float_op(np.log, x),
    UnOp.LOG2: lambda x: sem.float_op(np.log2, x),
    UnOp.SIN: lambda x: sem.float_op(np.sin, x),
    UnOp.COS: lambda x: sem.float_op(np.cos, x),
    UnOp.TAN: lambda x: sem.float_op(np.tan, x),
    UnOp.TANH: lambda x: sem.float_op(np.tanh, x),
    UnOp.FLOOR: lambda x: sem.float_op(np.floor, x),
    UnOp.CEIL: lambda x: sem.float_op(np.ceil, x),
    UnOp.ROUND: sem.round_half_even,
    UnOp.TRUNC: lambda x: sem.float_op(np.trunc, x),
    UnOp.FRACT: sem.fract,
    UnOp.SIGN: sem.sign,
    UnOp.COUNT_ONES: sem.count_ones,
    UnOp.REVERSE_BITS: sem.reverse_bits,
    UnOp.COUNT_LEADING_ZEROS: sem.count_leading_zeros,
    UnOp.COUNT_TRAILING_ZEROS: sem.count_trailing_zeros,
}

_COMPARE: dict[BinOp, _BinaryFn] = {
    BinOp.EQ: np.equal, BinOp.NE: np.not_equal, BinOp.LT: np.less, BinOp.LE: np.less_equal,
    BinOp.GT: np.greater, BinOp.GE: np.greater_equal,
}

_FLOAT_ARITH: dict[BinOp, _BinaryFn] = {
    BinOp.ADD: np.add, BinOp.SUB: np.subtract, BinOp.MUL: np.multiply, BinOp.DIV: np.divide,
    BinOp.MIN: np.minimum, BinOp.MAX: np.maximum, BinOp.POW: np.power,
}

_INT_ARITH: dict[BinOp, _BinaryFn] = {
    BinOp.ADD: np.add, BinOp.SUB: np.subtract, BinOp.MUL: np.multiply, BinOp.MIN: np.minimum,
    BinOp.MAX: np.maximum,
}


__all__ = ["ExprEval", "vec_new"]
