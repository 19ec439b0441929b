"""The transcendental functions of complex64, registered in :data:`vyre.array._kernels.emit.COMPLEX_OPS`:
sqrt, exp, expm1, log, log1p, log2, log10, pow, sinh, cosh, tanh and sin, cos, tan through them
(``sin z = -i sinh(iz)``, ``cos z = cosh(iz)``, ``tan z = -i tanh(iz)``). Components are f32, with the
real helpers of vyre/array/_kernels/float_math.py (expm1, log1p, sinh, cosh, hypot, atan2).

Special values follow the standard's tables (C99 Annex G) where the formula alone would not: exp of
``+-inf + yj`` with y 0 or not finite, sqrt of infinite parts, sinh/cosh of a real argument keep the
imaginary zero (no ``inf * 0``). Accuracy: a few ulp of |z| away from the branch cuts and overflow
(tests/array/test_complex.py checks against numpy at rtol 2e-5 f32 on moderate arguments).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ...ir.builder import ProgramBuilder
from ...ir.values import Val
from . import float_math as M
from .complex import _reg, _unary, cx, mul
from .dtypes import DType

_BIG = 1e37  # |component| above which sqrt scales its argument (|a| + |z| would overflow f32)
Parts = Callable[[ProgramBuilder, Val, Val], Val]  # a complex function of the components (b, re, im)


def _exp(b: ProgramBuilder, a: Val, y: Val) -> Val:
    """``exp(a) (cos y + i sin y)``; y == 0 keeps the exact real exponential (no ``inf * 0``); the
    standard's cases: ``-inf + yj`` (y not finite) is 0, ``+inf + yj`` (y not finite) is ``inf + nanj``."""
    e = b.let(a.exp())
    r = cx(b, e * y.cos(), e * y.sin())
    r = b.select(y == 0.0, cx(b, e, y), r)
    bad_y = ~M.isfinite(b, y)
    r = b.select(M.isinf(b, a) & (a < 0.0) & bad_y, cx(b, 0.0, 0.0), r)
    return b.select(M.isinf(b, a) & (a > 0.0) & bad_y, cx(b, e, M.nan(b)), r)


def _log(b: ProgramBuilder, a: Val, y: Val) -> Val:
    return cx(b, M.hypot(b, a, y).log(), M.atan2(b, y, a))


def _sqrt(b: ProgramBuilder, a: Val, y: Val) -> Val:
    """The principal root: ``t = sqrt((|a| + |z|) / 2)``, then ``(t, y / 2t)`` or ``(|y| / 2t, +-t)``
    (no cancellation); parts above 1e37 scaled by 1/4 first (result times 2)."""
    big = (a.abs() > _BIG) | (y.abs() > _BIG)
    s = b.let(b.select(big, b.lit(0.25), b.lit(1.0)))
    sa, sy = b.let(a * s), b.let(y * s)
    t = b.let((0.5 * (sa.abs() + M.hypot(b, sa, sy))).sqrt())
    up = b.let(b.select(big, b.lit(2.0), b.lit(1.0)))
    q = b.let(sy.abs() / (2.0 * t) * up)
    pos = cx(b, t * up, sy / (2.0 * t) * up)
    neg = cx(b, q, M.copysign(b, t * up, y))
    r = b.select(M.signbit(b, a) & ~M.isnan(b, a), neg, pos)
    r = b.select((a == 0.0) & (y == 0.0), cx(b, 0.0, y), r)
    return b.select(M.isinf(b, y), cx(b, M.fbits(b, M.INF_BITS), y), r)  # sqrt(x +- inf j) = inf +- inf j


def _sinh(b: ProgramBuilder, a: Val, y: Val) -> Val:
    re = M.sinh(b, a) * y.cos()
    im = M.cosh(b, a) * y.sin()
    return cx(b, re, b.select(y == 0.0, y, im))


def _cosh(b: ProgramBuilder, a: Val, y: Val) -> Val:
    re = M.cosh(b, a) * y.cos()
    im = M.sinh(b, a) * y.sin()
    return cx(b, re, b.select((y == 0.0) | (a == 0.0), b.lit(0.0), im))


def _tanh(b: ProgramBuilder, a: Val, y: Val) -> Val:
    """``(sinh 2a + i sin 2y) / (cosh 2a + cos 2y)`` for |a| <= 10; beyond, ``sign(a) + 4 sin y cos y
    e^(-2|a|) i`` (the terms dropped are below f32's precision)."""
    big = a.abs() > 10.0
    a2 = b.let(2.0 * b.select(big, b.lit(0.0), a))
    den = b.let(M.cosh(b, a2) + (2.0 * y).cos())
    near = cx(b, M.sinh(b, a2) / den, (2.0 * y).sin() / den)
    far = cx(b, M.copysign(b, b.lit(1.0), a), 4.0 * y.sin() * y.cos() * (-2.0 * a.abs()).exp())
    r = b.select(big, far, near)
    return b.select(y == 0.0, cx(b, M.keep_nan(b, a, a.max(-10.0).min(10.0).tanh()), y), r)


def _expm1(b: ProgramBuilder, a: Val, y: Val) -> Val:
    """``exp(a) cos y - 1 = expm1(a) cos y - 2 sin^2(y/2)``: no cancellation near 0."""
    h = b.let((0.5 * y).sin())
    re = M.expm1(b, a) * y.cos() - 2.0 * h * h
    e = _exp(b, a, y)
    return b.select(M.isfinite(b, a) & (a < 80.0), cx(b, re, a.exp() * y.sin()), e - cx(b, 1.0, 0.0))


def _log1p(b: ProgramBuilder, a: Val, y: Val) -> Val:
    """``log|1 + z| = log1p(2a + a^2 + y^2) / 2`` for |z| < 1e18 (accurate near 0), else log|1 + z|."""
    small = (a.abs() < 1e18) & (y.abs() < 1e18)
    re = 0.5 * M.log1p(b, a * (2.0 + a) + y * y)
    arg = M.atan2(b, y, 1.0 + a)
    return b.select(small, cx(b, re, arg), _log(b, 1.0 + a, y))


def _swap(fn: Parts) -> Parts:
    """``f(iz)`` rotated back: for sin/tan (``-i f(iz)``) ``(Y, -X)`` of ``f(-y + ai) = X + iY``."""
    def emit(b: ProgramBuilder, a: Val, y: Val) -> Val:
        w = b.let(fn(b, -y, a))
        return cx(b, w.y, -w.x)
    return emit


_reg("exp")(_unary(_exp))
_reg("log")(_unary(_log))
_reg("sqrt")(_unary(_sqrt))
_reg("sinh")(_unary(_sinh))
_reg("cosh")(_unary(_cosh))
_reg("tanh")(_unary(_tanh))
_reg("expm1")(_unary(_expm1))
_reg("log1p")(_unary(_log1p))
_reg("sin")(_unary(_swap(_sinh)))
_reg("tan")(_unary(_swap(_tanh)))
_reg("cos")(_unary(lambda b, a, y: _cosh(b, -y, a)))
def _scaled_log(c: float) -> Parts:
    def emit(b: ProgramBuilder, a: Val, y: Val) -> Val:
        w = b.let(_log(b, a, y))
        return cx(b, w.x * c, w.y * c)
    return emit


_reg("log2")(_unary(_scaled_log(1.0 / math.log(2.0))))
_reg("log10")(_unary(_scaled_log(1.0 / math.log(10.0))))


@_reg("pow")
def _pow(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    """``exp(y log x)`` (``0 ** y`` is 0 for y with a positive real part, through exp(-inf + ...))."""
    x, p = args
    lg = b.let(_log(b, b.let(x.x), b.let(x.y)))
    w = b.let(mul(b, p, lg))
    return _exp(b, b.let(w.x), b.let(w.y))


__all__: list[str] = []  # the ops are registered in COMPLEX_OPS on import
