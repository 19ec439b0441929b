"""The transcendental functions of complex64 and complex128, registered in
:data:`vyre.array._kernels.emit.COMPLEX_OPS`: sqrt, exp, expm1, log, log1p, log2, log10, pow, sinh, cosh,
tanh and sin, cos, tan through them (``sin z = -i sinh(iz)``, ``cos z = cosh(iz)``, ``tan z = -i
tanh(iz)``). The parts' real functions are the elementwise ops' IR of their precision (``Kind.f``: f32's
float_math.py, f64's float_math64.py and the lowering's f64 exp/log/sin/cos).

Special values follow the standard's tables (C99 Annex G) where the formula alone would not: exp of
``+-inf + yj`` with y 0 or not finite, sqrt of infinite parts, sinh/cosh of a real argument keep the
imaginary zero (no ``inf * 0``). Accuracy: a few ulp of |z| away from the branch cuts and overflow
(tests/array/test_complex.py checks against numpy at rtol 2e-5 f32 on moderate arguments).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ...ir.values import Val
from .complex import Kind, Z, _op, mul, unary

Parts = Callable[[Kind, Val, Val], Z]  # a complex function of the parts (k, re, im)


def _exp(k: Kind, a: Val, y: Val) -> Z:
    """``exp(a) (cos y + i sin y)``; y == 0 keeps the exact real exponential (no ``inf * 0``); the
    standard's cases: ``-inf + yj`` (y not finite) is 0, ``+inf + yj`` (y not finite) is ``inf + nanj``."""
    b, M = k.b, k.M
    e = k.f("exp", a)
    r = Z(e * k.f("cos", y), e * k.f("sin", y))
    r = k.sel(y == 0.0, Z(e, y), r)
    bad_y = ~M.isfinite(b, y)
    r = k.sel(M.isinf(b, a) & (a < 0.0) & bad_y, k.z(0.0, 0.0), r)
    return k.sel(M.isinf(b, a) & (a > 0.0) & bad_y, Z(e, k.nan()), r)


def _log(k: Kind, a: Val, y: Val) -> Z:
    return Z(k.f("log", k.f("hypot", a, y)), k.f("atan2", y, a))


def _sqrt(k: Kind, a: Val, y: Val) -> Z:
    """The principal root: ``t = sqrt((|a| + |z|) / 2)``, then ``(t, y / 2t)`` or ``(|y| / 2t, +-t)``
    (no cancellation); parts above a quarter of the largest float scaled by 1/4 first (result times 2)."""
    b, M = k.b, k.M
    limit = 1e300 if k.wide else 1e37  # |a| + |z| would overflow above
    big = (a.abs() > limit) | (y.abs() > limit)
    s = b.let(b.select(big, k.lit(0.25), k.lit(1.0)))
    sa, sy = b.let(a * s), b.let(y * s)
    t = b.let(k.f("sqrt", 0.5 * (sa.abs() + k.f("hypot", sa, sy))))
    up = b.let(b.select(big, k.lit(2.0), k.lit(1.0)))
    q = b.let(sy.abs() / (2.0 * t) * up)
    pos = Z(t * up, sy / (2.0 * t) * up)
    neg = Z(q, M.copysign(b, t * up, y))
    r = k.sel(M.signbit(b, a) & ~M.isnan(b, a), neg, pos)
    r = k.sel((a == 0.0) & (y == 0.0), Z(k.lit(0.0), y), r)
    return k.sel(M.isinf(b, y), Z(k.inf(), y), r)  # sqrt(x +- inf j) = inf +- inf j


def _sinh(k: Kind, a: Val, y: Val) -> Z:
    re = k.f("sinh", a) * k.f("cos", y)
    im = k.f("cosh", a) * k.f("sin", y)
    return Z(re, k.b.select(y == 0.0, y, im))


def _cosh(k: Kind, a: Val, y: Val) -> Z:
    re = k.f("cosh", a) * k.f("cos", y)
    im = k.f("sinh", a) * k.f("sin", y)
    return Z(re, k.b.select((y == 0.0) | (a == 0.0), k.lit(0.0), im))


def _tanh(k: Kind, a: Val, y: Val) -> Z:
    """``(sinh 2a + i sin 2y) / (cosh 2a + cos 2y)`` for |a| <= 10 (20 for f64); beyond, ``sign(a) + 4 sin y
    cos y e^(-2|a|) i`` (the terms dropped are below the precision)."""
    b = k.b
    big = a.abs() > (20.0 if k.wide else 10.0)
    a2 = b.let(2.0 * b.select(big, k.lit(0.0), a))
    y2 = b.let(2.0 * y)
    den = b.let(k.f("cosh", a2) + k.f("cos", y2))
    near = Z(k.f("sinh", a2) / den, k.f("sin", y2) / den)
    far = Z(k.M.copysign(b, k.lit(1.0), a), 4.0 * k.f("sin", y) * k.f("cos", y) * k.f("exp", -2.0 * a.abs()))
    r = k.sel(big, far, near)
    return k.sel(y == 0.0, Z(k.f("tanh", a), y), r)


def _expm1(k: Kind, a: Val, y: Val) -> Z:
    """``exp(a) cos y - 1 = expm1(a) cos y - 2 sin^2(y/2)``: no cancellation near 0."""
    h = k.f("sin", 0.5 * y)
    re = k.f("expm1", a) * k.f("cos", y) - 2.0 * h * h
    e = _exp(k, a, y)
    ok = k.M.isfinite(k.b, a) & (a < (700.0 if k.wide else 80.0))
    return k.sel(ok, Z(re, k.f("exp", a) * k.f("sin", y)), e - k.z(1.0, 0.0))


def _log1p(k: Kind, a: Val, y: Val) -> Z:
    """``log|1 + z| = log1p(2a + a^2 + y^2) / 2`` while the squares cannot overflow (accurate near 0), else
    log|1 + z|."""
    limit = 1e150 if k.wide else 1e18
    small = (a.abs() < limit) & (y.abs() < limit)
    re = 0.5 * k.f("log1p", a * (2.0 + a) + y * y)
    arg = k.f("atan2", y, 1.0 + a)
    return k.sel(small, Z(re, arg), _log(k, 1.0 + a, y))


def _swap(fn: Parts) -> Parts:
    """``f(iz)`` rotated back: for sin/tan (``-i f(iz)``) ``(Y, -X)`` of ``f(-y + ai) = X + iY``."""
    def emit(k: Kind, a: Val, y: Val) -> Z:
        w = k.let(fn(k, k.b.let(-y), a))
        return Z(w.im, -w.re)
    return emit


def _scaled_log(c: float) -> Parts:
    return lambda k, a, y: _log(k, a, y).scale(c)


for _name, _fn in (("exp", _exp), ("log", _log), ("sqrt", _sqrt), ("sinh", _sinh), ("cosh", _cosh),
                   ("tanh", _tanh), ("expm1", _expm1), ("log1p", _log1p), ("sin", _swap(_sinh)),
                   ("tan", _swap(_tanh)), ("cos", lambda k, a, y: _cosh(k, k.b.let(-y), a)),
                   ("log2", _scaled_log(1.0 / math.log(2.0))), ("log10", _scaled_log(1.0 / math.log(10.0)))):
    unary(_name, _fn)


@_op("pow")
def _pow(k: Kind, args: list[Any], dts: list[Any], out: Any) -> Z:
    """``exp(y log x)`` (``0 ** y`` is 0 for y with a positive real part, through exp(-inf + ...))."""
    x, p = args
    w = k.let(mul(k, p, k.let(_log(k, x.re, x.im))))
    return _exp(k, w.re, w.im)


__all__: list[str] = []  # the ops are registered in COMPLEX_OPS on import
