"""vyre.array.fft on both backends against numpy.fft (float64 reference, inputs complex64 / float32).

Tolerance: an f32 FFT's error grows like ``u (log2 P + 2) sqrt(n)`` times the input's magnitude (u = 2^-24,
P the power-of-two length the plan runs: n, or Bluestein's padded length); the tests allow 16 times that
(:func:`_bound`), and the inverse and the normalised forms the same bound scaled by their factor.
fftfreq/rfftfreq/fftshift/ifftshift: exact.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vyre
import vyre.array as xp
from vyre.errors import ArgumentTypeError, DispatchError, InvalidArgumentError

rng = np.random.default_rng(2902)
U = 2.0 ** -24


def _c(shape):
    return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(np.complex64)


def _bound(n, scale=1.0):
    p = n if n & (n - 1) == 0 else 1 << max(1, (2 * n - 2).bit_length())
    return 16 * U * (math.log2(p) + 2) * math.sqrt(n) * scale + 1e-7


def _check(got, want, n, scale=1.0, dtype=np.complex64):
    assert isinstance(got, xp.Array)
    g = np.asarray(got)
    assert g.dtype == dtype and g.shape == want.shape, (g.dtype, g.shape, want.shape)
    err = np.abs(g.astype(np.complex128) - want).max() if want.size else 0.0
    assert err <= _bound(n, scale), (err, _bound(n, scale))


@pytest.mark.parametrize("n", [1, 2, 5, 8, 12, 16, 17, 64])
def test_fft_ifft_lengths(xb, n):
    x = _c((3, n))
    a = xp.asarray(x)
    _check(xp.fft.fft(a), np.fft.fft(x.astype(complex)), n, 1.5)
    _check(xp.fft.ifft(a), np.fft.ifft(x.astype(complex)), n, 1.5 / n)


def test_fft_axis_n_norm(xb):
    x = _c((4, 6, 5))
    a, w = xp.asarray(x), x.astype(complex)
    for kw in ({"axis": 0}, {"axis": 1, "n": 4}, {"axis": -1, "n": 8}, {"axis": 0, "n": 7, "norm": "ortho"},
               {"norm": "forward"}):
        m = kw.get("n", x.shape[kw.get("axis", -1)])
        _check(xp.fft.fft(a, **kw), np.fft.fft(w, **kw), m, 1.5)
        _check(xp.fft.ifft(a, **kw), np.fft.ifft(w, **kw), m, 1.5 * m if kw.get("norm") == "forward" else 1.5)
    r = rng.standard_normal(8).astype(np.float32)  # real input is converted to complex64
    _check(xp.fft.fft(xp.asarray(r)), np.fft.fft(r.astype(float)), 8, 3)
    _check(xp.fft.fft(xp.asarray(np.arange(8, dtype=np.int32))), np.fft.fft(np.arange(8.0)), 8, 8)
    lazy = a * 2 + 1j  # a pending input: fused into the transform's submission
    _check(xp.fft.fft(lazy, axis=1), np.fft.fft(w * 2 + 1j, axis=1), 6, 4)


@pytest.mark.parametrize("n", [1, 2, 7, 8, 12, 17])
def test_rfft_irfft(xb, n):
    x = rng.standard_normal((3, n)).astype(np.float32)
    a = xp.asarray(x)
    X = xp.fft.rfft(a)
    _check(X, np.fft.rfft(x.astype(float)), n, 3)
    if n > 1:
        _check(xp.fft.irfft(X, n=n), x.astype(float), n, 3, np.float32)  # the round trip
    bins = np.fft.rfft(x.astype(float))
    for m in {n, 2 * n, max(1, n - 1)}:  # n: crop or zero-pad the bins to m // 2 + 1 as numpy
        _check(xp.fft.irfft(xp.asarray(bins.astype(np.complex64)), n=m), np.fft.irfft(bins, n=m), m, 3 * n / m + 3,
               np.float32)


def test_rfft_options(xb):
    x = rng.standard_normal((5, 6)).astype(np.float32)
    a, w = xp.asarray(x), x.astype(float)
    for kw in ({"axis": 0}, {"n": 4}, {"n": 9, "norm": "ortho"}, {"axis": 0, "norm": "forward"}):
        m = kw.get("n", x.shape[kw.get("axis", -1)])
        _check(xp.fft.rfft(a, **kw), np.fft.rfft(w, **kw), m, 3)
        bins = np.fft.rfft(w, **kw)
        _check(xp.fft.irfft(xp.asarray(bins.astype(np.complex64)), **kw), np.fft.irfft(bins, **kw), m, 3 * m,
               np.float32)


def test_hfft_ihfft(xb):
    x = rng.standard_normal((2, 9)).astype(np.float32)
    h = np.fft.ihfft(x.astype(float))
    _check(xp.fft.ihfft(xp.asarray(x)), h, 9, 3)
    _check(xp.fft.hfft(xp.asarray(h.astype(np.complex64)), n=9), np.fft.hfft(h, n=9), 9, 3, np.float32)
    z = _c((3, 5))
    for norm in ("backward", "ortho", "forward"):
        _check(xp.fft.hfft(xp.asarray(z), norm=norm), np.fft.hfft(z.astype(complex), norm=norm), 8, 16, np.float32)
        _check(xp.fft.ihfft(xp.asarray(x), norm=norm), np.fft.ihfft(x.astype(float), norm=norm), 9, 3)


def test_nd(xb):
    x = _c((4, 6, 5))
    a, w = xp.asarray(x), x.astype(complex)
    _check(xp.fft.fftn(a), np.fft.fftn(w), 120, 2)
    _check(xp.fft.ifftn(a, axes=(0, 2)), np.fft.ifftn(w, axes=(0, 2)), 20, 2)
    _check(xp.fft.fftn(a, s=(8, 3)), np.fft.fftn(w, s=(8, 3)), 24, 2)
    _check(xp.fft.fftn(a, s=(3, -1), axes=(0, 1)), np.fft.fftn(w, s=(3, 6), axes=(0, 1)), 18, 2)
    _check(xp.fft.ifftn(a, norm="ortho"), np.fft.ifftn(w, norm="ortho"), 120, 2)
    r = rng.standard_normal((4, 6, 5)).astype(np.float32)
    R = np.fft.rfftn(r.astype(float))
    _check(xp.fft.rfftn(xp.asarray(r)), R, 120, 4)
    _check(xp.fft.irfftn(xp.asarray(R.astype(np.complex64)), s=r.shape), r.astype(float), 120, 4, np.float32)
    R2 = np.fft.rfftn(r.astype(float), axes=(0, 1))
    _check(xp.fft.rfftn(xp.asarray(r), axes=(0, 1)), R2, 24, 4)
    _check(xp.fft.irfftn(xp.asarray(R2.astype(np.complex64)), axes=(0, 1)), np.fft.irfftn(R2, axes=(0, 1)), 24, 4,
           np.float32)


def test_freq_and_shift(xb):
    for n in (1, 4, 5):
        for d in (1.0, 0.25):
            np.testing.assert_array_equal(np.asarray(xp.fft.fftfreq(n, d=d)), np.fft.fftfreq(n, d).astype(np.float32))
            np.testing.assert_array_equal(np.asarray(xp.fft.rfftfreq(n, d=d)),
                                          np.fft.rfftfreq(n, d).astype(np.float32))
    assert xp.fft.fftfreq(4).dtype == xp.float32
    m = rng.standard_normal((4, 5)).astype(np.float32)
    a = xp.asarray(m)
    for axes in (None, 0, (1,), (0, 1)):
        np.testing.assert_array_equal(np.asarray(xp.fft.fftshift(a, axes=axes)), np.fft.fftshift(m, axes=axes))
        np.testing.assert_array_equal(np.asarray(xp.fft.ifftshift(a, axes=axes)), np.fft.ifftshift(m, axes=axes))
    z = _c(7)
    np.testing.assert_array_equal(np.asarray(xp.fft.fftshift(xp.asarray(z))), np.fft.fftshift(z))


def test_empty_batches(xb):
    z = np.zeros((0, 4), np.complex64)
    assert np.asarray(xp.fft.fft(xp.asarray(z))).shape == (0, 4)
    assert np.asarray(xp.fft.rfft(xp.asarray(np.zeros((0, 6), np.float32)))).shape == (0, 4)
    assert np.asarray(xp.fft.irfft(xp.asarray(z))).shape == (0, 6)


def test_errors(xb):
    a = xp.asarray(_c(8))
    with pytest.raises(InvalidArgumentError, match="norm"):
        xp.fft.fft(a, norm="none")
    with pytest.raises(InvalidArgumentError, match="at least 1"):
        xp.fft.fft(a, n=0)
    with pytest.raises(ArgumentTypeError):
        xp.fft.fft(a, n=2.5)
    with pytest.raises(ArgumentTypeError):
        xp.fft.fft(np.zeros(4))
    with pytest.raises(InvalidArgumentError):
        xp.fft.fft(xp.asarray(np.complex64(1)))
    with pytest.raises(TypeError, match="real input"):
        xp.fft.rfft(a)
    with pytest.raises(InvalidArgumentError, match="at least 1"):
        xp.fft.irfft(xp.asarray(_c(1)))  # 2 * (1 - 1) outputs
    with pytest.raises(InvalidArgumentError, match="repeat"):
        xp.fft.fftn(xp.asarray(_c((2, 2))), axes=(0, 0))
    with pytest.raises(DispatchError, match="not supported"):
        xp.fft.fft(a, n=2**21 + 1)  # past Bluestein's limit, refused before any GPU work
    with pytest.raises(InvalidArgumentError):
        xp.fft.fftfreq(0)
    if "float64" in xp.__array_namespace_info__().dtypes():  # never narrowed (tests/array/test_array_fft64.py)
        assert xp.fft.fft(xp.asarray(np.zeros(4))).dtype == xp.complex128
        assert xp.fft.rfft(xp.asarray(np.zeros(4))).dtype == xp.complex128


def test_long_lengths(gpu):
    """Past one workgroup's 2048 points (the four-step plan) and a long Bluestein length, on the GPU."""
    with vyre.use(gpu):
        for n in (4096, 3000):
            x = _c((1, n))
            _check(xp.fft.fft(xp.asarray(x)), np.fft.fft(x.astype(complex)), n, 1.5)
        r = rng.standard_normal((2, 4096)).astype(np.float32)
        _check(xp.fft.rfft(xp.asarray(r)), np.fft.rfft(r.astype(float)), 4096, 4)


def test_namespace():
    assert xp.fft is vyre.array.fft and xp.Array.__array_namespace__(xp.asarray([1.0])).fft is xp.fft
    assert set(xp.fft.__all__) == {"fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft",
                                   "ihfft", "fftfreq", "rfftfreq", "fftshift", "ifftshift"}


@settings(max_examples=10, deadline=None)
@given(st.integers(1, 40), st.integers(1, 3), st.sampled_from(["backward", "ortho", "forward"]))
def test_hypothesis_lengths(ref_backend, n, batch, norm):
    x = _c((batch, n))
    with vyre.use(ref_backend):
        scale = {"backward": 1.5, "ortho": 1.5 / math.sqrt(n), "forward": 1.5 / n}[norm]
        _check(xp.fft.fft(xp.asarray(x), norm=norm), np.fft.fft(x.astype(complex), norm=norm), n, scale)
        r = x.real.copy()
        _check(xp.fft.rfft(xp.asarray(r), norm=norm), np.fft.rfft(r.astype(float), norm=norm), n, scale)
