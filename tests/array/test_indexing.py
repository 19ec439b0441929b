"""Indexing vs numpy on both backends: basic keys (lazy strided views), integer arrays and masks
(gathers), take/take_along_axis, assignment (in place, or a new buffer while pending work reads the old
values), typed errors before GPU work. Integers bit-exact; floats exact (data movement only)."""

from __future__ import annotations

import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vyre
from vyre import array_api as xp
from vyre.array import _indexing
from vyre.array._kernels.index_maps import Strided
from vyre.errors import DeviceMismatchError, DispatchError, UnsupportedDTypeError


def _eq(got, want):
    g = np.asarray(got)
    assert g.dtype == want.dtype and g.shape == want.shape, (g.dtype, g.shape, want.dtype, want.shape)
    np.testing.assert_array_equal(g, want)


A = np.arange(60, dtype=np.int32).reshape(3, 4, 5)

BASIC = [0, -1, (1, 2), (1, 2, 3), (-1, -2, -3), slice(None), slice(1, None), slice(None, None, -1),
         slice(None, None, -2), slice(10, -10, -1), slice(5, 1), (slice(None), 1), (Ellipsis, 2),
         (1, Ellipsis), (None, 0, None), (Ellipsis, None), (slice(2, 0, -1), None, slice(None, None, 3), 4),
         (), Ellipsis, True, False, (0, slice(1, 3), Ellipsis, None)]


def test_basic(xb):
    x = xp.asarray(A)
    for key in BASIC:
        got = x[key]
        assert got.is_lazy  # a view: nothing ran
        _eq(got, A[key])
    _eq(x[1, 2, 3], A[1, 2, 3])
    assert int(x[1, 2, 3]) == int(A[1, 2, 3])
    f = xp.asarray(A.astype(np.float32)) * 0.5
    _eq(f[::-1, 1:3, ::2], (A.astype(np.float32) * 0.5)[::-1, 1:3, ::2])
    _eq(xp.asarray(A > 30)[1, ::-1], (A > 30)[1, ::-1])


def test_views_fuse_and_compose(xb):
    x = xp.asarray(A)
    y = (x * 2)[1:, ::-1][0, 1:, None]
    assert isinstance(y._expr, Strided) and not isinstance(y._expr.child, Strided)
    before = xp.fusion_stats()["kernels_dispatched"]
    _eq(y + 1, (A * 2)[1:, ::-1][0, 1:, None] + 1)
    assert xp.fusion_stats()["kernels_dispatched"] == before + 1


def test_integer_arrays(xb):
    x = xp.asarray(A)
    idx = np.array([2, 0, -1, 1], np.int32)
    i = xp.asarray(idx)
    _eq(x[i], A[idx])
    _eq(x[[2, 0, -1]], A[[2, 0, -1]])
    _eq(x[:, i], A[:, idx])
    _eq(x[1:, :, i[:2]], A[1:, :, idx[:2]])
    _eq(x[..., xp.asarray(np.array([[0, 4], [3, 1]], np.int32))], A[..., np.array([[0, 4], [3, 1]])])
    # several arrays broadcast together (the standard's integer-array indexing), ints count as arrays
    i0, i1 = np.array([[0], [2]], np.int32), np.array([1, 3, 0], np.int32)
    _eq(x[xp.asarray(i0), xp.asarray(i1)], A[i0, i1])
    _eq(x[xp.asarray(i0), xp.asarray(i1), 2], A[i0, i1, 2])
    _eq(x[0, :, xp.asarray(i1)], A[0, :, i1])  # separated advanced indices: index dimensions first
    _eq(x[xp.asarray(i0[:, 0]), :, xp.asarray(i1[:1])], A[i0[:, 0], :, i1[:1]])
    _eq(x[None, i], A[None, idx])
    _eq((x + 1)[i], A[idx] + 1)  # a pending source is fused into the gather
    _eq(x[xp.asarray(np.array([], np.int32))], A[np.array([], np.intp)])
    _eq(x[xp.asarray(idx.astype(np.uint32))], A[[2, 0, 2, 1]])  # 2**32 - 1 clamps to the last
    _eq(x[[]], A[[]])


def test_out_of_range_index_arrays_clamp(xb):
    x = xp.asarray(np.arange(5, dtype=np.float32))
    got = x[xp.asarray(np.array([7, -9, 2, -5], np.int32))]
    _eq(got, np.array([4, 0, 2, 0], np.float32))  # documented: wrap negatives once, then clamp
    _eq(xp.take(x, xp.asarray(np.array([100], np.uint32))), np.array([4], np.float32))


def test_masks(xb):
    x = xp.asarray(A)
    m = A % 7 == 0
    _eq(x[xp.asarray(m)], A[m])
    _eq(x[m], A[m])
    _eq(x[xp.asarray(m[:, :, 0])], A[m[:, :, 0]])
    _eq(x[xp.asarray(m[:, :, 0]), 1:], A[m[:, :, 0], 1:])
    _eq(x[1, xp.asarray(m[0, :, 0])], A[1, m[0, :, 0]])
    _eq(x[xp.asarray(True)], A[True])
    _eq(x[np.zeros((3, 4, 5), bool)], A[np.zeros((3, 4, 5), bool)])


def test_masks_of_many_dimensions(xb):
    """A mask reads the axes it covers as one: any number of dimensions (past the 8 buffers of a kernel),
    anywhere in the key, with integer arrays and slices next to it."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3, 2, 2, 3, 2, 2, 2, 3)).astype(np.float32)
    x = xp.asarray(a)
    for k in (7, 8, 9):
        m = rng.random(a.shape[:k]) > 0.5
        _eq(x[xp.asarray(m)], a[m])
    m = rng.random(a.shape[2:8]) > 0.3
    _eq(x[:, 1, xp.asarray(m)], a[:, 1, m])
    _eq(x[1:, :, xp.asarray(m), ::-1], a[1:, :, m, ::-1])
    m3 = rng.random(a.shape[1:4]) > 0.2
    sel = (np.arange(int(m3.sum())) % 3).astype(np.int32)  # broadcasts with the mask's positions, like numpy
    _eq(x[:, xp.asarray(m3), xp.asarray(sel)], a[:, m3, sel])


def test_take(xb):
    x = xp.asarray(A.astype(np.float32))
    af = A.astype(np.float32)
    idx = np.array([2, 0, -1], np.int32)
    for axis in (0, 1, 2, -1):
        _eq(xp.take(x, xp.asarray(idx), axis=axis), np.take(af, idx, axis=axis))
    v = xp.asarray(np.arange(7, dtype=np.uint32))
    _eq(xp.take(v, xp.asarray(np.array([6, 1], np.int32))), np.array([6, 1], np.uint32))
    order = np.argsort(-A, axis=1).astype(np.int32)
    for axis in (0, 1, 2):
        o = np.argsort((A * 7) % 11, axis=axis).astype(np.int32)
        _eq(xp.take_along_axis(x, xp.asarray(o), axis=axis), np.take_along_axis(af, o, axis=axis))
    _eq(xp.take_along_axis(x, xp.asarray(order)), np.take_along_axis(af, order, axis=-1))
    one = order[:, :2, :1]  # broadcasts along the last axis
    _eq(xp.take_along_axis(x, xp.asarray(one), axis=1), np.take_along_axis(af, one, axis=1))


def test_setitem(xb):
    x = xp.asarray(A.copy())
    b = A.copy()
    pending = x * 1  # reads the old values: the assignment must not change it
    view = x[0]
    x[0, 1:3] = 100
    b[0, 1:3] = 100
    _eq(x, b)
    _eq(pending, A)
    _eq(view, A[0])
    x[:, ::-2, 1] = xp.asarray(np.array([7, 8], np.int32))
    b[:, ::-2, 1] = [7, 8]
    x[..., -1] = x[..., 0] * 3  # the value reads x itself: a new buffer
    b[..., -1] = b[..., 0] * 3
    x[1] = x[2]
    b[1] = b[2]
    x[None, 2, 0] = np.int32(-4)
    b[None, 2, 0] = -4
    x[2, 3, 4] = 5
    b[2, 3, 4] = 5
    _eq(x, b)
    f = xp.asarray(np.zeros((2, 3), np.float32))
    f[0] = xp.asarray(np.array([1, 2, 3], np.int32)).astype(xp.float32)
    f[1, 1:] = 2.5
    f[:, 0] = 0.25
    _eq(f, np.array([[0.25, 2, 3], [0.25, 2.5, 2.5]], np.float32))
    bo = xp.asarray(np.zeros(4, bool))
    bo[1::2] = True
    _eq(bo, np.array([False, True, False, True]))


def test_setitem_in_place_when_unshared(xb, monkeypatch):
    copies = []
    orig = _indexing.copy_step
    monkeypatch.setattr(_indexing, "copy_step", lambda *a: (copies.append(1), orig(*a)))
    x = xp.asarray(np.zeros(8, np.float32))
    buf = weakref.ref(x._buf)
    x[2:5] = 1.0
    assert not copies and x._buf is buf()  # written in place
    keep = x + 0
    x[0] = 3.0
    assert copies and x._buf is not buf()  # pending work read the old buffer: x got a new one
    _eq(keep, np.array([0, 0, 1, 1, 1, 0, 0, 0], np.float32))
    _eq(x, np.array([3, 0, 1, 1, 1, 0, 0, 0], np.float32))
    lazy = xp.asarray(np.arange(4, dtype=np.int32)) + 1
    lazy[0] = 9  # a pending array is evaluated first
    _eq(lazy, np.array([9, 2, 3, 4], np.int32))


def test_mask_assignment(xb):
    x = xp.asarray(A.copy())
    b = A.copy()
    x[x > 40] = -1
    b[b > 40] = -1
    x[xp.asarray((A % 2 == 0)[:, :, 0])] = xp.asarray(np.int32(7))
    b[(A % 2 == 0)[:, :, 0]] = 7
    _eq(x, b)


def test_errors(xb):
    x = xp.asarray(A)
    bad = [
        (lambda: x[3], "out of bounds"),
        (lambda: x[0, -5], "out of bounds"),
        (lambda: x[0, 0, 0, 0], "too many indices"),
        (lambda: x[..., ...], "single ellipsis"),
        (lambda: x[::0], "slice"),
        (lambda: x[1.5], "cannot index"),
        (lambda: x["a"], "cannot index"),
        (lambda: x[[0, 3]], "out of bounds"),
        (lambda: x[[0.5]], "list/array of float"),
        (lambda: x[np.ones((3, 4), bool)[:2]], "does not match"),
        (lambda: xp.take(x, xp.asarray([0])), "axis is required"),
        (lambda: xp.take(A, xp.asarray([0])), "vyre arrays"),
        (lambda: xp.take_along_axis(x, xp.asarray([0])), "dimension"),
        (lambda: xp.take(xp.zeros((0,), dtype=xp.int32), xp.asarray([0])), "size 0"),
    ]
    for fn, msg in bad:
        with pytest.raises(DispatchError, match=msg) as info:
            fn()
        assert info.value.fix
    for key, value, msg in [((slice(None),), xp.asarray(np.ones(4, np.int32)), "broadcast"),
                            (xp.asarray([0, 1]), xp.asarray(np.ones(3, np.int32)), "broadcast"),
                            (0, object(), "cannot assign")]:
        with pytest.raises(DispatchError, match=msg):
            x[key] = value
    with pytest.raises(UnsupportedDTypeError):
        x[0] = 1.5
    with pytest.raises(UnsupportedDTypeError):
        x[0] = xp.asarray(np.ones(5, np.float32))
    with pytest.raises(UnsupportedDTypeError):
        x[xp.asarray(np.array([0.0], np.float32))]
    with pytest.raises(UnsupportedDTypeError):
        xp.take(x, xp.asarray([0.0]), axis=0)
    with pytest.raises(DispatchError, match="True entries"):  # full masks: tests/array/test_mask_assign.py
        x[A > 3] = xp.asarray(np.ones(2, np.int32))
    _eq(x, A)  # nothing changed


def test_index_devices(gpu, ref_backend):
    x = xp.asarray([1, 2, 3], device=gpu)
    with pytest.raises(DeviceMismatchError):
        x[xp.asarray([0], device=ref_backend)]


def _random_index(backend, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(int(v) for v in rng.integers(1, 5, size=int(rng.integers(1, 4))))
    a = rng.integers(-50, 50, size=shape).astype(np.int32)
    key = []
    for n in shape[: int(rng.integers(1, len(shape) + 1))]:
        kind = rng.integers(0, 4)
        if kind == 0:
            key.append(int(rng.integers(-n, n)))
        elif kind == 1:
            lo, hi = (int(v) for v in rng.integers(-n - 1, n + 2, size=2))
            key.append(slice(lo, hi, int(rng.choice([-3, -2, -1, 1, 2, 3]))))
        elif kind == 2:
            key.append(None)
            key.append(slice(None))
        else:
            key.append(slice(None))
    key = tuple(key)
    value = int(rng.integers(-9, 9))
    with vyre.use(backend):
        x = xp.asarray(a)
        _eq(x[key], a[key])
        _eq((x - 3)[key][..., None], (a - 3)[key][..., None])
        b = a.copy()
        b[key] = value
        x[key] = value
        _eq(x, b)
        ax = int(rng.integers(0, len(shape)))
        idx = rng.integers(-shape[ax], shape[ax], size=int(rng.integers(0, 5))).astype(np.int32)
        _eq(xp.take(x, xp.asarray(idx), axis=ax), np.take(b, idx, axis=ax))


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_random_reference(ref_backend, seed):
    _random_index(ref_backend, seed)


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_random_gpu(gpu, seed):
    _random_index(gpu, seed)


def test_float16_and_zero_d(xb):
    s = xp.asarray(np.float32(2.5))
    _eq(s[()], np.float32(2.5)[()] * np.ones((), np.float32))
    _eq(s[None], np.array([2.5], np.float32))
    s[()] = 4.0
    assert float(s) == 4.0
    if not xb.capabilities().f16:
        return
    h = np.arange(6, dtype=np.float16).reshape(2, 3) / 8
    x = xp.asarray(h)
    _eq(x[:, [2, 0]], h[:, [2, 0]])
    _eq(xp.take_along_axis(x, xp.asarray(np.array([[1], [0]], np.int32)), axis=1), h[[0, 1], [1, 0]][:, None])
    x[0, 1:] = 9.5
    h = h.copy()
    h[0, 1:] = 9.5
    _eq(x, h)


def test_setitem_loop_reuses_one_program(xb):
    from vyre.array._kernels import gather
    x = xp.asarray(np.zeros((6, 5), np.float32))
    x[0] = 1.0
    built = len(gather.programs)
    for i in range(1, 6):
        x[i] = float(i + 1)  # another offset each time: a runtime parameter, not a new program
    assert len(gather.programs) == built
    _eq(x, np.repeat(np.arange(1, 7, dtype=np.float32)[:, None], 5, axis=1))
    big = xp.asarray(np.zeros(4, np.int32))
    v = xp.asarray(np.ones(4, np.int32))
    for k in range(7):
        v = v + xp.asarray(np.full(4, k, np.int32))  # seven distinct input buffers: materialised first
    big[:] = v
    _eq(big, np.full(4, 1 + sum(range(7)), np.int32))
