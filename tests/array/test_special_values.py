"""Every float function of the namespace at NaN, +-inf, +-0 and ordinary values, on both backends, against
numpy: where numpy gives NaN so does vyre, the same infinities, finite values within the function's
tolerance. (lavapipe once gave tanh(NaN) = -1, cosh(NaN) = 2.2e38 and 2.0 % inf = NaN: each was a clamp or a
formula that a special value slipped through.) Sizes 7 and 8: the scalar and the vec4 fused programs.

Where the array API standard and numpy differ, the standard (2023.12 / 2024.12 text) wins: floor_divide
with an infinite operand is x / y (inf // 2 = inf where numpy has NaN, 1 // -inf = -0 where numpy has -1),
sign(-0) = +0. sin/cos/tan reduce every finite argument exactly (float32 up to 3.4e38 within a few ulp of
numpy's float64 values, float64 against an exact reduction in Python fractions)."""

from __future__ import annotations

import numpy as np
import pytest

from vyre import array_api as xp
from vyre.array._kernels.trig import pi_fraction

from gpu_policy import skip_or_fail

SPECIAL = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 2.0, -3.0, 100.0, -100.0, 1e-30])
UNARY = ["abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos", "cosh", "exp", "expm1", "floor",
         "log", "log10", "log1p", "log2", "negative", "positive", "round", "sign", "sin", "sinh", "sqrt", "square",
         "tan", "tanh", "trunc", "reciprocal"]
BINARY = ["add", "subtract", "multiply", "divide", "atan2", "copysign", "floor_divide", "hypot", "logaddexp",
          "maximum", "minimum", "pow", "remainder"]
RTOL, ATOL = 2e-5, 1e-6  # the loosest of test_array_elementwise.py's float tolerances


def _agree(got: np.ndarray, want: np.ndarray, what: str) -> None:
    with np.errstate(over="ignore"):
        want = want.astype(np.float32)  # past float32's range: inf, as on the device
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what}: NaN where numpy has none")
    inf = np.isinf(want)
    np.testing.assert_array_equal(got[inf], want[inf], err_msg=f"{what}: infinities")
    fin = np.isfinite(want)
    np.testing.assert_allclose(got[fin], want[fin], rtol=RTOL, atol=ATOL, err_msg=what)


@pytest.mark.parametrize("n", [7, 8])
@pytest.mark.parametrize("name", UNARY)
def test_unary_special_values(xb, name, n):
    x = np.resize(SPECIAL, n) if n == 8 else SPECIAL[[0, 1, 2, 3, 4, 5, 7]]
    for xs in (x, np.roll(SPECIAL, 3)[:n]):
        with np.errstate(all="ignore"):
            want = getattr(np, name)(xs.astype(np.float64))
        _agree(np.asarray(getattr(xp, name)(xp.asarray(xs))), want, f"{name}{xs.tolist()}")


@pytest.mark.parametrize("name", BINARY)
def test_binary_special_values(xb, name):
    """Every pair of special values (144 pairs: a multiple of 4, so the vec4 program)."""
    x, y = (a.ravel() for a in np.meshgrid(SPECIAL, SPECIAL))
    with np.errstate(all="ignore"):
        want = getattr(np, name if name != "pow" else "power")(x.astype(np.float64), y.astype(np.float64))
        if name == "floor_divide":
            want = _floor_divide_standard(x.astype(np.float64), y.astype(np.float64))
    _agree(np.asarray(getattr(xp, name)(xp.asarray(x), xp.asarray(y))), want, name)


def _floor_divide_standard(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The standard's floor_divide: numpy's, except that an infinite operand gives x / y."""
    with np.errstate(all="ignore"):
        return np.where(np.isinf(x) | np.isinf(y), x / y, np.floor_divide(x, y))


# (x, y, x // y) from the standard's list of special cases (signed zeros compared by their sign bit)
FLOOR_DIVIDE_CASES = [
    (np.inf, 2.0, np.inf), (np.inf, -2.0, -np.inf), (-np.inf, 2.0, -np.inf), (-np.inf, -2.0, np.inf),
    (3.0, np.inf, 0.0), (3.0, -np.inf, -0.0), (-3.0, np.inf, -0.0), (-3.0, -np.inf, 0.0),
    (np.inf, np.inf, np.nan), (-np.inf, np.inf, np.nan), (0.0, 0.0, np.nan), (-0.0, 0.0, np.nan),
    (0.0, 2.0, 0.0), (-0.0, 2.0, -0.0), (0.0, -2.0, -0.0), (-0.0, -2.0, 0.0),
    (1.0, 0.0, np.inf), (1.0, -0.0, -np.inf), (-1.0, 0.0, -np.inf), (-1.0, -0.0, np.inf),
    (np.nan, 1.0, np.nan), (1.0, np.nan, np.nan), (7.0, 2.0, 3.0), (-7.0, 2.0, -4.0), (0.5, 2.0, 0.0),
    (-0.5, 2.0, -1.0), (7.0, -2.0, -4.0), (-7.0, -2.0, 3.0),
]


def _same_bits(got: np.ndarray, want: np.ndarray, what: str) -> None:
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=what)
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok], err_msg=what)
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]), err_msg=f"{what}: sign of zero")


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_floor_divide_standard_cases(xb, dt):
    if dt not in xp.__array_namespace_info__().dtypes(device=xb):
        skip_or_fail("no float64 on this device (tests/array/test_float64.py covers the refusal)")
    x, y, want = (np.array(c, dtype=dt) for c in zip(*FLOOR_DIVIDE_CASES))
    for n in (len(x), 8):  # the scalar program, and 8 elements (a multiple of 4: the vec4 one)
        _same_bits(np.asarray(xp.asarray(x[:n]) // xp.asarray(y[:n])), want[:n], f"{dt} //")
        _same_bits(np.asarray(xp.floor_divide(xp.asarray(x[:n]), float(y[0]))), np.array(
            _floor_divide_standard(x[:n].astype(np.float64), np.float64(y[0])), dt), f"{dt} // scalar")
    np.testing.assert_array_equal(_floor_divide_standard(x.astype(np.float64), y.astype(np.float64)), want)


@pytest.mark.parametrize("dt", ["float16", "float32", "float64"])
def test_sign_of_zero_is_plus_zero(xb, dt):
    if dt not in xp.__array_namespace_info__().dtypes(device=xb) and not (dt == "float16" and xb.capabilities().f16):
        skip_or_fail(f"no {dt} on this device")
    x = np.array([-0.0, 0.0, -2.0, 3.0, np.nan, -np.inf, np.inf, -1e-3] * 2, dtype=dt)
    _same_bits(np.asarray(xp.sign(xp.asarray(x))), np.array([0.0, 0.0, -1, 1, np.nan, -1, 1, -1] * 2, dt), dt)


def _ulps32(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return np.abs(got.astype(np.float64) - want) / np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)


TRIG_ULPS = {"sin": 3, "cos": 3, "tan": 5}  # float32: measured 2.4 / 2.4 / 4.4 on near-multiples of pi/2


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_trig_large_arguments_float32(xb, name):
    rng = np.random.default_rng(3)
    k = np.concatenate([np.arange(1, 400), rng.integers(1, 2**40, 400)]).astype(np.float64)
    near = (k * np.pi / 2).astype(np.float32)  # the hardest: the reduced argument cancels
    x = np.concatenate([near, np.nextafter(near, np.float32(0)), 10.0 ** rng.uniform(-3, 38.5, 600),
                        rng.uniform(-5000, 5000, 200), [1.44e8, 1e30, 3.4e38, 4096, 4097, 8192 * np.pi]])
    x = x.astype(np.float32)
    x = x[np.isfinite(x)] * np.where(rng.random(np.isfinite(x).sum()) < 0.5, -1, 1).astype(np.float32)
    got = np.asarray(getattr(xp, name)(xp.asarray(x)))
    want = getattr(np, name)(x.astype(np.float64))
    err = _ulps32(got, want)
    assert err.max() <= TRIG_ULPS[name], (x[np.argmax(err)], got[np.argmax(err)], want[np.argmax(err)])
    assert abs(float(xp.cos(xp.asarray(np.float32(1.44e8)))) - 0.34011456) < 1e-6  # the example


def _exact_trig(name: str, x: float) -> float:
    """sin/cos/tan of a double through an exact reduction (pi to 1300 bits), then math on [-pi/4, pi/4]."""
    import math
    from fractions import Fraction

    pio2 = pi_fraction(1300) / 2
    q = math.floor(Fraction(abs(x)) / pio2 + Fraction(1, 2))
    r = Fraction(abs(x)) - q * pio2
    hi = float(r)
    lo = float(r - Fraction(hi))
    s, c = math.sin(hi) + lo * math.cos(hi), math.cos(hi) - lo * math.sin(hi)
    sign = -1.0 if x < 0 else 1.0
    v = {"sin": [s, c, -s, -c][q % 4] * sign, "cos": [c, -s, -c, s][q % 4],
         "tan": (s / c if q % 2 == 0 else -c / s) * sign}[name]
    return v


@pytest.mark.parametrize("name", ["sin", "cos", "tan"])
def test_trig_large_arguments_float64(xb, name):
    if "float64" not in xp.__array_namespace_info__().dtypes(device=xb):
        skip_or_fail("no float64 on this device (tests/array/test_float64.py covers the refusal)")
    rng = np.random.default_rng(4)
    x = np.concatenate([10.0 ** rng.uniform(-3, 308, 60) * rng.choice([-1, 1], 60),
                        np.arange(1, 20) * np.pi / 2, rng.uniform(-2e6, 2e6, 20),
                        [6381956970095103 * 2.0 ** 797, 1.44e8, 1e22, 1.7e308, 2.0 ** 20, 2.0 ** 20 + 1]])
    got = np.asarray(getattr(xp, name)(xp.asarray(x)))
    want = np.array([_exact_trig(name, v) for v in x])
    err = np.abs(got - want) / np.spacing(np.abs(want))
    # 1 ulp of slack for the reference itself (math.sin/cos of the rounded reduced argument)
    assert err.max() <= {"sin": 3, "cos": 3, "tan": 4}[name], (x[np.argmax(err)], got[np.argmax(err)])
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0])
    out = np.asarray(getattr(xp, name)(xp.asarray(special)))
    assert np.isnan(out[:3]).all() and (out[3:] == (1.0 if name == "cos" else 0.0)).all()
    assert name == "cos" or np.signbit(out[4])  # sin(-0) = tan(-0) = -0
