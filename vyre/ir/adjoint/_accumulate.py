"""Adding a value into an In array's gradient buffer: a plain read-add-write where each element is only
ever touched by one thread (every load of the array is at the thread's own index), else an f32 add built
from ``atomicCompareExchangeWeak`` on the element's u32 bits (WGSL has no float atomics): correct under any
contention, but the order of the adds, so the rounding of the sum, varies from run to run."""

from __future__ import annotations

from ..nodes import (
    Assign,
    Atomic,
    AtomicOp,
    Binary,
    BinOp,
    Bitcast,
    Break,
    Builtin,
    BuiltinName,
    Expr,
    If,
    Let,
    Lit,
    Load,
    Stmt,
    Store,
    Var,
    VarDecl,
    While,
)
from ..program import Program
from ..traverse import iter_exprs, iter_stmts, map_expr
from ..types import DataType
from ._analysis import assigned_in
from ._names import Namer

#: an access pattern at "the thread's own index": ("x",) is global_id.x (1-D launches); ("yx", w) is
#: global_id.y * w + global_id.x (2-D launches over arrays of w columns, as `a[y, x]` indexes).
Own = tuple[str, ...] | tuple[str, int]


def own_patterns(program: Program, arrays: list[str]) -> dict[str, Own]:
    """The arrays of ``arrays`` every load of which is at the thread's own index, with that index's pattern
    (the launch checks it is one-to-one: see :class:`vyre.ir.adjoint.Adjoint`)."""
    assigned = assigned_in(program.body)
    defs: dict[str, Expr] = {}
    for s in iter_stmts(program.body):
        if isinstance(s, Let) or (isinstance(s, VarDecl) and s.value is not None and s.name not in assigned):
            assert s.value is not None
            defs[s.name] = s.value

    def resolve(e: Expr, depth: int = 0) -> Expr:
        if depth > 8:
            return e
        return map_expr(e, lambda x: resolve(defs[x.name], depth + 1) if isinstance(x, Var) and x.name in defs
                        else x)

    found: dict[str, set[Own | None]] = {a: set() for a in arrays}
    for e in iter_exprs(program.body):
        if isinstance(e, Load) and e.buffer in found:
            found[e.buffer].add(_pattern(resolve(e.index)))
    return {a: next(iter(kinds)) for a, kinds in found.items()  # type: ignore[misc]
            if len(kinds) == 1 and None not in kinds}


def _gid(e: Expr, axis: int) -> bool:
    return isinstance(e, Builtin) and e.name is BuiltinName.GLOBAL_ID and e.axis == axis


def _pattern(e: Expr) -> Own | None:
    if _gid(e, 0):
        return ("x",)
    if isinstance(e, Binary) and e.op is BinOp.ADD and _gid(e.rhs, 0):
        m = e.lhs
        if isinstance(m, Binary) and m.op is BinOp.MUL and _gid(m.lhs, 1) and isinstance(m.rhs, Lit) \
                and m.rhs.dtype is DataType.U32:
            return ("yx", int(m.rhs.value))
    return None


class Accumulator:
    """``acc(buffer, index, value, out)``: the statements adding ``value`` to the gradient of ``buffer``."""

    def __init__(self, fresh: Namer, grads: dict[str, str], atomic: set[str]) -> None:
        self.fresh, self.grads, self.atomic = fresh, grads, atomic

    def __call__(self, buffer: str, index: Expr, value: Expr, out: list[Stmt]) -> None:
        g = self.grads[buffer]
        ix = self.fresh("ix")
        out.append(Let(name=ix, value=index))
        at = Var(name=ix)
        if buffer not in self.atomic:
            out.append(Store(buffer=g, index=at, value=Binary(op=BinOp.ADD, lhs=Load(buffer=g, index=at), rhs=value)))
            return
        old, new, got = self.fresh("cas_old"), self.fresh("cas_new"), self.fresh("cas_got")
        out.append(VarDecl(name=old, dtype=DataType.U32, value=Atomic(op=AtomicOp.LOAD, buffer=g, index=at)))
        total = Binary(op=BinOp.ADD, lhs=Bitcast(dtype=DataType.F32, arg=Var(name=old)), rhs=value)
        out.append(While(cond=Lit(dtype=DataType.BOOL, value=True), body=[
            Let(name=new, value=Bitcast(dtype=DataType.U32, arg=total)),
            Let(name=got, value=Atomic(op=AtomicOp.COMPARE_EXCHANGE, buffer=g, index=at, value=Var(name=new),
                                       expected=Var(name=old))),
            If(cond=Binary(op=BinOp.EQ, lhs=Var(name=got), rhs=Var(name=old)), then=[Break()]),
            Assign(name=old, value=Var(name=got)),
        ]))


__all__ = ["Accumulator", "own_patterns", "Own"]
