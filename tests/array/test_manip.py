"""Manipulation functions vs numpy on both backends (integers bit-exact, floats exact: these move data
only), views staying lazy and fusing, concat/stack in one kernel, typed errors before GPU work."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vyre
from vyre import array_api as xp
from vyre.array._kernels.index_maps import Reshape, Strided
from vyre.errors import DispatchError, UnsupportedDTypeError

from gpu_policy import skip_or_fail


def _eq(got, want):
    g = np.asarray(got)
    assert g.dtype == want.dtype and g.shape == want.shape, (g.dtype, g.shape, want.dtype, want.shape)
    np.testing.assert_array_equal(g, want)


A = np.arange(24, dtype=np.int32).reshape(2, 3, 4)


def test_views(xb):
    x = xp.asarray(A)
    _eq(xp.expand_dims(x, axis=1), np.expand_dims(A, 1))
    _eq(xp.expand_dims(x, axis=-1), np.expand_dims(A, -1))
    _eq(xp.expand_dims(x, axis=(0, -1)), np.expand_dims(A, (0, -1)))
    _eq(xp.squeeze(xp.expand_dims(x, axis=(0, 2)), axis=(0, 2)), A)
    _eq(xp.squeeze(xp.asarray(A[:1]), axis=0), A[0])
    for axis in (None, 0, -1, (0, 2)):
        _eq(xp.flip(x, axis=axis), np.flip(A, axis=axis))
    _eq(xp.moveaxis(x, 0, -1), np.moveaxis(A, 0, -1))
    _eq(xp.moveaxis(x, (0, 1), (2, 0)), np.moveaxis(A, (0, 1), (2, 0)))
    parts = xp.unstack(x, axis=1)
    assert len(parts) == 3
    for k, p in enumerate(parts):
        _eq(p, A[:, k])
    a, b = xp.broadcast_arrays(xp.asarray(np.arange(3, dtype=np.float32)), xp.asarray(np.ones((2, 1), np.float32)))
    _eq(a, np.broadcast_to(np.arange(3, dtype=np.float32), (2, 3)))
    _eq(b, np.ones((2, 3), np.float32))
    assert xp.broadcast_arrays() == []


def test_roll_tile_repeat(xb):
    x = xp.asarray(A)
    _eq(xp.roll(x, 5), np.roll(A, 5))
    _eq(xp.roll(x, -1, axis=1), np.roll(A, -1, axis=1))
    _eq(xp.roll(x, (1, -2), axis=(0, 2)), np.roll(A, (1, -2), axis=(0, 2)))
    _eq(xp.roll(x, (1, 2), axis=(1, 1)), np.roll(A, (1, 2), axis=(1, 1)))
    _eq(xp.tile(x, (2,)), np.tile(A, (2,)))
    _eq(xp.tile(x, (2, 1, 1, 3)), np.tile(A, (2, 1, 1, 3)))
    _eq(xp.tile(x, (0, 1, 1)), np.tile(A, (0, 1, 1)))
    _eq(xp.repeat(x, 2, axis=1), np.repeat(A, 2, axis=1))
    _eq(xp.repeat(x, 3), np.repeat(A, 3))
    _eq(xp.repeat(x, 0, axis=2), np.repeat(A, 0, axis=2))
    reps = np.array([1, 0, 3], np.int32)
    _eq(xp.repeat(x, xp.asarray(reps), axis=1), np.repeat(A, reps, axis=1))
    _eq(xp.repeat(x, xp.asarray([2]), axis=0), np.repeat(A, 2, axis=0))


def test_concat_stack(xb):
    x = xp.asarray(A)
    f = xp.asarray(A.astype(np.float32) / 2)
    for axis in (0, 1, -1):
        _eq(xp.concat((x, x * 2, x[:, :, :1]) if axis == -1 else (x, x * 2), axis=axis),
            np.concatenate((A, A * 2, A[:, :, :1]) if axis == -1 else (A, A * 2), axis=axis))
    flat = [A.ravel().astype(np.float32), (A / 2).ravel().astype(np.float32)]
    _eq(xp.concat([x, f], axis=None), np.concatenate(flat))
    _eq(xp.concat((x[:0], x), axis=0), A)  # an empty piece
    _eq(xp.concat((xp.asarray(A > 5), xp.asarray(A < 3)), axis=2), np.concatenate((A > 5, A < 3), axis=2))
    for axis in (0, 2, -1, 3):
        _eq(xp.stack((x, x + 1, -x), axis=axis), np.stack((A, A + 1, -A), axis=axis))
    _eq(xp.stack([xp.asarray(np.float32(1.5))]), np.array([1.5], np.float32))


def test_concat_many_pieces_one_submission(xb):
    # 10 pieces of 2 buffers each (array + scalar parameters): several kernels, one submission
    pieces = [xp.asarray(np.full((2, k + 1), k, np.float32)) + k for k in range(10)]
    want = np.concatenate([np.full((2, k + 1), 2 * k, np.float32) for k in range(10)], axis=1)
    before = xp.fusion_stats()["submissions"]
    got = xp.concat(pieces, axis=1)
    assert xp.fusion_stats()["submissions"] == before + 1 and not got.is_lazy
    _eq(got, want)
    assert all(p.is_lazy for p in pieces)  # the pieces were fused in, never materialised


def test_views_are_lazy_and_compose(xb):
    x = xp.asarray(A)
    y = xp.flip(xp.moveaxis(x, 0, -1), axis=0)[1:, ::-2]
    assert isinstance(y._expr, Strided) and not isinstance(y._expr.child, Strided)  # one index map
    assert isinstance(xp.expand_dims(x, axis=0)._expr, Reshape)  # no index arithmetic at all
    assert isinstance(xp.squeeze(xp.expand_dims(x + 1, axis=0), axis=0)._expr, Reshape)
    _eq(y, np.flip(np.moveaxis(A, 0, -1), axis=0)[1:, ::-2])
    z = xp.roll(xp.flip(x * 2 + 1), 3, axis=2)
    before = xp.fusion_stats()
    _eq(z, np.roll(np.flip(A * 2 + 1), 3, axis=2))
    after = xp.fusion_stats()
    assert after["kernels_dispatched"] == before["kernels_dispatched"] + 1  # fused into one kernel


def test_errors(xb):
    x = xp.asarray(A)
    bad = [
        (lambda: xp.squeeze(x, axis=0), "size 2"),
        (lambda: xp.expand_dims(x, axis=4), "out of range"),
        (lambda: xp.expand_dims(x, axis=(0, 0)), "repeated"),
        (lambda: xp.flip(x, axis=3), "out of range"),
        (lambda: xp.moveaxis(x, (0, 1), 2), "destinations"),
        (lambda: xp.roll(x, (1, 2), axis=0), "shift"),
        (lambda: xp.roll(x, (1, 2)), "tuple axis"),
        (lambda: xp.tile(x, (-1,)), "negative"),
        (lambda: xp.tile(x, 2), "tuple"),
        (lambda: xp.repeat(x, -1), "negative"),
        (lambda: xp.repeat(x, xp.asarray([1, 2]), axis=1), "length 1 or 3"),
        (lambda: xp.concat((x, x[:, :2]), axis=0), "differ outside axis"),
        (lambda: xp.concat(()), "at least one"),
        (lambda: xp.concat((xp.asarray(1), xp.asarray(2))), "0-d"),
        (lambda: xp.stack((x, x[:1])), "differ"),
        (lambda: xp.unstack(xp.asarray(1)), "0-d"),
        (lambda: xp.expand_dims(A, axis=0), "vyre array"),
    ]
    for fn, msg in bad:
        with pytest.raises(DispatchError, match=msg) as info:
            fn()
        assert info.value.fix
    with pytest.raises(UnsupportedDTypeError):
        xp.repeat(x, xp.asarray([1.0]), axis=0)


def test_concat_devices(gpu, ref_backend):
    from vyre.errors import DeviceMismatchError
    a = xp.asarray([1, 2], device=gpu)
    b = xp.asarray([3], device=ref_backend)
    with pytest.raises(DeviceMismatchError):
        xp.concat((a, b))


SHAPES = st.lists(st.integers(1, 4), min_size=1, max_size=4).map(tuple)


def _random_manip(backend, shape, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-100, 100, size=shape, dtype=np.int32)
    nd = len(shape)
    ax = int(rng.integers(-nd, nd))
    shift = int(rng.integers(-7, 8))
    axes = tuple(int(v) for v in rng.permutation(nd)[: int(rng.integers(1, nd + 1))])
    reps = tuple(int(v) for v in rng.integers(1, 3, size=int(rng.integers(1, nd + 2))))
    with vyre.use(backend):
        x = xp.asarray(a) + 1  # pending: every view fuses with the addition
        b = a + 1
        _eq(xp.flip(x, axis=axes), np.flip(b, axis=axes))
        _eq(xp.roll(x, shift, axis=ax), np.roll(b, shift, axis=ax))
        _eq(xp.expand_dims(x, axis=ax), np.expand_dims(b, ax))
        _eq(xp.moveaxis(x, ax, 0), np.moveaxis(b, ax, 0))
        _eq(xp.tile(x, reps), np.tile(b, reps))
        _eq(xp.repeat(x, 2, axis=ax), np.repeat(b, 2, axis=ax))
        _eq(xp.concat((x, xp.flip(x, axis=ax)), axis=ax), np.concatenate((b, np.flip(b, axis=ax)), axis=ax))
        _eq(xp.stack((x, x), axis=ax), np.stack((b, b), axis=ax))


@settings(max_examples=10, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**16))
def test_random_reference(ref_backend, shape, seed):
    _random_manip(ref_backend, shape, seed)


@settings(max_examples=6, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**16))
def test_random_gpu(gpu, shape, seed):
    _random_manip(gpu, shape, seed)


def test_zero_d_and_empty(xb):
    s, n = xp.asarray(np.float32(3.5)), np.float32(3.5)
    cases = [lambda v, m: m.flip(v), lambda v, m: m.roll(v, 3), lambda v, m: m.expand_dims(v, axis=0),
             lambda v, m: m.squeeze(v, axis=()), lambda v, m: m.tile(v, (2,)), lambda v, m: m.repeat(v, 2),
             lambda v, m: m.stack((v, v))]
    for fn in cases:
        _eq(fn(s, xp), np.asarray(fn(n, np)))
    z, zn = xp.zeros((0, 3)), np.zeros((0, 3), np.float32)
    _eq(xp.flip(z), zn)
    _eq(xp.roll(z, 1, axis=0), zn)
    _eq(xp.concat((z, z)), zn)
    _eq(xp.stack((z, z), axis=1), np.zeros((0, 2, 3), np.float32))
    _eq(xp.unstack(z, axis=1)[2], np.zeros(0, np.float32))
    assert xp.unstack(z) == ()


def test_float16(xb):
    if not xb.capabilities().f16:
        skip_or_fail("no shader-f16")
    h = np.arange(6, dtype=np.float16).reshape(2, 3) / 4
    x = xp.asarray(h)
    _eq(xp.concat((x, xp.flip(x, axis=1)), axis=1), np.concatenate((h, np.flip(h, axis=1)), axis=1))
    _eq(xp.roll(xp.tile(x, (1, 2)), 1), np.roll(np.tile(h, (1, 2)), 1))
    want = np.concatenate((h, np.ones((1, 3)))).astype(np.float32)  # promoted to float32
    _eq(xp.concat((x, xp.asarray(np.ones((1, 3), np.float32)))), want)
