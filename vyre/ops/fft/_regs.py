"""One pass of batched power-of-two FFTs held in registers (Stockham radix-32/16/8/4/2 stages).

A workgroup transforms ``rows`` FFTs of length m; each invocation holds ``P`` points (32, or m
when smaller) in registers, so an FFT has ``T = m / P`` invocations. Stage s of radix R (the
radices multiply to m, each divides P) is the Stockham step of "High performance discrete
Fourier transforms on graphics processors" (Govindaraju et al. 2008): butterfly j < m / R reads
points ``j + r m / R``, multiplies them by ``w_(Ns R)^(r (j % Ns))`` (Ns: the product of the
earlier radices; an accurate root table ``rt[L + e] = w_L^e``), does an R-point DFT in registers
and writes point r to ``(j / Ns) Ns R + j % Ns + r Ns``. Invocation t of an FFT owns points
``t + T s``: the first stage reads them straight from global memory and the last one writes its
outputs to the same positions, so only the exchanges between stages go through workgroup memory
(one for m = 1024: radices 32, 32), where the radix-4 pass this replaced had a barrier per two
radix-2 stages.

Workgroup memory holds ``rows * m`` values: ``vec2<f32>`` up to 2048 points (16 KiB, the portable
limit) or, up to 4096, real parts then imaginary parts through one f32 array (two rounds; more
rounds for 8 columns of 1024, 64-byte runs, measured 30% slower on the H200). FFT f
reads element j at ``(f / G) N + (f % G) gs + j js`` and writes likewise (``Side``); when
either side interleaves columns (gs = 1), the column is the fast invocation index, so global
accesses come in runs of ``rows`` values (32 bytes for 4 columns) instead of one. ``post``
multiplies output k of FFT f by ``w_post^((f % G) k)`` (the four-step twiddle) from a two-level
table (``post_program``: ``w_post^e = lo[e % S] hi[e / S]``, two loads and a product).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program
from ._twiddle import WG, unit_root

C2 = "vec2<f32>"
THREADS = 256  # invocations per workgroup: the portable limit
WORDS = 4096  # f32 words of workgroup memory (16 KiB, the portable limit)
POINTS = 32  # points per invocation (measured on the H200: 16 per invocation was 6% slower)
TILE = 2048  # the longest FFT one pass does in the plans (``_plan`` splits longer ones in two)


@dataclass(frozen=True)
class Side:
    """Where FFT f's element j lives: ``(f // groups) * stride + (f % groups) * gs + j * js``."""

    gs: int
    js: int


def radices(m: int, p: int) -> list[int]:
    out, rest = [], m
    while rest > 1:
        out.append(min(p, rest))
        rest //= out[-1]
    return out


def points(m: int) -> int:
    return min(POINTS, m)


def rows_for(m: int, ffts: int) -> int:
    """FFTs per workgroup: the most (a power of two) that fit the threads, workgroup memory and ffts."""
    per = m // points(m)
    rows = 1
    while rows * 2 * m <= WORDS and rows * 2 * per <= THREADS and rows < ffts:
        rows *= 2
    return rows


def grid(m: int, ffts: int) -> tuple[int, int, int]:
    return (-(-ffts // rows_for(m, ffts)), 1, 1)


def _const_twiddle(b: ProgramBuilder, v: Val, k: int, n: int, inverse: bool) -> Val:
    """v * exp(-+2 pi i k / n) with exact shortcuts for multiples of pi / 2."""
    k %= n
    if k == 0:
        return v
    if 4 * k == n:  # -i forward, +i inverse
        return b.let(b.vec(C2, -v.y, v.x) if inverse else b.vec(C2, v.y, -v.x))
    if 2 * k == n:
        return b.let(-v)
    if 4 * k == 3 * n:
        return b.let(b.vec(C2, v.y, -v.x) if inverse else b.vec(C2, -v.y, v.x))
    c, s = math.cos(2 * math.pi * k / n), math.sin(2 * math.pi * k / n)
    s = s if inverse else -s
    return b.let(b.vec(C2, v.x * c - v.y * s, v.x * s + v.y * c))


def dft(b: ProgramBuilder, v: list[Val], inverse: bool) -> list[Val]:
    """The R-point DFT of ``v`` in registers (radix-2 decimation in time, constant twiddles)."""
    n = len(v)
    if n == 1:
        return v
    even, odd = dft(b, v[0::2], inverse), dft(b, v[1::2], inverse)
    out: list[Val] = [v[0]] * n
    for k in range(n // 2):
        t = _const_twiddle(b, odd[k], k, n, inverse)
        out[k], out[k + n // 2] = b.let(even[k] + t), b.let(even[k] - t)
    return out


def cmul(b: ProgramBuilder, a: Val, w: Val) -> Val:
    return b.let(b.vec(C2, a.x * w.x - a.y * w.y, a.x * w.y + a.y * w.x))


def swizzle(a: Val, vec: bool) -> Val:
    """Workgroup-memory word of slot a: the bank bits XORed with the bits above them (a bijection
    on every power-of-two array), so strided exchanges spread over the banks."""
    if vec:  # 8-byte values: 16 banks of pairs
        return a ^ (((a >> 4) ^ (a >> 8)) & 15)
    return a ^ (((a >> 5) ^ (a >> 10)) & 31)


def regs_program(m: int, ffts: int, groups: int, stride: int, src: Side, dst: Side, *, inverse: bool,
                 post: int = 0, scale: float = 1.0) -> Program:
    """The pass of the module doc over ``ffts`` FFTs of length m. Buffers: x, rt (``roots_program(m)``),
    [pt (``post_program(post)``) when post], y."""
    assert m >= 2 and m & (m - 1) == 0 and m <= WORDS, m
    p = points(m)
    per = m // p
    rows = rows_for(m, ffts)
    pts = rows * m
    vec = pts <= WORDS // 2
    cfast = src.gs == 1 and rows > 1 or dst.gs == 1 and rows > 1
    name = (f"fft_regs_m{m}_f{ffts}_g{groups}_s{stride}_{src.gs}x{src.js}_{dst.gs}x{dst.js}"
            f"_{'inv' if inverse else 'fwd'}_p{post}_r{rows}")
    b = ProgramBuilder(name, rows * per)
    x = b.buffer("x", C2)
    rt = b.buffer("rt", C2, count=2 * m)
    pt = b.buffer("pt", C2, count=post_split(post)[1]) if post else None
    y = b.buffer("y", C2, access="write")
    sh = b.workgroup_array("sh", C2 if vec else "f32", pts)
    t = b.let(b.local_index(), "t")
    if cfast:
        c, tf = b.let(t % rows, "c"), b.let(t / rows, "tf")
    else:
        c, tf = b.let(t / per, "c"), b.let(t % per, "tf")
    f = b.let(b.workgroup_id(0) * rows + c, "f")
    fc = b.let(b.min(f, ffts - 1))  # overhanging FFTs compute on a valid row; their stores are skipped

    def base(side: Side) -> Val:
        return b.let((fc / groups) * stride + (fc % groups) * side.gs + tf * side.js)

    def slot(e: Val | int) -> Val:
        return swizzle(e * rows + c if cfast else c * m + e, vec)

    src_base = base(src)
    v = [b.let(x[src_base + (per * s * src.js if s else 0)]) for s in range(p)]
    rads = radices(m, p)
    ns = 1
    for si, r in enumerate(rads):
        last = si == len(rads) - 1
        out: list[Val] = [v[0]] * p
        writes: list[tuple[Val, Val]] = []
        for q in range(p // r):
            ins = [v[q + i * (p // r)] for i in range(r)]
            j = b.let(tf + q * per) if q else tf
            if ns > 1:
                k = b.let(j % ns)
                for i in range(1, r):
                    w = b.let(rt[k * i + ns * r])
                    ins[i] = cmul(b, ins[i], b.vec(C2, w.x, -w.y) if inverse else w)
            res = dft(b, ins, inverse)
            if last:
                for i in range(r):
                    out[q + i * (p // r)] = res[i]
            else:
                at = b.let((j / ns) * (ns * r) + j % ns) if ns > 1 else b.let(j * r)
                for i in range(r):
                    writes.append((b.let(slot(at + i * ns) if i else slot(at)), res[i]))
        if last:
            v = out
            break
        if si:
            b.barrier()  # the previous exchange's reads are done
        reads = [b.let(slot(tf + per * s) if s else slot(tf)) for s in range(p)]
        if vec:
            for a, val in writes:
                sh[a] = val
            b.barrier()
            v = [b.let(sh[a]) for a in reads]
        else:  # through one f32 array: real parts, then imaginary parts
            for a, val in writes:
                sh[a] = val.x
            b.barrier()
            re = [b.let(sh[a]) for a in reads]
            b.barrier()
            for a, val in writes:
                sh[a] = val.y
            b.barrier()
            v = [b.let(b.vec(C2, re[s], sh[a])) for s, a in enumerate(reads)]
        ns *= r
    dst_base = base(dst)
    with b.if_(f < ffts):
        for s in range(p):
            val = v[s]
            if post:
                assert pt is not None
                lo_n, _ = post_split(post)
                e = b.let((fc % groups) * (tf + per * s))  # g k < post <= 2^24: exact in u32
                lo, hi = b.let(pt[e % lo_n]), b.let(pt[e / lo_n + lo_n])
                w = b.vec(C2, lo.x * hi.x - lo.y * hi.y, -(lo.x * hi.y + lo.y * hi.x)) if inverse else cmul(b, lo, hi)
                val = cmul(b, val, w)
            y[dst_base + (per * s * dst.js if s else 0)] = val * scale if scale != 1.0 else val
    return b.build()


def post_split(post: int) -> tuple[int, int]:
    """(S, table length): ``w_post^e = pt[e % S] * pt[S + e / S]`` with S = 2^ceil(log2(post) / 2)."""
    lo = 1 << -(-(post.bit_length() - 1) // 2)
    return lo, lo + max(1, post // lo)


def roots_program(m: int) -> Program:
    """``rt[L + e] = exp(-2 pi i e / L)`` for powers of two L <= m and e < L (entries 0, 1: 1)."""
    b = ProgramBuilder(f"fft_roots_{m}", WG)
    rt = b.buffer("rt", C2, access="write", count=2 * m)
    i = b.global_index()
    log = m.bit_length() - 1
    with b.if_(i < 2 * m):
        top = b.let(31 - b.max(i, 1).count_leading_zeros(), "top")  # L = 2^top <= i
        e = b.let(b.select(i == 0, 0, (i - (b.lit(1) << top)) << (log - top)))  # w_L^e = w_m^(e m / L)
        cs, sn = unit_root(b, e, m)
        rt[i] = b.vec(C2, cs, -sn)
    return b.build()


def post_program(post: int) -> Program:
    """The two-level table of ``post_split``: ``w_post^lo`` for lo < S, then ``w_(post/S)^hi``."""
    lo_n, total = post_split(post)
    b = ProgramBuilder(f"fft_post_roots_{post}", WG)
    pt = b.buffer("pt", C2, access="write", count=total)
    i = b.global_index()
    with b.if_(i < total):
        e = b.let(b.select(i < lo_n, i, (i - lo_n) * lo_n))
        cs, sn = unit_root(b, e, post)
        pt[i] = b.vec(C2, cs, -sn)
    return b.build()
