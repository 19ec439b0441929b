"""One pass of batched power-of-two FFTs in workgroup memory (radix-4 steps, one radix-2 if needed).

A workgroup transforms ``rows`` FFTs of length m (``rows * m <= TILE`` = 2048 points, 16 KiB of
``vec2<f32>``, WebGPU's portable limit). FFT f of the pass reads element j of ``x[(f / G) * N + (f % G) * gs + j * js]``
and writes element k to ``y[(f / G) * N + (f % G) * gs' + k * js']`` (``Side``): rows of
contiguous data (js = 1), or G interleaved columns (gs = 1) as in the four-step decomposition,
where ``post`` multiplies output k of column g by ``w_N^(g k)`` between the two passes.

Loads store element j at its bit-reversed slot; decimation-in-time butterflies then run in place:
each invocation owns four slots ``jj + {0, h, 2h, 3h}`` of a block of 4h and does two radix-2
stages in registers (twiddles ``w_2h^jj``, ``w_4h^jj`` and ``w_4h^(jj+h) = -+i w_4h^jj``), so
there is one barrier per two stages. The loads and stores walk the fast index of the memory
(j for rows, the column for interleaved columns), so neighbouring invocations touch neighbouring
addresses. Twiddles come from the accurate stage table ``tw`` (``_twiddle``; neighbouring invocations
read neighbouring entries), conjugated for inverses; workgroup memory is swizzled (``swizzle``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program
from ._twiddle import unit_root

TILE = 2048  # complex points per workgroup: 16 KiB of workgroup memory, the portable WebGPU limit
THREADS = 256  # invocations per workgroup (fewer for small tiles: one radix-4 group each)
C2 = "vec2<f32>"


@dataclass(frozen=True)
class Side:
    """Where FFT f's element j lives: ``(f // groups) * stride + (f % groups) * gs + j * js``."""

    gs: int
    js: int


def cmul(b: ProgramBuilder, a: Val, w: Val) -> Val:
    return b.let(b.vec(C2, a.x * w.x - a.y * w.y, a.x * w.y + a.y * w.x))


def rows_per_group(m: int, ffts: int) -> int:
    rows = 1
    while rows * 2 * m <= TILE and rows < ffts:
        rows *= 2
    return rows


def swizzle(i: Val) -> Val:
    """The workgroup-memory slot of point i: bits 0-3 XORed with bits 4-7 and 8-11. A bijection on
    every power-of-two tile (only the low 4 bits change); it spreads the bit-reversed stores and
    the first stages' strided accesses over the banks (16-way conflicts become 1-2-way)."""
    return i ^ (((i >> 4) ^ (i >> 8)) & 15)


def tile_program(m: int, ffts: int, groups: int, stride: int, src: Side, dst: Side, *,
                 inverse: bool, post: int = 0, scale: float = 1.0) -> Program:
    """The pass over ``ffts`` FFTs of length ``m`` (see the module doc) with ``tw`` the stage table
    of length m (``_twiddle.table_program``); ``post`` > 0 multiplies output k of FFT f by
    ``w_post^((f % groups) k)`` (computed in place: ``_twiddle.unit_root``), ``scale`` multiplies last."""
    log = m.bit_length() - 1
    assert m == 1 << log and m >= 2, m
    rows = rows_per_group(m, ffts)
    pts = rows * m
    wg = min(THREADS, max(1, pts // 4))
    name = (f"fft_tile_m{m}_f{ffts}_g{groups}_s{stride}_{src.gs}x{src.js}_{dst.gs}x{dst.js}"
            f"_{'inv' if inverse else 'fwd'}_p{post}_r{rows}")
    b = ProgramBuilder(name, wg)
    x = b.buffer("x", C2)
    tw = b.buffer("tw", C2, count=m)
    y = b.buffer("y", C2, access="write")
    sh = b.workgroup_array("sh", C2, pts)
    t = b.let(b.local_index(), "t")
    f0 = b.let(b.workgroup_id(0) * rows, "f0")

    def slot(p: Val, side: Side) -> tuple[Val, Val, Val, Val]:
        # interleaved columns: the column (row-in-tile) is the fast index; else the element
        if side.gs == 1 and rows > 1:
            c, j = b.let(p % rows), b.let(p / rows)
        else:
            c, j = b.let(p % pts / m), b.let(p % m)
        f = b.let(f0 + c)
        addr = b.let((f / groups) * stride + (f % groups) * side.gs + j * side.js)
        return c, j, f, addr

    def twiddle(index: Val) -> Val:
        w = b.let(tw[index])
        return b.let(b.vec(C2, w.x, -w.y)) if inverse else w

    with b.for_range(0, -(-pts // wg)) as it:
        p = b.let(it * wg + t)
        c, j, f, addr = slot(p, src)
        with b.if_(p < pts):
            rev = b.let(j.reverse_bits() >> (32 - log))
            sh[swizzle(c * m + rev)] = b.select(f < ffts, x[b.select(f < ffts, addr, 0)], b.vec(C2, 0.0))
    b.barrier()
    s = 0
    if log % 2:  # one radix-2 stage first (twiddle 1)
        with b.for_range(0, -(-(pts // 2) // wg)) as it:
            q = b.let(it * wg + t)
            with b.if_(q < pts // 2):
                i0, i1 = b.let(swizzle(q * 2)), b.let(swizzle(q * 2 + 1))
                a0, a1 = b.let(sh[i0]), b.let(sh[i1])
                sh[i0], sh[i1] = a0 + a1, a0 - a1
        b.barrier()
        s = 1
    while s < log:
        h = 1 << s
        with b.for_range(0, -(-(pts // 4) // wg)) as it:
            q = b.let(it * wg + t)
            with b.if_(q < pts // 4):
                jj = b.let(q % h)
                base = b.let((q / h) * (4 * h) + jj)
                at = [b.let(swizzle(base + k * h)) for k in range(4)]
                e = [b.let(sh[a]) for a in at]
                w1 = twiddle(jj + h)  # w_2h^jj
                w2 = twiddle(jj + 2 * h)  # w_4h^jj
                # w_4h^(jj+h) = w2 * (-i) forward, w2 * (+i) inverse
                w3 = b.let(b.vec(C2, -w2.y, w2.x) if inverse else b.vec(C2, w2.y, -w2.x))
                t1, t3 = cmul(b, e[1], w1), cmul(b, e[3], w1)
                u0, u1, u2, u3 = b.let(e[0] + t1), b.let(e[0] - t1), b.let(e[2] + t3), b.let(e[2] - t3)
                v2, v3 = cmul(b, u2, w2), cmul(b, u3, w3)
                sh[at[0]], sh[at[2]] = u0 + v2, u0 - v2
                sh[at[1]], sh[at[3]] = u1 + v3, u1 - v3
        b.barrier()
        s += 2
    with b.for_range(0, -(-pts // wg)) as it:
        p = b.let(it * wg + t)
        c, k, f, addr = slot(p, dst)
        with b.if_((p < pts) & (f < ffts)):
            v = b.let(sh[swizzle(c * m + k)])
            if post:  # g k < post <= 2^22: exact in u32
                cs, sn = unit_root(b, (f % groups) * k, post)
                v = cmul(b, v, b.vec(C2, cs, sn if inverse else -sn))
            y[addr] = v * scale if scale != 1.0 else v
    return b.build()


def tile_grid(m: int, ffts: int) -> tuple[int, int, int]:
    return (-(-ffts // rows_per_group(m, ffts)), 1, 1)
