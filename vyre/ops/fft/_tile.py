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
addresses. Twiddles come from the accurate table ``tw`` (``_twiddle``), conjugated for inverses.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program

TILE = 2048  # complex points per workgroup: 16 KiB of workgroup memory, the portable WebGPU limit
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


def tile_program(m: int, ffts: int, groups: int, stride: int, src: Side, dst: Side, *, table: int,
                 inverse: bool, post: int = 0, scale: float = 1.0) -> Program:
    """The pass over ``ffts`` FFTs of length ``m`` (see the module doc); ``post`` > 0 multiplies the
    output by ``w_post^(g k)`` (``post`` divides ``table``), ``scale`` multiplies it last."""
    log = m.bit_length() - 1
    assert m == 1 << log and m >= 2 and table % m == 0, (m, table)
    rows = rows_per_group(m, ffts)
    pts = rows * m
    wg = min(256, max(1, pts // 4))
    name = (f"fft_tile_m{m}_f{ffts}_g{groups}_s{stride}_{src.gs}x{src.js}_{dst.gs}x{dst.js}"
            f"_t{table}_{'inv' if inverse else 'fwd'}_p{post}_r{rows}")
    b = ProgramBuilder(name, wg)
    x = b.buffer("x", C2)
    tw = b.buffer("tw", C2, count=table)
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
            sh[c * m + rev] = b.select(f < ffts, x[b.select(f < ffts, addr, 0)], b.vec(C2, 0.0))
    b.barrier()
    s = 0
    if log % 2:  # one radix-2 stage first (twiddle 1)
        with b.for_range(0, -(-(pts // 2) // wg)) as it:
            q = b.let(it * wg + t)
            with b.if_(q < pts // 2):
                a0, a1 = b.let(sh[q * 2]), b.let(sh[q * 2 + 1])
                sh[q * 2], sh[q * 2 + 1] = a0 + a1, a0 - a1
        b.barrier()
        s = 1
    while s < log:
        h = 1 << s
        with b.for_range(0, -(-(pts // 4) // wg)) as it:
            q = b.let(it * wg + t)
            with b.if_(q < pts // 4):
                jj = b.let(q % h)
                base = b.let((q / h) * (4 * h) + jj)
                e = [b.let(sh[base + k * h]) for k in range(4)]
                w1 = twiddle(jj * (table // (2 * h)))
                w2 = twiddle(jj * (table // (4 * h)))
                # w_4h^(jj+h) = w2 * (-i) forward, w2 * (+i) inverse
                w3 = b.let(b.vec(C2, -w2.y, w2.x) if inverse else b.vec(C2, w2.y, -w2.x))
                t1, t3 = cmul(b, e[1], w1), cmul(b, e[3], w1)
                u0, u1, u2, u3 = b.let(e[0] + t1), b.let(e[0] - t1), b.let(e[2] + t3), b.let(e[2] - t3)
                v2, v3 = cmul(b, u2, w2), cmul(b, u3, w3)
                sh[base], sh[base + 2 * h] = u0 + v2, u0 - v2
                sh[base + h], sh[base + 3 * h] = u1 + v3, u1 - v3
        b.barrier()
        s += 2
    with b.for_range(0, -(-pts // wg)) as it:
        p = b.let(it * wg + t)
        c, k, f, addr = slot(p, dst)
        with b.if_((p < pts) & (f < ffts)):
            v = b.let(sh[c * m + k])
            if post:
                v = cmul(b, v, twiddle((f % groups) * k * (table // post)))
            y[addr] = v * scale if scale != 1.0 else v
    return b.build()


def tile_grid(m: int, ffts: int) -> tuple[int, int, int]:
    return (-(-ffts // rows_per_group(m, ffts)), 1, 1)
