"""meshgrid, tril, triu vs numpy on both backends (they move or select data: exact), lazy and fused,
typed errors before GPU work."""

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
    assert g.dtype == want.dtype and g.shape == want.shape, (g.dtype, g.shape, want.dtype, want.shape)
    np.testing.assert_array_equal(g, want)


def test_meshgrid(xb):
    a, b, c = np.arange(3, dtype=np.int32), np.arange(2, dtype=np.int32) * 5, np.arange(4, dtype=np.int32) - 2
    for indexing in ("xy", "ij"):
        for ins in ((a,), (a, b), (a, b, c)):
            got = xp.meshgrid(*[xp.asarray(v) for v in ins], indexing=indexing)
            want = np.meshgrid(*ins, indexing=indexing)
            assert isinstance(got, list) and len(got) == len(want)
            for g, w in zip(got, want):
                assert g.is_lazy  # views, nothing copied
                _eq(g, w)
    assert xp.meshgrid() == []
    x = xp.asarray(np.linspace(0, 1, 3, dtype=np.float32)) * 2  # pending: the grid fuses with it
    gx, gy = xp.meshgrid(x, xp.asarray(np.float32([7, 8])))
    wx, wy = np.meshgrid(np.linspace(0, 1, 3, dtype=np.float32) * 2, np.float32([7, 8]))
    _eq(gx + gy, wx + wy)
    _eq(xp.meshgrid(xp.zeros((0,)), xp.ones((2,)))[0], np.zeros((2, 0), np.float32))


def test_meshgrid_errors(xb):
    with pytest.raises(DispatchError, match="1-D"):
        xp.meshgrid(xp.zeros((2, 2)))
    with pytest.raises(DispatchError, match="one dtype"):
        xp.meshgrid(xp.zeros((2,)), xp.arange(2))
    with pytest.raises(DispatchError, match="indexing"):
        xp.meshgrid(xp.zeros((2,)), indexing="yx")
    with pytest.raises(DispatchError, match="vyre array"):
        xp.meshgrid(np.zeros(2))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32, np.bool_])
def test_tril_triu(xb, dtype):
    h = (np.arange(2 * 3 * 5).reshape(2, 3, 5) % 7).astype(dtype)
    x = xp.asarray(h)
    for k in (-4, -1, 0, 1, 3, 9, -(2**40)):
        _eq(xp.tril(x, k=k), np.tril(h, k=k))
        _eq(xp.triu(x, k=k), np.triu(h, k=k))


def test_tril_triu_fuse(xb):
    h = np.arange(16, dtype=np.float32).reshape(4, 4) - 7.5
    x = xp.asarray(h)
    r = xp.tril(x * 2) + xp.triu(x, k=1)
    assert r.is_lazy
    xp.reset_fusion_stats()
    _eq(r, np.tril(h * 2) + np.triu(h, k=1))
    assert xp.fusion_stats()["kernels_dispatched"] == 1  # both selects and the sum: one kernel
    _eq(xp.tril(xp.asarray(np.ones((3, 0), np.float32))), np.ones((3, 0), np.float32))
    _eq(xp.triu(xp.asarray(np.float32([[1, 2, 3]]))), np.float32([[1, 2, 3]]))


def test_tril_errors(xb):
    with pytest.raises(DispatchError, match="2 dimensions"):
        xp.tril(xp.zeros((3,)))
    with pytest.raises(DispatchError, match="k must be an int"):
        xp.triu(xp.zeros((3, 3)), k=1.5)
    with pytest.raises(DispatchError, match="k must be an int"):
        xp.triu(xp.zeros((3, 3)), k=True)
    with pytest.raises(TypeError):
        xp.tril(xp.zeros((3, 3)), 1)  # k is keyword-only


def test_tril_float16(xb):
    if not xb.capabilities().f16:
        skip_or_fail("no shader-f16")
    h = np.arange(9, dtype=np.float16).reshape(3, 3) / 4
    _eq(xp.tril(xp.asarray(h), k=-1), np.tril(h, k=-1))


def _random(backend, shape, k, seed):
    a = np.random.default_rng(seed).integers(-50, 50, size=shape).astype(np.int32)
    with vyre.use(backend):
        x = xp.asarray(a) - 1
        _eq(xp.tril(x, k=k), np.tril(a - 1, k=k))
        _eq(xp.triu(x, k=k), np.triu(a - 1, k=k))


SHAPES = st.lists(st.integers(1, 5), min_size=2, max_size=4).map(tuple)


@settings(max_examples=8, deadline=None)
@given(shape=SHAPES, k=st.integers(-6, 6), seed=st.integers(0, 2**16))
def test_random_reference(ref_backend, shape, k, seed):
    _random(ref_backend, shape, k, seed)


@settings(max_examples=4, deadline=None)
@given(shape=SHAPES, k=st.integers(-6, 6), seed=st.integers(0, 2**16))
def test_random_gpu(gpu, shape, k, seed):
    _random(gpu, shape, k, seed)
