"""vyre.array.linalg (the standard's linalg extension, the part without decompositions) vs numpy.linalg on
both backends: diagonal/outer/cross/matrix_power on integers bit-exact, float results exact where they
are one product or sum of small integers, norms within 1e-5 relative (float32 sums vs numpy's float64)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vyre
from vyre import array_api as xp
from vyre.errors import DispatchError

from gpu_policy import skip_or_fail

L = xp.linalg


def _eq(got, want):
    g, want = np.asarray(got), np.asarray(want)
    assert g.dtype == want.dtype and g.shape == want.shape, (g.dtype, g.shape, want.dtype, want.shape)
    np.testing.assert_array_equal(g, want)


def _close(got, want, rtol=1e-5):
    g, want = np.asarray(got), np.asarray(want).astype(np.float32)
    assert g.dtype == np.float32 and g.shape == want.shape, (g.dtype, g.shape, want.shape)
    np.testing.assert_allclose(g, want, rtol=rtol, atol=1e-6)


H = (np.arange(24).reshape(2, 3, 4) - 7).astype(np.int32)


def test_namespace():
    assert xp.linalg is vyre.array_api.linalg and "linalg" in xp.__all__
    assert L.matmul is xp.matmul and L.vecdot is xp.vecdot and L.tensordot is xp.tensordot
    assert L.matrix_transpose is xp.matrix_transpose
    for name in ("cholesky", "det", "eigh", "inv", "qr", "solve", "svd", "svdvals", "slogdet", "pinv"):
        assert callable(getattr(L, name))  # on the device: tests/array/test_linalg_*.py


def test_diagonal_trace(xb):
    x = xp.asarray(H)
    for off in (0, 1, -1, 3, -2, -3, 4, 9):
        d = L.diagonal(x, offset=off)
        _eq(d, np.linalg.diagonal(H, offset=off))
        _eq(L.trace(x, offset=off), np.linalg.trace(H, offset=off).astype(np.int32))
    assert L.diagonal(x + 1).is_lazy  # a view of the pending sum
    _eq(L.diagonal(x + 1), np.linalg.diagonal(H + 1))
    _eq(L.trace(xp.asarray(H.astype(np.float32)), dtype=xp.float32), np.linalg.trace(H).astype(np.float32))
    with pytest.raises(DispatchError, match="2 dimensions"):
        L.diagonal(xp.zeros((3,)))
    with pytest.raises(DispatchError, match="offset must be an int"):
        L.trace(x, offset=0.5)


def test_outer_cross(xb):
    a, b = np.int32([1, -2, 3]), np.int32([4, 0, -1, 2])
    _eq(L.outer(xp.asarray(a), xp.asarray(b)), np.outer(a, b))
    _eq(L.outer(xp.asarray(a), xp.asarray(b.astype(np.float32))), np.outer(a, b).astype(np.float32))
    u = np.int32([[1, 2, 3], [4, 5, 6]])
    v = np.int32([7, -8, 9])
    _eq(L.cross(xp.asarray(u), xp.asarray(v)), np.cross(u, v))
    w = np.arange(18, dtype=np.float32).reshape(3, 2, 3) % 5
    _eq(L.cross(xp.asarray(w), xp.asarray(w[::-1].copy()), axis=-1), np.cross(w, w[::-1]))
    t = np.arange(12, dtype=np.int32).reshape(3, 4) % 7
    _eq(L.cross(xp.asarray(t), xp.asarray(t + 1), axis=-2), np.cross(t, t + 1, axis=-2))
    with pytest.raises(DispatchError, match="size 3"):
        L.cross(xp.zeros((2,)), xp.zeros((2,)))
    with pytest.raises(DispatchError, match="out of range"):
        L.cross(xp.zeros((3, 3)), xp.zeros((3, 3)), axis=0)
    with pytest.raises(DispatchError, match="1-D"):
        L.outer(xp.zeros((2, 2)), xp.zeros((2,)))


@pytest.mark.parametrize("ord", [2, 1, 0, 3, 0.5, math.inf, -math.inf, -1])
def test_vector_norm(xb, ord):
    h = H.astype(np.float32) / 4
    x = xp.asarray(h)
    for axis in (None, 1, -1, (0, 2)):
        for keepdims in (False, True):
            with np.errstate(divide="ignore"):  # numpy's |0| ** -1
                want = np.linalg.vector_norm(h.astype(np.float64), axis=axis, keepdims=keepdims, ord=ord)
                _close(L.vector_norm(x, axis=axis, keepdims=keepdims, ord=ord), want)
    _close(L.vector_norm(xp.asarray(H)), np.linalg.vector_norm(H))  # integers: float32


@pytest.mark.parametrize("ord", ["fro", 1, -1, math.inf, -math.inf])
def test_matrix_norm(xb, ord):
    h = H.astype(np.float32) / 3
    for keepdims in (False, True):
        _close(L.matrix_norm(xp.asarray(h), ord=ord, keepdims=keepdims),
               np.linalg.matrix_norm(h.astype(np.float64), ord=ord, keepdims=keepdims))


def test_norm_empty(xb):
    z = np.zeros((0, 3), np.float32)
    for ord in (math.inf, 2, 1, 0):
        for axis in (None, 0):
            _close(L.vector_norm(xp.asarray(z), axis=axis, ord=ord), np.linalg.vector_norm(z, axis=axis, ord=ord))
    for ord in (1, math.inf, "fro"):
        _close(L.matrix_norm(xp.asarray(z), ord=ord), np.linalg.matrix_norm(z, ord=ord))
    with pytest.raises(DispatchError, match="zero elements"):
        L.vector_norm(xp.asarray(z), ord=-math.inf)  # numpy: ValueError (min has no identity)


def test_norm_errors(xb):
    x = xp.ones((2, 2))
    for ord in (2, -2, "nuc"):  # singular values (svdvals)
        _close(L.matrix_norm(x, ord=ord), np.linalg.matrix_norm(np.ones((2, 2)), ord=ord))
    with pytest.raises(DispatchError, match="unknown ord"):
        L.matrix_norm(x, ord=3)
    with pytest.raises(DispatchError, match="ord must be a number"):
        L.vector_norm(x, ord="fro")
    with pytest.raises(DispatchError, match="2 dimensions"):
        L.matrix_norm(xp.ones((3,)))


def test_matrix_power(xb):
    m = np.int32([[1, 1], [1, 0]])
    stack = np.stack([m, m * 2 - 1]).astype(np.int32)
    for k in range(7):
        _eq(L.matrix_power(xp.asarray(stack), k), np.linalg.matrix_power(stack, k))
    f = np.float32([[0.5, 1], [0, 2]])
    _eq(L.matrix_power(xp.asarray(f), 3), np.linalg.matrix_power(f, 3))
    x = xp.asarray(m)
    assert L.matrix_power(x, 1) is not x
    _close(L.matrix_power(x, -2), np.linalg.matrix_power(m.astype(np.float64), -2))  # of inv
    with pytest.raises(DispatchError, match="square"):
        L.matrix_power(xp.ones((2, 3)), 2)


def test_float16(xb):
    if not xb.capabilities().f16:
        skip_or_fail("no shader-f16")
    h = np.float16([[1, 2], [3, 4.5]])
    x = xp.asarray(h)
    assert L.vector_norm(x).dtype == xp.float16 and L.matrix_norm(x, ord=1).dtype == xp.float16
    np.testing.assert_allclose(np.asarray(L.vector_norm(x)), np.linalg.vector_norm(h.astype(np.float32)),
                               rtol=1e-3)
    _eq(L.diagonal(x), np.linalg.diagonal(h))


def _random(backend, shape, off, seed):
    a = np.random.default_rng(seed).integers(-9, 9, size=shape).astype(np.int32)
    with vyre.use(backend):
        x = xp.asarray(a) * 2
        _eq(L.diagonal(x, offset=off), np.linalg.diagonal(a * 2, offset=off))
        _eq(L.trace(x, offset=off), np.linalg.trace(a * 2, offset=off).astype(np.int32))
        _close(L.vector_norm(x, axis=-1), np.linalg.vector_norm(a * 2.0, axis=-1))


SHAPES = st.lists(st.integers(1, 5), min_size=2, max_size=4).map(tuple)


@settings(max_examples=8, deadline=None)
@given(shape=SHAPES, off=st.integers(-5, 5), seed=st.integers(0, 2**16))
def test_random_reference(ref_backend, shape, off, seed):
    _random(ref_backend, shape, off, seed)


@settings(max_examples=4, deadline=None)
@given(shape=SHAPES, off=st.integers(-5, 5), seed=st.integers(0, 2**16))
def test_random_gpu(gpu, shape, off, seed):
    _random(gpu, shape, off, seed)
