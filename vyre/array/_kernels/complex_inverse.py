"""The inverse trigonometric and hyperbolic functions of complex64 and complex128 (asin, acos, atan, asinh,
acosh, atanh), registered in :data:`vyre.array._kernels.emit.COMPLEX_OPS`.

asin, acos and acosh are Kahan's formulas ("Branch cuts for complex elementary functions", 1987): real
functions (atan2, asinh) of products of the principal square roots of ``1 +- z`` (``z +- 1``), so there is
no cancellation near the branch points and the signed zero of the imaginary part picks the side of a cut,
as numpy and the standard do. atanh is ``log1p(4a / ((1 - a)^2 + y^2)) / 4 + i atan2(2y, (1 - a)(1 + a) -
y^2) / 2``; asinh and atan are ``-i asin(iz)`` and ``-i atanh(iz)``.
"""

from __future__ import annotations

from ...ir.values import Val
from .complex import Kind, Z, unary
from .complex_math import Parts, _sqrt


def _roots(k: Kind, a: Val, y: Val, sign: float) -> tuple[Z, Z]:
    """(sqrt(1 - z), sqrt(1 + z)) for sign 1; (sqrt(z - 1), sqrt(z + 1)) for sign -1."""
    b = k.b
    p = k.let(_sqrt(k, b.let(sign * (1.0 - a)), b.let(-y * sign)))
    q = k.let(_sqrt(k, b.let(1.0 + a), y))
    return p, q


def _asin(k: Kind, a: Val, y: Val) -> Z:
    p, q = _roots(k, a, y, 1.0)
    return Z(k.f("atan2", a, p.re * q.re - p.im * q.im), k.f("asinh", p.re * q.im - p.im * q.re))


def _acos(k: Kind, a: Val, y: Val) -> Z:
    p, q = _roots(k, a, y, 1.0)
    return Z(2.0 * k.f("atan2", p.re, q.re), k.f("asinh", q.re * p.im - q.im * p.re))


def _acosh(k: Kind, a: Val, y: Val) -> Z:
    p, q = _roots(k, a, y, -1.0)
    return Z(k.f("asinh", p.re * q.re + p.im * q.im), 2.0 * k.f("atan2", p.im, q.re))


def _atanh(k: Kind, a: Val, y: Val) -> Z:
    b = k.b
    d = b.let(1.0 - a)
    re = 0.25 * k.f("log1p", 4.0 * a / (d * d + y * y))
    im = 0.5 * k.f("atan2", 2.0 * y, d * (1.0 + a) - y * y)
    return Z(re, im)


def _rotated(fn: Parts) -> Parts:
    """``-i fn(iz)``: ``(Y, -X)`` of ``fn(-y + ai) = X + iY``."""
    def emit(k: Kind, a: Val, y: Val) -> Z:
        w = k.let(fn(k, k.b.let(-y), a))
        return Z(w.im, -w.re)
    return emit


for _name, _fn in (("asin", _asin), ("acos", _acos), ("acosh", _acosh), ("atanh", _atanh),
                   ("asinh", _rotated(_asin)), ("atan", _rotated(_atanh))):
    unary(_name, _fn)

__all__: list[str] = []  # the ops are registered in COMPLEX_OPS on import
