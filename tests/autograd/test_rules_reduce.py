"""The reduction and scan rules against central finite differences of float64 numpy, on both backends,
with shapes and axes drawn by hypothesis (small budgets). Tolerances rtol 1e-3, atol 1e-4 (prod and the
cumulative product: rtol 2e-3, their values multiply float32 roundings). Tie rule of max/min: the
gradient is split equally among tied elements (tested exactly)."""

from __future__ import annotations

import numpy as np
import pytest
from fdcheck import check
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import vyre.array as xp
import vyre.autograd as ag

SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def shape_and_axis(draw):
    shape = draw(array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4))
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        axis = None
    elif kind == "int":
        axis = draw(st.integers(-len(shape), len(shape) - 1))
    else:
        axis = tuple(sorted(draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))))
    return shape, axis, draw(st.booleans()), draw(st.integers(0, 2**16))


REDUCTIONS = {
    "sum": (lambda x, a, k: xp.sum(x, axis=a, keepdims=k), lambda x, a, k: np.sum(x, axis=a, keepdims=k)),
    "mean": (lambda x, a, k: xp.mean(x, axis=a, keepdims=k), lambda x, a, k: np.mean(x, axis=a, keepdims=k)),
    "prod": (lambda x, a, k: xp.prod(x, axis=a, keepdims=k), lambda x, a, k: np.prod(x, axis=a, keepdims=k)),
    "max": (lambda x, a, k: xp.max(x, axis=a, keepdims=k), lambda x, a, k: np.max(x, axis=a, keepdims=k)),
    "min": (lambda x, a, k: xp.min(x, axis=a, keepdims=k), lambda x, a, k: np.min(x, axis=a, keepdims=k)),
    "var": (lambda x, a, k: xp.var(x, axis=a, keepdims=k), lambda x, a, k: np.var(x, axis=a, keepdims=k)),
    "std": (lambda x, a, k: xp.std(x, axis=a, keepdims=k), lambda x, a, k: np.std(x, axis=a, keepdims=k)),
    "var1": (lambda x, a, k: xp.var(x, axis=a, keepdims=k, correction=1),
             lambda x, a, k: np.var(x, axis=a, keepdims=k, ddof=1)),
    "std1": (lambda x, a, k: xp.std(x, axis=a, keepdims=k, correction=1),
             lambda x, a, k: np.std(x, axis=a, keepdims=k, ddof=1)),
}


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@SETTINGS
@given(case=shape_and_axis())
def test_reduction_rule(be, name, case):
    shape, axis, keepdims, seed = case
    fv, fn = REDUCTIONS[name]
    n = int(np.prod([shape[i] for i in (range(len(shape)) if axis is None else np.atleast_1d(axis))]))
    if name in ("var1", "std1") and n < 2:
        return  # N - 1 = 0: no variance to differentiate
    rng = np.random.default_rng(seed)
    # distinct values (max/min: no ties; std: no zero deviation); prod: magnitudes near 1
    x = rng.permutation(np.linspace(0.5, 1.5, int(np.prod(shape)))).reshape(shape).astype(np.float32)
    check(be, lambda a: fv(a, axis, keepdims), lambda a: fn(a, axis, keepdims), [x], rtol=2e-3, atol=1e-4,
          seed=seed)


def test_prod_with_zeros(be):
    """One zero: that element gets the product of the others, the others 0; two zeros: all 0."""
    with xp.use(be):
        x = xp.asarray([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0], [1.0, 2.0, 4.0]])
        with ag.GradientTape() as t:
            y = xp.sum(xp.prod(x, axis=1))
        g = np.asarray(t.gradient(y, x))
    np.testing.assert_allclose(g, [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0], [8.0, 4.0, 2.0]], rtol=1e-6)


def test_max_min_ties_split_equally(be):
    with xp.use(be):
        x = xp.asarray([[3.0, 1.0, 3.0, 3.0], [0.0, 2.0, 2.0, -1.0]])
        with ag.GradientTape(persistent=True) as t:
            hi = xp.sum(xp.max(x, axis=1))
            lo = xp.min(x)
            top = xp.max(x)
        np.testing.assert_allclose(np.asarray(t.gradient(hi, x)), [[1 / 3, 0, 1 / 3, 1 / 3], [0, 0.5, 0.5, 0]],
                                   rtol=1e-6)
        np.testing.assert_array_equal(np.asarray(t.gradient(lo, x)), [[0, 0, 0, 0], [0, 0, 0, 1]])
        np.testing.assert_allclose(np.asarray(t.gradient(top, x)), [[1 / 3, 0, 1 / 3, 1 / 3], [0, 0, 0, 0]],
                                   rtol=1e-6)


@SETTINGS
@given(shape=array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), data=st.data())
def test_cumulative_sum_rule(be, shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1)) if len(shape) > 1 else data.draw(
        st.sampled_from([None, 0, -1]))
    initial = data.draw(st.booleans())
    seed = data.draw(st.integers(0, 2**16))
    x = np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)

    def f_np(a):
        ax = 0 if axis is None else axis
        c = np.cumsum(a, axis=ax)
        if initial:
            pad = [(0, 0)] * a.ndim
            pad[ax] = (1, 0)
            c = np.pad(c, pad)
        return c

    check(be, lambda a: xp.cumulative_sum(a, axis=axis, include_initial=initial), f_np, [x], seed=seed)


def test_cumulative_prod_rule(be):
    x = np.array([[0.5, 1.5, 2.0, 0.8], [1.2, 0.9, 1.1, 1.3]], dtype=np.float32)
    check(be, lambda a: xp.cumulative_prod(a, axis=1), lambda a: np.cumprod(a, axis=1), [x], rtol=2e-3)
    check(be, lambda a: xp.cumulative_prod(a, axis=0, include_initial=True),
          lambda a: np.concatenate([np.ones((1, 4)), np.cumprod(a, axis=0)]), [x], rtol=2e-3)


@pytest.mark.parametrize("n", [1, 2])
def test_diff_rule(be, n):
    x = np.array([[0.5, 1.5, 2.0, 0.8], [1.2, 0.9, 1.1, 1.3]], dtype=np.float32)
    p = np.array([[0.1], [0.2]], dtype=np.float32)
    check(be, lambda a: xp.diff(a, axis=1, n=n), lambda a: np.diff(a, axis=1, n=n), [x])
    check(be, lambda a, b: xp.diff(a, axis=1, n=n, prepend=b, append=b),
          lambda a, b: np.diff(a, axis=1, n=n, prepend=b, append=b), [x, p])
    check(be, lambda a: xp.diff(a, axis=0), lambda a: np.diff(a, axis=0), [x])
