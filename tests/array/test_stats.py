"""Statistical functions (vyre/array/_statistical.py) vs numpy on both backends.

Tolerances: integers bit-exact (wrapping int32/uint32 like numpy's int32/uint32 arithmetic); min/max exact.
Float sums vs numpy's float64 sum: |got - want| <= (depth + 2) * eps32 * sum|x|, where depth
(_stats_kernel.depth) is the longest chain of f32 roundings from an element to its result (serial loads
per lane + tree levels + the partials pass); mean the same divided by N (+1 eps for the division);
var/std rtol 1e-5 (two passes in f32, well-conditioned data). float16 results: one f16 rounding of the
f32 accumulation, rtol 1e-3.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vyre import array as xp
from vyre.array._kernels.reduce import depth
from vyre.errors import DispatchError, UnsupportedDTypeError

from gpu_policy import skip_or_fail

EPS = float(np.finfo(np.float32).eps)
AXES = [None, 0, 1, 2, -1, (0, 2), (1, 2), (0, 1, 2), (-3, -1), ()]


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _budget(x: np.ndarray, axis, keepdims: bool = False) -> np.ndarray:
    """The float-sum error budget per output: (depth + 2) * eps * sum|x| over the reduced elements."""
    axes = tuple(range(x.ndim)) if axis is None else tuple(a % x.ndim for a in
                                                           (axis if isinstance(axis, tuple) else (axis,)))
    n = math.prod(x.shape[a] for a in axes)
    rows = max(1, x.size // max(1, n))
    return (depth(rows, n) + 2) * EPS * np.abs(x.astype(np.float64)).sum(axis=axis, keepdims=keepdims)


def _close_sum(got: np.ndarray, x: np.ndarray, axis, keepdims: bool = False) -> None:
    want = x.astype(np.float64).sum(axis=axis, keepdims=keepdims)
    assert got.shape == want.shape
    assert np.all(np.abs(got.astype(np.float64) - want) <= _budget(x, axis, keepdims) + 1e-30)


@pytest.mark.parametrize("axis", AXES)
def test_float_reductions_axes(xb, axis):
    an = _rng(1).standard_normal((3, 4, 5)).astype(np.float32)
    bn = _rng(2).standard_normal((4, 5)).astype(np.float32)
    a, b = xp.asarray(an), xp.asarray(bn)
    for keepdims in (False, True):
        _close_sum(np.asarray(xp.sum(a * b, axis=axis, keepdims=keepdims)), an * bn, axis, keepdims)
        for f, g in ((xp.min, np.min), (xp.max, np.max)):
            got = np.asarray(f(a - b, axis=axis, keepdims=keepdims))
            assert np.array_equal(got, g(an - bn, axis=axis, keepdims=keepdims))
        got = np.asarray(xp.prod(a, axis=axis, keepdims=keepdims))
        want = np.prod(an.astype(np.float64), axis=axis, keepdims=keepdims)
        assert np.allclose(got, want, rtol=64 * EPS, atol=0)
        got = np.asarray(xp.mean(a, axis=axis, keepdims=keepdims))
        want = an.astype(np.float64).mean(axis=axis, keepdims=keepdims)
        n = max(1, an.size // max(1, want.size))
        assert np.all(np.abs(got - want) <= _budget(an, axis, keepdims) / n + EPS * np.abs(want) + 1e-30)


@pytest.mark.parametrize("axis", AXES)
def test_int_reductions_bit_exact(xb, axis):
    an = _rng(3).integers(-(2**31), 2**31, (3, 4, 5), dtype=np.int64).astype(np.int32)
    un = _rng(4).integers(0, 2**32, (3, 4, 5), dtype=np.uint64).astype(np.uint32)
    a, u = xp.asarray(an), xp.asarray(un)
    with np.errstate(over="ignore"):
        for arr, host in ((a, an), (u, un)):
            for f, g in ((xp.sum, np.sum), (xp.prod, np.prod)):
                got = np.asarray(f(arr, axis=axis))
                assert got.dtype == host.dtype  # the standard: int32 -> int32, uint32 -> uint32
                assert np.array_equal(got, g(host, axis=axis, dtype=host.dtype))
            for f, g in ((xp.min, np.min), (xp.max, np.max)):
                assert np.array_equal(np.asarray(f(arr, axis=axis, keepdims=True)), g(host, axis=axis,
                                                                                     keepdims=True))


def test_dtype_rules_and_dtype_argument(xb):
    bn = np.array([[True, False, True], [True, True, False]])
    s = xp.sum(xp.asarray(bn), axis=1)
    assert s.dtype == xp.int32 and np.array_equal(np.asarray(s), [2, 2])  # bool: the default integer
    an = np.array([2**31 - 1, 1, 5], dtype=np.int32)
    a = xp.asarray(an)
    got = xp.sum(a, dtype=xp.uint32)
    assert got.dtype == xp.uint32 and int(got) == (2**31 - 1 + 1 + 5)  # converted before accumulating
    got = xp.sum(a, dtype=xp.float32)
    assert got.dtype == xp.float32 and float(got) == np.float32(an.astype(np.float64).sum())
    assert xp.prod(xp.asarray(bn)).dtype == xp.int32
    with pytest.raises(UnsupportedDTypeError):
        xp.sum(a, dtype=np.int16)
    assert int(xp.sum(a, dtype=np.int64)) == int(an.astype(np.int64).sum())  # int64: a wider accumulator
    with pytest.raises(DispatchError):
        xp.sum(a, dtype=xp.bool)


def test_float16_accumulates_in_f32(xb):
    if not xb.capabilities().f16:
        skip_or_fail("no shader-f16")
    xn = _rng(5).random(3000).astype(np.float16)
    x = xp.asarray(xn)
    for f, want in ((xp.sum, xn.astype(np.float64).sum()), (xp.mean, xn.astype(np.float64).mean())):
        got = f(x)
        assert got.dtype == xp.float16
        assert abs(float(got) - want) <= 1e-3 * abs(want)  # one f16 rounding (f16 accumulation would drift)
    v = xp.var(x, correction=1)
    assert v.dtype == xp.float16 and abs(float(v) - xn.astype(np.float64).var(ddof=1)) <= 2e-3 * float(v)
    assert float(xp.max(x)) == float(xn.max())


def test_large_tree_two_passes_fused(xb):
    """A tree reduction with partials (two kernels, one submission); the product is never materialised."""
    n = 70_000 if xb.__class__.__name__ == "ReferenceBackend" else 300_000
    an, bn = _rng(6).random(n, dtype=np.float32), _rng(7).standard_normal(n).astype(np.float32)
    a, b = xp.asarray(an), xp.asarray(bn)
    prod_ab = a * b
    xp.sum(prod_ab)  # builds the programs
    before = xp.fusion_stats()
    got = np.asarray(xp.sum(prod_ab))  # the reduction runs with the download
    after = xp.fusion_stats()
    assert after["submissions"] == before["submissions"] + 1
    assert after["kernels_dispatched"] == before["kernels_dispatched"] + 2  # pass 1 (fused) + partials
    assert after["kernels_built"] == before["kernels_built"]  # cached by structure
    assert prod_ab.is_lazy  # a * b fused into the load, never written
    _close_sum(got, an * bn, None)
    assert float(xp.max(prod_ab)) == float((an * bn).max())


def test_small_sum_is_one_kernel(xb):
    a, b = xp.asarray(np.arange(12, dtype=np.float32)), xp.asarray(np.ones(12, np.float32))
    before = xp.fusion_stats()
    s = (a * b + 1).sum()
    assert s.shape == () and float(s) == 78.0
    after = xp.fusion_stats()
    assert after["kernels_dispatched"] - before["kernels_dispatched"] == 1
    assert after["submissions"] - before["submissions"] == 1  # the reduction and the download together


def test_strided_axis_tree(xb):
    """A leading reduced axis long enough for the tree kernel: the transposing view is fused into the load."""
    xn = _rng(8).standard_normal((300, 2, 5)).astype(np.float32)
    x = xp.asarray(xn)
    _close_sum(np.asarray(xp.sum(x, axis=0)), xn, 0)
    _close_sum(np.asarray(xp.sum(x, axis=(0, 2))), xn, (0, 2))
    assert np.array_equal(np.asarray(xp.min(x, axis=(0, 1))), xn.min(axis=(0, 1)))
    t = xp.permute_dims(x, (2, 0, 1))  # a pending view feeding the reduction
    assert np.array_equal(np.asarray(xp.max(t, axis=1)), xn.transpose(2, 0, 1).max(axis=1))


@pytest.mark.parametrize("n", [7, 1000])
def test_nan_propagation(xb, n):
    xn = _rng(9).standard_normal((2, n)).astype(np.float32)
    xn[0, n // 2] = np.nan
    x = xp.asarray(xn)
    for f in (xp.min, xp.max, xp.sum):
        got = np.asarray(f(x, axis=1))
        assert np.isnan(got[0]) and not np.isnan(got[1])
    assert np.isnan(float(xp.max(x))) and np.isnan(float(xp.min(x)))


def test_empty_reductions(xb):
    e = xp.asarray(np.zeros((0, 3), np.float32))
    assert float(xp.sum(e)) == 0.0 and float(xp.prod(e)) == 1.0
    assert np.array_equal(np.asarray(xp.sum(e, axis=0)), np.zeros(3, np.float32))
    assert np.asarray(xp.sum(e, axis=1)).shape == (0,)
    assert np.isnan(float(xp.mean(e))) and np.isnan(float(xp.var(e)))
    assert int(xp.sum(xp.asarray(np.zeros(0, np.int32)))) == 0
    assert np.asarray(xp.max(e, axis=1)).shape == (0,)  # nothing to reduce per output: no error
    with pytest.raises(DispatchError, match="zero elements"):
        xp.min(e)
    with pytest.raises(DispatchError):
        xp.max(e, axis=0)


@pytest.mark.parametrize("correction", [0, 1, 2.5])
@pytest.mark.parametrize("axis", [None, 0, (0, 2), -1])
def test_var_std(xb, axis, correction):
    xn = (_rng(10).standard_normal((6, 4, 5)) * 3 + 100).astype(np.float32)  # mean far from 0
    x = xp.asarray(xn)
    xd = xn.astype(np.float64)
    for keepdims in (False, True):
        v = np.asarray(xp.var(x, axis=axis, correction=correction, keepdims=keepdims))
        s = np.asarray(xp.std(x * 1, axis=axis, correction=correction, keepdims=keepdims))
        assert np.allclose(v, xd.var(axis=axis, ddof=correction, keepdims=keepdims), rtol=1e-5)
        assert np.allclose(s, xd.std(axis=axis, ddof=correction, keepdims=keepdims), rtol=1e-5)


@pytest.mark.parametrize("include_initial", [False, True])
def test_cumulative(xb, include_initial):
    xn = _rng(11).standard_normal((3, 4, 5)).astype(np.float32)
    ins = _rng(12).integers(-5, 6, (3, 4, 5), dtype=np.int32)
    x, i = xp.asarray(xn), xp.asarray(ins)
    for axis in (0, 1, 2, -1):
        want = np.cumsum(xn.astype(np.float64), axis=axis)
        wi = np.cumprod(ins, axis=axis, dtype=np.int32)
        if include_initial:
            pad = [(0, 0)] * 3
            pad[axis % 3] = (1, 0)
            want, wi = np.pad(want, pad), np.pad(wi, pad, constant_values=1)
        got = np.asarray(xp.cumulative_sum(x + 0, axis=axis, include_initial=include_initial))
        bound = (xn.shape[axis] + 1) * EPS * np.abs(xn).sum(axis=axis, keepdims=True)
        assert got.shape == want.shape and np.all(np.abs(got - want) <= bound)
        got_i = xp.cumulative_prod(i, axis=axis, include_initial=include_initial)
        assert got_i.dtype == xp.int32 and np.array_equal(np.asarray(got_i), wi)
    one = xp.cumulative_sum(xp.asarray(np.array([True, True, False])), include_initial=include_initial)
    assert np.asarray(one).tolist() == ([0] if include_initial else []) + [1, 2, 2] and one.dtype == xp.int32
    assert np.signbit(np.asarray(xp.cumulative_sum(xp.asarray(np.array([-0.0], np.float32)),
                                                   include_initial=True))).tolist() == [False, True]


def test_cumulative_errors_and_empty(xb):
    x = xp.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(DispatchError, match="axis is required"):
        xp.cumulative_sum(x)
    with pytest.raises(DispatchError):
        xp.cumulative_prod(xp.asarray(np.float32(1)))
    with pytest.raises(DispatchError):
        xp.cumulative_sum(x, axis=2)
    e = xp.asarray(np.zeros((2, 0), np.float32))
    assert np.asarray(xp.cumulative_sum(e, axis=1)).shape == (2, 0)
    assert np.array_equal(np.asarray(xp.cumulative_prod(e, axis=1, include_initial=True)), np.ones((2, 1)))


def test_errors(xb):
    a = xp.asarray(np.ones((2, 3), np.float32))
    i = xp.asarray(np.ones((2, 3), np.int32))
    for bad in (2, -3, (0, 0), (0, 5), 1.5):
        with pytest.raises(DispatchError):
            xp.sum(a, axis=bad)
    with pytest.raises(DispatchError, match="floating-point"):
        xp.mean(i)
    with pytest.raises(DispatchError, match="floating-point"):
        xp.var(i)
    with pytest.raises(DispatchError):
        xp.min(xp.asarray(np.array([True])))
    with pytest.raises(DispatchError):
        xp.var(a, correction=-1)
    with pytest.raises(DispatchError, match="vyre array"):
        xp.sum(np.ones(3))
    with pytest.raises(TypeError):
        xp.sum(a, 0)  # axis is keyword-only (the standard's signature)


def test_methods_delegate(xb):
    xn = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    x = xp.asarray(xn)
    assert np.array_equal(np.asarray(x.sum(axis=1)), xn.sum(axis=1))
    assert np.array_equal(np.asarray(x.max(axis=(0, 2), keepdims=True)), xn.max(axis=(0, 2), keepdims=True))
    assert float(x.mean()) == float(xn.mean())
    assert np.array_equal(np.asarray(x.prod(axis=-1)), xn.prod(axis=-1))
    assert np.array_equal(np.asarray(x.min(axis=0)), xn.min(axis=0))


SHAPES = st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple)


def _hyp(backend, shape, data, keepdims):
    import vyre
    nd = len(shape)
    axis = data.draw(st.one_of(st.none(), st.integers(-nd, nd - 1),
                               st.lists(st.integers(0, nd - 1), unique=True, max_size=nd).map(tuple)))
    xn = np.random.default_rng(len(shape)).integers(-1000, 1000, shape, dtype=np.int32)
    with vyre.use(backend):
        x = xp.asarray(xn)
        assert np.array_equal(np.asarray(xp.sum(x * 3, axis=axis, keepdims=keepdims)),
                              (xn * 3).sum(axis=axis, keepdims=keepdims, dtype=np.int32))
        assert np.array_equal(np.asarray(xp.max(x, axis=axis, keepdims=keepdims)),
                              xn.max(axis=axis, keepdims=keepdims))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=SHAPES, data=st.data(), keepdims=st.booleans())
def test_axes_hypothesis_reference(ref_backend, shape, data, keepdims):
    _hyp(ref_backend, shape, data, keepdims)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=SHAPES, data=st.data(), keepdims=st.booleans())
def test_axes_hypothesis_gpu(gpu, shape, data, keepdims):
    _hyp(gpu, shape, data, keepdims)


def test_rows_spill_into_grid_z(xb, monkeypatch):
    """More rows than a grid axis holds (MAX_GRID_Y lowered to 3 here): workgroups spill into grid z, the
    spare ones of the last z-slice clamp their row and write nothing."""
    from vyre.array._kernels import reduce_rows as K
    monkeypatch.setattr(K, "MAX_GRID_Y", 3)
    xn = _rng(13).integers(-100, 100, (7, 300), dtype=np.int32)
    x = xp.asarray(xn)
    assert np.array_equal(np.asarray(xp.sum(x, axis=1)), xn.sum(axis=1, dtype=np.int32))
    assert np.array_equal(np.asarray(xp.max(x, axis=1)), xn.max(axis=1))
