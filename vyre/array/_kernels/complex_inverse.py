"""The inverse trigonometric and hyperbolic functions of complex64 (asin, acos, atan, asinh, acosh, atanh),
registered in :data:`vyre.array._kernels.emit.COMPLEX_OPS`.

asin, acos and acosh are Kahan's formulas ("Branch cuts for complex elementary functions", 1987): real
functions (atan2, asinh) of products of the principal square roots of ``1 +- z`` (``z +- 1``), so there is
no cancellation near the branch points and the signed zero of the imaginary part picks the side of a cut,
as numpy and the standard do. atanh is ``log1p(4a / ((1 - a)^2 + y^2)) / 4 + i atan2(2y, (1 - a)(1 + a) -
y^2) / 2``; asinh and atan are ``-i asin(iz)`` and ``-i atanh(iz)``.
"""

from __future__ import annotations

from ...ir.builder import ProgramBuilder
from ...ir.values import Val
from . import float_math as M
from .complex import _reg, _unary, cx
from .complex_math import Parts, _sqrt


def _roots(b: ProgramBuilder, a: Val, y: Val, sign: float) -> tuple[Val, Val]:
    """(sqrt(1 - z), sqrt(1 + z)) for sign 1; (sqrt(z - 1), sqrt(z + 1)) for sign -1."""
    p = b.let(_sqrt(b, b.let(sign * (1.0 - a)), b.let(-y * sign)))
    q = b.let(_sqrt(b, b.let(1.0 + a), y))
    return p, q


def _asin(b: ProgramBuilder, a: Val, y: Val) -> Val:
    p, q = _roots(b, a, y, 1.0)
    re = M.atan2(b, a, p.x * q.x - p.y * q.y)
    return cx(b, re, M.asinh(b, p.x * q.y - p.y * q.x))


def _acos(b: ProgramBuilder, a: Val, y: Val) -> Val:
    p, q = _roots(b, a, y, 1.0)
    return cx(b, 2.0 * M.atan2(b, p.x, q.x), M.asinh(b, q.x * p.y - q.y * p.x))


def _acosh(b: ProgramBuilder, a: Val, y: Val) -> Val:
    p, q = _roots(b, a, y, -1.0)
    return cx(b, M.asinh(b, p.x * q.x + p.y * q.y), 2.0 * M.atan2(b, p.y, q.x))


def _atanh(b: ProgramBuilder, a: Val, y: Val) -> Val:
    d = b.let(1.0 - a)
    re = 0.25 * M.log1p(b, 4.0 * a / (d * d + y * y))
    im = 0.5 * M.atan2(b, 2.0 * y, d * (1.0 + a) - y * y)
    return cx(b, re, im)


def _rotated(fn: Parts) -> Parts:
    """``-i fn(iz)``: ``(Y, -X)`` of ``fn(-y + ai) = X + iY``."""
    def emit(b: ProgramBuilder, a: Val, y: Val) -> Val:
        w = b.let(fn(b, b.let(-y), a))
        return cx(b, w.y, -w.x)
    return emit


_reg("asin")(_unary(_asin))
_reg("acos")(_unary(_acos))
_reg("acosh")(_unary(_acosh))
_reg("atanh")(_unary(_atanh))
_reg("asinh")(_unary(_rotated(_asin)))
_reg("atan")(_unary(_rotated(_atanh)))

__all__: list[str] = []  # the ops are registered in COMPLEX_OPS on import
