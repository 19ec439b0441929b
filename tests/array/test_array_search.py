"""Searching and sorting (vyre/array/_searching.py, _sorting.py) vs numpy on both backends: every result
is an integer index or a copied value, so every comparison is bit-exact (floats compared through their
bits)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vyre
from vyre import array_api as xp
from vyre.errors import DispatchError

from gpu_policy import skip_or_fail

SPECIALS = np.array([np.nan, 1.0, -0.0, 0.0, -np.inf, np.inf, np.nan, -1.0, 0.0, -0.0, 1.0, 3.0], np.float32)


def _data(dtype: str, shape, rng) -> np.ndarray:
    """Few distinct values (ties matter), with the float specials mixed in."""
    n = int(np.prod(shape))
    if dtype == "bool":
        return rng.integers(0, 2, n).astype(bool).reshape(shape)
    if dtype in ("float32", "float16"):
        x = (rng.integers(-6, 7, n) / 2).astype(np.float32)
        k = min(n, 8)
        x[rng.choice(n, k, replace=False)] = rng.choice(SPECIALS, k)
        return x.astype(dtype).reshape(shape)
    if dtype == "uint32":
        return rng.choice(np.array([0, 1, 7, 2**31, 2**32 - 1], np.uint32), n).reshape(shape)
    return rng.choice(np.array([-(2**31), -3, 0, 2, 2**31 - 1], np.int32), n).reshape(shape)


def _bits(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return a.view({2: np.uint16, 4: np.uint32}[a.itemsize]) if a.dtype.kind == "f" else a


def _np_argsort(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    if not descending:
        return np.argsort(a, axis=axis, kind="stable")
    # array-api-strict's stable descending order: equal values keep their order, NaN first
    flipped = np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
    return a.shape[axis] - 1 - flipped


def _skip_f16(backend, dtype: str) -> None:
    if dtype == "float16" and not backend.capabilities().f16:
        skip_or_fail("no shader-f16")


# ---- argmax / argmin --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "int32", "uint32", "bool", "float16"])
def test_argmax_argmin(xb, dtype):
    _skip_f16(xb, dtype)
    rng = np.random.default_rng(1)
    a = _data(dtype, (5, 3, 70), rng)
    x = xp.asarray(a)
    for f, ref in ((xp.argmax, np.argmax), (xp.argmin, np.argmin)):
        for axis in (None, 0, 1, -1):
            for keepdims in (False, True):
                got = f(x, axis=axis, keepdims=keepdims)
                want = ref(a, axis=axis, keepdims=keepdims)
                assert got.dtype == xp.int32 and got.shape == np.shape(want), (f, axis, keepdims)
                np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"{f.__name__} axis={axis}")


def test_argmax_nan_and_zeros(xb):
    a = np.array([1.0, -0.0, np.inf, np.nan, 0.0, np.nan, -np.inf], np.float32)
    x = xp.asarray(a)
    assert int(xp.argmax(x)) == np.argmax(a) == 3  # the first NaN, also after +inf
    assert int(xp.argmin(x)) == np.argmin(a) == 3
    z = np.array([0.0, -0.0, 0.0, -0.0], np.float32)  # -0.0 == +0.0: the first wins
    assert int(xp.argmax(xp.asarray(z))) == 0 and int(xp.argmin(xp.asarray(z))) == 0
    big = np.zeros(70001, np.float32)
    big[[40000, 65000]] = [7.0, 7.0]  # several passes: the first of equal maxima
    assert int(xp.argmax(xp.asarray(big))) == 40000
    assert int(xp.asarray(big).argmax()) == 40000  # the Array method delegates
    np.testing.assert_array_equal(np.asarray(xp.asarray(a.reshape(7, 1)).argmin(axis=0, keepdims=True)), [[3]])


def test_argmax_fuses_its_input(xb):
    a = xp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    y = -(a * 2.0) + 1.0
    before = xp.fusion_stats()
    got = np.asarray(xp.argmax(y, axis=1))  # the argmax runs with the download (deferred)
    assert xp.fusion_stats()["submissions"] == before["submissions"] + 1
    assert y.is_lazy  # the expression was computed inside the key kernel, never on its own
    np.testing.assert_array_equal(got, [0, 0, 0])


def test_argmax_edge_cases(xb):
    assert int(xp.argmax(xp.asarray(np.float32(5.0)))) == 0
    np.testing.assert_array_equal(np.asarray(xp.argmax(xp.zeros((0, 3)), axis=1)), np.zeros(0, np.int32))
    with pytest.raises(DispatchError, match="empty"):
        xp.argmax(xp.zeros((0, 3)))
    with pytest.raises(DispatchError, match="empty"):
        xp.argmin(xp.zeros((0, 3)), axis=0)
    with pytest.raises(DispatchError, match="out of range"):
        xp.argmax(xp.zeros((2, 3)), axis=2)
    with pytest.raises(DispatchError, match="axis must be an int"):
        xp.argmax(xp.zeros((2, 3)), axis=(0, 1))
    with pytest.raises(DispatchError, match="vyre array"):
        xp.argmax(np.zeros(3))


# ---- sort / argsort ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "int32", "uint32", "bool", "float16"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_argsort(xb, dtype, descending):
    _skip_f16(xb, dtype)
    rng = np.random.default_rng(2)
    a = _data(dtype, (3, 4, 90), rng)
    x = xp.asarray(a)
    for axis in (-1, 0, 1):
        want = _np_argsort(a, axis, descending)
        got = xp.argsort(x, axis=axis, descending=descending)
        assert got.dtype == xp.int32 and got.shape == a.shape
        np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"axis={axis}")
        s = xp.sort(x, axis=axis, descending=descending)
        assert s.dtype == x.dtype
        np.testing.assert_array_equal(_bits(np.asarray(s)), _bits(np.take_along_axis(a, want, axis)))


def test_sort_signed_zeros_and_nan_payloads(xb):
    a = np.array([0.0, -0.0, np.nan, -0.0, 0.0, -1.0], np.float32)
    a[2] = np.frombuffer(np.uint32(0xFFC00001).tobytes(), np.float32)[0]  # a NaN with a payload and sign
    got = np.asarray(xp.sort(xp.asarray(a)))
    np.testing.assert_array_equal(_bits(got), _bits(np.sort(a, kind="stable")))  # stable, bits kept


def test_sort_many_blocks_and_rows(xb):
    """Several radix workgroups in one row, and many rows (the second, row-id pass)."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal(1500).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(xp.sort(xp.asarray(a))), np.sort(a))
    b = rng.integers(-4, 4, (300, 7)).astype(np.int32)
    np.testing.assert_array_equal(np.asarray(xp.argsort(xp.asarray(b), axis=0)), np.argsort(b, 0, kind="stable"))


def test_sort_fuses_and_trivial_cases(xb):
    a = np.array([[3, 1, 2], [0, 5, 4]], np.int32)
    x = xp.asarray(a)
    y = x * 3 - 1
    before = xp.fusion_stats()
    np.testing.assert_array_equal(np.asarray(xp.sort(y)), np.sort(a * 3 - 1))
    assert xp.fusion_stats()["submissions"] - before["submissions"] == 2  # the argsort, then the gather
    assert y.is_lazy
    np.testing.assert_array_equal(np.asarray(xp.argsort(xp.zeros((4, 1)))), np.zeros((4, 1), np.int32))
    np.testing.assert_array_equal(np.asarray(xp.sort(x, axis=0)), np.sort(a, axis=0))
    assert xp.argsort(xp.zeros((0, 5))).shape == (0, 5)
    assert xp.sort(xp.zeros((2, 0))).shape == (2, 0)
    with pytest.raises(DispatchError, match="0-d"):
        xp.sort(xp.asarray(1.0))
    with pytest.raises(DispatchError, match="out of range"):
        xp.argsort(x, axis=2)


SHAPES = st.lists(st.integers(1, 5), min_size=1, max_size=3).map(tuple)


def _sort_case(backend, shape, axis, descending, dtype, seed):
    a = _data(dtype, shape, np.random.default_rng(seed))
    axis = axis % len(shape)
    with vyre.use(backend):
        x = xp.asarray(a)
        want = _np_argsort(a, axis, descending)
        np.testing.assert_array_equal(np.asarray(xp.argsort(x, axis=axis, descending=descending)), want)
        got = np.asarray(xp.sort(x, axis=axis, descending=descending))
        np.testing.assert_array_equal(_bits(got), _bits(np.take_along_axis(a, want, axis)))


@settings(max_examples=8, deadline=None)
@given(shape=SHAPES, axis=st.integers(-3, 2), descending=st.booleans(),
       dtype=st.sampled_from(["float32", "int32", "uint32", "bool"]), seed=st.integers(0, 2**16))
def test_sort_hypothesis_reference(ref_backend, shape, axis, descending, dtype, seed):
    _sort_case(ref_backend, shape, axis, descending, dtype, seed)


@settings(max_examples=8, deadline=None)
@given(shape=SHAPES, axis=st.integers(-3, 2), descending=st.booleans(),
       dtype=st.sampled_from(["float32", "int32", "uint32", "bool"]), seed=st.integers(0, 2**16))
def test_sort_hypothesis_gpu(gpu, shape, axis, descending, dtype, seed):
    _sort_case(gpu, shape, axis, descending, dtype, seed)


# ---- nonzero / count_nonzero -------------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(37,), (4, 5, 6), (1, 2, 1, 2, 1, 2, 1, 2)])
def test_nonzero(xb, shape):
    rng = np.random.default_rng(4)
    a = _data("float32", shape, rng)  # NaN counts as non-zero, -0.0 does not
    got = xp.nonzero(xp.asarray(a))
    want = np.nonzero(a)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == xp.int32
        np.testing.assert_array_equal(np.asarray(g), w)


def test_nonzero_edge_cases(xb):
    z = xp.nonzero(xp.zeros((3, 4), dtype=xp.int32))
    assert len(z) == 2 and all(t.shape == (0,) and t.dtype == xp.int32 for t in z)
    assert [t.shape for t in xp.nonzero(xp.zeros((0, 2)))] == [(0,), (0,)]
    b = np.array([True, False, True, True])
    x = xp.asarray(b)
    np.testing.assert_array_equal(np.asarray(xp.nonzero(x & x)[0]), np.nonzero(b)[0])  # a fused input
    with pytest.raises(DispatchError, match="0-d"):
        xp.nonzero(xp.asarray(1))


def test_count_nonzero(xb):
    rng = np.random.default_rng(5)
    a = _data("float32", (3, 4, 5, 6), rng)
    x = xp.asarray(a)
    for axis in (None, 0, -1, (1, 2), (0, 2), (3, 0, 1), ()):
        for keepdims in (False, True):
            got = xp.count_nonzero(x, axis=axis, keepdims=keepdims)
            want = np.count_nonzero(a, axis=axis, keepdims=keepdims)
            assert got.dtype == xp.int32 and got.shape == np.shape(want), (axis, keepdims)
            np.testing.assert_array_equal(np.asarray(got), want, err_msg=f"axis={axis}")
    i = rng.integers(0, 3, 70001).astype(np.int32)  # several reduction passes
    assert int(xp.count_nonzero(xp.asarray(i))) == np.count_nonzero(i)
    assert int(xp.count_nonzero(xp.asarray(True))) == 1
    np.testing.assert_array_equal(np.asarray(xp.count_nonzero(xp.zeros((2, 0)), axis=1)), [0, 0])
    with pytest.raises(DispatchError, match="repeated"):
        xp.count_nonzero(x, axis=(1, -3))


# ---- searchsorted ------------------------------------------------------------------------------------

@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted(xb, side):
    rng = np.random.default_rng(6)
    s = np.sort(_data("float32", (301,), rng))
    v = _data("float32", (4, 50), rng)
    got = xp.searchsorted(xp.asarray(s), xp.asarray(v), side=side)
    assert got.dtype == xp.int32 and got.shape == v.shape
    np.testing.assert_array_equal(np.asarray(got), np.searchsorted(s, v, side=side))
    u = rng.permutation(np.arange(0, 60, 3, dtype=np.int32))  # unsorted, through sorter
    srt = np.argsort(u, kind="stable").astype(np.int32)
    q = np.arange(-2, 63, dtype=np.int32)
    got = xp.searchsorted(xp.asarray(u), xp.asarray(q) + 0, side=side, sorter=xp.asarray(srt))
    np.testing.assert_array_equal(np.asarray(got), np.searchsorted(u, q, side=side, sorter=srt))


def test_searchsorted_edge_cases(xb):
    s = xp.asarray(np.array([1, 2, 2, 3], np.int32))
    assert int(xp.searchsorted(s, 2)) == 1 and int(xp.searchsorted(s, 2, side="right")) == 3
    np.testing.assert_array_equal(np.asarray(xp.searchsorted(xp.zeros((0,)), xp.ones(3))), [0, 0, 0])
    assert xp.searchsorted(s, xp.zeros((0,), dtype=xp.int32)).shape == (0,)
    with pytest.raises(DispatchError, match="side"):
        xp.searchsorted(s, s, side="middle")
    with pytest.raises(DispatchError, match="1-D"):
        xp.searchsorted(xp.zeros((2, 2)), s)
    with pytest.raises(DispatchError, match="sorter"):
        xp.searchsorted(s, s, sorter=xp.zeros(4))
    assert int(xp.searchsorted(s, xp.asarray(np.float32(1.5)))) == 1  # promoted as the namespace does
    with pytest.raises(DispatchError, match="vyre array"):
        xp.searchsorted(s, "2")
