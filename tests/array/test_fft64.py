"""float64 FFTs (vyre/array/_fft64.py) past the small lengths of tests/array/test_array_fft64.py, and where
f64 is missing. On the GPU: a power of two of 4096 points and the prime 1009 (Bluestein over 4096 points) within
the stated bound, max abs error vs numpy's float64 FFT <= 1e-15 * (log2 n + 4) * sqrt(n) * max|x| (measured
when written: under 1e-16 * (log2 n + 2) * sqrt(n) * max|x|, up to n = 2^17 and 100003); "ortho"/"forward" through the
n-dimensional transforms; fftfreq in float64. A device without shader-f64: every transform of 64-bit input
is the typed UnsupportedDTypeError naming the feature (converting int64 to complex128 refuses), never a
silent f32 transform."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from tests.extras import require_adapter
from vyre import array_api as xp
from vyre.errors import UnsupportedDTypeError

RNG = np.random.default_rng(64)


def _tol(n: int, x: np.ndarray) -> float:
    return 1e-15 * (math.log2(max(n, 2)) + 4) * math.sqrt(n) * max(1.0, float(np.abs(x).max()))


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
    for norm in ("ortho", "forward"):  # "backward": tests/array/test_array_fft64.py
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


class _NoF64:
    """The reference backend without shader-f64 (a device lacking it; int64 kept)."""

    def __init__(self, inner):
        self._inner = inner

    def capabilities(self):
        return dataclasses.replace(self._inner.capabilities(), f64=False)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def test_without_shader_f64_is_a_typed_error(ref_backend, monkeypatch):
    from vyre.array import _device

    dev = _NoF64(ref_backend)
    monkeypatch.setattr(_device, "check_backend", lambda d, what="device": d)
    i = xp.asarray(np.arange(8, dtype=np.int64), device=dev)  # 64-bit input: transformed in f64 or not at all
    for f in (xp.fft.fft, xp.fft.ifft, xp.fft.rfft, xp.fft.irfft, xp.fft.hfft, xp.fft.ihfft, xp.fft.fftn,
              xp.fft.rfftn):
        with pytest.raises(UnsupportedDTypeError, match="shader-f64"):
            f(i)
    with pytest.raises(UnsupportedDTypeError, match="shader-f64"):
        xp.fft.fftfreq(8, dtype=xp.float64, device=dev)
    assert xp.fft.fft(xp.asarray(np.arange(8, dtype=np.int32), device=dev)).dtype == xp.complex64
