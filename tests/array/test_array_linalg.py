"""matmul (and ``@``), matrix_transpose, vecdot and tensordot against numpy, on the reference backend and
the GPU. Integers bit-exact (int32 wraps like numpy's); float32 within the op library's GEMM budget
(``rtol 2^-20, atol K * 2^-21 * max|a| * max|b|``, the products summed in another order); float16 within
one f16 ulp of the float64 product rounded once (f32 accumulation)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vyre
from vyre import array_api as xp
from vyre.errors import DeviceMismatchError, DispatchError

from gpu_policy import skip_or_fail

RNG = np.random.default_rng(11)


def _data(shape, dtype):
    if np.dtype(dtype).kind == "f":
        return RNG.uniform(-1, 1, shape).astype(dtype)
    if np.dtype(dtype).kind == "u":
        return RNG.integers(0, 2**32, shape, dtype=np.uint64).astype(np.uint32)
    return RNG.integers(-(2**31), 2**31, shape, dtype=np.int64).astype(np.int32)


def _check(got, want, k, dtype):
    got = np.asarray(got)
    assert got.shape == want.shape and got.dtype == np.dtype(dtype)
    if np.dtype(dtype).kind != "f":
        np.testing.assert_array_equal(got, want.astype(dtype))  # numpy's sum widens: wrap back
    elif np.dtype(dtype) == np.float16:
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=2**-10, atol=max(k, 1) * 2**-21)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want, rtol=2**-20, atol=max(k, 1) * 2**-21)


def _want(an, bn, fn=np.matmul):
    if an.dtype.kind == "f":
        return fn(an.astype(np.float64), bn.astype(np.float64))
    return fn(an, bn)  # numpy's int32/uint32 products wrap like the GPU's


def _skip_f16(backend, dtype):
    if np.dtype(dtype) == np.float16 and not backend.capabilities().f16:
        skip_or_fail("no shader-f16 on this adapter")


SHAPES = [((5, 7), (7, 3)), ((1, 1), (1, 1)), ((2, 5, 8), (8, 4)), ((2, 5, 8), (2, 8, 4)),
          ((3, 1, 5, 8), (2, 8, 4)), ((1, 6, 4), (3, 4, 2)), ((8,), (8,)), ((8,), (3, 8, 2)), ((2, 4, 8), (8,)),
          ((17, 9), (9, 33))]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32, np.float16])
@pytest.mark.parametrize("sa,sb", SHAPES)
def test_matmul_vs_numpy(xb, sa, sb, dtype):
    _skip_f16(xb, dtype)
    an, bn = _data(sa, dtype), _data(sb, dtype)
    got = xp.asarray(an) @ xp.asarray(bn)
    _check(got, _want(an, bn), sa[-1], dtype)
    assert xp.matmul(xp.asarray(an), xp.asarray(bn)).shape == np.matmul(an, bn).shape


def test_matmul_promotes_and_fuses_pending_inputs(xb):
    an, bn = _data((6, 5), np.float32), _data((6, 4), np.int32) % 7
    a, b = xp.asarray(an), xp.asarray(bn)
    x, y = a.mT, b * 2 + 1  # a transposed view and a pending int32 expression (promoted to float32)
    before = xp.fusion_stats()["submissions"]
    got = x @ y
    assert xp.fusion_stats()["submissions"] == before + 1  # inputs evaluated in the product's submission
    _check(got, an.T.astype(np.float64) @ (bn * 2 + 1).astype(np.float64), 6, np.float32)


def test_matmul_empty_and_zero_k(xb):
    z = xp.asarray(np.zeros((0, 3), np.float32)) @ xp.asarray(np.ones((3, 4), np.float32))
    assert z.shape == (0, 4)
    k0 = xp.asarray(np.zeros((2, 0), np.int32)) @ xp.asarray(np.zeros((0, 3), np.int32))
    np.testing.assert_array_equal(np.asarray(k0), np.zeros((2, 3), np.int32))


def test_matmul_errors(xb):
    a = xp.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(DispatchError, match="do not line up"):
        a @ a
    with pytest.raises(DispatchError, match="at least one dimension"):
        xp.matmul(a, xp.asarray(np.float32(1)))
    with pytest.raises(DispatchError, match="numeric"):
        xp.matmul(xp.asarray(np.ones((2, 2), bool)), xp.asarray(np.ones((2, 2), bool)))
    with pytest.raises(DispatchError, match="vyre array"):
        xp.matmul(a, np.ones((3, 2), np.float32))
    with pytest.raises(DispatchError, match="broadcast"):
        xp.asarray(np.ones((2, 2, 3), np.float32)) @ xp.asarray(np.ones((3, 3, 2), np.float32))


def test_matmul_device_mismatch(gpu, ref_backend):
    a = xp.asarray(np.ones((2, 2), np.float32), device=gpu)
    b = xp.asarray(np.ones((2, 2), np.float32), device=ref_backend)
    with pytest.raises(DeviceMismatchError):
        a @ b


@settings(max_examples=10, deadline=None)
@given(batch_a=st.lists(st.sampled_from([1, 2, 3]), max_size=2), batch_b=st.lists(st.sampled_from([1, 2]), max_size=2),
       m=st.integers(1, 6), k=st.integers(1, 6), n=st.integers(1, 6))
def test_matmul_broadcast_batches_hypothesis(ref_backend, batch_a, batch_b, m, k, n):
    try:
        np.broadcast_shapes(tuple(batch_a), tuple(batch_b))
    except ValueError:
        return
    an, bn = _data((*batch_a, m, k), np.int32), _data((*batch_b, k, n), np.int32)
    with vyre.use(ref_backend):
        _check(xp.asarray(an) @ xp.asarray(bn), an @ bn, k, np.int32)


def test_matrix_transpose(xb):
    an = _data((2, 3, 4), np.int32)
    np.testing.assert_array_equal(np.asarray(xp.matrix_transpose(xp.asarray(an))), np.swapaxes(an, -1, -2))
    with pytest.raises(DispatchError):
        xp.matrix_transpose(xp.asarray(an[0, 0]))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
@pytest.mark.parametrize("sa,sb,axis", [((3, 4, 5), (4, 5), -1), ((3, 4, 5), (1, 4, 5), -2), ((5,), (5,), -1),
                                        ((2, 1, 7), (3, 7), -1), ((4, 3), (4, 3), 0), ((2, 3, 4), (3, 4), -2)])
def test_vecdot(xb, sa, sb, axis, dtype):
    _skip_f16(xb, dtype)
    an, bn = _data(sa, dtype), _data(sb, dtype)
    got = xp.vecdot(xp.asarray(an), xp.asarray(bn), axis=axis)
    want = _want(an, bn, lambda x, y: np.sum(x * y, axis=axis))
    _check(got, want, max(sa[axis], 1), dtype)


def test_vecdot_fuses_and_errors(xb):
    an = _data((4, 6), np.int32) % 100
    a = xp.asarray(an)
    before = xp.fusion_stats()["submissions"]
    got = xp.vecdot(a + 1, a)  # the pending a + 1 fuses into the reduction
    assert xp.fusion_stats()["submissions"] == before + 1
    np.testing.assert_array_equal(np.asarray(got), np.sum((an + 1) * an, axis=-1))
    with pytest.raises(DispatchError, match="differ"):
        xp.vecdot(a, xp.asarray(np.ones((4, 5), np.int32)))
    with pytest.raises(DispatchError, match="out of range"):
        xp.vecdot(a, a, axis=2)
    with pytest.raises(DispatchError, match="out of range"):  # counted from the end: -3 is not in 2-d a
        xp.vecdot(xp.asarray(np.ones((3, 4, 6), np.int32)), a, axis=-3)
    with pytest.raises(DispatchError, match="out of range"):  # ranks differ: a non-negative axis is ambiguous
        xp.vecdot(xp.asarray(np.ones((3, 4, 6), np.int32)), a, axis=0)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("sa,sb,axes", [((3, 4, 5), (4, 5, 2), 2), ((3, 4), (4, 2), 1), ((2, 3), (4,), 0),
                                        ((3, 4, 5), (5, 3), ((0, 2), (1, 0))), ((4, 5), (5, 4), ((-1,), (0,)))])
def test_tensordot(xb, sa, sb, axes, dtype):
    an, bn = _data(sa, dtype), _data(sb, dtype)
    got = xp.tensordot(xp.asarray(an), xp.asarray(bn), axes=axes)
    want = _want(an, bn, lambda x, y: np.tensordot(x, y, axes=axes))
    _check(got, want, 20, dtype)


def test_tensordot_errors(xb):
    a = xp.asarray(np.ones((2, 3), np.float32))
    with pytest.raises(DispatchError, match="out of range"):
        xp.tensordot(a, a, axes=3)
    with pytest.raises(DispatchError, match="differ"):
        xp.tensordot(a, a, axes=1)
    with pytest.raises(DispatchError, match="two sequences"):
        xp.tensordot(a, a, axes=((0,), (0, 1)))
    with pytest.raises(DispatchError, match="repeated"):
        xp.tensordot(a, a, axes=((0, 0), (0, 1)))


def test_matmul_binds_buffers_as_they_are(xb):
    """Materialised float32 operands (and a reshape view of one) are bound directly: the op library's
    GEMM is the only kernel, one submission, no copies."""
    a = xp.asarray(_data((4, 16), np.float32))
    b = xp.asarray(_data((16, 8), np.float32))
    before = xp.fusion_stats()
    got = a @ xp.reshape(b, (16, 8))
    got2 = xp.reshape(a, (2, 2, 16)) @ b  # a stack times one matrix folds into one (4, 16) @ (16, 8)
    after = xp.fusion_stats()
    assert after["submissions"] - before["submissions"] == 2
    assert after["kernels_dispatched"] - before["kernels_dispatched"] == 2
    want = np.asarray(a).astype(np.float64) @ np.asarray(b).astype(np.float64)
    _check(got, want, 16, np.float32)
    _check(got2, want.reshape(2, 2, 8), 16, np.float32)
