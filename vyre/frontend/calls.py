"""Calls in a kernel body: dtype casts (``f32(i)``), ``min``/``max``/``abs``/``len``, the math functions,
thread ids, atomics, workgroup arrays and barriers, and @vyre.func helpers (inlined by :mod:`.funcs`)."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..ir.nodes import Atomic, AtomicOp, Binary, BinOp, Fma, Unary, UnOp
from ..ir.types import DataType
from ..ir.values import Val
from . import funcs
from . import intrinsics as K
from .types import DType
from .values import Array, Const, Value

if TYPE_CHECKING:
    from .exprs import ExprTranslator


def call(tr: ExprTranslator, node: ast.Call) -> Value:
    if any(isinstance(a, ast.Starred) for a in node.args) or node.keywords:
        tr.fail(node, "keyword and *arguments are not supported in kernel calls", "pass the arguments by position")
    fn = tr.callee(node)
    args = node.args
    if isinstance(fn, funcs.Func):
        return funcs.inline(tr, fn, node)  # type: ignore[arg-type]  # the translator is always a Translator
    if isinstance(fn, DType):
        _arity(tr, node, 1, 1)
        return cast(tr, tr.expr(args[0]), fn.dtype, node)
    if fn is min or fn is max:
        if len(args) < 2:
            tr.fail(node, f"{'min' if fn is min else 'max'} takes two or more values in a kernel",
                    "e.g. min(a, b) or min(a, b, c)")
        out = tr.expr(args[0])
        for a in args[1:]:
            x, y, t = tr.pair(out, tr.expr(a), node)
            out = tr.checked(x.min(y) if fn is min else x.max(y), node)
        return out
    math_op = UnOp.ABS if fn is abs else K.math_op(fn)
    if math_op is not None:
        _arity(tr, node, 1, 1)
        v = tr.expr(args[0])
        op = math_op
        x = tr.as_val(v, args[0], DataType.F32 if isinstance(v, Const) and op is not UnOp.ABS else None)
        return tr.checked(Val(tr.b, Unary(op=op, arg=x.node)), node)
    if fn is len:
        _arity(tr, node, 1, 1)
        arr = tr.expr(args[0])
        if not isinstance(arr, Array):
            tr.fail(node, "len() of something that is not an array", "len(x) of an array parameter")
        return tr.shape(arr, 0, node)
    if fn is range:
        tr.fail(node, "range() is only supported as the iterable of a for loop", "for i in range(n): ...")
    atomic_kind = K.atomic_op(fn)
    if atomic_kind is not None:
        return atomic(tr, atomic_kind, node)
    if isinstance(fn, K.Intrinsic):
        handler = _HANDLERS.get(fn.name)
        if handler is not None:
            return handler(tr, node)
    tr.fail(node, f"calling {fn!r:.60} is not supported in a kernel",
            "call vyre functions (vyre.sqrt, vyre.atomic_add, ...), min/max/abs/len, dtype casts or @vyre.func "
            "helpers")


def _arity(tr: ExprTranslator, node: ast.Call, lo: int, hi: int) -> None:
    if not lo <= len(node.args) <= hi:
        want = str(lo) if lo == hi else f"{lo} to {hi}"
        tr.fail(node, f"expected {want} argument(s), got {len(node.args)}", "check the call's arguments")


def cast(tr: ExprTranslator, v: Value, dtype: DataType, node: ast.AST) -> Value:
    if isinstance(v, Const):
        if dtype is DataType.BOOL:
            return tr.b.lit(bool(v.value))
        value = float(v.value) if dtype.is_float else int(v.value)
        return tr.lit(Const(value), dtype, node)
    x = tr.as_val(v, node)
    t = tr.typed(x, node)
    if t == dtype:
        return x
    if dtype is DataType.BOOL:
        return x != tr.b.lit(0, t)
    if t is DataType.BOOL:
        return tr.b.select(x, tr.b.lit(1, dtype), tr.b.lit(0, dtype))
    return x.cast(dtype.value)


def _axis(tr: ExprTranslator, node: ast.Call, what: str) -> int | None:
    _arity(tr, node, 0, 1)
    if not node.args:
        return None
    a = tr.expr(node.args[0])
    if not isinstance(a, Const) or not isinstance(a.value, int) or not 0 <= a.value < tr.rank:
        tr.fail(node, f"{what}(axis) needs a constant axis from 0 to {tr.rank - 1} in a {tr.rank}-D launch",
                f"write {what}(0)" + (f" ... {what}({tr.rank - 1})" if tr.rank > 1 else " or " + what + "()"))
    return int(a.value)


def _tid(tr: ExprTranslator, node: ast.Call) -> Value:
    axis = _axis(tr, node, "tid")
    if axis is not None:
        return tr.tids[axis]
    flat = tr.tids[0]
    for k in range(1, tr.rank):  # row-major flat index of an n-D launch
        flat = flat * tr.dims[k] + tr.tids[k]
    return flat


def _tid_n(n: int) -> Callable[[ExprTranslator, ast.Call], Value]:
    def handler(tr: ExprTranslator, node: ast.Call) -> Value:
        tr.fail(node, f"tid{n}() returns {n} values: only usable as `{', '.join('yxz'[:n])} = vyre.tid{n}()`",
                "unpack it in an assignment")
    return handler


def _ids(kind: str) -> Callable[[ExprTranslator, ast.Call], Value]:
    def handler(tr: ExprTranslator, node: ast.Call) -> Value:
        axis = _axis(tr, node, kind)
        ids = tr.local_ids if kind == "local_id" else tr.group_ids
        if axis is None:
            if kind == "local_id":
                return tr.b.local_index()
            if tr.rank > 1:
                tr.fail(node, "group_id() needs an axis in an n-D launch", "write group_id(0), group_id(1), ...")
            return ids[0]
        return ids[axis]
    return handler


def _barrier(tr: ExprTranslator, node: ast.Call) -> Value:
    _arity(tr, node, 0, 0)
    tr.b.barrier()
    return Const(0)


def _shared(tr: ExprTranslator, node: ast.Call) -> Value:
    tr.fail(node, "vyre.shared(...) is only supported as `name = vyre.shared(dtype, count)`",
            "assign it to a name at the top of the kernel: tile = vyre.shared(f32, 256)")


def _select(tr: ExprTranslator, node: ast.Call) -> Value:
    _arity(tr, node, 3, 3)
    c = tr.val(node.args[0], DataType.BOOL)
    a, b, _ = tr.pair(tr.expr(node.args[1]), tr.expr(node.args[2]), node)
    return tr.b.select(c, a, b)


def _fma(tr: ExprTranslator, node: ast.Call) -> Value:
    _arity(tr, node, 3, 3)
    vals = [tr.expr(a) for a in node.args]
    like = next((tr.typed(v, node) for v in vals if isinstance(v, Val)), DataType.F32)
    x, y, z = (tr.as_val(v, a, like) for v, a in zip(vals, node.args))
    return tr.checked(Val(tr.b, Fma(a=x.node, b=y.node, c=z.node)), node)


def _pow(tr: ExprTranslator, node: ast.Call) -> Value:
    _arity(tr, node, 2, 2)
    a, b, t = tr.pair(tr.expr(node.args[0]), tr.expr(node.args[1]), node)
    return tr.checked(Val(tr.b, Binary(op=BinOp.POW, lhs=a.node, rhs=b.node)), node)


def _bitcast(tr: ExprTranslator, node: ast.Call) -> Value:
    _arity(tr, node, 2, 2)
    d = tr.expr(node.args[1])
    if not isinstance(d, DType):
        tr.fail(node, "bitcast's second argument must be a dtype marker", "e.g. vyre.bitcast(x, u32)")
    return tr.checked(tr.val(node.args[0]).bitcast(d.dtype.value), node)


def atomic(tr: ExprTranslator, op: AtomicOp, node: ast.Call, discard: bool = False) -> Value:
    n_val = {AtomicOp.LOAD: 0, AtomicOp.COMPARE_EXCHANGE: 2}.get(op, 1)
    _arity(tr, node, 2 + n_val, 2 + n_val)
    arr = tr.expr(node.args[0])
    if not isinstance(arr, Array):
        tr.fail(node, "an atomic's first argument must be an array", "e.g. vyre.atomic_add(hist, k, 1)")
    if not arr.writable:
        tr.fail(node, f"atomics need a writable array; {arr.name!r} is In[...]", "annotate it InOut[u32]")
    idx = tr.index(arr, node.args[1], node)
    vals = [tr.val(a, arr.dtype) for a in node.args[2:]]
    value = vals[-1].node if vals else None
    expected = vals[0].node if op is AtomicOp.COMPARE_EXCHANGE else None
    at = Val(tr.b, Atomic(op=op, buffer=arr.ref.name, index=idx.node, value=value, expected=expected))
    tr.typed(at, node)
    if discard:
        tr.b.eval(at)
        return Const(0)
    return tr.b.let(at, name=tr.fresh("old"))


_HANDLERS = {
    "tid": _tid, "tid2": _tid_n(2), "tid3": _tid_n(3), "local_id": _ids("local_id"), "group_id": _ids("group_id"),
    "barrier": _barrier, "shared": _shared, "select": _select, "fma": _fma, "pow": _pow, "bitcast": _bitcast,
}

__all__ = ["call", "cast", "atomic"]
