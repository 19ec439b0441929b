"""IR building blocks for the float functions the IR has no op for (atan, asin, expm1, log1p, ...), and
the bit tests (isnan, signbit) done on the f32 bits so a driver assuming no NaNs cannot fold them away.

Every function takes and returns f32 Vals (f16 is widened by the caller). Accuracy against numpy in
float64, on lavapipe and the reference backend (tests/array/test_math.py checks it; rtol / atol):

    sqrt exp log log2 tanh (IR ops)               5e-6 / 1e-6
    sin cos tan: vyre/array/_kernels/trig.py (exact range reduction): 3 / 3 / 5 ulp, any finite x
    log10 = log2 * log10(2)                        5e-6 / 1e-6
    expm1: Taylor series below 0.35, else exp - 1   5e-6 / 1e-30
    log1p: 2 atanh(x / (2 + x)) series below 0.3   5e-6 / 1e-30
    atan: Cephes atanf (range reduced to 0.4142)    2e-6 / 1e-7;  atan2, asin, acos through it: 4e-6 / 1e-6
    sinh cosh asinh acosh atanh                    1e-5 / 1e-6
    hypot (scaled), logaddexp (max + log1p(exp))  5e-6 / 1e-6
    float16: each within 1 f16 ulp (computed in f32, rounded once)
"""

from __future__ import annotations

import math

from ...ir.builder import ProgramBuilder
from ...ir.values import Val

NAN_BITS = 0x7FC00000
INF_BITS = 0x7F800000


def bits(x: Val) -> Val: return x.bitcast("u32")
def fbits(b: ProgramBuilder, w: int) -> Val: return b.lit(w, "u32").bitcast("f32")
def isnan(b: ProgramBuilder, x: Val) -> Val: return (bits(x) & 0x7FFFFFFF) > INF_BITS
def isinf(b: ProgramBuilder, x: Val) -> Val: return (bits(x) & 0x7FFFFFFF) == INF_BITS
def isfinite(b: ProgramBuilder, x: Val) -> Val: return (bits(x) & 0x7FFFFFFF) < INF_BITS
def signbit(b: ProgramBuilder, x: Val) -> Val: return (bits(x) >> 31) == 1
def nan(b: ProgramBuilder) -> Val: return fbits(b, NAN_BITS)


def keep_nan(b: ProgramBuilder, x: Val, r: Val) -> Val:
    """``r``, or ``x`` where ``x`` is NaN: for results computed through a clamp (WGSL's min/max of a NaN
    may give the bound: lavapipe's tanh(NaN) was -1, its cosh(NaN) 2.2e38)."""
    return b.select(isnan(b, x), x, r)


def copysign(b: ProgramBuilder, x: Val, y: Val) -> Val:
    return ((bits(x) & 0x7FFFFFFF) | (bits(y) & 0x80000000)).bitcast("f32")


def atan_unit(b: ProgramBuilder, t: Val) -> Val:
    """atan of t in [0, 1] (Cephes atanf's reduction and polynomial)."""
    big = t > 0.41421356
    u = b.let(b.select(big, (t - 1.0) / (t + 1.0), t))
    z = b.let(u * u)
    p = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * u + u
    return b.select(big, p + math.pi / 4, p)


def atan(b: ProgramBuilder, x: Val) -> Val:
    t = b.let(x.abs())
    inv = t > 1.0
    a = atan_unit(b, b.select(inv, 1.0 / t, t))
    r = b.let(b.select(inv, math.pi / 2 - a, a))
    return b.select(isnan(b, x), x, copysign(b, r, x))


def atan2(b: ProgramBuilder, y: Val, x: Val) -> Val:
    ay, ax = b.let(y.abs()), b.let(x.abs())
    both_inf = isinf(b, ax) & isinf(b, ay)
    swap = ay > ax
    num, den = b.select(swap, ax, ay), b.select(swap, ay, ax)
    q = b.select(den == 0.0, b.lit(0.0), num / den)
    a = b.let(atan_unit(b, b.select(both_inf, b.lit(1.0), q)))
    a = b.let(b.select(swap, math.pi / 2 - a, a))
    a = b.let(b.select(signbit(b, x), math.pi - a, a))
    r = copysign(b, a, y)
    return b.select(isnan(b, x) | isnan(b, y), nan(b), r)


def sqrt1m(b: ProgramBuilder, x: Val) -> Val:
    """sqrt(1 - x^2) as sqrt((1 - x)(1 + x)), 0 outside [-1, 1] (callers select NaN there)."""
    return ((1.0 - x) * (1.0 + x)).max(0.0).sqrt()


def asin(b: ProgramBuilder, x: Val) -> Val:
    return b.select(x.abs() > 1.0, nan(b), atan2(b, x, sqrt1m(b, x)))


def acos(b: ProgramBuilder, x: Val) -> Val:
    return b.select(x.abs() > 1.0, nan(b), atan2(b, sqrt1m(b, x), x))


def expm1(b: ProgramBuilder, x: Val) -> Val:
    small = x.abs() < 0.35
    s = b.let(b.select(small, x, b.lit(0.0)))
    series = b.lit(1.0)
    for k in range(9, 1, -1):  # x (1 + x/2 (1 + x/3 (...))), error below x^10/10!
        series = 1.0 + s / float(k) * series
    return b.select(small, s * series, x.exp() - 1.0)


def log1p(b: ProgramBuilder, x: Val) -> Val:
    small = (x > -0.3) & (x < 0.3)
    xs = b.let(b.select(small, x, b.lit(0.0)))
    t = b.let(xs / (2.0 + xs))
    t2 = b.let(t * t)
    series = b.lit(0.0)
    for k in (15, 13, 11, 9, 7, 5, 3):
        series = (series + 1.0 / k) * t2
    return b.select(small, 2.0 * (t + t * series), (1.0 + x).log())


def log10(b: ProgramBuilder, x: Val) -> Val:
    return x.log2() * math.log10(2.0)


def sinh(b: ProgramBuilder, x: Val) -> Val:
    ax = b.let(x.abs())
    e = b.let(expm1(b, ax.min(89.0)))
    big = ax > 89.0
    r = b.select(big, fbits(b, INF_BITS), 0.5 * (e + e / (e + 1.0)))
    return copysign(b, r, x)


def cosh(b: ProgramBuilder, x: Val) -> Val:
    ax = b.let(x.abs())
    e = b.let((ax.min(89.0) * 0.5).exp())  # exp(x/2)^2 / 2: no overflow up to cosh's own limit
    r = 0.5 * e * e + 0.5 / (e * e)
    return keep_nan(b, x, b.select(ax > 89.0, fbits(b, INF_BITS), r))


def asinh(b: ProgramBuilder, x: Val) -> Val:
    ax = b.let(x.abs())
    big = ax > 1e18
    a = b.let(b.select(big, b.lit(1.0), ax))
    small = log1p(b, a + a * a / (1.0 + (1.0 + a * a).sqrt()))
    r = b.select(big, ax.log() + math.log(2.0), small)
    return b.select(isnan(b, x), x, copysign(b, r, x))


def acosh(b: ProgramBuilder, x: Val) -> Val:
    big = x > 1e18
    t = b.let(b.select(big, b.lit(0.0), x - 1.0))
    small = log1p(b, t + (2.0 * t + t * t).max(0.0).sqrt())
    r = b.select(big, x.log() + math.log(2.0), small)
    return b.select(x < 1.0, nan(b), r)


def atanh(b: ProgramBuilder, x: Val) -> Val:
    ax = b.let(x.abs())
    r = 0.5 * log1p(b, 2.0 * ax / (1.0 - ax))
    r = b.select(ax == 1.0, fbits(b, INF_BITS), b.select(ax > 1.0, nan(b), r))
    return copysign(b, r, x)


def hypot(b: ProgramBuilder, x: Val, y: Val) -> Val:
    ax, ay = b.let(x.abs()), b.let(y.abs())
    m, n = b.let(ax.max(ay)), ax.min(ay)
    q = b.let(b.select(m == 0.0, b.lit(0.0), n / m))
    r = m * (1.0 + q * q).sqrt()
    inf = isinf(b, ax) | isinf(b, ay)
    return b.select(inf, fbits(b, INF_BITS), b.select(isnan(b, x) | isnan(b, y), nan(b), r))


def logaddexp(b: ProgramBuilder, x: Val, y: Val) -> Val:
    m = b.let(x.max(y))
    d = b.let(b.select(x == y, b.lit(0.0), -(x - y).abs()))
    r = m + log1p(b, d.exp())
    return b.select(isnan(b, x) | isnan(b, y), nan(b), b.select(x == y, x + math.log(2.0), r))


def nextafter(b: ProgramBuilder, x: Val, y: Val) -> Val:
    bx = b.let(bits(x))
    tiny = (bits(y) & 0x80000000) | 1  # the smallest subnormal toward y (GPUs may flush it: see the docs)
    up = (x < y) == (x > 0.0)
    step = b.select(up, bx + 1, bx - 1).bitcast("f32")
    r = b.select(x == 0.0, tiny.bitcast("f32"), step)
    r = b.select(x == y, y, r)
    return b.select(isnan(b, x) | isnan(b, y), nan(b), r)


__all__ = ["isnan", "isinf", "isfinite", "signbit", "copysign", "atan", "atan2", "asin", "acos", "expm1",
           "log1p", "log10", "sinh", "cosh", "asinh", "acosh", "atanh", "hypot", "logaddexp", "nextafter"]
