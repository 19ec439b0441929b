"""The reverse of one expression: ``backprop(e, g)`` emits the statements adding ``g * de/dv`` to the
gradient of every active leaf ``v`` of ``e`` (a local's gradient variable, or an In array's gradient buffer
through :mod:`._accumulate`). Partials read the forward values through ``env`` (the primal names mapped to
the adjoint program's copies of their values at that point)."""

from __future__ import annotations

import math
from collections.abc import Callable

from ..nodes import Assign, Binary, BinOp, Cast, Expr, Fma, Let, Lit, Load, Select, Stmt, Unary, UnOp, Var
from ..types import DataType
from ._analysis import ZERO_UNOPS, Facts
from ._names import Namer, subst

Accumulate = Callable[[str, Expr, Expr, list[Stmt]], None]  # (buffer, index, value, out)


class Backprop:
    def __init__(self, facts: Facts, fresh: Namer, adj: dict[str, str], accumulate: Accumulate) -> None:
        self.facts, self.fresh, self.adj, self.accumulate = facts, fresh, adj, accumulate

    def __call__(self, e: Expr, g: Expr, env: dict[str, Expr], out: list[Stmt]) -> None:
        if not self.facts.is_active(e):
            return
        t = self.facts.type_of(e)

        def lit(v: float) -> Lit:  # a literal of e's float type
            return Lit(dtype=t, value=float(v))

        def val(x: Expr) -> Expr:  # a forward value at this point
            return subst(x, env)

        def push(child: Expr, grad: Expr) -> None:
            if self.facts.is_active(child):
                name = self.fresh("g")
                out.append(Let(name=name, value=grad))
                self(child, Var(name=name), env, out)

        def mul(a: Expr, b: Expr) -> Expr:
            return Binary(op=BinOp.MUL, lhs=a, rhs=b)

        def div(a: Expr, b: Expr) -> Expr:
            return Binary(op=BinOp.DIV, lhs=a, rhs=b)

        if isinstance(e, Var):
            out.append(_assign_add(self.adj[e.name], g))
        elif isinstance(e, Load):
            self.accumulate(e.buffer, val(e.index), g, out)
        elif isinstance(e, Cast):
            push(e.arg, Cast(dtype=self.facts.type_of(e.arg), arg=g))
        elif isinstance(e, Select):
            zero = lit(0)
            c = val(e.cond)
            push(e.if_true, Select(cond=c, if_true=g, if_false=zero))
            push(e.if_false, Select(cond=c, if_true=zero, if_false=g))
        elif isinstance(e, Fma):
            push(e.a, mul(g, val(e.b)))
            push(e.b, mul(g, val(e.a)))
            push(e.c, g)
        elif isinstance(e, Unary):
            x = val(e.arg)
            d = _unary_partial(e.op, x, val(e), lit)
            if d is not None:
                push(e.arg, g if d is _ONE else Unary(op=UnOp.NEG, arg=g) if d is _MINUS_ONE else mul(g, d))
        elif isinstance(e, Binary):
            a, b = val(e.lhs), val(e.rhs)
            op = e.op
            if op is BinOp.ADD:
                push(e.lhs, g)
                push(e.rhs, g)
            elif op is BinOp.SUB:
                push(e.lhs, g)
                push(e.rhs, Unary(op=UnOp.NEG, arg=g))
            elif op is BinOp.MUL:
                push(e.lhs, mul(g, b))
                push(e.rhs, mul(g, a))
            elif op is BinOp.DIV:
                push(e.lhs, div(g, b))
                push(e.rhs, Unary(op=UnOp.NEG, arg=div(mul(g, a), mul(b, b))))
            elif op in (BinOp.MIN, BinOp.MAX):
                # ties split g equally between the operands (vyre.autograd's rule for minimum/maximum, torch's)
                first = Binary(op=BinOp.LT if op is BinOp.MIN else BinOp.GT, lhs=a, rhs=b)
                w = Select(cond=first, if_true=lit(1), if_false=Select(
                    cond=Binary(op=BinOp.EQ, lhs=a, rhs=b), if_true=lit(0.5), if_false=lit(0)))
                push(e.lhs, mul(g, w))
                push(e.rhs, mul(g, Binary(op=BinOp.SUB, lhs=lit(1), rhs=w)))
            elif op is BinOp.POW:
                # x ** 0 has derivative 0 in x (not 0 * x ** -1, NaN at 0); d/dy at x == 0 is 0 (as vyre.autograd's pow)
                da = mul(g, mul(b, Binary(op=BinOp.POW, lhs=a, rhs=Binary(op=BinOp.SUB, lhs=b, rhs=lit(1)))))
                push(e.lhs, Select(cond=Binary(op=BinOp.EQ, lhs=b, rhs=lit(0)), if_true=lit(0), if_false=da))
                db = mul(g, mul(val(e), Unary(op=UnOp.LOG, arg=a)))
                push(e.rhs, Select(cond=Binary(op=BinOp.EQ, lhs=a, rhs=lit(0)), if_true=lit(0), if_false=db))
            elif op is BinOp.REM:  # WGSL's %: a - trunc(a / b) * b
                push(e.lhs, g)
                push(e.rhs, Unary(op=UnOp.NEG, arg=mul(g, Unary(op=UnOp.TRUNC, arg=div(a, b)))))
            else:  # pragma: no cover - the float binary ops are all above (comparisons are bool, not active)
                raise AssertionError(f"no partial for {op}")
        else:  # pragma: no cover - is_active is False for every other node
            raise AssertionError(f"no partial for {type(e).__name__}")


_ONE = Lit(dtype=DataType.F32, value=1.0)
_MINUS_ONE = Lit(dtype=DataType.F32, value=-1.0)


def _unary_partial(op: UnOp, x: Expr, y: Expr, lit: Callable[[float], Lit]) -> Expr | None:
    """d op(x) / dx at x (``y`` is op(x)); None where it is zero (floor, sign, ...)."""
    def u(o: UnOp, a: Expr) -> Expr:
        return Unary(op=o, arg=a)

    def b(o: BinOp, p: Expr, q: Expr) -> Expr:
        return Binary(op=o, lhs=p, rhs=q)

    if op in ZERO_UNOPS:
        return None
    if op is UnOp.NEG:
        return _MINUS_ONE
    if op is UnOp.FRACT:
        return _ONE
    table: dict[UnOp, Callable[[], Expr]] = {
        UnOp.ABS: lambda: u(UnOp.SIGN, x),
        UnOp.SQRT: lambda: b(BinOp.DIV, lit(0.5), y),
        UnOp.INVERSE_SQRT: lambda: b(BinOp.MUL, lit(-0.5), b(BinOp.DIV, y, x)),
        UnOp.EXP: lambda: y,
        UnOp.EXP2: lambda: b(BinOp.MUL, y, lit(math.log(2.0))),
        UnOp.LOG: lambda: b(BinOp.DIV, lit(1), x),
        UnOp.LOG2: lambda: b(BinOp.DIV, lit(1 / math.log(2.0)), x),
        UnOp.SIN: lambda: u(UnOp.COS, x),
        UnOp.COS: lambda: u(UnOp.NEG, u(UnOp.SIN, x)),
        UnOp.TAN: lambda: b(BinOp.ADD, lit(1), b(BinOp.MUL, y, y)),
        UnOp.TANH: lambda: b(BinOp.SUB, lit(1), b(BinOp.MUL, y, y)),
    }
    if op not in table:  # pragma: no cover - the integer ops never see a float
        raise AssertionError(f"no partial for {op}")
    return table[op]()


def _assign_add(name: str, g: Expr) -> Stmt:
    return Assign(name=name, value=Binary(op=BinOp.ADD, lhs=Var(name=name), rhs=g))


__all__ = ["Backprop", "Accumulate"]
