"""The elementwise rules against central finite differences of float64 numpy (tests/autograd/fdcheck.py),
on the reference backend and the GPU. Tolerances: rtol 1e-3, atol 1e-4 unless a case says otherwise
(float32 forward and backward against a float64 difference quotient); inputs are drawn inside each
function's domain and away from its kinks (abs, maximum, clip are tested off their ties; the tie rules
have tests of their own)."""

from __future__ import annotations

import numpy as np
import pytest
from fdcheck import check
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import mutually_broadcastable_shapes

import vyre.array as xp
import vyre.autograd as ag

F = xp  # the namespace (its float functions are looked up by name below)

# name -> (numpy function, low, high): inputs uniform in [low, high]
UNARY = {
    "negative": (np.negative, -2, 2), "positive": (np.positive, -2, 2), "square": (np.square, -2, 2),
    "reciprocal": (np.reciprocal, 0.5, 2), "sqrt": (np.sqrt, 0.3, 3), "exp": (np.exp, -2, 2),
    "expm1": (np.expm1, -2, 2), "log": (np.log, 0.3, 3), "log1p": (np.log1p, -0.5, 2), "log2": (np.log2, 0.3, 3),
    "log10": (np.log10, 0.3, 3), "sin": (np.sin, -3, 3), "cos": (np.cos, -3, 3), "tan": (np.tan, -1.2, 1.2),
    "tanh": (np.tanh, -2, 2), "sinh": (np.sinh, -2, 2), "cosh": (np.cosh, -2, 2), "asin": (np.arcsin, -0.8, 0.8),
    "acos": (np.arccos, -0.8, 0.8), "atan": (np.arctan, -3, 3), "asinh": (np.arcsinh, -3, 3),
    "acosh": (np.arccosh, 1.3, 4), "atanh": (np.arctanh, -0.8, 0.8), "abs": (np.abs, 0.2, 2),
}

# name -> (numpy function, low, high)
BINARY = {
    "add": (np.add, -2, 2), "subtract": (np.subtract, -2, 2), "multiply": (np.multiply, -2, 2),
    "divide": (np.divide, 0.5, 2), "pow": (np.power, 0.5, 2), "atan2": (np.arctan2, 0.3, 2),
    "hypot": (np.hypot, 0.3, 2), "logaddexp": (np.logaddexp, -2, 2), "maximum": (np.maximum, -2, 2),
    "minimum": (np.minimum, -2, 2), "copysign": (np.copysign, -2, 2),
}


def _rand(rng, shape, lo, hi, away_from_zero=False):
    x = rng.uniform(lo, hi, shape)
    if away_from_zero:  # copysign and abs are kinked at 0
        x = np.where(np.abs(x) < 0.2, 0.2 * np.sign(x + 1e-9), x)
    return x.astype(np.float32)


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_rule(be, name):
    f_np, lo, hi = UNARY[name]
    rng = np.random.default_rng(abs(hash(name)) % 2**32)
    x = _rand(rng, (2, 3), lo, hi)
    fn = getattr(F, name)
    check(be, lambda a: fn(a), f_np, [x], rtol=2e-3, atol=1e-4)


@pytest.mark.parametrize("name", sorted(BINARY))
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shapes=mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=3),
       seed=st.integers(0, 2**16))
def test_binary_rule_broadcast(be, name, shapes, seed):
    """Gradients summed back over broadcast axes, for every binary rule."""
    f_np, lo, hi = BINARY[name]
    rng = np.random.default_rng(seed)
    s1, s2 = shapes.input_shapes
    x1 = _rand(rng, s1, lo, hi, name == "copysign")
    x2 = _rand(rng, s2, lo, hi, name == "copysign")
    if name in ("maximum", "minimum"):  # no ties: x1 on k + 0.25, x2 on k + 0.75 (every pair 0.5 apart)
        x1 = (rng.integers(-2, 2, s1) + 0.25).astype(np.float32)
        x2 = (rng.integers(-2, 2, s2) + 0.75).astype(np.float32)
    fn = getattr(F, name)
    check(be, lambda a, b: fn(a, b), f_np, [x1, x2], rtol=2e-3, atol=1e-4, seed=seed)


@pytest.mark.parametrize("scalar_side", ["left", "right"])
def test_python_scalar_operands(be, scalar_side):
    """A Python scalar operand gets no gradient; the array's is right (pow both ways, divide, subtract)."""
    x = np.array([0.5, 1.5, 2.0], dtype=np.float32)
    if scalar_side == "right":
        check(be, lambda a: a ** 3 + a / 2.0 - 1.0, lambda a: a ** 3 + a / 2.0 - 1.0, [x])
    else:
        check(be, lambda a: 2.0 ** a + 3.0 / a - (1.0 - a), lambda a: 2.0 ** a + 3.0 / a - (1.0 - a), [x])


def test_pow_at_zero(be):
    """x ** 0 has gradient 0 at x = 0 (not NaN); 0 ** y has gradient 0 with respect to y."""
    with xp.use(be):
        x = xp.asarray([0.0, 2.0])
        y = xp.asarray([0.0, 3.0])
        with ag.GradientTape() as t:
            out = xp.sum(x ** y)
        gx, gy = t.gradient(out, [x, y])
        np.testing.assert_allclose(np.asarray(gx), [0.0, 12.0], rtol=1e-6)
        np.testing.assert_allclose(np.asarray(gy), [0.0, 8 * np.log(2)], rtol=1e-5)


def test_clip_rule(be):
    """x gets the gradient inside [min, max] (at a bound too), array bounds where x is outside them."""
    x = np.array([-2.0, -0.5, 0.0, 0.7, 3.0], dtype=np.float32)
    lo = np.array([-1.0, -1.0, -1.0, -1.0, -1.0], dtype=np.float32)
    check(be, lambda a: xp.clip(a, -1.0, 1.0), lambda a: np.clip(a, -1.0, 1.0), [x])
    check(be, lambda a, b: xp.clip(a, b, 1.0), lambda a, b: np.clip(a, b, 1.0), [x, lo])
    check(be, lambda a, b: xp.clip(a, max=b), lambda a, b: np.minimum(a, b), [x, -lo])
    with xp.use(be):
        a = xp.asarray([-1.0, 1.0, 0.5])
        with ag.GradientTape() as t:
            out = xp.sum(xp.clip(a, -1.0, 1.0))
        np.testing.assert_array_equal(np.asarray(t.gradient(out, a)), [1.0, 1.0, 1.0])  # at the bounds: x's


def test_where_rule(be):
    x1 = np.array([[0.5, -1.0, 2.0]], dtype=np.float32)
    x2 = np.array([[1.0], [2.0]], dtype=np.float32)
    check(be, lambda a, b: xp.where(a > 0, a * 2, b), lambda a, b: np.where(a > 0, a * 2, b), [x1, x2])


def test_tie_rules(be):
    """maximum/minimum at a tie: the gradient split equally (0.5 each)."""
    with xp.use(be):
        a = xp.asarray([1.0, 2.0, 3.0])
        b = xp.asarray([1.0, 1.0, 4.0])
        with ag.GradientTape(persistent=True) as t:
            hi = xp.sum(xp.maximum(a, b))
            lo = xp.sum(xp.minimum(a, b))
        ga, gb = t.gradient(hi, [a, b])
        np.testing.assert_array_equal(np.asarray(ga), [0.5, 1.0, 0.0])
        np.testing.assert_array_equal(np.asarray(gb), [0.5, 0.0, 1.0])
        ga, gb = t.gradient(lo, [a, b])
        np.testing.assert_array_equal(np.asarray(ga), [0.5, 0.0, 1.0])
        np.testing.assert_array_equal(np.asarray(gb), [0.5, 1.0, 0.0])


def test_astype_and_zero_gradient_functions(be):
    """float -> float passes the gradient (float16 where the device has it); floor/round/sign and
    astype to int give none (zeros), abs's gradient at 0 is 0."""
    with xp.use(be):
        x = xp.asarray([0.5, -1.25, 2.0, 0.0])
        with ag.GradientTape() as t:
            y = xp.sum(xp.astype(x * 3.0, xp.float32) + xp.floor(x) + xp.sign(x) + xp.round(x) + xp.abs(x)
                       + xp.astype(xp.astype(x, xp.int32), xp.float32))
        g = np.asarray(t.gradient(y, x))
        np.testing.assert_array_equal(g, [4.0, 2.0, 4.0, 3.0])


def test_float16_gradient_dtype(be):
    if not be.capabilities().f16:
        pytest.skip("no shader-f16 on this device")
    with xp.use(be):
        x = xp.asarray(np.array([0.5, 1.0], dtype=np.float16))
        with ag.GradientTape() as t:
            y = xp.sum(xp.astype(x, xp.float32) * 2.0)
        g = t.gradient(y, x)
        assert g.dtype == xp.float16
        np.testing.assert_array_equal(np.asarray(g), [2.0, 2.0])
