"""complex128 arrays (devices with shader-f64: lavapipe and the reference interpreter here) against numpy.

Tolerances, relative to numpy's complex128 result: storage, layout, real/imag/conj/negative/round exactly;
add/subtract/multiply 4e-16 of |x1||x2| (a GPU may fuse), divide/abs/sign 1e-15; the transcendental
functions 4e-15 of |result| plus 1e-15, their inverses 1.6e-14 (atanh's log1p(4a / |1 - z|^2) measured
6e-15; the f64 parts: float_math64.py and the lowering's software exp/log/sin/cos, within a few ulp); sums,
means, products and matrix products 1e-13.
"""

from __future__ import annotations

import numpy as np
import pytest
from extras import require_adapter

import vyre.array as xp
from vyre.errors import ArgumentTypeError, UnsupportedDTypeError

rng = np.random.default_rng(12801)


def _c(shape, scale=1.0):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)) * scale


@pytest.fixture
def f64(xb):
    require_adapter(xb.capabilities().f64, "shader-f64 (complex128)")
    return xb


Z, W = _c(40, 2.0), _c(40, 2.0)
SPECIAL = np.array([0, -0.0, 1, -1j, complex(np.inf, 0), complex(-np.inf, 1), complex(1, np.inf), complex(np.nan, 0),
                    complex(0, np.nan), complex(np.inf, np.inf), complex(1e300, 1e300), complex(1e-300, -1e-300)])


def _rel(got, want, rtol, atol=0.0):
    assert isinstance(got, xp.Array) and got.dtype == xp.complex128, getattr(got, "dtype", type(got))
    g = np.asarray(got)
    assert g.dtype == np.complex128
    want = np.asarray(want, np.complex128)
    with np.errstate(invalid="ignore"):
        ok = (g == want) | (np.abs(g - want) <= rtol * np.abs(want) + atol)  # infinities: equal, not close
    ok |= np.isnan(g) & np.isnan(want)
    assert ok.all(), (g[~ok], want[~ok], np.abs(g - want)[~ok] / np.abs(want)[~ok])


def test_storage_and_promotion(f64):
    a = xp.asarray(SPECIAL)
    assert a.dtype == xp.complex128
    np.testing.assert_array_equal(np.asarray(a).view(np.uint64), SPECIAL.view(np.uint64))  # bit-exact
    np.testing.assert_array_equal(np.asarray(xp.zeros(2, dtype=xp.complex128)), np.zeros(2))
    np.testing.assert_array_equal(np.asarray(xp.full(3, 1e300 - 2j, dtype=xp.complex128)), np.full(3, 1e300 - 2j))
    np.testing.assert_allclose(np.asarray(xp.linspace(0, 1 + 2j, 5, dtype=xp.complex128)), np.linspace(0, 1 + 2j, 5),
                               rtol=1e-15)
    z64 = xp.asarray(Z.astype(np.complex64))
    assert (z64 + xp.asarray(np.ones(40))).dtype == xp.complex128  # the standard's table
    assert (xp.asarray(np.ones(3)) * 1j).dtype == xp.complex128
    np.testing.assert_array_equal(np.asarray(xp.astype(z64, xp.complex128)), Z.astype(np.complex64).astype(complex))
    np.testing.assert_array_equal(np.asarray(xp.astype(xp.asarray(Z), xp.complex64)), Z.astype(np.complex64))
    np.testing.assert_array_equal(np.asarray(xp.astype(xp.asarray(np.arange(3.0)), xp.complex128)), [0, 1, 2])
    with pytest.raises(UnsupportedDTypeError, match="imaginary"):
        xp.astype(a, xp.float64)
    assert xp.real(a).dtype == xp.float64 and xp.abs(a).dtype == xp.float64


def test_arithmetic(f64):
    a, b = xp.asarray(Z), xp.asarray(W)
    mag = np.abs(Z) * np.abs(W)
    for name in ("add", "subtract", "multiply"):
        got = np.asarray(getattr(xp, name)(a, b))
        assert (np.abs(got - getattr(np, name)(Z, W)) <= 4e-16 * (mag + np.abs(Z) + np.abs(W))).all(), name
    _rel(a / b, Z / W, 1e-15)
    _rel(a * (2 - 1j) + 0.5, Z * (2 - 1j) + 0.5, 1e-15, 1e-15)
    _rel(1 / a, 1 / Z, 1e-15)
    _rel(a ** 2, Z ** 2, 1e-15, 1e-15)
    big = np.array([1e300 + 1e300j, 1e-300 + 2e-300j])
    _rel(xp.asarray(big) / xp.asarray(big[::-1]), big / big[::-1], 1e-15)  # Smith's: no overflow
    np.testing.assert_array_equal(np.asarray(-a), -Z)
    np.testing.assert_array_equal(np.asarray(xp.conj(a)), np.conj(Z))
    np.testing.assert_array_equal(np.asarray(xp.real(a)), Z.real)
    np.testing.assert_array_equal(np.asarray(xp.imag(a)), Z.imag)
    np.testing.assert_array_equal(np.asarray(xp.round(a * 3)), np.round(Z * 3))
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(np.asarray(xp.abs(xp.asarray(SPECIAL))), np.abs(SPECIAL), rtol=1e-15)
    for name in ("isnan", "isinf", "isfinite"):
        np.testing.assert_array_equal(np.asarray(getattr(xp, name)(xp.asarray(SPECIAL))), getattr(np, name)(SPECIAL))
    np.testing.assert_array_equal(np.asarray(xp.asarray(SPECIAL) == xp.asarray(SPECIAL)), SPECIAL == SPECIAL)
    _rel(xp.sign(a), Z / np.abs(Z), 1e-15)
    with pytest.raises(TypeError):
        xp.less(a, b)
    with pytest.raises(ArgumentTypeError):
        xp.max(a)


CUTS = np.array([2 + 0j, -2 + 0j, complex(2, -0.0), complex(-2, -0.0), 3j, -3j, complex(-0.0, 3), complex(0.0, -3),
                 0.5, 1e-8 + 1e-8j, 30 + 40j, 0j])


@pytest.mark.parametrize("name", ["sqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
                                  "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh"])
def test_functions(f64, name):
    z = np.concatenate([_c(60, 1.5), CUTS])
    np_name = "arc" + name[1:] if name in ("asin", "acos", "atan", "asinh", "acosh", "atanh") else name
    with np.errstate(all="ignore"):
        want = getattr(np, np_name)(z)
    inverse = np_name != name
    _rel(getattr(xp, name)(xp.asarray(z)), want, 1.6e-14 if inverse else 4e-15, 1e-15)


def test_special_values(f64):
    inf, nan = np.inf, np.nan
    z = np.array([complex(inf, 0), complex(-inf, 1), complex(-inf, inf), 0j, complex(1, inf), complex(-inf, 1)])
    got = np.asarray(xp.exp(xp.asarray(z[:3])))
    np.testing.assert_array_equal(got, [complex(inf, 0), 0, 0])
    got = np.asarray(xp.log(xp.asarray(z[3:4])))
    assert got[0] == complex(-inf, 0)
    got = np.asarray(xp.sqrt(xp.asarray(z[4:])))
    np.testing.assert_array_equal(got, [complex(inf, inf), complex(0, inf)])
    got = np.asarray(xp.sqrt(xp.asarray(np.array([complex(-inf, nan)]))))
    assert np.isnan(got[0].real) and np.isinf(got[0].imag)


def test_reductions_and_products(f64):
    m = _c((4, 5, 6))
    a = xp.asarray(m)
    for axis in (None, 1, (0, 2)):
        _rel(xp.sum(a, axis=axis), m.sum(axis=axis), 1e-13, 1e-14)
        _rel(xp.mean(a, axis=axis), m.mean(axis=axis), 1e-13, 1e-14)
    u = np.exp(1j * rng.uniform(0, 6, (3, 20)))
    _rel(xp.prod(xp.asarray(u), axis=1), np.prod(u, axis=1), 1e-13)
    _rel(xp.cumulative_sum(a, axis=2), np.cumsum(m, axis=2), 1e-13, 1e-14)
    _rel(xp.cumulative_prod(xp.asarray(u), axis=1), np.cumprod(u, axis=1), 1e-13)
    x, y = _c((3, 4)), _c((4, 5))
    _rel(xp.asarray(x) @ xp.asarray(y), x @ y, 1e-13, 1e-14)
    _rel(xp.matmul(xp.asarray(x), xp.asarray(y.real.copy())), x @ y.real, 1e-13, 1e-14)
    _rel(xp.vecdot(xp.asarray(x), xp.asarray(x)), np.sum(np.conj(x) * x, axis=-1), 1e-13, 1e-14)
    np.testing.assert_allclose(np.asarray(xp.linalg.vector_norm(xp.asarray(x))), np.linalg.norm(x), rtol=1e-14)


def test_layout(f64):
    m = _c((3, 4, 5))
    a = xp.asarray(m)
    np.testing.assert_array_equal(np.asarray(xp.permute_dims(a, (2, 0, 1))), m.transpose(2, 0, 1))
    np.testing.assert_array_equal(np.asarray(a[1, ::2, 1:4]), m[1, ::2, 1:4])
    np.testing.assert_array_equal(np.asarray(a[xp.asarray(m.real > 0)]), m[m.real > 0])
    np.testing.assert_array_equal(np.asarray(xp.take(a, xp.asarray([2, 0]), axis=1)), m[:, [2, 0]])
    np.testing.assert_array_equal(np.asarray(xp.concat([a, xp.asarray(m.real.copy())], axis=1)),
                                  np.concatenate([m, m.real], axis=1))
    np.testing.assert_array_equal(np.asarray(xp.stack([a, a], axis=-1)), np.stack([m, m], axis=-1))
    np.testing.assert_array_equal(np.asarray(xp.where(xp.asarray(m.real > 0), a, 1j)), np.where(m.real > 0, m, 1j))
    b = xp.asarray(m)
    b[0, 1] = 5j
    want = m.copy()
    want[0, 1] = 5j
    np.testing.assert_array_equal(np.asarray(b), want)
    assert int(xp.count_nonzero(a)) == np.count_nonzero(m)


def test_fft_keeps_complex128(f64):
    """Transformed in f64, never narrowed to the f32 pipelines (accuracy: tests/array/test_array_fft64.py)."""
    got = xp.fft.fft(xp.asarray(Z))
    assert got.dtype == xp.complex128
    np.testing.assert_allclose(np.asarray(got), np.fft.fft(Z), rtol=0, atol=1e-12 * np.abs(Z).sum())
