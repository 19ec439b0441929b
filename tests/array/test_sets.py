"""unique_all / unique_counts / unique_inverse / unique_values vs numpy's sorted np.unique (equal_nan=False)
on both backends, bit-exact (values, first indices, inverse indices, counts); NaNs distinct, signed zeros
equal; two submissions and one count download."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vyre
from vyre import array_api as xp
from vyre.errors import DispatchError

from gpu_policy import skip_or_fail


def _eq(got, want, dtype=None):
    g = np.asarray(got)
    want = np.asarray(want) if dtype is None else np.asarray(want).astype(dtype)
    assert g.dtype == want.dtype and g.shape == want.shape, (g.dtype, g.shape, want.dtype, want.shape)
    np.testing.assert_array_equal(g, want)


class Want(NamedTuple):
    values: np.ndarray
    indices: np.ndarray
    inverse_indices: np.ndarray
    counts: np.ndarray


def _np_unique(h):
    """numpy's sorted unique (np.unique_values may come out unsorted in numpy >= 2.3; ours is sorted)."""
    v, i, inv, c = np.unique(h, return_index=True, return_inverse=True, return_counts=True, equal_nan=False)
    return Want(v, i, inv.reshape(np.shape(h)), c)


def _check_all(x, h):
    r, w = xp.unique_all(x), _np_unique(h)
    assert r._fields == ("values", "indices", "inverse_indices", "counts")
    _eq(r.values, w.values)
    _eq(r.indices, w.indices, np.int32)
    _eq(r.inverse_indices, w.inverse_indices, np.int32)
    _eq(r.counts, w.counts, np.int32)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint32, np.bool_])
def test_unique_all(xb, dtype):
    h = (np.arange(60).reshape(3, 4, 5) * 7 % 13).astype(dtype)
    _check_all(xp.asarray(h), h)
    _check_all(xp.asarray(h[0, 0]), h[0, 0])


def test_unique_variants(xb):
    h = np.int32([[5, -2, 5], [7, -2, 5]])
    x = xp.asarray(h)
    c, w = xp.unique_counts(x), _np_unique(h)
    assert c._fields == ("values", "counts")
    _eq(c.values, w.values)
    _eq(c.counts, w.counts, np.int32)
    i, w2 = xp.unique_inverse(x), _np_unique(h)
    assert i._fields == ("values", "inverse_indices")
    _eq(i.values, w2.values)
    _eq(i.inverse_indices, w2.inverse_indices, np.int32)  # the shape of x
    _eq(xp.unique_values(x), w.values)


def test_nan_and_signed_zero(xb):
    h = np.float32([np.nan, 0.0, -0.0, 1.5, np.nan, -np.inf, 1.5, np.inf, -0.0])
    x = xp.asarray(h)
    r, w = xp.unique_all(x), _np_unique(h)
    got = np.asarray(r.values)
    np.testing.assert_array_equal(got, w.values)  # -0.0 == +0.0; two NaNs, each its own value
    assert int(np.isnan(got).sum()) == 2
    _eq(r.counts, w.counts, np.int32)
    _eq(r.indices, w.indices, np.int32)
    _eq(r.inverse_indices, w.inverse_indices, np.int32)
    # the kept zero is the first in the stable order: bits as in the input at that index
    zero = np.asarray(r.values)[np.asarray(r.values) == 0]
    assert np.signbit(zero[0]) == np.signbit(h[int(np.asarray(r.indices)[1])])


def test_empty_scalar_lazy(xb):
    e = xp.unique_all(xp.zeros((0, 3)))
    _eq(e.values, np.zeros(0, np.float32))
    _eq(e.indices, np.zeros(0, np.int32))
    _eq(e.inverse_indices, np.zeros((0, 3), np.int32))
    _eq(e.counts, np.zeros(0, np.int32))
    _check_all(xp.asarray(np.float32(2.5)), np.float32(2.5))
    _check_all(xp.asarray(np.int32([4])), np.int32([4]))
    h = np.arange(12, dtype=np.int32).reshape(3, 4) % 5
    x = xp.asarray(h) * 2  # pending: evaluated inside the sort's submission
    xp.reset_fusion_stats()
    _check_all(x, h * 2)
    assert xp.fusion_stats()["submissions"] == 2  # sort+flags+scan, then scatter+counts


def test_many_and_errors(xb):
    h = np.random.default_rng(5).integers(0, 300, size=5000).astype(np.uint32)  # several scan tiles
    _check_all(xp.asarray(h), h)
    with pytest.raises(DispatchError, match="vyre array"):
        xp.unique_values(np.ones(3))
    with pytest.raises(TypeError):
        xp.unique_values()


def test_float16(xb):
    if not xb.capabilities().f16:
        skip_or_fail("no shader-f16")
    h = np.float16([1.5, np.nan, -0.0, 1.5, 65504, 0.0, -3])
    r, w = xp.unique_all(xp.asarray(h)), _np_unique(h)
    _eq(r.values, w.values)
    _eq(r.counts, w.counts, np.int32)
    _eq(r.inverse_indices, w.inverse_indices, np.int32)


def _random(backend, shape, seed, dtype):
    rng = np.random.default_rng(seed)
    a = rng.integers(-4, 5, size=shape).astype(dtype)
    if dtype == np.float32:
        a[rng.random(shape) < 0.2] = np.nan
    with vyre.use(backend):
        _check_all(xp.asarray(a), a)


SHAPES = st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple)
DTYPES = st.sampled_from([np.float32, np.int32])


@settings(max_examples=8, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**16), dtype=DTYPES)
def test_random_reference(ref_backend, shape, seed, dtype):
    _random(ref_backend, shape, seed, dtype)


@settings(max_examples=4, deadline=None)
@given(shape=SHAPES, seed=st.integers(0, 2**16), dtype=DTYPES)
def test_random_gpu(gpu, shape, seed, dtype):
    _random(gpu, shape, seed, dtype)
