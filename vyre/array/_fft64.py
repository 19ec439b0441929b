"""float64 / complex128 FFTs along the last axis, composed of array operations in f64 on the device (the op
library's pipelines are f32; computing a complex128 transform there would narrow it silently).

* Powers of two: the radix-2 Stockham recursion on a (..., R, C) view -- R interleaved subsequences whose
  length-C transforms are done; the next stage pairs subsequence j (the even half of x[j::R/2]) with
  j + R/2 (the odd half): ``[E + w O, E - w O]`` along the last axis, w = exp(-2 pi i k / 2C). log2(n)
  stages, each one fused kernel (materialised, so the next stage reads a buffer).
* Every other length: Bluestein's chirp-z, x_k w_k (w_k = exp(-i pi k^2 / n)) convolved with conj(w)
  through power-of-two transforms of length M >= 2n - 1; the chirp's own transform is a constant per
  length, computed on the host once (like the twiddles, in float64).
* The inverse: conj(F(conj(x))) / n; rfft: the first n // 2 + 1 bins of the complex transform; irfft:
  the real part of the inverse of the Hermitian extension (which drops bin 0's imaginary part, and bin
  n/2's for even n, as numpy's).

Accuracy against numpy's float64 FFT: about 1e-15 * log2(n) relative to the input's magnitude (Bluestein:
a few times more); tested in tests/array/test_array_fft64.py.
"""

from __future__ import annotations

import functools

import numpy as np

from ._array import Array
from ._complex import conj, real
from ._creation import asarray, zeros
from ._kernels import dtypes as KD
from ._manipulation import concat, flip
from ._views import reshape


@functools.lru_cache(maxsize=64)
def _twiddles(c: int) -> np.ndarray:
    w: np.ndarray = np.exp(-1j * np.pi * np.arange(c) / c)  # exp(-2 pi i k / 2c)
    return w


@functools.lru_cache(maxsize=32)
def _chirp(n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """w_k = exp(-i pi k^2 / n) (k^2 taken mod 2n: exact phases) and the length-m transform of the
    circular conj(w) the convolution uses."""
    k = np.arange(n, dtype=np.int64)
    w = np.exp(-1j * np.pi * ((k * k) % (2 * n)) / n)
    b = np.zeros(m, np.complex128)
    b[:n] = np.conj(w)
    b[m - n + 1:] = np.conj(w[1:])[::-1]
    return w, np.fft.fft(b)


def _pow2(x: Array) -> Array:
    lead, n = x.shape[:-1], x.shape[-1]
    y = reshape(x, (*lead, n, 1))
    r, c = n, 1
    while r > 1:
        h = r // 2
        e, o = y[..., :h, :], y[..., h:, :]
        t = o * asarray(_twiddles(c), dtype=KD.complex128, device=x.device)
        y = concat([e + t, e - t], axis=-1)
        y.evaluate()  # one kernel per stage: the next reads its buffer, not a tree that doubles
        r, c = h, 2 * c
    return reshape(y, (*lead, n))


def _bluestein(x: Array) -> Array:
    n = x.shape[-1]
    m = 1 << (2 * n - 2).bit_length()
    w_h, fb = _chirp(n, m)
    w = asarray(w_h, dtype=KD.complex128, device=x.device)
    a = concat([x * w, zeros((*x.shape[:-1], m - n), dtype=KD.complex128, device=x.device)], axis=-1)
    spec = _pow2(a) * asarray(fb, dtype=KD.complex128, device=x.device)
    conv = conj(_pow2(conj(spec))) * (1.0 / m)
    return conv[..., :n] * w


def c2c(x: Array, inverse: bool) -> Array:
    """The DFT (numpy's sign; the inverse with 1/n) of complex128 ``x`` along its last axis."""
    n = x.shape[-1]
    if n == 1:
        return x * 1.0
    f = _pow2 if n & (n - 1) == 0 else _bluestein
    return conj(f(conj(x))) * (1.0 / n) if inverse else f(x)


def last_axis(kind: str, x: Array, n: int) -> Array:
    """vyre/array/_kernels/fft.py's ``last_axis`` in float64: 'fft' / 'ifft' (complex128), 'rfft' (float64 of
    length n in, n // 2 + 1 bins out), 'irfft' (n // 2 + 1 bins in, n float64 out)."""
    if kind in ("fft", "ifft"):
        return c2c(x, kind == "ifft")
    if kind == "rfft":
        return c2c(x.astype(KD.complex128), False)[..., : n // 2 + 1]
    h = n // 2 + 1
    full = concat([x, conj(flip(x[..., 1:n - h + 1], axis=-1))], axis=-1) if n > h else x[..., :n]
    return real(c2c(full, True))


__all__ = ["c2c", "last_axis"]
