"""Accurate unit roots on the device, without the GPU's sin/cos (WGSL promises only 2^-11 there).

``unit_root(b, r, den)`` is ``(cos, sin)`` of ``2 pi r / den`` for an integer ``0 <= r < den``:
the octant is found exactly in integer arithmetic (``8 r = oct * den + rem``), odd octants are
reflected (``rem -> den - rem``) so the reduced angle is in ``[0, pi/4]``, and Taylor polynomials
(to x^11 for sin, x^12 for cos; truncation below 1e-11 there) in f32 give each component within a
few ulp of the float64 value (measured: tests/ops/test_fft.py::test_root_tables_accuracy).
The root tables of the power-of-two passes (``_regs.roots_program``, ``_regs.post_program``) and
the Bluestein chirp ``exp(-+ pi i k^2 / n)`` are programs built on it, computed once per pipeline run.
"""

from __future__ import annotations

import math

from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program

WG = 256
C2 = "vec2<f32>"
_SIN = [(-1) ** k / math.factorial(2 * k + 1) for k in range(6)]  # x, x^3, ..., x^11
_COS = [(-1) ** k / math.factorial(2 * k) for k in range(7)]  # 1, x^2, ..., x^12


def _horner(b: ProgramBuilder, x2: Val, coeffs: list[float]) -> Val:
    acc = b.lit(float(coeffs[-1]), "f32")
    for c in reversed(coeffs[:-1]):
        acc = b.let(b.fma(acc, x2, float(c)))
    return acc


def unit_root(b: ProgramBuilder, r: Val, den: int) -> tuple[Val, Val]:
    """(cos, sin) of 2 pi r / den for a u32 value 0 <= r < den <= 2^24 (see the module doc)."""
    e = b.let(r * 8)
    octant = b.let(e / den)
    rem = b.let(e - octant * den)
    odd = b.let((octant & 1) == 1)
    red = b.let(b.select(odd, den - rem, rem))
    theta = b.let(red.cast("f32") * float(math.pi / 4 / den))
    x2 = b.let(theta * theta)
    s = b.let(theta * _horner(b, x2, _SIN))
    c = _horner(b, x2, _COS)
    swap = b.let((octant == 1) | (octant == 2) | (octant == 5) | (octant == 6))
    cs, sn = b.select(swap, s, c), b.select(swap, c, s)
    cneg = b.let((octant >= 2) & (octant <= 5))
    sneg = b.let(octant >= 4)
    return b.let(b.select(cneg, -cs, cs)), b.let(b.select(sneg, -sn, sn))


def _mulmod_square(b: ProgramBuilder, k: Val, mod: int) -> Val:
    """k * k mod ``mod`` for k < mod <= 2^25 by double-and-add (no u32 overflow: values < 2 mod)."""
    acc = b.var("u32", 0, name="sq")
    for bit in reversed(range(max(1, mod.bit_length()))):
        d = b.let(acc * 2)
        d = b.let(b.select(d >= mod, d - mod, d))
        a = b.let(d + k)
        a = b.let(b.select(a >= mod, a - mod, a))
        acc.set(b.select(((k >> bit) & 1) == 1, a, d))
    return b.let(acc)


def chirp_program(n: int, inverse: bool) -> Program:
    """``chirp[k] = exp(-+ pi i k^2 / n)`` (minus forward, plus inverse) for k < n: angle index k^2 mod 2n."""
    b = ProgramBuilder(f"fft_chirp_{n}_{'inv' if inverse else 'fwd'}", WG)
    out = b.buffer("chirp", C2, access="write", count=n)
    k = b.global_index()
    with b.if_(k < n):
        c, s = unit_root(b, _mulmod_square(b, k, 2 * n), 2 * n)
        out[k] = b.vec(C2, c, s if inverse else -s)
    return b.build()
