"""Every float function of the namespace at NaN, +-inf, +-0 and ordinary values, on both backends, against
numpy: where numpy gives NaN so does vyre, the same infinities, finite values within the function's
tolerance. (lavapipe once gave tanh(NaN) = -1, cosh(NaN) = 2.2e38 and 2.0 % inf = NaN: each was a clamp or a
formula that a special value slipped through.) Sizes 7 and 8: the scalar and the vec4 fused programs."""

from __future__ import annotations

import numpy as np
import pytest

from vyre import array_api as xp

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
    _agree(np.asarray(getattr(xp, name)(xp.asarray(x), xp.asarray(y))), want, name)
