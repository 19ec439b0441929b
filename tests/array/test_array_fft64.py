"""float64 / complex128 FFTs (vyre/array/_fft64.py: radix-2 Stockham stages and Bluestein in f64 array
operations) against numpy's float64 FFT: max abs error within 1e-15 * (log2 n + 4) * sqrt(n) * max|x|
(measured: under 1e-16 * (log2 n + 2) * sqrt(n) * max|x| up to n = 2^17 and 100003), for powers of two,
odd, prime and composite lengths up to 4096 / 1009, n/axis/norm, the real transforms and their round
trips, the n-dimensional ones, fftfreq in float64; 64-bit input is never narrowed to the f32 pipelines
(the result dtypes say so), and on a device without shader-f64 it is the typed UnsupportedDTypeError."""

from __future__ import annotations

import math

import numpy as np
import pytest
from extras import require_adapter

from vyre import array_api as xp
from vyre.errors import UnsupportedDTypeError

RNG = np.random.default_rng(8)
LENGTHS = [1, 2, 3, 8, 12, 31, 64, 100, 127, 256]


@pytest.fixture
def f64(xb):
    require_adapter("float64" in xp.__array_namespace_info__().dtypes(), "shader-f64")  # fails under CI=true
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


def _err(got: xp.Array, want: np.ndarray, dtype: str) -> float:
    g = np.asarray(got)
    assert g.dtype == np.dtype(dtype) and g.shape == want.shape, (g.dtype, g.shape, want.shape)
    return float(np.abs(g - want).max())


@pytest.fixture
def f64gpu(gpu):
    require_adapter(gpu.capabilities().f64, "shader-f64")
    import vyre

    with vyre.use(gpu):
        yield gpu


@pytest.mark.parametrize("n", [4096, 1009])
def test_longer_lengths(f64gpu, n):
    x = RNG.standard_normal(n) + 1j * RNG.standard_normal(n)
    a = xp.asarray(x)
    assert _err(xp.fft.fft(a), np.fft.fft(x), "complex128") <= _tol(n, x)
    assert _err(xp.fft.ifft(a, norm="ortho"), np.fft.ifft(x, norm="ortho"), "complex128") <= _tol(n, x)
    r = x.real.copy()
    spec = xp.fft.rfft(xp.asarray(r))
    assert _err(spec, np.fft.rfft(r), "complex128") <= _tol(n, r)
    assert _err(xp.fft.irfft(spec, n=n), r, "float64") <= _tol(n, r)  # the round trip


def test_n_dimensional_norms(f64gpu):
    x = RNG.standard_normal((4, 6))
    zn = x + 1j * x[::-1]
    a, z, n = xp.asarray(x), xp.asarray(zn), x.size
    for norm in ("ortho", "forward"):  # "backward": above
        assert _err(xp.fft.fftn(z, norm=norm), np.fft.fftn(zn, norm=norm), "complex128") <= _tol(n, zn)
        assert _err(xp.fft.ifftn(z, s=(8, 5), axes=(0, 1), norm=norm),
                    np.fft.ifftn(zn, s=(8, 5), axes=(0, 1), norm=norm), "complex128") <= _tol(n, zn)
        spec = np.fft.rfftn(x, norm=norm)
        assert _err(xp.fft.rfftn(a, norm=norm), spec, "complex128") <= _tol(n, x)
        assert _err(xp.fft.irfftn(xp.asarray(spec), s=x.shape, axes=(0, 1), norm=norm), x,
                    "float64") <= _tol(n, x)


def test_fftfreq_float64(f64gpu):
    assert _err(xp.fft.fftfreq(9, d=0.1, dtype=xp.float64), np.fft.fftfreq(9, 0.1), "float64") == 0.0
    assert _err(xp.fft.rfftfreq(9, d=0.1, dtype=xp.float64), np.fft.rfftfreq(9, 0.1), "float64") == 0.0


def test_without_shader_f64_is_a_typed_error(no_f64):
    dev = no_f64
    i = xp.asarray(np.arange(8, dtype=np.int64), device=dev)  # 64-bit input: transformed in f64 or not at all
    for f in (xp.fft.fft, xp.fft.ifft, xp.fft.rfft, xp.fft.irfft, xp.fft.hfft, xp.fft.ihfft, xp.fft.fftn,
              xp.fft.rfftn):
        with pytest.raises(UnsupportedDTypeError, match="shader-f64"):
            f(i)
    with pytest.raises(UnsupportedDTypeError, match="shader-f64"):
        xp.fft.fftfreq(8, dtype=xp.float64, device=dev)
    assert xp.fft.fft(xp.asarray(np.arange(8, dtype=np.int32), device=dev)).dtype == xp.complex64
