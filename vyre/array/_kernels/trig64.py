"""sin, cos and tan of float64 with an exact argument reduction for every finite argument (the lowering's
software f64 sin/cos/tan, vyre/lower/templates/wide.wgsl.j2, is accurate only for |x| < 1e6).

As vyre/array/_kernels/trig.py does for float32, ``|x|`` is reduced to ``hi + lo`` (a double-double in
[-pi/4, pi/4]) and a quadrant:

* ``|x| <= 2**20``: fdlibm's medium reduction -- pi/2 in two 33-bit parts (exact products for
  ``q < 2**20``) and a 53-bit tail, the rounding error of each step carried into ``lo``;
* beyond: Payne-Hanek on 32-bit limbs held in u64 (the 64-bit dtypes need shader-int64 as well): the
  160 bits of 2/pi that matter for the exponent (a window out of a table of 36 words, computed from
  Machin's formula in trig.py) times the 53-bit significand, modulo 2**160, is ``|x| * 2/pi mod 4``
  with 158 bits of fraction; times pi/2 in double-double (Dekker's product: no reliance on a fused
  multiply-add). Behind an ``if``: dispatches of moderate arguments never run it.

Then fdlibm's kernels (__kernel_sin, __kernel_cos, with the ``lo`` correction); tan is their quotient.
Accuracy against numpy (tests/array/test_float64.py, test_special_values.py): sin/cos within 2 ulp, tan
within 3, for every finite argument.
"""

from __future__ import annotations

from ...ir.builder import ProgramBuilder
from ...ir.values import Val
from . import float_math64 as M
from .trig import from_quadrant, pi_fraction, split, two_over_pi_words

F64 = "f64"
_PIO2 = pi_fraction(300) / 2
_P1, _P2, _P3 = split(_PIO2, 3, 33, 53)
_PIO2_HI, _PIO2_LO = split(_PIO2, 2, 53, 53)
_CW_LIMIT = float(2 ** 20)  # q <= 667544 < 2**20: q * 33-bit part is exact
_TABLE = (0, 0, *two_over_pi_words(37))  # two zero words first: the window may start before the point
_S = (-1.66666666666666324348e-01, 8.33333333332248946124e-03, -1.98412698298579493134e-04,
      2.75573137070700676789e-06, -2.50507602534068634195e-08, 1.58969099521155010221e-10)
_C = (4.16666666666666019037e-02, -1.38888888888741095749e-03, 2.48015872894767294178e-05,
      -2.75573143513906633035e-07, 2.08757232129817482790e-09, -1.13596475577881948265e-11)


def _u32(b: ProgramBuilder, v: int) -> Val: return b.lit(v, "u32")
def _u64(b: ProgramBuilder, v: int) -> Val: return b.lit(v, "u64")


def _word(b: ProgramBuilder, j: Val, k: int) -> Val:
    """``_TABLE[j + k]`` for ``j`` in [0, 32] (a select chain)."""
    r = _u32(b, _TABLE[k + 32])  # k <= 6
    for jj in range(31, -1, -1):
        r = b.let(b.select(j == jj, _u32(b, _TABLE[k + jj]), r))  # a let each: the lowering's
    return r  # masked select repeats its false arm, so a nested chain would grow as 2**depth


def _two_sum(b: ProgramBuilder, a: Val, c: Val) -> tuple[Val, Val]:
    s = b.let(a + c)
    bb = b.let(s - a)
    return s, b.let((a - (s - bb)) + (c - bb))


def _split(b: ProgramBuilder, a: Val) -> tuple[Val, Val]:
    c = b.let(a * 134217729.0)  # Veltkamp: 2**27 + 1
    hi = b.let(c - (c - a))
    return hi, b.let(a - hi)


def _two_prod(b: ProgramBuilder, a: Val, c: Val) -> tuple[Val, Val]:
    p = b.let(a * c)
    ah, al = _split(b, a)
    ch, cl = _split(b, c)
    return p, b.let(((ah * ch - p) + ah * cl + al * ch) + al * cl)


def _payne_hanek(b: ProgramBuilder, ax: Val) -> tuple[Val, Val, Val]:
    """(quadrant (u32), hi, lo) for ``ax`` = |x| >= 2**20 (finite; any value for inf/NaN)."""
    u = b.let(M.bits(ax))
    e = b.let((u >> _u32(b, 52)).cast("u32") & 0x7FF)
    m0 = b.let((u & _u64(b, 0xFFFFFFFF)).cast("u32"))
    m1 = b.let(((u >> _u32(b, 32)).cast("u32") & 0xFFFFF) | 0x100000)
    off = b.let(e - 1013)  # bit offset of the window in _TABLE: (e - 1075) - 2 + 64, j <= 32
    j, sh = b.let(off >> 5), b.let(off & 31)
    t = [_word(b, j, k) for k in range(7)]
    back = b.let((32 - sh) & 31)
    w = [b.let((t[k] << sh) | b.select(sh == 0, _u32(b, 0), t[k + 1] >> back)) for k in range(6)]
    v = [w[5 - k].cast("u64") for k in range(6)]  # least significant first
    a = [m0.cast("u64"), m1.cast("u64")]
    low, sh32 = _u64(b, 0xFFFFFFFF), _u32(b, 32)
    p: list[Val] = []
    carry: Val = _u64(b, 0)
    for k in range(6):
        terms = [b.let(a[i] * v[k - i]) for i in range(2) if k - i >= 0]
        s = b.let(carry + sum((t_ & low for t_ in terms[1:]), terms[0] & low))
        p.append(b.let((s & low).cast("u32")))
        if k < 5:
            carry = b.let((s >> sh32) + sum((t_ >> sh32 for t_ in terms[1:]), terms[0] >> sh32))
    q = b.let(p[5] >> 30)
    f = [*p[:5], b.let(p[5] & 0x3FFFFFFF)]
    up = b.let(f[5] >= 0x20000000)  # fraction >= 1/2: the next quadrant, r = -(1 - fraction)
    neg: list[Val] = []
    c = b.lit(True)
    for k in range(6):  # two's complement of the 190-bit fraction, word by word
        nk = ~f[k] + b.select(c, _u32(b, 1), _u32(b, 0))
        neg.append(b.let(nk & 0x3FFFFFFF if k == 5 else nk))
        c = b.let(c & (f[k] == 0))
    g = [b.select(up, neg[k], f[k]).cast(F64) * 2.0 ** (-30 - 32 * (5 - k)) for k in range(6)]
    # the fraction as a double-double; the top words are zero after a deep cancellation (x near a
    # multiple of pi/2), so three words are summed exactly before the rest
    hi, e1 = _two_sum(b, g[5], g[4])
    hi, e2 = _two_sum(b, hi, g[3])
    hi, lo = _two_sum(b, hi, b.let(e1 + e2 + g[2] + g[1]))
    ph, pe = _two_prod(b, hi, M.lit(b, _PIO2_HI))
    tail = b.let(pe + hi * _PIO2_LO + lo * _PIO2_HI)
    rh = b.let(ph + tail)
    rl = b.let(tail - (rh - ph))
    return b.let(q + b.select(up, _u32(b, 1), _u32(b, 0))), b.select(up, -rh, rh), b.select(up, -rl, rl)


def reduce(b: ProgramBuilder, ax: Val) -> tuple[Val, Val, Val]:
    """(quadrant & 3 (u32), hi, lo) with ``ax = q * pi/2 + hi + lo`` (``ax`` = |x|, f64)."""
    qf = b.let((ax * float(1 / _PIO2)).round())
    r1 = b.let(ax - qf * _P1)
    w = b.let(qf * _P2)
    r2 = b.let(r1 - w)
    w3 = b.let(qf * _P3 - ((r1 - r2) - w))
    hi0 = b.let(r2 - w3)
    q = b.var("u32", qf.min(_CW_LIMIT).cast("u32"))
    hi = b.var(F64, hi0)
    lo = b.var(F64, (r2 - hi0) - w3)
    with b.if_(ax > _CW_LIMIT):
        pq, ph, pl = _payne_hanek(b, ax)
        q.set(pq)
        hi.set(ph)
        lo.set(pl)
    return b.let(q & 3), b.let(hi), b.let(lo)


def _horner(z: Val, coeffs: tuple[float, ...]) -> Val:
    r = z * coeffs[-1] + coeffs[-2]
    for c in reversed(coeffs[:-2]):
        r = r * z + c
    return r


def _sin_k(b: ProgramBuilder, x: Val, y: Val) -> Val:
    z = b.let(x * x)
    v = b.let(z * x)
    r = b.let(_horner(z, _S[1:]))
    return x - ((z * (0.5 * y - v * r) - y) - v * _S[0])


def _cos_k(b: ProgramBuilder, x: Val, y: Val) -> Val:
    z = b.let(x * x)
    r = b.let(z * _horner(z, _C))
    hz = b.let(0.5 * z)
    w = b.let(1.0 - hz)
    return w + (((1.0 - w) - hz) + (z * r - x * y))


def _parts(b: ProgramBuilder, x: Val) -> tuple[Val, Val, Val, Val]:
    ax = b.let(x.abs())
    q, hi, lo = reduce(b, ax)
    return q, b.let(_sin_k(b, hi, lo)), b.let(_cos_k(b, hi, lo)), ax


_TINY = 2.0 ** -27  # sin and tan of a smaller |x|: x itself


def sin(b: ProgramBuilder, x: Val) -> Val:
    return from_quadrant(b, "sin", x, _parts(b, x), _TINY, M)


def cos(b: ProgramBuilder, x: Val) -> Val:
    return from_quadrant(b, "cos", x, _parts(b, x), _TINY, M)


def tan(b: ProgramBuilder, x: Val) -> Val:
    return from_quadrant(b, "tan", x, _parts(b, x), _TINY, M)


__all__ = ["sin", "cos", "tan", "reduce"]
