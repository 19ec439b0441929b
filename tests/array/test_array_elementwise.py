"""Every elementwise function of vyre.array against numpy, on the reference backend and the GPU.

Integers and bools bit-exact; floats within the table below (rtol, atol), against numpy in float64
rounded to float32 (vyre/array/_math.py states the same table)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vyre
from vyre import array_api as xp

from gpu_policy import skip_or_fail

TOL = {  # name: (rtol, atol)
    "sqrt": (5e-6, 1e-6), "exp": (5e-6, 1e-6), "log": (5e-6, 1e-6), "log2": (5e-6, 1e-6),
    "log10": (5e-6, 1e-6), "sin": (5e-6, 2e-6), "cos": (5e-6, 2e-6), "tan": (1e-5, 2e-6), "tanh": (1e-5, 1e-6),
    "expm1": (5e-6, 1e-30), "log1p": (5e-6, 1e-30), "atan": (2e-6, 1e-7), "asin": (4e-6, 1e-6),
    "acos": (4e-6, 1e-6), "atan2": (4e-6, 1e-6), "sinh": (1e-5, 1e-6), "cosh": (1e-5, 1e-6),
    "asinh": (1e-5, 1e-6), "acosh": (1e-5, 1e-6), "atanh": (1e-5, 1e-6), "hypot": (5e-6, 1e-6),
    "logaddexp": (5e-6, 1e-6), "divide": (1e-6, 0), "reciprocal": (1e-6, 0), "pow": (1e-5, 1e-6),
}
RNG = np.random.default_rng(7)
N = 1000

# unary float functions: numpy reference and input domain
UNARY_F = {
    "sqrt": (np.sqrt, (0, 1000)), "exp": (np.exp, (-20, 20)), "expm1": (np.expm1, (-2, 2)),
    "log": (np.log, (0.01, 1000)), "log1p": (np.log1p, (-0.9, 10)), "log2": (np.log2, (0.01, 1000)),
    "log10": (np.log10, (0.01, 1000)), "sin": (np.sin, (-10, 10)), "cos": (np.cos, (-10, 10)),
    "tan": (np.tan, (-1.5, 1.5)), "tanh": (np.tanh, (-20, 20)), "asin": (np.arcsin, (-1, 1)),
    "acos": (np.arccos, (-1, 1)), "atan": (np.arctan, (-100, 100)), "sinh": (np.sinh, (-10, 10)),
    "cosh": (np.cosh, (-10, 10)), "asinh": (np.arcsinh, (-100, 100)), "acosh": (np.arccosh, (1, 100)),
    "atanh": (np.arctanh, (-0.99, 0.99)), "reciprocal": (np.reciprocal, (0.5, 100)),
}
EXACT_UNARY_F = {"abs": np.abs, "negative": np.negative, "positive": np.positive, "square": np.square,
                 "sign": np.sign, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "round": np.round,
                 "isnan": np.isnan, "isinf": np.isinf, "isfinite": np.isfinite, "signbit": np.signbit}
BINARY_F = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
            "maximum": np.maximum, "minimum": np.minimum, "atan2": np.arctan2, "hypot": np.hypot,
            "logaddexp": np.logaddexp, "copysign": np.copysign, "floor_divide": np.floor_divide,
            "remainder": np.remainder, "nextafter": np.nextafter, "equal": np.equal, "not_equal": np.not_equal,
            "less": np.less, "less_equal": np.less_equal, "greater": np.greater,
            "greater_equal": np.greater_equal}
BINARY_I = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "maximum": np.maximum,
            "minimum": np.minimum, "floor_divide": np.floor_divide, "remainder": np.remainder,
            "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
            "equal": np.equal, "not_equal": np.not_equal, "less": np.less, "less_equal": np.less_equal,
            "greater": np.greater, "greater_equal": np.greater_equal}


def _check(name: str, got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype or want.dtype == np.float64, (got.dtype, want.dtype)
    if got.dtype.kind in "biu" or name not in TOL:
        np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=name)
    else:
        rtol, atol = TOL[name]
        np.testing.assert_allclose(got, want.astype(np.float64), rtol=rtol, atol=atol, err_msg=name, equal_nan=True)


def _f(lo: float, hi: float, n: int = N) -> np.ndarray:
    return RNG.uniform(lo, hi, n).astype(np.float32)


@pytest.mark.parametrize("name", sorted(UNARY_F))
def test_unary_float(xb, name):
    ref, (lo, hi) = UNARY_F[name]
    x = _f(lo, hi)
    if lo < 0 < hi:
        x[:4] = [0.0, -0.0, 1e-6, -1e-6]
    got = np.asarray(getattr(xp, name)(xp.asarray(x)))
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64)).astype(np.float32)
    _check(name, got, want)


@pytest.mark.parametrize("name", sorted(EXACT_UNARY_F))
def test_unary_exact(xb, name):
    x = np.concatenate([_f(-100, 100, 200), np.float32([0.0, -0.0, 0.5, 1.5, 2.5, -0.5, -2.5, np.inf, -np.inf])])
    if name not in ("square",):
        x = np.concatenate([x, np.float32([np.nan])])
    got = np.asarray(getattr(xp, name)(xp.asarray(x)))
    want = EXACT_UNARY_F[name](x)
    np.testing.assert_array_equal(got, want, err_msg=name)
    if name in ("isnan", "isinf", "isfinite", "signbit", "sign"):
        return
    i = RNG.integers(-1000, 1000, 100).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(getattr(xp, name)(xp.asarray(i))), EXACT_UNARY_F[name](i), err_msg=name)


@pytest.mark.parametrize("name", sorted(BINARY_F))
def test_binary_float(xb, name):
    x, y = _f(-50, 50), _f(-50, 50)
    x[:6], y[:6] = [0.0, -0.0, 3.0, -7.0, 5.5, 1.0], [2.0, 3.0, 3.0, 2.0, -2.5, 1.0]
    got = np.asarray(getattr(xp, name)(xp.asarray(x), xp.asarray(y)))
    with np.errstate(all="ignore"):
        want = BINARY_F[name](x.astype(np.float64), y.astype(np.float64))
        if want.dtype == np.float64:
            want = want.astype(np.float32)
    if name == "nextafter":
        want = np.nextafter(x, y)
    _check(name, got, want)


@pytest.mark.parametrize("dtype", ["int32", "uint32"])
@pytest.mark.parametrize("name", sorted(BINARY_I))
def test_binary_int(xb, name, dtype):
    dt = np.dtype(dtype)
    lo = -1000 if dt.kind == "i" else 0
    x = RNG.integers(lo, 1000, N).astype(dt)
    y = RNG.integers(lo, 1000, N).astype(dt)
    y[:3] = [0, 7, 1]
    x[:3] = [5, 0 if dt.kind == "u" else -9, 3]
    got = np.asarray(getattr(xp, name)(xp.asarray(x), xp.asarray(y)))
    with np.errstate(all="ignore"):
        want = BINARY_I[name](x, y)
    np.testing.assert_array_equal(got, want, err_msg=name)


def test_shifts_and_invert(xb):
    x = RNG.integers(-2**31, 2**31 - 1, 200).astype(np.int32)
    s = RNG.integers(0, 40, 200).astype(np.int32)
    ax, asx = xp.asarray(x), xp.asarray(s)
    np.testing.assert_array_equal(np.asarray(ax << asx), np.where(s < 32, x << (s % 32), 0))
    np.testing.assert_array_equal(np.asarray(ax >> asx), np.where(s < 32, x >> (s % 32), np.where(x < 0, -1, 0)))
    np.testing.assert_array_equal(np.asarray(~ax), ~x)
    u = x.view(np.uint32)
    np.testing.assert_array_equal(np.asarray(xp.bitwise_invert(xp.asarray(u))), ~u)


def test_logical_where_clip_pow_astype(xb):
    a = RNG.integers(0, 2, 100).astype(bool)
    b = RNG.integers(0, 2, 100).astype(bool)
    aa, bb = xp.asarray(a), xp.asarray(b)
    for name, fn in [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                     ("logical_xor", np.logical_xor)]:
        np.testing.assert_array_equal(np.asarray(getattr(xp, name)(aa, bb)), fn(a, b))
    np.testing.assert_array_equal(np.asarray(xp.logical_not(aa)), ~a)
    x = _f(-5, 5, 100)
    ax = xp.asarray(x)
    np.testing.assert_array_equal(np.asarray(xp.where(aa, ax, -1.0)), np.where(a, x, np.float32(-1)))
    np.testing.assert_array_equal(np.asarray(xp.clip(ax, -1.0, 2.0)), np.clip(x, -1, 2))
    np.testing.assert_allclose(np.asarray(ax ** 3), x.astype(np.float64) ** 3, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(np.asarray(xp.abs(ax) ** 0.5), np.abs(x) ** 0.5, rtol=1e-5, atol=1e-6)
    i = RNG.integers(-10, 10, 100).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(xp.asarray(i) ** 3), i ** 3)
    np.testing.assert_array_equal(np.asarray(xp.astype(ax, xp.int32)), x.astype(np.int32))
    np.testing.assert_array_equal(np.asarray(xp.astype(ax, xp.bool)), x.astype(bool))
    np.testing.assert_array_equal(np.asarray(xp.astype(xp.asarray(i), xp.float32)), i.astype(np.float32))


SHAPES = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)
DTYPES = st.sampled_from(["int32", "uint32", "float32", "bool"])


@settings(max_examples=12, deadline=None)
@given(sa=SHAPES, sb=SHAPES, da=DTYPES, db=DTYPES, seed=st.integers(0, 2**16))
def test_broadcast_promotion_reference(ref_backend, sa, sb, da, db, seed):
    _broadcast_promotion(ref_backend, sa, sb, da, db, seed)


@settings(max_examples=8, deadline=None)
@given(sa=SHAPES, sb=SHAPES, da=DTYPES, db=DTYPES, seed=st.integers(0, 2**16))
def test_broadcast_promotion_gpu(gpu, sa, sb, da, db, seed):
    _broadcast_promotion(gpu, sa, sb, da, db, seed)


def _broadcast_promotion(backend, sa, sb, da, db, seed):
    """multiply/add/maximum over random broadcastable shapes and dtype pairs (bit-exact)."""
    try:
        shape = np.broadcast_shapes(sa, sb)
    except ValueError:
        return
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 50, sa).astype(da)
    b = rng.integers(0, 50, sb).astype(db)
    with vyre.use(backend):
        xa, xb_ = xp.asarray(a), xp.asarray(b)
        if "bool" in (da, db):
            got = np.asarray(xp.maximum(xa, xb_)) if da != "bool" or db != "bool" else None
            if got is None:
                return
            want_dt = np.dtype(db if da == "bool" else da)
            np.testing.assert_array_equal(got, np.maximum(a.astype(want_dt), b.astype(want_dt)))
            return
        dt = xp.result_type(xa, xb_)
        got = np.asarray(xa * xb_ + xa)
        want = a.astype(dt) * b.astype(dt) + a.astype(dt)
        assert got.shape == shape and got.dtype == dt
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(UNARY_F))
def test_unary_float16(xb, name):
    """float16: computed in f32, rounded once: within one f16 ulp (rtol 1e-3) of numpy's float64."""
    if not xb.capabilities().f16:
        skip_or_fail("no shader-f16")
    ref, (lo, hi) = UNARY_F[name]
    x = _f(max(lo, -10), min(hi, 10), 200).astype(np.float16)
    got = np.asarray(getattr(xp, name)(xp.asarray(x)))
    assert got.dtype == np.float16
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-3, atol=1e-3, err_msg=name)


def test_special_cases(xb):
    """Some of the standard's special cases (NaN propagation, signed zeros, infinities) where numpy agrees."""
    nan, inf = np.float32(np.nan), np.float32(np.inf)
    x = np.float32([nan, 1.0, -0.0, inf, -inf, 2.0, 0.0])
    y = np.float32([1.0, nan, 0.0, 1.0, inf, 0.0, -3.0])
    ax, ay = xp.asarray(x), xp.asarray(y)
    for name, fn in [("maximum", np.maximum), ("minimum", np.minimum), ("equal", np.equal),
                     ("not_equal", np.not_equal), ("less", np.less), ("greater_equal", np.greater_equal),
                     ("copysign", np.copysign), ("hypot", np.hypot), ("atan2", np.arctan2)]:
        with np.errstate(all="ignore"):
            want = fn(x, y)
        np.testing.assert_allclose(np.asarray(getattr(xp, name)(ax, ay)), want, rtol=4e-6, err_msg=name)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(np.asarray(ax / ay)[5:], (x / y)[5:])
        np.testing.assert_array_equal(np.signbit(np.asarray(xp.remainder(ax, ay))[6:]), [True])
    np.testing.assert_array_equal(np.asarray(xp.sign(ax)), np.sign(x))
