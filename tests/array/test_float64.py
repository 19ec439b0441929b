"""float64, int64 and uint64 arrays on both backends against numpy (lavapipe has shader-f64 and shader-int64).

Tolerances, in ulp of numpy's float64 result: arithmetic, rounding, comparisons, bit tests, min/max exactly;
exp/log/log2/exp2 1 ulp, sin/cos 2 (|x| <= 1e4 here), tan 3, tanh 6, the float_math64 functions (expm1,
log1p, atan ...) 4 ulp, pow (2 + 1.5 |y ln x|) ulp (see vyre/lower/templates/wide.wgsl.j2). Sums and means
of float64 are a fixed-order tree in f64: rtol 1e-13 against numpy's pairwise sum. Integers bit-exact
(wrapping like numpy's int64/uint64).
"""

from __future__ import annotations

import numpy as np
import pytest

import vyre.array as xp
from vyre.errors import UnsupportedDTypeError

rng = np.random.default_rng(640)
X = np.concatenate([rng.standard_normal(60) * 3, [0.0, -0.0, 1e-300, -2.5, 0.5, 1e10, -1e10, 7.0]])
POS = np.abs(X) + 1e-3
UNIT = np.clip(X / 10, -0.999, 0.999)
TRIG = X  # every finite argument (exact reduction; past 1e10: tests/array/test_special_values.py)


def _ulps(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.dtype == want.dtype == np.float64, (got.dtype, want.dtype)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    fin = np.isfinite(got) & np.isfinite(want) & ~same
    assert (same | fin).all(), (got[~(same | fin)], want[~(same | fin)])
    d = np.abs(got[fin] - want[fin]) / np.spacing(np.maximum(np.abs(want[fin]), 2.0**-1022))
    return float(d.max()) if d.size else 0.0


UNARY = {  # name: (input, ulps)
    "negative": (X, 0), "positive": (X, 0), "abs": (X, 0), "square": (X, 0), "sign": (X, 0), "reciprocal": (X, 0),
    "floor": (X, 0), "ceil": (X, 0), "trunc": (X, 0), "round": (X * 3.5, 0), "sqrt": (POS, 0),
    "exp": (X, 1), "expm1": (X, 4), "log": (POS, 1), "log1p": (POS - 0.9, 4), "log2": (POS, 1), "log10": (POS, 2),
    "sin": (TRIG, 2), "cos": (TRIG, 2), "tan": (TRIG, 3), "asin": (UNIT, 4), "acos": (UNIT, 4), "atan": (X, 4),
    "sinh": (X / 3, 4), "cosh": (X / 3, 4), "tanh": (X, 6), "asinh": (X, 4), "acosh": (POS + 1, 4),
    "atanh": (UNIT, 4),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_float64(xb, name):
    data, ulps = UNARY[name]
    got = getattr(xp, name)(xp.asarray(data))
    assert got.dtype == xp.float64
    with np.errstate(all="ignore"):
        want = getattr(np, {"asin": "arcsin", "acos": "arccos", "atan": "arctan", "asinh": "arcsinh",
                            "acosh": "arccosh", "atanh": "arctanh", "round": "rint"}.get(name, name))(data)
    assert _ulps(np.asarray(got), want) <= ulps


Y = np.concatenate([rng.standard_normal(60) * 2, [1.0, -1.0, 3.0, 0.25, -0.0, 2.0, 1e-5, -7.0]])
BINARY = {  # name: (numpy name, x, y, ulps)
    "add": ("add", X, Y, 0), "subtract": ("subtract", X, Y, 0), "multiply": ("multiply", X, Y, 0),
    "divide": ("divide", X, Y, 0), "maximum": ("maximum", X, Y, 0), "minimum": ("minimum", X, Y, 0),
    "floor_divide": ("floor_divide", X, Y, 0), "remainder": ("remainder", X, Y, 0),
    "copysign": ("copysign", X, Y, 0), "nextafter": ("nextafter", X, Y, 0),
    "atan2": ("arctan2", X, Y, 4), "hypot": ("hypot", X, Y, 1), "logaddexp": ("logaddexp", X, Y, 4),
    "pow": ("power", POS, Y, None),
}


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_float64(xb, name):
    np_name, a, c, ulps = BINARY[name]
    got = np.asarray(getattr(xp, name)(xp.asarray(a), xp.asarray(c)))
    with np.errstate(all="ignore"):
        want = getattr(np, np_name)(a, c)
    err = _ulps(got, want)
    if ulps is None:  # pow
        assert err <= 2 + 1.5 * np.max(np.abs(c * np.log(a)))
    else:
        assert err <= ulps


@pytest.mark.parametrize("name", ["equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
                                  "isnan", "isinf", "isfinite", "signbit"])
def test_float64_predicates(xb, name):
    a = np.concatenate([X, [np.nan, np.inf, -np.inf, -0.0]])
    c = np.concatenate([Y, [1.0, np.inf, 0.0, 0.0]])
    c[:5] = a[:5]
    fn = getattr(xp, name)
    if name.startswith("is") or name == "signbit":
        got, want = fn(xp.asarray(a)), getattr(np, name)(a)
    else:
        got, want = fn(xp.asarray(a), xp.asarray(c)), getattr(np, name)(a, c)
    assert np.array_equal(np.asarray(got), want)


I64 = np.array([5, -7, -(2**63), 2**62, 3, -1, 0, 123456789012345, 2**63 - 1, -(2**53 + 1), 17, -3], dtype=np.int64)
I64B = np.array([2, 2, -1, 3, 1, -1, 5, -7, 2, 65, 4, 63], dtype=np.int64)


@pytest.mark.parametrize("dt", [np.int64, np.uint64])
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "floor_divide", "remainder", "maximum", "minimum",
                                  "bitwise_and", "bitwise_or", "bitwise_xor", "equal", "less", "greater_equal"])
def test_binary_int64_bit_exact(xb, dt, name):
    a, c = I64.astype(dt), I64B.astype(dt)
    got = getattr(xp, name)(xp.asarray(a), xp.asarray(c))
    with np.errstate(all="ignore"):
        want = getattr(np, name)(a, c)
    assert got.dtype == want.dtype and np.array_equal(np.asarray(got), want)


@pytest.mark.parametrize("dt", [np.int64, np.uint64])
def test_int64_shifts_pow_and_unary(xb, dt):
    a = I64.astype(dt)
    s = np.array([0, 1, 63, 64, 3, 70, 2, 5, 1, 0, 62, 7], dtype=dt)
    x = xp.asarray(a)
    with np.errstate(all="ignore"):
        assert np.array_equal(np.asarray(xp.bitwise_left_shift(x, xp.asarray(s))),
                              np.where(s >= 64, dt(0), np.left_shift(a, s % 64)))
        fill = np.where(a < 0, dt(-1) if dt == np.int64 else dt(0), dt(0))
        want_r = np.where(s >= 64, fill, np.right_shift(a, s % 64))
        assert np.array_equal(np.asarray(xp.bitwise_right_shift(x, xp.asarray(s))), want_r)
        e = np.array([0, 1, 2, 3, 5, 10, 63, 64, 1, 0, 7, 2], dtype=dt)
        assert np.array_equal(np.asarray(xp.pow(x, xp.asarray(e))), np.power(a, e))
        assert np.array_equal(np.asarray(xp.bitwise_invert(x)), ~a)
        assert np.array_equal(np.asarray(-x), -a) and np.array_equal(np.asarray(xp.abs(x)), np.abs(a))
        assert np.array_equal(np.asarray(xp.sign(x)), np.sign(a))
        assert np.array_equal(np.asarray(x * 3 + 2**40), a * dt(3) + dt(2**40))


def test_promotion_table(xb):
    f64, i64, u64 = xp.float64, xp.int64, xp.uint64
    table = [(xp.int32, i64, i64), (xp.uint32, i64, i64), (xp.uint32, u64, u64), (xp.float32, f64, f64),
             (xp.float16, f64, f64), (i64, u64, i64), (xp.int32, u64, i64), (i64, xp.float32, xp.float32),
             (xp.bool, u64, u64), (i64, f64, f64)]
    for a, c, want in table:
        assert xp.result_type(a, c) == want and xp.result_type(c, a) == want, (a, c)
        x, y = xp.ones(2, dtype=a), xp.ones(2, dtype=c)
        assert (x + y).dtype == want
    assert xp.can_cast(xp.int32, i64) and xp.can_cast(xp.uint32, i64) and xp.can_cast(xp.float32, f64)
    assert not xp.can_cast(i64, xp.int32) and not xp.can_cast(f64, xp.float32) and not xp.can_cast(u64, i64)
    assert (xp.asarray(X) * 2.5).dtype == f64 and (xp.asarray(I64) + 1).dtype == i64
    assert xp.finfo(f64).eps == np.finfo(np.float64).eps and xp.iinfo(u64).max == 2**64 - 1


def test_asarray_round_trips_and_creation(xb):
    for a in (X, I64, I64.view(np.uint64)):
        x = xp.asarray(a)
        assert x.dtype == a.dtype and np.asarray(x).tobytes() == a.tobytes()
    assert np.asarray(xp.asarray([2**40, -1], dtype=xp.int64)).tolist() == [2**40, -1]
    assert np.asarray(xp.asarray([2**64 - 1], dtype=xp.uint64)).tolist() == [2**64 - 1]
    with pytest.raises(UnsupportedDTypeError, match="out of the range"):
        xp.asarray([2**63], dtype=xp.int64)
    assert np.asarray(xp.asarray([0.1, 2], dtype=xp.float64)).tolist() == [0.1, 2.0]
    assert np.array_equal(np.asarray(xp.arange(0, 1, 0.1, dtype=xp.float64)), np.arange(0, 1, 0.1))
    assert np.array_equal(np.asarray(xp.linspace(0, 1, 7, dtype=xp.float64)), np.linspace(0, 1, 7))
    assert np.asarray(xp.full((2,), 2**50, dtype=xp.int64)).tolist() == [2**50, 2**50]
    assert np.asarray(xp.zeros(3, dtype=xp.uint64)).dtype == np.uint64
    assert xp.eye(2, dtype=xp.float64).dtype == xp.float64
    assert np.asarray(xp.arange(2**40, 2**40 + 3, dtype=xp.int64)).tolist() == [2**40, 2**40 + 1, 2**40 + 2]


@pytest.mark.parametrize("src", [np.float64, np.int64, np.uint64, np.float32, np.int32, np.float16])
def test_astype(xb, src):
    with np.errstate(all="ignore"):  # 3e9 does not fit int32 or float16: numpy's cast is the input here
        a = np.array([1.5, -2.7, 3e9, 0.0, 7.0, -0.0, 2**53 + 2.0, 65.5]).astype(src) if src != np.uint64 else \
            I64.view(np.uint64)
    x = xp.asarray(a)
    for dst in (np.float64, np.int64, np.uint64, np.float32, np.int32, np.uint32, np.bool_, np.float16):
        if not ({np.dtype(src), np.dtype(dst)} & {np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.uint64)}):
            continue
        got = np.asarray(xp.astype(x, dst))
        with np.errstate(all="ignore"):
            want = a.astype(dst) if not (np.dtype(src).kind == "f" and np.dtype(dst).kind in "iu") else None
        if want is None:  # float -> int: truncate, saturate (vyre's rule; numpy's overflow is undefined)
            info = np.iinfo(dst)
            t = np.trunc(a.astype(np.float64))
            want = np.array([info.max if v >= info.max + 1.0 else info.min if v <= info.min else int(v)
                             for v in t.tolist()], dtype=dst)
        assert got.dtype == np.dtype(dst) and np.array_equal(got, want), (src, dst, got, want)


def test_reductions_float64(xb):
    a = rng.standard_normal((5, 300)) * 10 + 3
    x = xp.asarray(a)
    for name in ("sum", "prod", "mean", "var", "std", "min", "max"):
        for axis in (None, 0, 1):
            got = np.asarray(getattr(xp, name)(x, axis=axis))
            want = getattr(np, name)(a if name != "prod" else a / 10, axis=axis)
            if name == "prod":
                got = np.asarray(xp.prod(x / 10, axis=axis))
            assert got.dtype == np.float64
            np.testing.assert_allclose(got, want, rtol=1e-13 if name != "var" else 1e-12, atol=0)
    cs = np.asarray(xp.cumulative_sum(x, axis=1))
    np.testing.assert_allclose(cs, np.cumsum(a, axis=1), rtol=1e-12)
    assert int(xp.argmax(x[0])) == int(np.argmax(a[0])) and int(xp.argmin(x[:, 3])) == int(np.argmin(a[:, 3]))


@pytest.mark.parametrize("dt", [np.int64, np.uint64])
def test_reductions_int64_bit_exact(xb, dt):
    a = I64.astype(dt).reshape(3, 4)
    x = xp.asarray(a)
    with np.errstate(all="ignore"):
        for name in ("sum", "prod", "min", "max"):
            for axis in (None, 0, 1):
                got = np.asarray(getattr(xp, name)(x, axis=axis))
                want = getattr(np, name)(a, axis=axis)
                assert got.dtype == want.dtype and np.array_equal(got, want), (name, axis)
        assert np.array_equal(np.asarray(xp.cumulative_sum(x, axis=1)), np.cumsum(a, axis=1))
    assert xp.sum(xp.asarray([1, 2], dtype=xp.int32), dtype=xp.int64).dtype == xp.int64


def test_matmul_float64(xb):
    a, c = rng.standard_normal((7, 33)), rng.standard_normal((33, 5))
    got = np.asarray(xp.asarray(a) @ xp.asarray(c))
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, a @ c, rtol=1e-13, atol=1e-13)
    batch = rng.standard_normal((3, 4, 6))
    np.testing.assert_allclose(np.asarray(xp.matmul(xp.asarray(batch), xp.asarray(c[:6]))), batch @ c[:6],
                               rtol=1e-13, atol=1e-13)
    v = rng.standard_normal(33)
    np.testing.assert_allclose(np.asarray(xp.vecdot(xp.asarray(a), xp.asarray(v))), a @ v, rtol=1e-13, atol=1e-13)
    i = (np.arange(12, dtype=np.int64).reshape(3, 4) - 5) * 2**30
    assert np.array_equal(np.asarray(xp.asarray(i) @ xp.asarray(i.T)), i @ i.T)


def test_indexing_and_manipulation(xb):
    a = rng.standard_normal((4, 5))
    x = xp.asarray(a)
    assert np.array_equal(np.asarray(x[1:3, ::2]), a[1:3, ::2]) and float(x[2, 3]) == a[2, 3]
    idx = np.array([3, 0, 2, 2])
    assert np.array_equal(np.asarray(xp.take(x, xp.asarray(idx, dtype=xp.int32), axis=0)), a[idx])
    assert np.array_equal(np.asarray(x[x > 0]), a[a > 0])
    assert np.array_equal(np.asarray(xp.concat([x, x[:1]], axis=0)), np.concatenate([a, a[:1]]))
    assert np.array_equal(np.asarray(xp.permute_dims(x, (1, 0))), a.T)
    assert np.array_equal(np.asarray(xp.where(x > 0, x, xp.asarray(-1.0, dtype=xp.float64))), np.where(a > 0, a, -1))
    i = xp.asarray(I64)
    assert np.array_equal(np.asarray(xp.flip(i)), I64[::-1]) and int(i[2]) == -(2**63)
    assert np.array_equal(np.asarray(xp.clip(x, -0.5, 0.5)), np.clip(a, -0.5, 0.5))


def test_argmax_argmin_64bit(xb):
    a = np.concatenate([rng.standard_normal(40), [0.0, -0.0, 1e300, -1e300, 1e300]]).reshape(5, 9)
    x = xp.asarray(a)
    for fn in ("argmax", "argmin"):
        for axis in (None, 0, 1):
            assert np.array_equal(np.asarray(getattr(xp, fn)(x, axis=axis)), getattr(np, fn)(a, axis=axis))
    n = a.copy()
    n[2, 4] = n[3, 1] = np.nan
    assert int(xp.argmax(xp.asarray(n))) == int(np.argmax(n)) == int(xp.argmin(xp.asarray(n)))
    for dt in (np.int64, np.uint64):
        v = I64.astype(dt)
        assert int(xp.argmax(xp.asarray(v))) == int(np.argmax(v)) and int(xp.argmin(xp.asarray(v))) == int(np.argmin(v))


def test_sort_and_argsort_64bit(xb):
    """Two radix passes (low word, then high word): stable, numpy's order (NaN last, -0.0 == +0.0)."""
    a = np.concatenate([rng.standard_normal(300), [0.0, -0.0, np.inf, -np.inf, 1e300, -1e-300, np.nan, 5e-324]])
    rng.shuffle(a)
    x = xp.asarray(a)
    assert np.asarray(xp.sort(x)).tobytes() == np.sort(a, kind="stable").tobytes()
    assert np.array_equal(np.asarray(xp.argsort(x)), np.argsort(a, kind="stable"))
    assert np.array_equal(np.asarray(xp.sort(x, descending=True)), np.sort(a)[::-1], equal_nan=True)
    n = len(a)
    want_desc = n - 1 - np.argsort(a[::-1], kind="stable")[::-1]  # stable descending (flip, argsort, flip)
    assert np.array_equal(np.asarray(xp.argsort(x, descending=True)), want_desc)
    v = rng.integers(-(2**63), 2**63 - 1, 400, dtype=np.int64)
    v[:40] = v[40:80]  # ties: stability shows
    for w in (v, v.view(np.uint64)):
        assert np.array_equal(np.asarray(xp.argsort(xp.asarray(w))), np.argsort(w, kind="stable"))
        m = w.reshape(4, 100)
        assert np.array_equal(np.asarray(xp.sort(xp.asarray(m), axis=1)), np.sort(m, axis=1))
        assert np.array_equal(np.asarray(xp.argsort(xp.asarray(m), axis=0)), np.argsort(m, axis=0, kind="stable"))


def test_searchsorted_64bit(xb):
    s = np.sort(np.concatenate([rng.standard_normal(50), [0.0, 1e300, -np.inf, np.nan, 2.0, 2.0]]))
    q = np.array([0.0, -0.0, 1e301, -5.0, 0.5, 2.0, np.nan, np.inf, -np.inf])
    for side in ("left", "right"):
        got = xp.searchsorted(xp.asarray(s), xp.asarray(q), side=side)
        assert np.array_equal(np.asarray(got), np.searchsorted(s, q, side=side)), side
    v = np.sort(I64)
    w = np.array([-(2**63), 0, 2**62, 2**63 - 1, 5, -8], dtype=np.int64)
    assert np.array_equal(np.asarray(xp.searchsorted(xp.asarray(v), xp.asarray(w))), np.searchsorted(v, w))
    order = np.argsort(I64, kind="stable").astype(np.int32)
    got = xp.searchsorted(xp.asarray(I64), xp.asarray(w), sorter=xp.asarray(order))
    assert np.array_equal(np.asarray(got), np.searchsorted(I64, w, sorter=order))


def test_unique_64bit(xb):
    a = np.array([3.0, 1.0, -0.0, 0.0, np.nan, 3.0, 1e300, np.nan, -np.inf, 1.0])
    r = xp.unique_all(xp.asarray(a))
    want = np.unique_all(a) if hasattr(np, "unique_all") else None
    vals = np.asarray(r.values)
    assert np.array_equal(vals, [-np.inf, 0.0, 1.0, 3.0, 1e300, np.nan, np.nan], equal_nan=True)
    assert np.array_equal(np.asarray(r.counts), [1, 2, 2, 2, 1, 1, 1])
    assert np.array_equal(vals[np.asarray(r.inverse_indices)], a, equal_nan=True)
    assert np.array_equal(a[np.asarray(r.indices)], vals, equal_nan=True)
    assert want is None or np.array_equal(np.asarray(r.counts), want.counts)
    for dt in (np.int64, np.uint64):
        v = np.concatenate([I64, I64[:5]]).astype(dt)
        u, c = xp.unique_counts(xp.asarray(v))
        wu, wc = np.unique(v, return_counts=True)
        assert np.array_equal(np.asarray(u), wu) and np.array_equal(np.asarray(c), wc)


def test_namespace_info_reports_the_device(xb):
    info = xp.__array_namespace_info__()
    names = info.dtypes(device=xb)
    assert {"float64", "int64", "uint64"} <= set(names)
    assert sorted(info.dtypes(device=xb, kind="real floating")) == ["float32", "float64"]  # float16: no standard name
    assert sorted(info.dtypes(device=xb, kind="signed integer")) == ["int32", "int64"]
    assert info.default_dtypes(device=xb) == {"real floating": xp.float32, "complex floating": xp.complex64,
                                              "integral": xp.int32, "indexing": xp.int32}


class _No64:
    """The session's reference backend without shader-f64 / shader-int64 (a device lacking them)."""

    def __init__(self, inner):
        self._inner = inner

    def capabilities(self):
        import dataclasses

        return dataclasses.replace(self._inner.capabilities(), f64=False, int64=False)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def test_missing_feature_is_a_typed_error_before_gpu_work(ref_backend, monkeypatch):
    from vyre.array import _device

    dev = _No64(ref_backend)
    monkeypatch.setattr(_device, "check_backend", lambda d, what="device": d)
    for make, feature in ((lambda: xp.asarray(X, device=dev), "shader-f64"),
                          (lambda: xp.zeros(3, dtype=xp.int64, device=dev), "shader-int64"),
                          (lambda: xp.asarray([1.0], dtype=xp.float64, device=dev), "shader-f64"),
                          (lambda: xp.astype(xp.ones(2, device=dev), xp.uint64), "shader-int64")):
        with pytest.raises(UnsupportedDTypeError, match=feature) as info:
            make()
        assert "float32" in str(info.value) or "int32" in str(info.value)
    assert "float64" not in xp.__array_namespace_info__().dtypes(device=dev)
    assert sorted(xp.__array_namespace_info__().dtypes(device=dev, kind="integral")) == ["int32", "uint32"]


def test_int32_widened_to_int64_keeps_its_sign_in_fused_arithmetic(xb):
    """An int32 operand promoted to int64 inside a fused kernel: naga's i64(i32) compared as zero-extended on
    lavapipe (int64 // int32 floored 1 // -2 to 0); the lowering now sign-extends by hand."""
    a = np.array([1, -1, 7, -7, 5, 0, 9, 2**40, -2**40], np.int64)
    b = np.array([-2, 2, -2, 2, 3, -3, -4, -2**31, 2**31 - 1], np.int32)
    x, y = xp.asarray(a), xp.asarray(b)
    assert np.array_equal(np.asarray(x // y), a // b)
    assert np.array_equal(np.asarray(x % y), a % b)
    assert np.array_equal(np.asarray(xp.astype(y, xp.int64) < 0), b < 0)
    assert np.array_equal(np.asarray(xp.astype(y, xp.uint64)), b.astype(np.uint64))
    assert np.array_equal(np.asarray(xp.astype(y, xp.int64) >> 63), (b.astype(np.int64) >> 63))


@pytest.mark.parametrize("dt", [np.int64, np.uint64, np.float64])
def test_empty_64bit_arrays_download(xb, dt):
    for shape in [(0,), (2, 0, 3)]:
        got = np.asarray(xp.asarray(np.zeros(shape, dt)))
        assert got.shape == shape and got.dtype == dt
