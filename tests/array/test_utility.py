"""all, any, diff, broadcast_shapes vs numpy on both backends (bool results and integers bit-exact; float
differences exact: one subtraction per element, the same in f32 on both sides)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vyre
from vyre import array_api as xp
from vyre.errors import DispatchError

from gpu_policy import skip_or_fail


def _eq(got, want):
    g = np.asarray(got)
    want = np.asarray(want)
    assert g.dtype == want.dtype and g.shape == want.shape, (g.dtype, g.shape, want.dtype, want.shape)
    np.testing.assert_array_equal(g, want)


F = np.array([[1, 0, 3], [2, np.nan, 0], [0, 0, 0], [-0.0, 5, 1]], dtype=np.float32)
AXES = (None, 0, 1, -1, (0, 1), ())


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32, np.bool_])
def test_all_any(xb, dtype):
    h = F if dtype == np.float32 else np.nan_to_num(F, nan=7).astype(dtype)
    x = xp.asarray(h)
    for axis in AXES:
        for keepdims in (False, True):
            _eq(xp.all(x, axis=axis, keepdims=keepdims), np.all(h, axis=axis, keepdims=keepdims))
            _eq(xp.any(x, axis=axis, keepdims=keepdims), np.any(h, axis=axis, keepdims=keepdims))


def test_all_any_edges(xb):
    z = xp.zeros((0, 3))
    _eq(xp.all(z), np.bool_(True))
    _eq(xp.any(z), np.bool_(False))
    _eq(xp.all(z, axis=0), np.ones(3, bool))
    _eq(xp.any(z, axis=1, keepdims=True), np.zeros((0, 1), bool))
    _eq(xp.all(xp.asarray(np.float32(np.nan))), np.bool_(True))  # NaN is non-zero
    _eq(xp.any(xp.asarray(0)), np.bool_(False))
    a, b = xp.asarray(np.arange(6, dtype=np.float32)), xp.asarray(np.float32([0, 1, 2, 3, 4, 6]))
    xp.reset_fusion_stats()
    assert not bool(xp.all(a == b)) and bool(xp.any(a == b)) and bool(xp.all(a <= b))
    with pytest.raises(DispatchError, match="out of range"):
        xp.all(a, axis=1)
    with pytest.raises(DispatchError, match="repeated"):
        xp.any(xp.zeros((2, 2)), axis=(0, -2))
    with pytest.raises(DispatchError, match="vyre array"):
        xp.all(np.ones(3))


def test_all_fuses(xb):
    a, b = xp.asarray(np.arange(1000, dtype=np.float32)), xp.asarray(np.arange(1000, dtype=np.float32) + 1)
    xp.reset_fusion_stats()
    assert bool(xp.all(a < b))
    fused = xp.fusion_stats()["kernels_dispatched"]
    c = (a < b).evaluate()
    xp.reset_fusion_stats()
    assert bool(xp.all(c))
    assert fused == xp.fusion_stats()["kernels_dispatched"]  # the comparison ran inside the reduction


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.float32, np.bool_])
def test_diff(xb, dtype):
    h = (np.arange(24).reshape(2, 3, 4) ** 2 % 11).astype(dtype)
    x = xp.asarray(h)
    for axis in (0, 1, -1):
        for n in (0, 1, 2, 3, 5):
            _eq(xp.diff(x, axis=axis, n=n), np.diff(h, axis=axis, n=n))
    p, q = h[:, :1], h[:, :2]
    _eq(xp.diff(x, axis=1, prepend=xp.asarray(p), append=xp.asarray(q)), np.diff(h, axis=1, prepend=p, append=q))
    if dtype != np.bool_:
        _eq(xp.diff(x, append=7), np.diff(h, append=np.full((2, 3, 1), 7, dtype)))


def test_diff_float_and_errors(xb):
    h = np.float32([1.5, np.inf, -2, 0.25, np.nan])
    x = xp.asarray(h) * 2  # pending: the differences fuse with it
    _eq(xp.diff(x), np.diff(h * 2))
    _eq(xp.diff(xp.zeros((0,))), np.zeros(0, np.float32))
    _eq(xp.diff(xp.asarray(np.int32([5])), n=1), np.zeros(0, np.int32))
    with pytest.raises(DispatchError, match="at least one dimension"):
        xp.diff(xp.asarray(1.0))
    with pytest.raises(DispatchError, match="non-negative"):
        xp.diff(x, n=-1)
    with pytest.raises(DispatchError, match="non-negative int"):
        xp.diff(x, n=1.0)
    with pytest.raises(DispatchError, match="out of range"):
        xp.diff(x, axis=1)
    with pytest.raises(DispatchError, match="does not match"):
        xp.diff(xp.zeros((2, 3)), axis=1, prepend=xp.zeros((3, 1)))
    with pytest.raises(TypeError):
        xp.diff(x, -1)  # axis is keyword-only


def test_broadcast_shapes():
    cases = [((2, 1), (3,)), ((1, 2), (3, 1), (3, 2)), ((6, 7), (5, 6, 1), (7,), (5, 1, 7)), ((0, 1), (1, 4)),
             ((), (3,)), ((3,),)]
    for shapes in cases:
        assert xp.broadcast_shapes(*shapes) == np.broadcast_shapes(*shapes)
    assert xp.broadcast_shapes() == ()
    assert xp.broadcast_shapes([2, 1], (np.int64(4),)) == (2, 4)
    for bad in (((2,), (3,)), ((2, 3), (3, 3, 2)), ((-1,),), ((None, 2),), ((True,),), (3,)):
        with pytest.raises(DispatchError):
            xp.broadcast_shapes(*bad)


def test_diff_float16(xb):
    if not xb.capabilities().f16:
        skip_or_fail("no shader-f16")
    h = np.float16([1, 0.5, 4, 2.25])
    _eq(xp.diff(xp.asarray(h), n=2), np.diff(h, n=2))


def _random(backend, shape, seed):
    rng = np.random.default_rng(seed)
    a = (rng.integers(-3, 3, size=shape) * (rng.random(shape) < 0.7)).astype(np.int32)
    nd = len(shape)
    axes = tuple(int(v) for v in rng.permutation(nd)[: int(rng.integers(0, nd + 1))])
    ax, n = int(rng.integers(-nd, nd)), int(rng.integers(0, 4))
    with vyre.use(backend):
        x = xp.asarray(a) + 1
        _eq(xp.all(x, axis=axes), np.all(a + 1, axis=axes))
        _eq(xp.any(x, axis=axes, keepdims=True), np.any(a + 1, axis=axes, keepdims=True))
        _eq(xp.diff(x, axis=ax, n=n), np.diff(a + 1, axis=ax, n=n))


SHAPES = st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple)


@settings(max_examples=8, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**16))
def test_random_reference(ref_backend, shape, seed):
    _random(ref_backend, shape, seed)


@settings(max_examples=4, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**16))
def test_random_gpu(gpu, shape, seed):
    _random(gpu, shape, seed)
