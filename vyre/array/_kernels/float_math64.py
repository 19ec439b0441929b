"""IR building blocks for float64: the bit tests on the f64 bits (as u64) and f64-accurate versions of the
functions vyre/array/_kernels/float_math.py builds for f32 (its polynomials and thresholds are f32's).

The IR ops exp, log, log2, tanh and pow are computed in software on f64 by the lowering
(vyre/lower/templates/wide.wgsl.j2; 1-6 ulp, pow (2 + 1.5 |y ln x|) ulp). sin, cos and tan are not the IR
ops (the lowering's are accurate for |x| < 1e6 only): vyre/array/_kernels/trig64.py reduces every finite
argument exactly.
Accuracy here against numpy, both backends (tests/array/test_float64.py checks it, in ulp of the result):

    expm1: Taylor series to x^17 below 0.35, else exp - 1          4 ulp
    log1p: 2 atanh(x / (2 + x)) series to t^23 below 0.3, else log(1 + x) (numpy's own error there)
    atan: Cephes atan (double: P/Q rational, pi/4 and 3pi/8 reduction) 2 ulp; atan2, asin, acos through it
    sinh cosh asinh acosh atanh hypot logaddexp: built as float_math's (tested to rtol 1e-14)
"""

from __future__ import annotations

import math

from ...ir.builder import ProgramBuilder
from ...ir.values import Val

SIGN = 1 << 63
ABS = SIGN - 1
INF_BITS = 0x7FF0000000000000
NAN_BITS = 0x7FF8000000000000
F64 = "f64"


def bits(x: Val) -> Val: return x.bitcast("u64")
def fbits(b: ProgramBuilder, w: int) -> Val: return b.lit(w, "u64").bitcast(F64)
def lit(b: ProgramBuilder, v: float) -> Val: return b.lit(v, F64)
def isnan(b: ProgramBuilder, x: Val) -> Val: return (bits(x) & b.lit(ABS, "u64")) > b.lit(INF_BITS, "u64")
def isinf(b: ProgramBuilder, x: Val) -> Val: return (bits(x) & b.lit(ABS, "u64")) == b.lit(INF_BITS, "u64")
def isfinite(b: ProgramBuilder, x: Val) -> Val: return (bits(x) & b.lit(ABS, "u64")) < b.lit(INF_BITS, "u64")
def signbit(b: ProgramBuilder, x: Val) -> Val: return (bits(x) >> b.lit(63, "u32")) == b.lit(1, "u64")
def nan(b: ProgramBuilder) -> Val: return fbits(b, NAN_BITS)
def inf(b: ProgramBuilder) -> Val: return fbits(b, INF_BITS)


def keep_nan(b: ProgramBuilder, x: Val, r: Val) -> Val:
    return b.select(isnan(b, x), x, r)


def copysign(b: ProgramBuilder, x: Val, y: Val) -> Val:
    return ((bits(x) & b.lit(ABS, "u64")) | (bits(y) & b.lit(SIGN, "u64"))).bitcast(F64)


_P = (-8.750608600031904122785e-1, -1.615753718733365076637e1, -7.500855792314704667340e1,
      -1.228866684490136173410e2, -6.485021904942025371773e1)
_Q = (2.485846490142306297962e1, 1.650270098316988542046e2, 4.328810604912902668951e2,
      4.853903996359136964868e2, 1.945506571482613964425e2)
_MOREBITS = 6.123233995736765886130e-17
_T3P8 = 2.41421356237309504880


def atan_pos(b: ProgramBuilder, t: Val) -> Val:
    """atan of t >= 0 (Cephes atan: t > tan(3pi/8) -> pi/2 - atan(1/t), t > 0.66 -> pi/4 + atan((t-1)/(t+1)))."""
    big, mid = t > _T3P8, t > 0.66
    x = b.let(b.select(big, -1.0 / t, b.select(mid, (t - 1.0) / (t + 1.0), t)))
    base = b.select(big, lit(b, math.pi / 2), b.select(mid, lit(b, math.pi / 4), lit(b, 0.0)))
    more = b.select(big, lit(b, _MOREBITS), b.select(mid, lit(b, 0.5 * _MOREBITS), lit(b, 0.0)))
    z = b.let(x * x)
    p = lit(b, _P[0])
    for c in _P[1:]:
        p = p * z + c
    q = z + _Q[0]
    for c in _Q[1:]:
        q = q * z + c
    return base + ((x * (z * p / q) + x) + more)


def atan(b: ProgramBuilder, x: Val) -> Val:
    r = atan_pos(b, b.let(x.abs()))
    return b.select(isnan(b, x), x, copysign(b, r, x))


def atan2(b: ProgramBuilder, y: Val, x: Val) -> Val:
    ay, ax = b.let(y.abs()), b.let(x.abs())
    both_inf = isinf(b, ax) & isinf(b, ay)
    swap = ay > ax
    num, den = b.select(swap, ax, ay), b.select(swap, ay, ax)
    q = b.select(den == 0.0, lit(b, 0.0), num / den)
    a = b.let(atan_pos(b, b.select(both_inf, lit(b, 1.0), q)))
    a = b.let(b.select(swap, math.pi / 2 - a, a))
    a = b.let(b.select(signbit(b, x), math.pi - a, a))
    r = copysign(b, a, y)
    return b.select(isnan(b, x) | isnan(b, y), nan(b), r)


def sqrt1m(b: ProgramBuilder, x: Val) -> Val:
    return ((1.0 - x) * (1.0 + x)).max(0.0).sqrt()


def asin(b: ProgramBuilder, x: Val) -> Val:
    return b.select(x.abs() > 1.0, nan(b), atan2(b, x, sqrt1m(b, x)))


def acos(b: ProgramBuilder, x: Val) -> Val:
    return b.select(x.abs() > 1.0, nan(b), atan2(b, sqrt1m(b, x), x))


def expm1(b: ProgramBuilder, x: Val) -> Val:
    small = x.abs() < 0.35
    s = b.let(b.select(small, x, lit(b, 0.0)))
    series = lit(b, 1.0)
    for k in range(17, 1, -1):  # x (1 + x/2 (1 + x/3 (...))), error below x^18/18!
        series = 1.0 + s / float(k) * series
    return b.select(small, s * series, x.exp() - 1.0)


def log1p(b: ProgramBuilder, x: Val) -> Val:
    small = (x > -0.3) & (x < 0.3)
    xs = b.let(b.select(small, x, lit(b, 0.0)))
    t = b.let(xs / (2.0 + xs))
    t2 = b.let(t * t)
    series = lit(b, 0.0)
    for k in range(23, 1, -2):
        series = (series + 1.0 / k) * t2
    return b.select(small, 2.0 * (t + t * series), (1.0 + x).log())


def log10(b: ProgramBuilder, x: Val) -> Val:
    return x.log() * (1.0 / math.log(10.0))


def sinh(b: ProgramBuilder, x: Val) -> Val:
    ax = b.let(x.abs())
    e = b.let(expm1(b, ax.min(709.0)))
    r = b.select(ax > 710.5, inf(b), b.select(ax > 709.0, 0.5 * (ax * 0.5).exp() * (ax * 0.5).exp(),
                                                  0.5 * (e + e / (e + 1.0))))
    return b.select(isnan(b, x), x, copysign(b, r, x))


def cosh(b: ProgramBuilder, x: Val) -> Val:
    ax = b.let(x.abs())
    e = b.let((ax.min(711.0) * 0.5).exp())
    r = 0.5 * e * e + 0.5 / (e * e)
    return keep_nan(b, x, b.select(ax > 711.0, inf(b), r))


def asinh(b: ProgramBuilder, x: Val) -> Val:
    ax = b.let(x.abs())
    big = ax > 1e150
    a = b.let(b.select(big, lit(b, 1.0), ax))
    small = log1p(b, a + a * a / (1.0 + (1.0 + a * a).sqrt()))
    r = b.select(big, ax.log() + math.log(2.0), small)
    return b.select(isnan(b, x), x, copysign(b, r, x))


def acosh(b: ProgramBuilder, x: Val) -> Val:
    big = x > 1e150
    t = b.let(b.select(big, lit(b, 0.0), x - 1.0))
    small = log1p(b, t + (2.0 * t + t * t).max(0.0).sqrt())
    r = b.select(big, x.log() + math.log(2.0), small)
    return b.select(isnan(b, x), x, b.select(x < 1.0, nan(b), r))


def atanh(b: ProgramBuilder, x: Val) -> Val:
    ax = b.let(x.abs())
    r = 0.5 * log1p(b, 2.0 * ax / (1.0 - ax))
    r = b.select(ax == 1.0, inf(b), b.select(ax > 1.0, nan(b), r))
    return b.select(isnan(b, x), x, copysign(b, r, x))


def hypot(b: ProgramBuilder, x: Val, y: Val) -> Val:
    ax, ay = b.let(x.abs()), b.let(y.abs())
    m, n = b.let(ax.max(ay)), ax.min(ay)
    q = b.let(b.select(m == 0.0, lit(b, 0.0), n / m))
    r = m * (1.0 + q * q).sqrt()
    infinite = isinf(b, ax) | isinf(b, ay)
    return b.select(infinite, inf(b), b.select(isnan(b, x) | isnan(b, y), nan(b), r))


def logaddexp(b: ProgramBuilder, x: Val, y: Val) -> Val:
    m = b.let(x.max(y))
    d = b.let(b.select(x == y, lit(b, 0.0), -(x - y).abs()))
    r = m + log1p(b, d.exp())
    return b.select(isnan(b, x) | isnan(b, y), nan(b), b.select(x == y, x + math.log(2.0), r))


def nextafter(b: ProgramBuilder, x: Val, y: Val) -> Val:
    bx = b.let(bits(x))
    one = b.lit(1, "u64")
    tiny = (bits(y) & b.lit(SIGN, "u64")) | one
    up = (x < y) == (x > 0.0)
    step = b.select(up, bx + one, bx - one).bitcast(F64)
    r = b.select(x == 0.0, tiny.bitcast(F64), step)
    r = b.select(x == y, y, r)
    return b.select(isnan(b, x) | isnan(b, y), nan(b), r)


__all__ = ["isnan", "isinf", "isfinite", "signbit", "nan", "inf", "copysign", "atan", "atan2", "asin", "acos",
           "expm1", "log1p", "log10", "sinh", "cosh", "asinh", "acosh", "atanh", "hypot", "logaddexp", "nextafter",
           "keep_nan", "lit"]
