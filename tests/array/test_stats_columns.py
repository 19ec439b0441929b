"""Column-tiled reductions (vyre/array/_kernels/reduce_columns.py): the reduced axes come before the kept ones
(``x.sum(axis=0)``, ``mean(axis=(0, 1))`` of 3-D), vs numpy on both backends.

Tolerances: integers and min/max bit-exact; float sums |got - want| <= (depth + 2) * eps32 * sum|x|
with depth from _stats_columns.depth (serial rows per lane + unroll + row-lane tree + the partials
pass); mean the same divided by N. Float results are deterministic: the same bits on every run and on
both backends (fixed combination order).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import vyre
from vyre import array as xp
from vyre.array._kernels import reduce_columns as C

EPS = float(np.finfo(np.float32).eps)


def _check_sum(got: np.ndarray, x: np.ndarray, axis: tuple[int, ...], divide: bool = False) -> None:
    c = C.columns_for(x.shape, axis)
    assert c is not None  # the case under test uses the column kernel
    want = x.astype(np.float64).sum(axis=axis)
    budget = (C.depth(c) + 2) * EPS * np.abs(x.astype(np.float64)).sum(axis=axis)
    n = math.prod(x.shape[a] for a in axis)
    if divide:
        want, budget = want / n, budget / n + EPS * np.abs(want / n)
    assert got.shape == want.shape
    assert np.all(np.abs(got.astype(np.float64) - want) <= budget + 1e-30)


def _kernel_names(a) -> list[str]:
    return [line.split(": ")[1].split(" ")[0] for line in a.explain().splitlines() if line.startswith("-- kernel")]


@pytest.mark.parametrize("shape,axis", [((300, 40), (0,)), ((5000, 3), (0,)), ((7, 33), (0,)),
                                        ((2, 3, 50), (0, 1)), ((1, 64, 5), (1,)), ((40000, 40), (0,)),
                                        ((9, 1, 70), (0,))])
def test_column_sums(xb, shape, axis):
    rng = np.random.default_rng(sum(shape))
    an = rng.standard_normal(shape).astype(np.float32)
    bn = rng.standard_normal(shape[-1:]).astype(np.float32)
    a, b = xp.asarray(an), xp.asarray(bn)
    s = xp.sum(a * b, axis=axis)  # the product is fused into the column kernel's loads
    assert any("columns" in k for k in _kernel_names(s))
    _check_sum(np.asarray(s), an * bn, axis)
    _check_sum(np.asarray(xp.mean(a, axis=axis)), an, axis, divide=True)
    assert np.array_equal(np.asarray(xp.max(a - b, axis=axis)), (an - bn).max(axis=axis))
    assert np.array_equal(np.asarray(xp.min(a, axis=axis, keepdims=True)), an.min(axis=axis, keepdims=True))
    ins = (an * 1000).astype(np.int32)
    i = xp.asarray(ins)
    assert np.array_equal(np.asarray(xp.sum(i, axis=axis)), ins.sum(axis=axis, dtype=np.int32))
    assert np.array_equal(np.asarray(xp.prod(i % 3 + 1, axis=axis)), np.prod(ins % 3 + 1, axis=axis, dtype=np.int32))
    u = xp.asarray(ins.astype(np.uint32))
    assert np.array_equal(np.asarray(xp.max(u, axis=axis)), ins.astype(np.uint32).max(axis=axis))


def test_columns_wrap_and_nan(xb):
    big = np.full((600, 5), 2**30, np.int32)
    assert np.array_equal(np.asarray(xp.sum(xp.asarray(big), axis=0)), big.sum(axis=0, dtype=np.int32))
    f = np.random.default_rng(1).standard_normal((700, 6)).astype(np.float32)
    f[350, 2] = np.nan
    for g in (xp.sum, xp.max, xp.min):
        got = np.asarray(g(xp.asarray(f), axis=0))
        assert np.isnan(got[2]) and not np.isnan(got[[0, 1, 3, 4, 5]]).any()


def test_columns_var_std_and_bool(xb):
    xn = (np.random.default_rng(2).standard_normal((500, 7)) * 3 + 50).astype(np.float32)
    x = xp.asarray(xn)
    np.testing.assert_allclose(np.asarray(xp.var(x, axis=0, correction=1)), xn.astype(np.float64).var(axis=0, ddof=1),
                               rtol=1e-5)
    np.testing.assert_allclose(np.asarray(xp.std(x, axis=0)), xn.astype(np.float64).std(axis=0), rtol=1e-5)
    m = xn > 50
    got = np.asarray(xp.sum(xp.asarray(m), axis=0))
    assert got.dtype == np.int32 and np.array_equal(got, m.sum(axis=0))


def test_columns_deterministic_across_backends(ref_backend, gpu):
    """Run to run bit for bit on one backend (fixed order); across backends within the rounding bound
    only: a GPU compiler may contract ``x * 3 + acc`` into an fma (WGSL allows it; the H200 does)."""
    xn = np.random.default_rng(3).standard_normal((20000, 48)).astype(np.float32)
    outs = []
    for backend in (ref_backend, ref_backend, gpu, gpu):
        with vyre.use(backend):
            outs.append(np.asarray(xp.sum(xp.asarray(xn) * 3, axis=0)))
    assert outs[0].tobytes() == outs[1].tobytes()
    assert outs[2].tobytes() == outs[3].tobytes()
    bound = 2.0**-23 * 64 * np.abs(xn.astype(np.float64) * 3).sum(axis=0)
    assert (np.abs(outs[2].astype(np.float64) - outs[0]) <= bound).all()


def test_columns_for_layouts():
    assert C.columns_for((8, 8), (0,)) is not None
    assert C.columns_for((8, 8), (1,)) is None  # trailing axis: the row kernels
    assert C.columns_for((8, 8), (0, 1)) is None  # everything: one row
    assert C.columns_for((4, 5, 6), (0, 2)) is None  # interleaved
    assert C.columns_for((1, 5, 6), (0, 1)) is not None  # a unit axis anywhere is ignored
    assert C.columns_for((5, 1), (0,)) is None  # one column: the row kernels
    assert C.columns_for((100, 4096), (0,)) is None  # short columns, many of them: one lane per output
    assert C.columns_for((300, 4096), (0,)) is not None
    c = C.columns_for((8192, 8192), (0,))
    assert c is not None and c.tiles * c.blocks <= 2048 and c.blocks > 1 and c.chunk % c.ty == 0


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.integers(2, 700), cols=st.integers(2, 70), lead=st.sampled_from([1, 2, 3]),
       seed=st.integers(0, 2**16))
def test_columns_hypothesis(xb, rows, cols, lead, seed):
    shape = (lead, rows, cols) if lead > 1 else (rows, cols)
    axis = (0, 1) if lead > 1 else (0,)
    xn = np.random.default_rng(seed).uniform(-4, 4, shape).astype(np.float32)
    x = xp.asarray(xn)
    _check_sum(np.asarray(xp.sum(x, axis=axis)), xn, axis)
    assert np.array_equal(np.asarray(xp.max(x, axis=axis)), xn.max(axis=axis))


def test_columns_float16(xb):
    if not xb.capabilities().f16:
        from gpu_policy import skip_or_fail
        skip_or_fail("no shader-f16")
    xn = np.random.default_rng(4).random((900, 10)).astype(np.float16)
    got = xp.sum(xp.asarray(xn), axis=0)
    assert got.dtype == xp.float16
    want = xn.astype(np.float64).sum(axis=0)
    assert np.all(np.abs(np.asarray(got).astype(np.float64) - want) <= 1e-3 * want)  # one f16 rounding
    assert np.array_equal(np.asarray(xp.max(xp.asarray(xn), axis=0)), xn.max(axis=0))


@pytest.mark.parametrize("shape,axis", [((5000, 4), (0,)), ((300, 64), (0,)), ((40000, 8), (0,)), ((9, 12), (0,)),
                                        ((1, 700, 8), (1,)), ((3, 50, 16), (0, 1))])
def test_columns_vec4_leaf(xb, shape, axis):
    """f32 sums and means of a plain array with columns in fours read vec4 rows (vec_columns); the same
    bound, NaN only in its own column, and a fused expression keeps the scalar kernel."""
    xn = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    x = xp.asarray(xn)
    s = xp.sum(x, axis=axis)
    assert any("columns_vec4" in k for k in _kernel_names(s))
    _check_sum(np.asarray(s), xn, axis)
    _check_sum(np.asarray(xp.mean(x, axis=axis)), xn, axis, divide=True)
    assert not any("vec4" in k for k in _kernel_names(xp.sum(x * 2, axis=axis)))
    xn.reshape(-1, xn.shape[-1])[xn.size // xn.shape[-1] // 2, 1] = np.nan
    got = np.asarray(xp.sum(xp.asarray(xn), axis=axis)).reshape(-1)
    assert np.isnan(got[1]) and not np.isnan(np.delete(got, 1)).any()


def test_columns_vec4_geometry():
    leaf_like = C.columns_for((1 << 20, 4), (0,))
    assert leaf_like is not None and C.Columns(1 << 20, 1, lanes=4).tx == 1  # a warp: 32 whole rows
    v = C.Columns(8192, 2048, lanes=4)
    assert v.tiles * v.blocks <= 2048 and v.blocks > 1
    assert C.depth(C.Columns(5000, 4)) >= C.depth(C.Columns(5000, 1, lanes=4))  # the budget covers either form
