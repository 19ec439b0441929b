"""float64 / complex128 FFTs (vyre/array/_fft64.py: radix-2 Stockham stages and Bluestein in f64 array
operations) against numpy's float64 FFT: max abs error within 1e-15 * (log2 n + 4) * sqrt(n) * max|x|, for
powers of two, odd, prime and composite lengths, n/axis/norm, the real transforms and their round trips,
the n-dimensional ones; 64-bit input is never narrowed to the f32 pipelines (the result dtypes say so)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vyre import array_api as xp

RNG = np.random.default_rng(8)
LENGTHS = [1, 2, 3, 8, 12, 31, 64, 100, 127, 256]


@pytest.fixture
def f64(xb):
    if "float64" not in xp.__array_namespace_info__().dtypes():
        pytest.skip("the device has no float64 (tests/array/test_float64.py says so)")
    return xb


def _tol(n: int, x: np.ndarray) -> float:
    return 1e-15 * (math.log2(max(n, 2)) + 4) * math.sqrt(n) * max(1.0, float(np.abs(x).max()))


def _check(got: xp.Array, want: np.ndarray, n: int, x: np.ndarray, dtype: str) -> None:
    g = np.asarray(got)
    assert g.dtype == np.dtype(dtype) and g.shape == want.shape, (g.dtype, g.shape, want.shape)
    assert np.abs(g - want).max(initial=0.0) <= _tol(n, x), np.abs(g - want).max()


@pytest.mark.parametrize("n", LENGTHS)
def test_complex_transforms(f64, n):
    x = RNG.standard_normal((2, n)) + 1j * RNG.standard_normal((2, n))
    a = xp.asarray(x)
    _check(xp.fft.fft(a), np.fft.fft(x), n, x, "complex128")
    _check(xp.fft.ifft(a), np.fft.ifft(x), n, x, "complex128")
    for norm in ("ortho", "forward"):
        _check(xp.fft.fft(a, norm=norm), np.fft.fft(x, norm=norm), n, x, "complex128")
        _check(xp.fft.ifft(a, norm=norm), np.fft.ifft(x, norm=norm), n, x, "complex128")


@pytest.mark.parametrize("n", LENGTHS[1:])
def test_real_transforms(f64, n):
    r = RNG.standard_normal((3, n))
    a = xp.asarray(r)
    _check(xp.fft.rfft(a), np.fft.rfft(r), n, r, "complex128")
    spec = np.fft.rfft(r)
    _check(xp.fft.irfft(xp.asarray(spec), n=n), r, n, r, "float64")
    _check(xp.fft.hfft(xp.asarray(spec), n=n), np.fft.hfft(spec, n=n), n, spec, "float64")
    _check(xp.fft.ihfft(a), np.fft.ihfft(r), n, r, "complex128")


def test_lengths_axes_and_n_dimensions(f64):
    x = RNG.standard_normal((4, 6, 10))
    a = xp.asarray(x)
    _check(xp.fft.fft(a, n=7, axis=1), np.fft.fft(x, n=7, axis=1), 7, x, "complex128")
    _check(xp.fft.rfft(a, n=16, axis=0), np.fft.rfft(x, n=16, axis=0), 16, x, "complex128")
    _check(xp.fft.fftn(a), np.fft.fftn(x), 240, x, "complex128")
    _check(xp.fft.ifftn(a, axes=(0, 2)), np.fft.ifftn(x, axes=(0, 2)), 40, x, "complex128")
    _check(xp.fft.rfftn(a), np.fft.rfftn(x), 240, x, "complex128")
    _check(xp.fft.irfftn(xp.asarray(np.fft.rfftn(x)), s=x.shape), x, 240, x, "float64")
    i = RNG.integers(-5, 5, 16).astype(np.int64)  # 64-bit integers: float64 too
    _check(xp.fft.fft(xp.asarray(i)), np.fft.fft(i), 16, i, "complex128")
    _check(xp.fft.fft(xp.asarray(np.zeros((0, 4)))), np.zeros((0, 4), complex), 4, np.zeros(1), "complex128")
