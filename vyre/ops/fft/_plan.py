"""The steps of a batched 1-D FFT of any length n over ``vec2<f32>`` pipeline buffers.

* n = 1: a (scaled) copy.
* n a power of two up to 2048: the stage twiddle table and one workgroup-memory pass (``_tile``).
* n a power of two up to 2^22: the four-step decomposition n = n1 * n2 (both <= 2048): n2
  interleaved column FFTs of length n1 with the twiddle ``w_n^(j2 k1)`` (computed in place)
  applied on the way out,
  then n1 row FFTs of length n2 written transposed. Two passes over the data, each coalesced in
  runs of ``rows`` columns.
* any other n up to 2^21: Bluestein's chirp-z transform, ``X = c * ((x c) conv conj(c))`` with
  ``c[k] = exp(-+ pi i k^2 / n)``, the convolution done by power-of-two FFTs of length
  M >= 2n - 1.

Inverse transforms conjugate every twiddle; ``scale`` multiplies the result in the last pass.
Buffers are added to the pipeline's dict under ``prefix``; twiddle tables (``tw<L>``) and chirps
are shared by every use in a pipeline and computed once per run.
"""

from __future__ import annotations

from ...backends.schedule import BufferSpec, Step
from ...ir.types import DataType
from . import _pointwise as pw
from ._tile import TILE, Side, tile_grid, tile_program
from ._twiddle import WG, chirp_program, table_program

C2 = DataType.VEC2_F32
MAX_POW2 = TILE * TILE  # 2^22 points: two passes of 2048-point FFTs


def is_pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def padded_length(n: int) -> int:
    """The power-of-two length of Bluestein's convolution (>= 2n - 1)."""
    return 1 << max(1, (2 * n - 2).bit_length())


def max_length() -> int:
    return MAX_POW2 // 2  # Bluestein needs 2n - 1 <= MAX_POW2


def _table(length: int, buffers: dict, steps: list) -> str:
    name = f"tw{length}"
    if name not in buffers:
        buffers[name] = BufferSpec(C2, length)
        steps.append(Step(table_program(length), (name,), (-(-length // WG), 1, 1)))
    return name


def _pow2_steps(n: int, batch: int, src: str, dst: str, inverse: bool, scale: float,
                buffers: dict, steps: list, prefix: str) -> None:
    if n <= TILE:
        tw = _table(n, buffers, steps)
        rows = Side(gs=n, js=1)
        prog = tile_program(n, batch, 1, n, rows, rows, inverse=inverse, scale=scale)
        steps.append(Step(prog, (src, tw, dst), tile_grid(n, batch)))
        return
    n1 = 1 << ((n.bit_length() - 1) // 2)
    n2 = n // n1
    mid = f"{prefix}_mid"
    buffers[mid] = BufferSpec(C2, n * batch)
    cols = Side(gs=1, js=n2)  # x[j1 * n2 + j2]: column j2, element j1; Y keeps that layout
    first = tile_program(n1, batch * n2, n2, n, cols, cols, inverse=inverse, post=n)
    second = tile_program(n2, batch * n1, n1, n, Side(gs=n2, js=1), Side(gs=1, js=n1), inverse=inverse, scale=scale)
    steps.append(Step(first, (src, _table(n1, buffers, steps), mid), tile_grid(n1, batch * n2)))
    steps.append(Step(second, (mid, _table(n2, buffers, steps), dst), tile_grid(n2, batch * n1)))


def fft_steps(n: int, batch: int, src: str, dst: str, *, inverse: bool, scale: float,
              buffers: dict, steps: list, prefix: str = "f") -> None:
    """Append the steps computing ``dst = scale * FFT(src)`` (``ifft`` without its 1/n when
    ``inverse``) over ``batch`` rows of n ``vec2<f32>`` values; ``dst`` is created if missing."""
    if not 1 <= n <= max_length() and not (is_pow2(n) and n <= MAX_POW2):
        raise ValueError(f"fft: length {n} is outside 1..{max_length()} (or a power of two up to {MAX_POW2})")
    buffers.setdefault(dst, BufferSpec(C2, n * batch))
    if n == 1:
        steps.append(Step(pw.scale_copy(batch, scale), (src, dst), pw.grid(batch)))
        return
    if is_pow2(n):
        _pow2_steps(n, batch, src, dst, inverse, scale, buffers, steps, prefix)
        return
    m = padded_length(n)
    chirp = f"chirp{n}_{'inv' if inverse else 'fwd'}"
    if chirp not in buffers:
        buffers[chirp] = BufferSpec(C2, n)
        steps.append(Step(chirp_program(n, inverse), (chirp,), pw.grid(n)))
    kern, kern_hat = f"{chirp}_k", f"{chirp}_khat"
    if kern not in buffers:
        buffers[kern] = BufferSpec(C2, m)
        steps.append(Step(pw.chirp_kernel(n, m), (chirp, kern), pw.grid(m)))
        _pow2_steps(m, 1, kern, kern_hat, False, 1.0, buffers, steps, f"{kern}_fft")
        buffers[kern_hat] = BufferSpec(C2, m)
    a, a_hat, conv = f"{prefix}_a", f"{prefix}_ahat", f"{prefix}_conv"
    for name in (a, a_hat, conv):
        buffers[name] = BufferSpec(C2, m * batch)
    steps.append(Step(pw.chirp_pad(n, m, batch), (src, chirp, a), pw.grid(m * batch)))
    _pow2_steps(m, batch, a, a_hat, False, 1.0, buffers, steps, f"{prefix}_afft")
    steps.append(Step(pw.multiply_rows(m * batch, m), (a_hat, kern_hat, a), pw.grid(m * batch)))
    _pow2_steps(m, batch, a, conv, True, 1.0 / m, buffers, steps, f"{prefix}_conv")
    steps.append(Step(pw.chirp_crop(n, m, batch, scale), (conv, chirp, dst), pw.grid(n * batch)))
