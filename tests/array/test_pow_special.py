"""``pow`` at IEEE's special values: WGSL's ``pow`` is ``exp2(y log2 x)``, undefined for x = 0, x = inf,
and NaN for 1^inf, so the array op sets those values itself. Compared with numpy bit for bit (value and
sign; any NaN matches NaN) over every pair of special and ordinary values, on both backends."""

from __future__ import annotations

import numpy as np

import vyre.array as xp

VALS = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, np.inf, -np.inf, np.nan], np.float32)


def test_pow_special_values_match_numpy(xb):
    x, y = np.meshgrid(VALS, VALS)
    with np.errstate(all="ignore"):
        want = np.power(x, y)
    got = np.asarray(xp.asarray(x) ** xp.asarray(y))
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), (x[np.isnan(got) != nan], y[np.isnan(got) != nan])
    close = np.isclose(got[~nan], want[~nan], rtol=2e-6, atol=0) & (np.signbit(got[~nan]) == np.signbit(want[~nan]))
    assert close.all(), list(zip(x[~nan][~close], y[~nan][~close], got[~nan][~close], want[~nan][~close]))


def test_pow_scalar_exponents(xb):
    a = np.array([0.0, -0.0, 4.0, np.inf], np.float32)
    with np.errstate(all="ignore"):
        assert np.array_equal(np.asarray(xp.asarray(a) ** -1.0), a ** np.float32(-1.0))
        assert np.array_equal(np.asarray(xp.asarray(a) ** 0.5), a ** np.float32(0.5))
