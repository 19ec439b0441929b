"""complex64 arrays on both backends against numpy (computed in complex128, compared in complex64).

Tolerances: storage, layout ops, real/imag/conj/negative/equal exactly; add/subtract/multiply/square
rtol 1e-6 (a GPU may fuse a*c - b*d); divide/reciprocal/abs/sign 2e-6 (Smith's algorithm, hypot); the
transcendental functions rtol 2e-5 with atol 2e-6 on |re|, |im| <= 4 (their f32 parts: sin, exp, expm1,
log1p, sinh ... of vyre/array/_kernels/float_math.py); sums and means rtol 1e-5, products of 30 factors of
modulus ~1 rtol 1e-4, matmul/vecdot rtol 1e-5 of the summed magnitudes.
"""

from __future__ import annotations

import numpy as np
import pytest
from extras import require_adapter
from hypothesis import given, settings
from hypothesis import strategies as st

import vyre.array as xp
import vyre.autograd as ag
from vyre.errors import InvalidArgumentError, UnsupportedDTypeError

rng = np.random.default_rng(2901)


def _c(shape, scale=1.0, r=rng):
    return ((r.standard_normal(shape) + 1j * r.standard_normal(shape)) * scale).astype(np.complex64)


Z, W = _c(40, 2.0), _c(40, 2.0)
W[0] = 0.5  # a real divisor
SPECIAL = np.array([0, -0.0, 1, -1j, complex(np.inf, 0), complex(-np.inf, 1), complex(1, np.inf),
                    complex(np.nan, 0), complex(0, np.nan), complex(np.inf, np.inf), complex(-np.inf, np.nan),
                    complex(3e30, 4e30), complex(1e-30, -1e-30)], np.complex64)


def _close(got, want, rtol, atol=0.0):
    assert isinstance(got, xp.Array) and got.dtype == xp.complex64, (type(got), getattr(got, "dtype", None))
    np.testing.assert_allclose(np.asarray(got), np.asarray(want).astype(np.complex64), rtol=rtol, atol=atol)


# ---- storage, creation, dtype functions -------------------------------------------------------------

def test_round_trip_and_creation(xb):
    a = xp.asarray(SPECIAL)
    assert a.dtype == xp.complex64 and a.shape == SPECIAL.shape
    got = np.asarray(a)
    assert got.dtype == np.complex64
    np.testing.assert_array_equal(got.view(np.uint32), SPECIAL.view(np.uint32))  # bit-exact, NaNs included
    assert complex(xp.asarray(np.complex64(1 - 2j))) == 1 - 2j
    np.testing.assert_array_equal(np.asarray(xp.zeros((2, 3), dtype=xp.complex64)), np.zeros((2, 3), np.complex64))
    np.testing.assert_array_equal(np.asarray(xp.empty(2, dtype=xp.complex64)), np.zeros(2, np.complex64))
    np.testing.assert_array_equal(np.asarray(xp.ones(3, dtype=xp.complex64)), np.ones(3, np.complex64))
    f = xp.full((2, 2), 1.5 - 2j)
    assert f.dtype == xp.complex64
    np.testing.assert_array_equal(np.asarray(f), np.full((2, 2), 1.5 - 2j, np.complex64))
    np.testing.assert_array_equal(np.asarray(xp.full(2, 3, dtype=xp.complex64)), [3, 3])
    np.testing.assert_array_equal(np.asarray(xp.eye(3, k=1, dtype=xp.complex64)), np.eye(3, k=1, dtype=np.complex64))
    np.testing.assert_allclose(np.asarray(xp.linspace(0, 2 + 4j, 5)), np.linspace(0, 2 + 4j, 5), rtol=1e-7)
    np.testing.assert_allclose(np.asarray(xp.linspace(1, 2, 4, dtype=xp.complex64, endpoint=False)),
                               np.linspace(1, 2, 4, endpoint=False), rtol=1e-7)
    z = xp.asarray(Z)
    np.testing.assert_array_equal(np.asarray(xp.full_like(z, 1j)), np.full(Z.shape, 1j, np.complex64))
    np.testing.assert_array_equal(np.asarray(xp.zeros_like(z)), np.zeros(Z.shape, np.complex64))


def test_complex128_needs_shader_f64(ref_backend, no_f64):
    """complex128 is listed and made where the device has shader-f64, refused (naming it) elsewhere."""
    dev = no_f64
    assert "complex128" not in xp.__array_namespace_info__().dtypes(device=dev)
    assert "complex128" in xp.__array_namespace_info__().dtypes(device=ref_backend)
    for make in (lambda: xp.asarray(np.zeros(3, np.complex128), device=dev),
                 lambda: xp.zeros(3, dtype=xp.complex128, device=dev),
                 lambda: xp.astype(xp.ones(2, dtype=xp.complex64, device=dev), xp.complex128)):
        with pytest.raises(UnsupportedDTypeError, match="shader-f64"):
            make()
    assert xp.asarray(np.zeros(3, np.complex128), dtype=xp.complex64, device=dev).dtype == xp.complex64


def test_dtype_functions():
    assert xp.isdtype(xp.complex64, "complex floating") and xp.isdtype(xp.complex128, "complex floating")
    assert xp.isdtype(xp.complex64, "numeric") and not xp.isdtype(xp.complex64, "real floating")
    assert not xp.isdtype(xp.float32, "complex floating")
    assert xp.result_type(xp.float32, xp.complex64) == xp.complex64
    assert xp.result_type(xp.float64, xp.complex64) == xp.complex128
    assert xp.result_type(xp.complex64, xp.complex128) == xp.complex128
    assert xp.result_type(xp.int32, xp.complex64) == xp.complex64
    assert xp.result_type(xp.complex64, 1j) == xp.complex64 and xp.result_type(xp.float32, 1j) == xp.complex64
    assert xp.result_type(xp.float64, 1j) == xp.complex128 and xp.result_type(1j) == xp.complex64
    assert xp.can_cast(xp.float32, xp.complex64) and xp.can_cast(xp.float64, xp.complex128)
    assert not xp.can_cast(xp.float64, xp.complex64) and not xp.can_cast(xp.complex64, xp.float32)
    assert xp.can_cast(xp.complex64, xp.complex128) and not xp.can_cast(xp.int32, xp.complex64)
    fi = xp.finfo(xp.complex64)
    assert fi.dtype == xp.float32 and fi.eps == float(np.finfo(np.float32).eps)
    info = xp.__array_namespace_info__()
    assert info.dtypes(kind="complex floating") == {"complex64": xp.complex64, "complex128": xp.complex128}
    assert "complex64" in info.dtypes() and "complex64" in info.dtypes(kind="numeric")
    assert info.default_dtypes()["complex floating"] == xp.complex64


def test_astype(xb):
    x = np.array([1.5, -2, 0, np.inf], np.float32)
    got = xp.astype(xp.asarray(x), xp.complex64)
    assert got.dtype == xp.complex64
    np.testing.assert_array_equal(np.asarray(got), x.astype(np.complex64))
    np.testing.assert_array_equal(np.asarray(xp.astype(xp.asarray([1, -3]), xp.complex64)), [1, -3])
    np.testing.assert_array_equal(np.asarray(xp.astype(xp.asarray([True, False]), xp.complex64)), [1, 0])
    np.testing.assert_array_equal(np.asarray(xp.astype(xp.asarray(SPECIAL), xp.bool)), SPECIAL.astype(bool))
    z = xp.asarray(Z)
    assert xp.astype(z, xp.complex64, copy=False) is z
    for dt in (xp.float32, xp.int32, xp.uint32, xp.float16):
        with pytest.raises(UnsupportedDTypeError, match="imaginary"):
            xp.astype(z, dt)


# ---- elementwise ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("name,rtol", [("add", 1e-6), ("subtract", 1e-6), ("multiply", 1e-6), ("divide", 2e-6)])
def test_binary(xb, name, rtol):
    a, b = xp.asarray(Z), xp.asarray(W)
    f = getattr(xp, name)
    _close(f(a, b), getattr(np, name)(Z.astype(complex), W.astype(complex)), rtol, 1e-6)
    r = rng.standard_normal(40).astype(np.float32) + 2
    _close(f(a, xp.asarray(r)), getattr(np, name)(Z.astype(complex), r), rtol, 1e-6)  # real promoted
    _close(f(xp.asarray(r), a), getattr(np, name)(r, Z.astype(complex)), rtol, 1e-6)
    _close(f(a, xp.asarray(np.arange(1, 41, dtype=np.int32))), getattr(np, name)(Z.astype(complex), np.arange(1, 41)),
           rtol, 1e-6)
    for s in (2.5 - 1j, 3, 0.5):
        _close(f(a, s), getattr(np, name)(Z.astype(complex), s), rtol, 1e-6)
        _close(f(s, a), getattr(np, name)(s, Z.astype(complex)), rtol, 1e-6)
    _close(f(xp.asarray(Z[:8].reshape(2, 4)), xp.asarray(W[:4])),
           getattr(np, name)(Z[:8].reshape(2, 4).astype(complex), W[:4].astype(complex)), rtol, 1e-6)  # broadcast


def test_operators_and_python_complex(xb):
    a, r = xp.asarray(Z), xp.asarray(np.arange(40, dtype=np.float32))
    _close(a * 1j + r, Z * 1j + np.arange(40), 1e-6)
    _close((r * (1 + 2j)), np.arange(40) * (1 + 2j), 1e-6)  # a Python complex makes a float32 array complex64
    _close(-a, -Z, 0)
    _close(+a, Z, 0)
    _close(a ** 2, Z.astype(complex) ** 2, 1e-6, 1e-6)
    _close(a / a, np.ones(40), 2e-6, 1e-6)
    assert (xp.asarray(np.ones(2)) + 1j).dtype == xp.complex128  # float64 with a complex: complex128


def test_divide_smith(xb):
    # |c|^2 overflows f32 for these divisors: the textbook formula would give 0 or NaN
    a = np.array([1 + 1j, 1e30 + 1e30j, 1e-30 + 2e-30j, 1 + 0j, 1 + 1j], np.complex64)
    b = np.array([1e30 + 1e30j, 2e30 - 1e30j, 1e-30 - 1e-30j, 0j, 0j], np.complex64)
    with np.errstate(all="ignore"):
        want = a.astype(complex) / b.astype(complex)
    got = np.asarray(xp.divide(xp.asarray(a), xp.asarray(b)))
    np.testing.assert_allclose(got[:3], want[:3], rtol=2e-6)
    assert np.isinf(got[3].real) and np.isnan(got[3].imag) or np.isnan(got[3]).any()  # numpy: inf, nan
    assert not np.isfinite(got[4].real) and not np.isfinite(got[4].imag)


def test_components(xb):
    a = xp.asarray(SPECIAL)
    for name in ("real", "imag"):
        got = getattr(xp, name)(a)
        assert got.dtype == xp.float32
        np.testing.assert_array_equal(np.asarray(got), getattr(np, name)(SPECIAL))
    np.testing.assert_array_equal(np.asarray(xp.conj(a)), np.conj(SPECIAL))
    m = xp.abs(a)
    assert m.dtype == xp.float32
    with np.errstate(all="ignore"):
        np.testing.assert_allclose(np.asarray(m), np.abs(SPECIAL.astype(complex)), rtol=2e-6)  # 3e30+4e30j: 5e30
    np.testing.assert_allclose(np.asarray(abs(xp.asarray(Z))), np.abs(Z), rtol=2e-6)
    r = xp.asarray(np.array([1.5, -2], np.float32))  # real input: numpy's rules
    np.testing.assert_array_equal(np.asarray(xp.real(r)), [1.5, -2])
    np.testing.assert_array_equal(np.asarray(xp.imag(r)), [0, 0])
    np.testing.assert_array_equal(np.asarray(xp.conj(r)), [1.5, -2])
    for name in ("isnan", "isinf", "isfinite"):
        got = getattr(xp, name)(a)
        assert got.dtype == xp.bool
        np.testing.assert_array_equal(np.asarray(got), getattr(np, name)(SPECIAL))
    eq = np.asarray(xp.equal(a, xp.asarray(SPECIAL)))
    np.testing.assert_array_equal(eq, SPECIAL == SPECIAL)  # NaN parts are unequal
    np.testing.assert_array_equal(np.asarray(a != xp.asarray(SPECIAL)), SPECIAL != SPECIAL)
    np.testing.assert_array_equal(np.asarray(xp.asarray(Z) == Z[0].item()), Z == Z[0])


def test_round(xb):
    z = np.array([0.5 + 1.5j, 2.5 - 0.4j, -1.7 + 2.5j, complex(np.inf, np.nan)], np.complex64)
    np.testing.assert_array_equal(np.asarray(xp.round(xp.asarray(z))), np.round(z))  # each part, half to even


def test_sign(xb):
    z = np.array([3 + 4j, 0, -2j, complex(np.inf, 1), complex(-np.inf, np.inf)], np.complex64)
    got = np.asarray(xp.sign(xp.asarray(z)))
    np.testing.assert_allclose(got, [0.6 + 0.8j, 0, -1j, 1, (-1 + 1j) / np.sqrt(2)], rtol=2e-6, atol=1e-7)
    _close(xp.sign(xp.asarray(Z)), Z / np.abs(Z), 2e-6, 1e-7)


SMALL = _c(60, 1.5)
SMALL[:4] = [0.1, -0.5j, 1e-4 + 1e-4j, -0.3 + 0.2j]  # near 0: expm1/log1p keep their relative accuracy


@pytest.mark.parametrize("name", ["sqrt", "exp", "expm1", "log", "log1p", "log2", "log10", "sin", "cos", "tan",
                                  "sinh", "cosh", "tanh", "square", "reciprocal"])
def test_unary_math(xb, name):
    x = SMALL.astype(complex)
    want = getattr(np, name)(x) if name != "reciprocal" else 1 / x
    _close(getattr(xp, name)(xp.asarray(SMALL)), want, 2e-5, 2e-6)


CUTS = np.array([2 + 0j, -2 + 0j, complex(2, -0.0), complex(-2, -0.0), 3j, -3j, complex(-0.0, 3), complex(0.0, -3),
                 0.5, 0.999, 1e-4 + 1e-4j, 30 + 40j, 0j], np.complex64)  # both sides of every branch cut


@pytest.mark.parametrize("name", ["asin", "acos", "atan", "asinh", "acosh", "atanh"])
def test_inverse_functions(xb, name):
    """Kahan's formulas: within 1e-6 of |numpy's result| (2e-6 absolute near 0), the signed zero picking
    the side of a branch cut as numpy does."""
    z = np.concatenate([_c(80, 2.0, np.random.default_rng(7)), CUTS])
    want = getattr(np, "arc" + name[1:])(z.astype(complex))
    got = np.asarray(getattr(xp, name)(xp.asarray(z)))
    assert got.dtype == np.complex64
    assert (np.abs(got - want) <= 2e-6 * np.abs(want) + 2e-6).all(), (z, got, want)


def test_unary_math_wide_range(xb):
    z = _c(200, 3.0, np.random.default_rng(5))
    x = z.astype(complex)
    for name in ("sqrt", "exp", "log", "sin", "cos", "tanh", "sinh", "cosh"):
        got = np.asarray(getattr(xp, name)(xp.asarray(z)))
        want = getattr(np, name)(x)
        np.testing.assert_allclose(got, want, rtol=3e-5, atol=3e-5 * np.abs(want).max() * 1e-3, err_msg=name)
    big = np.array([1e36 + 1e36j, -3e38 + 1j, 1e-38 + 1e-38j], np.complex64)
    np.testing.assert_allclose(np.asarray(xp.sqrt(xp.asarray(big))), np.sqrt(big.astype(complex)), rtol=2e-6)


def test_power(xb):
    a, b = SMALL[:20] + 0.5, _c(20, 0.5)
    _close(xp.pow(xp.asarray(a), xp.asarray(b)), a.astype(complex) ** b.astype(complex), 5e-5, 1e-6)
    _close(xp.asarray(a) ** 3, a.astype(complex) ** 3, 5e-5, 1e-6)
    np.testing.assert_allclose(np.asarray(xp.asarray(np.zeros(1, np.complex64)) ** 2.0), [0])


def test_special_values(xb):
    """The standard's tables where the formula alone would not give them (C99 Annex G)."""
    inf, nan = np.inf, np.nan
    cases = {
        "exp": [(complex(inf, 0), complex(inf, 0)), (complex(-inf, 1), 0j), (complex(-inf, inf), 0j),
                (complex(1, 0), complex(np.e, 0))],
        "log": [(0j, complex(-inf, 0)), (complex(-1, 0), complex(0, np.pi)), (complex(inf, 1), complex(inf, 0))],
        "sqrt": [(complex(1, inf), complex(inf, inf)), (complex(nan, inf), complex(inf, inf)),
                 (complex(-inf, 1), complex(0, inf)), (complex(inf, 1), complex(inf, 0)), (-4 + 0j, 2j), (0j, 0j)],
        "sinh": [(complex(inf, 0), complex(inf, 0))],
        "cosh": [(complex(inf, 0), complex(inf, 0)), (0j, 1 + 0j)],
        "tanh": [(complex(inf, 1), 1 + 0j), (complex(-30, 2), -1 + 0j)],
    }
    for name, pairs in cases.items():
        z = np.array([p[0] for p in pairs], np.complex64)
        got = np.asarray(getattr(xp, name)(xp.asarray(z)))
        np.testing.assert_allclose(got, np.array([p[1] for p in pairs]), rtol=1e-6, atol=1e-6, err_msg=name)
    got = np.asarray(xp.exp(xp.asarray(np.array([complex(inf, inf)], np.complex64))))
    assert np.isinf(got[0].real) and np.isnan(got[0].imag)
    got = np.asarray(xp.sqrt(xp.asarray(np.array([complex(-inf, nan)], np.complex64))))
    assert np.isnan(got[0].real) and np.isinf(got[0].imag)


def test_where_and_fusion(xb):
    a, b = xp.asarray(Z), xp.asarray(W)
    c = xp.asarray(np.arange(40) % 3 == 0)
    _close(xp.where(c, a, b), np.where(np.arange(40) % 3 == 0, Z, W), 0)
    _close(xp.where(c, a, 2j), np.where(np.arange(40) % 3 == 0, Z, 2j), 0)
    _close(xp.where(c, a, xp.asarray(np.ones(40, np.float32))), np.where(np.arange(40) % 3 == 0, Z, 1), 0)
    expr = xp.exp(a * 0.1) * xp.conj(b) + xp.real(a)  # one fused kernel, complex and real nodes mixed
    _close(expr, np.exp(Z * 0.1) * np.conj(W) + Z.real, 2e-5, 2e-6)


@pytest.mark.parametrize("call", [
    lambda a: a < a, lambda a: a >= 1, lambda a: xp.max(a), lambda a: xp.min(a), lambda a: xp.floor(a),
    lambda a: xp.ceil(a), lambda a: xp.trunc(a), lambda a: xp.maximum(a, a),
    lambda a: xp.minimum(a, 1), lambda a: a % 2, lambda a: a // 2, lambda a: xp.atan2(a, a), lambda a: xp.hypot(a, a),
    lambda a: xp.signbit(a), lambda a: xp.copysign(a, a), lambda a: xp.logaddexp(a, a), lambda a: xp.clip(a, 0, 1),
    lambda a: xp.var(a), lambda a: xp.std(a), lambda a: a & a, lambda a: xp.nextafter(a, a),
])
def test_undefined_for_complex(xb, call):
    with pytest.raises(TypeError, match="complex|numeric"):
        call(xp.asarray(Z))


def test_refused_typed(xb):
    a = xp.asarray(Z)
    for call in (lambda: xp.sort(a), lambda: xp.argsort(a), lambda: xp.argmax(a)):
        with pytest.raises(UnsupportedDTypeError):
            call()


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_unique(xb, dt):
    """numpy's sorted order (real part, then imaginary part); -0.0 equals +0.0; every NaN distinct (the
    standard; numpy's equal_nan=False), NaNs last; the first occurrence's index; inverse rebuilds x."""
    require_adapter(dt in xp.__array_namespace_info__().dtypes(), "shader-f64")  # fails under CI=true
    nan = np.nan
    z = np.array([[1 + 2j, 3, 1 + 2j, complex(-0.0, 1), 1j, complex(nan, 1)],
                  [complex(1, nan), 1 + 1j, 3, 2 - 5j, complex(nan, 1), 1 - 0j]], dt)
    z = np.concatenate([z, rng.integers(-2, 3, (3, 6)) + 1j * rng.integers(-1, 2, (3, 6))]).astype(dt)
    r = xp.unique_all(xp.asarray(z))
    finite = ~np.isnan(z.ravel())
    v, i, inv, c = np.unique(z.ravel()[finite], return_index=True, return_inverse=True, return_counts=True)
    k, n_nan = len(v), int((~finite).sum())
    got = np.asarray(r.values)
    assert got.dtype == np.dtype(dt) and got.shape == (k + n_nan,)
    np.testing.assert_array_equal(got[:k], v)
    assert np.isnan(got[k:]).all()
    np.testing.assert_array_equal(np.asarray(r.indices)[:k], np.flatnonzero(finite)[i])
    np.testing.assert_array_equal(np.asarray(r.counts), np.r_[c, np.ones(n_nan, int)])
    back = got[np.asarray(r.inverse_indices)]
    assert back.shape == z.shape and ((back == z) | (np.isnan(back) & np.isnan(z))).all()
    np.testing.assert_array_equal(np.asarray(xp.unique_values(xp.asarray(z[:1, :1]))), z[0, :1])


def test_no_silent_gradients(xb):
    """A gradient reaching a complex call raises (no complex rules; the real ones would be wrong)."""
    x = xp.asarray(np.arange(1, 9, dtype=np.float32))
    for f in (lambda x: xp.sum(xp.real(x * 1j)), lambda x: xp.sum(xp.abs(xp.astype(x, xp.complex64))),
              lambda x: xp.sum(xp.imag(xp.fft.fft(x)))):
        with pytest.raises(InvalidArgumentError, match="no derivative rule"):
            ag.grad(f)(x)
    assert np.asarray(ag.grad(lambda x: xp.sum(x * x))(x)).tolist() == list(range(2, 18, 2))  # real: unchanged


# ---- reductions and products ----------------------------------------------------------------------------

def test_reductions(xb):
    m = _c((5, 6, 7))
    a = xp.asarray(m)
    for axis in (None, 0, 1, (0, 2), -1):
        _close(xp.sum(a, axis=axis), m.astype(complex).sum(axis=axis), 1e-5, 1e-5)
        _close(xp.mean(a, axis=axis), m.astype(complex).mean(axis=axis), 1e-5, 1e-6)
    _close(xp.sum(a, axis=1, keepdims=True), m.astype(complex).sum(axis=1, keepdims=True), 1e-5, 1e-5)
    _close(a.sum(), m.astype(complex).sum(), 1e-5, 1e-5)
    _close(xp.sum(a * 2j, axis=0), (m * 2j).astype(complex).sum(axis=0), 1e-5, 1e-5)  # fused input
    _close(xp.cumulative_sum(a, axis=1), np.cumsum(m.astype(complex), axis=1), 1e-5, 1e-5)
    _close(xp.cumulative_sum(a[0, 0], include_initial=True),
           np.concatenate([[0], np.cumsum(m[0, 0].astype(complex))]), 1e-5, 1e-5)
    with pytest.raises(UnsupportedDTypeError):
        xp.sum(a, dtype=xp.float32)


def test_cumulative_prod(xb):
    u = (np.exp(1j * rng.uniform(0, 6, (3, 13))) * (1 + 0.05 * rng.standard_normal((3, 13)))).astype(np.complex64)
    a, w = xp.asarray(u), u.astype(complex)
    _close(xp.cumulative_prod(a, axis=1), np.cumprod(w, axis=1), 1e-5, 1e-6)
    _close(xp.cumulative_prod(a, axis=0), np.cumprod(w, axis=0), 1e-5, 1e-6)
    _close(xp.cumulative_prod(a[1], include_initial=True), np.concatenate([[1], np.cumprod(w[1])]), 1e-5, 1e-6)
    _close(xp.cumulative_prod(xp.asarray(np.zeros((2, 0), np.complex64)), axis=1), np.zeros((2, 0)), 0)
    with pytest.raises(Exception, match="axis"):
        xp.cumulative_prod(a)  # 2-d: axis required


def test_prod(xb):
    u = np.exp(1j * rng.uniform(0, 6, (4, 30))).astype(np.complex64) * (1 + 0.01 * rng.standard_normal((4, 30)))
    u = u.astype(np.complex64)
    a = xp.asarray(u)
    for axis in (None, 1, 0, (0, 1)):
        _close(xp.prod(a, axis=axis), np.prod(u.astype(complex), axis=axis), 1e-4, 1e-5)
    _close(xp.prod(a, axis=1, keepdims=True), np.prod(u.astype(complex), axis=1, keepdims=True), 1e-4, 1e-5)
    _close(xp.prod(xp.asarray(np.array([1 + 1j, 0, 2j], np.complex64))), 0, 0)
    _close(xp.prod(xp.asarray(np.zeros((0, 3), np.complex64)), axis=0), np.ones(3), 0)
    _close(xp.prod(xp.asarray(np.array([2j], np.complex64))), 2j, 0)


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4, 2)), ((3, 4), (4,)), ((2, 3, 4), (4, 5)),
                                   ((2, 3, 4), (2, 4, 1))])
def test_matmul(xb, sa, sb):
    a, b = _c(sa), _c(sb)
    want = a.astype(complex) @ b.astype(complex)
    _close(xp.asarray(a) @ xp.asarray(b), want, 1e-5, 1e-5)
    br = b.real.copy()
    _close(xp.matmul(xp.asarray(a), xp.asarray(br)), a.astype(complex) @ br, 1e-5, 1e-5)
    ar = a.real.copy()
    _close(xp.matmul(xp.asarray(ar), xp.asarray(b)), ar @ b.astype(complex), 1e-5, 1e-5)


def test_vecdot_tensordot(xb):
    a, b = _c((3, 8)), _c((3, 8))
    _close(xp.vecdot(xp.asarray(a), xp.asarray(b)), np.sum(np.conj(a.astype(complex)) * b, axis=-1), 1e-5, 1e-5)
    _close(xp.vecdot(xp.asarray(a), xp.asarray(b), axis=0), np.sum(np.conj(a.astype(complex)) * b, axis=0),
           1e-5, 1e-5)
    r = b.real.copy()
    _close(xp.vecdot(xp.asarray(a), xp.asarray(r)), np.sum(np.conj(a.astype(complex)) * r, axis=-1), 1e-5, 1e-5)
    _close(xp.vecdot(xp.asarray(r), xp.asarray(a)), np.sum(r * a.astype(complex), axis=-1), 1e-5, 1e-5)
    c = _c((8, 2))
    _close(xp.tensordot(xp.asarray(a), xp.asarray(c), axes=1), np.tensordot(a.astype(complex), c, axes=1), 1e-5, 1e-5)
    got = xp.matmul(xp.asarray(a), xp.asarray(np.ones((8, 2))))  # complex64 @ float64: complex128
    assert got.dtype == xp.complex128
    np.testing.assert_allclose(np.asarray(got), a.astype(complex) @ np.ones((8, 2)), rtol=1e-6)


def test_norms_and_linalg(xb):
    m = _c((3, 4))
    a = xp.asarray(m)
    for ord_ in (2, 1, np.inf, 3):
        np.testing.assert_allclose(np.asarray(xp.linalg.vector_norm(a, ord=ord_)),
                                   np.linalg.norm(m.ravel(), ord=ord_), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(xp.linalg.vector_norm(a, axis=1)), np.linalg.norm(m, axis=1), rtol=1e-5)
    assert xp.linalg.vector_norm(a).dtype == xp.float32
    for ord_ in ("fro", 1, -1, np.inf):
        np.testing.assert_allclose(np.asarray(xp.linalg.matrix_norm(a, ord=ord_)), np.linalg.norm(m, ord=ord_),
                                   rtol=1e-5)
    np.testing.assert_allclose(np.asarray(xp.linalg.matrix_norm(a, ord=2)), np.linalg.norm(m, ord=2), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(xp.linalg.trace(xp.asarray(m[:, :3]))), np.trace(m[:, :3]), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(xp.linalg.outer(a[0], a[1])), np.outer(m[0], m[1]), rtol=1e-6)


def test_python_complex_data(xb):
    a = xp.asarray([1 + 2j, 3, -1j])
    assert a.dtype == xp.complex64  # Python complex: the default complex dtype (as Python float -> float32)
    np.testing.assert_array_equal(np.asarray(a), np.array([1 + 2j, 3, -1j], np.complex64))
    assert xp.asarray(2j).shape == () and complex(xp.asarray(2j)) == 2j
    assert xp.asarray([1.5, 2], dtype=xp.complex64).dtype == xp.complex64


# ---- layout: pairs move together ------------------------------------------------------------------------

def test_layout(xb):
    m = _c((3, 4, 5))
    a = xp.asarray(m)
    _close(xp.reshape(a, (12, 5)), m.reshape(12, 5), 0)
    _close(xp.permute_dims(a, (2, 0, 1)), m.transpose(2, 0, 1), 0)
    _close(a.mT, np.swapaxes(m, -1, -2), 0)
    _close(a[1, ::2, 1:4], m[1, ::2, 1:4], 0)
    _close(a[..., -1], m[..., -1], 0)
    _close(xp.flip(a, axis=1), m[:, ::-1], 0)
    _close(xp.roll(a, 2, axis=2), np.roll(m, 2, axis=2), 0)
    _close(xp.take(a, xp.asarray([2, 0]), axis=1), m[:, [2, 0]], 0)
    _close(a[xp.asarray(m.real > 0)], m[m.real > 0], 0)
    _close(xp.concat([a, xp.asarray(m.real.copy())], axis=1), np.concatenate([m, m.real], axis=1), 0)
    _close(xp.stack([a, a * 2], axis=-1), np.stack([m, m * 2], axis=-1), 0)
    _close(xp.expand_dims(a, axis=0), m[None], 0)
    _close(xp.broadcast_to(xp.asarray(m[0, 0]), (2, 5)), np.broadcast_to(m[0, 0], (2, 5)), 0)
    _close(xp.tril(xp.asarray(m[0])), np.tril(m[0]), 0)
    b = xp.asarray(m)
    b[0, 1] = 5j
    b[1] = xp.asarray(m[2])
    want = m.copy()
    want[0, 1] = 5j
    want[1] = m[2]
    _close(b, want, 0)
    assert (np.asarray(xp.all(a)), np.asarray(xp.any(a * 0))) == (np.all(m), np.any(m * 0))
    s = m.copy()
    s[0, 1:3] = 0
    s[1, 0, 0] = complex(0, np.nan)
    got = xp.nonzero(xp.asarray(s))
    for g, w in zip(got, np.nonzero(s)):
        np.testing.assert_array_equal(np.asarray(g), w)
    assert int(xp.count_nonzero(xp.asarray(s))) == np.count_nonzero(s)
    _close(xp.diff(a, axis=2), np.diff(m, axis=2), 1e-6, 1e-6)


@settings(max_examples=12, deadline=None)
@given(st.lists(st.complex_numbers(max_magnitude=1e6, allow_nan=False, allow_infinity=False, width=64),
                min_size=1, max_size=16),
       st.lists(st.complex_numbers(min_magnitude=1e-3, max_magnitude=1e6, allow_nan=False, allow_infinity=False,
                                   width=64), min_size=1, max_size=16))
def test_hypothesis_mul_div(a, b):
    n = min(len(a), len(b))
    x, y = np.array(a[:n], np.complex64), np.array(b[:n], np.complex64)
    xa, ya = xp.asarray(x), xp.asarray(y)
    scale = np.abs(x.astype(complex)) * np.abs(y.astype(complex))
    got = np.asarray(xa * ya).astype(complex)
    assert (np.abs(got - x.astype(complex) * y) <= 4e-7 * scale + 1e-30).all()
    q = np.asarray(xa / ya).astype(complex)
    assert (np.abs(q - x.astype(complex) / y) <= 1e-6 * np.abs(x) / np.abs(y) + 1e-30).all()
