"""sin, cos and tan of float32 with an exact argument reduction, for every finite argument (WGSL's
builtins are only specified near zero: cos(1.44e8) came out 1.0 on lavapipe, numpy gives 0.3401).

The argument ``|x|`` is reduced to ``r`` in [-pi/4, pi/4] and a quadrant ``q``:

* ``|x| <= 4096``: Cody-Waite with pi/2 in four 12-bit parts (``q * part`` is exact for ``q < 2**12``);
* beyond: Payne-Hanek in u32 integer arithmetic. ``|x| = m * 2**e`` (``m`` the 24-bit significand);
  the 96 bits of 2/pi that matter for ``e`` (those from 2**-(e - 2) on: the ones before contribute
  multiples of 4 to ``|x| * 2/pi``) form a window ``W``, and the low 96 bits of ``m * W`` are
  ``|x| * 2/pi mod 4`` with 94 bits of fraction -- exact, whatever the size of ``x``. The table is 2/pi
  computed here from Machin's formula with Python integers (no constants typed in), and is read by a
  select chain (the IR has no constant arrays). This path sits behind an ``if``: a dispatch whose
  arguments are all moderate never runs it.

Then Cephes' minimax polynomials for sinf/cosf on [-pi/4, pi/4] (tan: their quotient). Accuracy
against numpy's float64 values of the float32 argument, on lavapipe and the reference backend: sin and
cos within 3 ulp of float32, tan within 5 (measured 2.4 / 2.4 / 4.4 near multiples of pi/2), for every
finite argument (tests/array/test_special_values.py checks up to 3.4e38). The vec4 fused program runs
these lane by lane (the selects are scalar IR).
"""

from __future__ import annotations

import math
from fractions import Fraction
from functools import cache
from types import ModuleType

from ...ir.builder import ProgramBuilder
from ...ir.values import Val
from . import float_math as M

_CW_LIMIT = 4096.0  # Cody-Waite below: q < 2608 < 2**12 keeps q * part exact with 12-bit parts


@cache
def pi_fraction(bits: int) -> Fraction:
    """pi to ``bits`` bits (and a guard of 64), as an exact fraction: Machin's formula on integers."""
    one = 1 << (bits + 64)

    def arctan_inv(n: int) -> int:  # arctan(1/n) * one, by its Taylor series
        total, term, k, sign = 0, one // n, 1, 1
        while term:
            total += sign * (term // k)
            term //= n * n
            k += 2
            sign = -sign
        return total
    return Fraction(16 * arctan_inv(5) - 4 * arctan_inv(239), one)


@cache
def two_over_pi_words(n: int) -> tuple[int, ...]:
    """The first ``n`` 32-bit words of the binary fraction of 2/pi (0.A2F9836E 4E441529 ...)."""
    f = 2 / pi_fraction(32 * n + 64)
    v = math.floor(f * (1 << (32 * n)))
    return tuple((v >> (32 * (n - 1 - k))) & 0xFFFFFFFF for k in range(n))


def split(value: Fraction, parts: int, bits: int, mantissa: int) -> list[float]:
    """``value`` (> 0) as ``parts`` floats of ``bits`` significant bits each, truncated so each rest stays
    positive (the last rounded to ``mantissa`` bits)."""
    out, rest = [], value
    for k in range(parts):
        last = k == parts - 1
        e = math.floor(math.log2(rest)) - (mantissa if last else bits) + 1
        scaled = rest / Fraction(2) ** e
        chunk = Fraction(round(scaled) if last else math.floor(scaled)) * Fraction(2) ** e
        out.append(float(chunk))
        rest -= chunk
    return out


_PIO2 = pi_fraction(200) / 2
_C = split(_PIO2, 4, 12, 24)
_TABLE = (0, *two_over_pi_words(7))  # one zero word first: the window may start before the binary point


def _word(b: ProgramBuilder, j: Val, k: int) -> Val:
    """``_TABLE[j + k]`` for ``j`` in [0, 4] (a select chain)."""
    r = b.lit(_TABLE[k + 4], "u32")
    for jj in range(3, -1, -1):
        r = b.let(b.select(j == jj, b.lit(_TABLE[k + jj], "u32"), r))  # a let each: the lowering's
    return r  # masked select repeats its false arm, so a nested chain would grow as 2**depth


def _mul_hi(b: ProgramBuilder, a: Val, w: Val) -> Val:
    """The high 32 bits of ``a * w`` (``a`` < 2**24): 16-bit halves, carries by hand (no mulhi in WGSL)."""
    al, ah = b.let(a & 0xFFFF), b.let(a >> 16)
    wl, wh = b.let(w & 0xFFFF), b.let(w >> 16)
    ll, lh, hl = b.let(al * wl), b.let(al * wh), b.let(ah * wl)
    mid = b.let(lh + hl)
    c1 = b.select(mid < lh, b.lit(0x10000, "u32"), b.lit(0, "u32"))
    lo = b.let(ll + (mid << 16))
    c2 = b.select(lo < ll, b.lit(1, "u32"), b.lit(0, "u32"))
    return ah * wh + (mid >> 16) + c1 + c2


def _payne_hanek(b: ProgramBuilder, ax: Val) -> tuple[Val, Val]:
    """(quadrant (u32), r) for ``ax`` = |x| >= 2**-6 (finite; any value for inf/NaN)."""
    u = b.let(M.bits(ax))
    m = b.let((u & 0x7FFFFF) | 0x800000)
    off = b.let((u >> 23) - 120)  # bit offset of the window in _TABLE: (e - 150) - 2 + 32
    j, sh = b.let(off >> 5), b.let(off & 31)
    t = [_word(b, j, k) for k in range(4)]
    back = b.let((32 - sh) & 31)  # sh == 0 selects 0 below: no shift by 32
    w = [b.let((t[k] << sh) | b.select(sh == 0, b.lit(0, "u32"), t[k + 1] >> back)) for k in range(3)]
    p2 = b.let(m * w[2])
    lo1 = b.let(m * w[1])
    p1 = b.let(lo1 + _mul_hi(b, m, w[2]))
    p0 = b.let(m * w[0] + _mul_hi(b, m, w[1]) + b.select(p1 < lo1, b.lit(1, "u32"), b.lit(0, "u32")))
    q = b.let(p0 >> 30)
    f0 = b.let(p0 & 0x3FFFFFFF)
    up = b.let(f0 >= 0x20000000)  # fraction >= 1/2: the next quadrant, r = -(1 - fraction)
    # 2**94 - fraction in the same three words (two's complement of the 94-bit fraction)
    n2 = b.let(~p2 + 1)
    c2 = b.select(p2 == 0, b.lit(1, "u32"), b.lit(0, "u32"))
    n1 = b.let(~p1 + c2)
    c1 = b.select((p1 == 0) & (p2 == 0), b.lit(1, "u32"), b.lit(0, "u32"))
    n0 = b.let(((~f0) & 0x3FFFFFFF) + c1)
    a0, a1, a2 = b.select(up, n0, f0), b.select(up, n1, p1), b.select(up, n2, p2)
    frac = a0.cast("f32") * 2.0 ** -30 + a1.cast("f32") * 2.0 ** -62 + a2.cast("f32") * 2.0 ** -94
    r = b.let(frac * float(_PIO2))
    return b.let(q + b.select(up, b.lit(1, "u32"), b.lit(0, "u32"))), b.select(up, -r, r)


def reduce(b: ProgramBuilder, ax: Val) -> tuple[Val, Val]:
    """(quadrant & 3 (u32), r in [-pi/4, pi/4]) with ``ax = q * pi/2 + r`` (``ax`` = |x|, f32)."""
    qf = b.let((ax * float(1 / _PIO2)).round())
    r = ax - qf * _C[0]
    for c in _C[1:]:
        r = r - qf * c
    q = b.var("u32", qf.min(4096.0).cast("u32"))
    rv = b.var("f32", r)
    with b.if_(ax > _CW_LIMIT):
        pq, pr = _payne_hanek(b, ax)
        q.set(pq)
        rv.set(pr)
    return b.let(q & 3), b.let(rv)


def _sin_poly(b: ProgramBuilder, r: Val) -> Val:
    z = b.let(r * r)
    return ((-1.9515295891e-4 * z + 8.3321608736e-3) * z - 1.6666654611e-1) * z * r + r


def _cos_poly(b: ProgramBuilder, r: Val) -> Val:
    z = b.let(r * r)
    return ((2.443315711809948e-5 * z - 1.388731625493765e-3) * z + 4.166664568298827e-2) * z * z - 0.5 * z + 1.0


def _parts(b: ProgramBuilder, x: Val) -> tuple[Val, Val, Val, Val]:
    ax = b.let(x.abs())
    q, r = reduce(b, ax)
    return q, b.let(_sin_poly(b, r)), b.let(_cos_poly(b, r)), ax


def from_quadrant(b: ProgramBuilder, fn: str, x: Val, parts: tuple[Val, Val, Val, Val], tiny: float,
                  fm: ModuleType) -> Val:
    """``fn`` ("sin", "cos" or "tan") of ``x`` from ``parts`` = (q, s, c, |x|): the quadrant ``q`` of ``|x|``
    and the sine ``s`` and cosine ``c`` of its reduced argument (float32 here, float64 in trig64.py; ``fm``:
    the module of that type's bit tests, float_math or float_math64: isfinite, signbit, nan). sin and
    tan are odd: ``x``'s sign is applied, and ``x`` itself is the result where ``|x| < tiny`` (keeps -0 and
    subnormals). NaN for an infinite or NaN ``x``."""
    q, s, c, ax = parts
    if fn == "cos":
        v = b.select((q & 1) == 1, s, c)
        v = b.select((q == 1) | (q == 2), -v, v)
        return b.select(fm.isfinite(b, x), v, fm.nan(b))
    if fn == "sin":
        v = b.select((q & 1) == 1, c, s)
        v = b.select(q >= 2, -v, v)
    else:
        v = b.select((q & 1) == 1, -c / s, s / c)
    r = b.select(fm.signbit(b, x), -v, v)
    r = b.select(ax < tiny, x, r)
    return b.select(fm.isfinite(b, x), r, fm.nan(b))


_TINY = 2.0 ** -12  # sin and tan of a smaller |x|: x itself


def sin(b: ProgramBuilder, x: Val) -> Val:
    return from_quadrant(b, "sin", x, _parts(b, x), _TINY, M)


def cos(b: ProgramBuilder, x: Val) -> Val:
    return from_quadrant(b, "cos", x, _parts(b, x), _TINY, M)


def tan(b: ProgramBuilder, x: Val) -> Val:
    return from_quadrant(b, "tan", x, _parts(b, x), _TINY, M)


__all__ = ["sin", "cos", "tan", "reduce", "two_over_pi_words", "pi_fraction", "split", "from_quadrant"]
