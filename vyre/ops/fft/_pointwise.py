"""The element-wise programs around the FFT passes: copies, chirp products, padding, real <-> complex.

Each runs one invocation per output element, with every size baked in (the grid comes from the
output's count). Complex values are ``vec2<f32>``.
"""

from __future__ import annotations

from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program

WG = 256
C2 = "vec2<f32>"


def grid(count: int) -> tuple[int, int, int]:
    return (max(1, -(-count // WG)), 1, 1)


def _conj(b: ProgramBuilder, v: Val) -> Val:
    return b.vec(C2, v.x, -v.y)


def _cmul(b: ProgramBuilder, a: Val, w: Val) -> Val:
    return b.vec(C2, a.x * w.x - a.y * w.y, a.x * w.y + a.y * w.x)


def scale_copy(count: int, scale: float) -> Program:
    """``y = scale * x`` (the FFT of length 1, and copies)."""
    b = ProgramBuilder(f"fft_copy_{count}_{scale!r}", WG)
    x = b.buffer("x", C2, count=count)
    y = b.buffer("y", C2, access="write", count=count)
    i = b.global_index()
    with b.if_(i < count):
        y[i] = x[i] * scale if scale != 1.0 else x[i]
    return b.build()


def chirp_pad(n: int, padded: int, rows: int) -> Program:
    """Bluestein's input: ``a[r, j] = x[r, j] * chirp[j]`` for j < n, 0 up to ``padded``."""
    b = ProgramBuilder(f"fft_chirp_pad_{n}_{padded}_{rows}", WG)
    x = b.buffer("x", C2, count=n * rows)
    chirp = b.buffer("chirp", C2, count=n)
    a = b.buffer("a", C2, access="write", count=padded * rows)
    i = b.global_index()
    j = b.let(i % padded)
    with b.if_(i < padded * rows):
        # every element is written (zeros too): resident sequences reuse buffers without clearing
        with b.if_(j < n):
            a[i] = _cmul(b, x[(i / padded) * n + j], chirp[j])
        with b.else_():
            a[i] = b.vec(C2, 0.0)
    return b.build()


def chirp_kernel(n: int, padded: int) -> Program:
    """Bluestein's filter: ``conj(chirp[j])`` at j and ``padded - j`` for j < n, else 0."""
    b = ProgramBuilder(f"fft_chirp_kernel_{n}_{padded}", WG)
    chirp = b.buffer("chirp", C2, count=n)
    k = b.buffer("k", C2, access="write", count=padded)
    i = b.global_index()
    with b.if_(i < padded):
        head, tail = b.let(i < n), b.let(i > padded - n)
        src = b.let(b.select(head, i, b.select(tail, padded - i, 0)))
        k[i] = b.select(head | tail, _conj(b, chirp[src]), b.vec(C2, 0.0))
    return b.build()


def multiply_rows(count: int, period: int) -> Program:
    """``y[i] = x[i] * k[i % period]`` (the spectra product of the convolution)."""
    b = ProgramBuilder(f"fft_mul_{count}_{period}", WG)
    x = b.buffer("x", C2, count=count)
    k = b.buffer("k", C2, count=period)
    y = b.buffer("y", C2, access="write", count=count)
    i = b.global_index()
    with b.if_(i < count):
        y[i] = _cmul(b, x[i], k[i % period])
    return b.build()


def chirp_crop(n: int, padded: int, rows: int, scale: float) -> Program:
    """Bluestein's output: ``y[r, k] = scale * conv[r, k] * chirp[k]`` for k < n."""
    b = ProgramBuilder(f"fft_chirp_crop_{n}_{padded}_{rows}_{scale!r}", WG)
    conv = b.buffer("conv", C2, count=padded * rows)
    chirp = b.buffer("chirp", C2, count=n)
    y = b.buffer("y", C2, access="write", count=n * rows)
    i = b.global_index()
    with b.if_(i < n * rows):
        k = b.let(i % n)
        v = b.let(_cmul(b, conv[(i / n) * padded + k], chirp[k]))
        y[i] = v * scale if scale != 1.0 else v
    return b.build()


def real_to_complex(count: int) -> Program:
    b = ProgramBuilder(f"fft_real_to_complex_{count}", WG)
    x = b.buffer("x", "f32", count=count)
    y = b.buffer("y", C2, access="write", count=count)
    i = b.global_index()
    with b.if_(i < count):
        y[i] = b.vec(C2, x[i], 0.0)
    return b.build()


def complex_to_real(count: int) -> Program:
    b = ProgramBuilder(f"fft_complex_to_real_{count}", WG)
    x = b.buffer("x", C2, count=count)
    y = b.buffer("y", "f32", access="write", count=count)
    i = b.global_index()
    with b.if_(i < count):
        y[i] = x[i].x
    return b.build()


def crop_rows(n: int, keep: int, rows: int) -> Program:
    """``y[r, k] = x[r, k]`` for k < keep (rfft's half spectrum)."""
    b = ProgramBuilder(f"fft_crop_{n}_{keep}_{rows}", WG)
    x = b.buffer("x", C2, count=n * rows)
    y = b.buffer("y", C2, access="write", count=keep * rows)
    i = b.global_index()
    with b.if_(i < keep * rows):
        y[i] = x[(i / keep) * n + i % keep]
    return b.build()


def hermitian_extend(n: int, rows: int) -> Program:
    """irfft's full spectrum from ``n // 2 + 1`` bins: ``X[k] = conj(X[n - k])`` past the half."""
    half = n // 2 + 1
    b = ProgramBuilder(f"fft_hermitian_{n}_{rows}", WG)
    x = b.buffer("x", C2, count=half * rows)
    y = b.buffer("y", C2, access="write", count=n * rows)
    i = b.global_index()
    with b.if_(i < n * rows):
        r, k = b.let(i / n), b.let(i % n)
        with b.if_(k < half):
            y[i] = x[r * half + k]
        with b.else_():
            y[i] = _conj(b, x[r * half + (n - k)])
    return b.build()


def transpose(rows: int, cols: int, batch: int) -> Program:
    """``y[b, c, r] = x[b, r, c]`` (fft2's second axis), 16x16 tiles through workgroup memory."""
    t = 16
    b = ProgramBuilder(f"fft_transpose_{rows}x{cols}_b{batch}", (t, t))
    x = b.buffer("x", C2, count=rows * cols * batch)
    y = b.buffer("y", C2, access="write", count=rows * cols * batch)
    tile = b.workgroup_array("tile", C2, t * (t + 1))
    tx, ty = b.local_id(0), b.local_id(1)
    tiles_c = -(-cols // t)
    wid = b.let(b.workgroup_id(0))
    bt, rest = b.let(wid / (tiles_c * -(-rows // t))), b.let(wid % (tiles_c * -(-rows // t)))
    r0, c0 = b.let((rest / tiles_c) * t), b.let((rest % tiles_c) * t)
    base = b.let(bt * (rows * cols))
    r, c = b.let(r0 + ty), b.let(c0 + tx)
    with b.if_((r < rows) & (c < cols)):
        tile[ty * (t + 1) + tx] = x[base + r * cols + c]
    b.barrier()
    oc, orow = b.let(c0 + ty), b.let(r0 + tx)  # output row = source column
    with b.if_((oc < cols) & (orow < rows)):
        y[base + oc * rows + orow] = tile[tx * (t + 1) + ty]
    return b.build()


def transpose_grid(rows: int, cols: int, batch: int) -> tuple[int, int, int]:
    return (batch * -(-rows // 16) * -(-cols // 16), 1, 1)
