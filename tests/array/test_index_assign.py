"""Assignment through integer arrays (``x[idx] = value``, vyre/array/_kernels/index_assign.py) against numpy on
both backends, bit-exact (values are moved, never computed): one and several index arrays, with ints and
slices around them (numpy's placement rules), broadcast values and scalars, negative indices, repeated
indices (the last entry's value stays, as numpy's), every dtype the device has; pending readers keep the
old values; bad values are refused before anything changes; a tape refuses the in-place change; traced
by vyre.compile."""

from __future__ import annotations

import numpy as np
import pytest
from extras import require_adapter
from hypothesis import given, settings
from hypothesis import strategies as st
from moved_values import data, same

import vyre
from vyre import array_api as xp
from vyre.errors import InvalidArgumentError

DTYPES = ["bool", "int32", "uint32", "float32", "int64", "uint64", "float64", "complex64"]


CASES = dict(seed=st.integers(0, 2**31 - 1), shape=st.lists(st.integers(1, 5), min_size=1, max_size=3),
             n_idx=st.integers(1, 2), at=st.integers(0, 2), dt=st.sampled_from(DTYPES),
             form=st.sampled_from(["full", "row", "scalar"]), host=st.booleans())


def _matches_numpy(seed, shape, n_idx, at, dt, form, host):
    """x[(slices..., idx0[, idx1], ...)] = value, the index arrays (of one broadcast shape, repeats and negative
    values likely) at axes at .. at + n_idx, against numpy."""
    require_adapter(dt in xp.__array_namespace_info__().dtypes(), "the 64-bit types")  # fails under CI=true
    rng = np.random.default_rng(seed)
    shape = tuple(shape)
    n_idx = min(n_idx, len(shape))
    at = min(at, len(shape) - n_idx)
    want = data(rng, shape, dt)
    idx_shape = tuple(rng.integers(1, 4, size=int(rng.integers(1, 3))))
    idx = [rng.integers(-shape[a], shape[a], size=idx_shape).astype(np.int32) for a in range(at, at + n_idx)]
    key_np = (*(slice(None),) * at, *idx)
    region = want[key_np].shape
    value: object = {"full": lambda: data(rng, region, dt), "row": lambda: data(rng, region[-1:], dt),
                     "scalar": lambda: data(rng, (), dt).item()}[form]()
    x = xp.asarray(want.copy())
    key = (*(slice(None),) * at, *([i.tolist() for i in idx] if host else [xp.asarray(i) for i in idx]))
    x[key] = value if form == "scalar" else xp.asarray(value)
    want[key_np] = value
    same(x, want)


@settings(max_examples=20, deadline=None)
@given(**CASES)
def test_matches_numpy_reference(ref_backend, **case):
    with vyre.use(ref_backend):
        _matches_numpy(**case)


@settings(max_examples=12, deadline=None)
@given(**CASES)
def test_matches_numpy_gpu(gpu, **case):
    with vyre.use(gpu):
        _matches_numpy(**case)


def test_repeated_indices_keep_the_last_value(xb):
    n = 3000  # many entries on few destinations: the claim's atomics contend across workgroups
    rng = np.random.default_rng(4)
    idx = rng.integers(0, 7, n).astype(np.int32)
    vals = np.arange(n, dtype=np.float32)
    x = xp.zeros(10, dtype=xp.float32)
    x[xp.asarray(idx)] = xp.asarray(vals)
    want = np.zeros(10, np.float32)
    want[idx] = vals
    same(x, want)
    for d in range(7):
        assert want[d] == np.flatnonzero(idx == d).max()  # numpy's rule, which the kernel follows


def test_placement_among_slices_and_ints(xb):
    want = np.arange(60, dtype=np.int32).reshape(3, 4, 5)
    x = xp.asarray(want.copy())
    i, j = xp.asarray(np.int32([0, 2])), xp.asarray(np.int32([[4], [1]]))
    x[i, :, j] = -7  # advanced entries apart: their broadcast dims go first
    want[np.int32([0, 2]), :, np.int32([[4], [1]])] = -7
    same(x, want)
    x[1, i, 1:3] = xp.asarray(np.int32([[100, 101], [102, 103]]))
    want[1, np.int32([0, 2]), 1:3] = [[100, 101], [102, 103]]
    same(x, want)


def test_pending_readers_keep_the_old_values(xb):
    base = np.arange(8, dtype=np.float32)
    x = xp.asarray(base.copy())
    pending = x * 2  # recorded against the old values
    view = x[2:6]
    x[xp.asarray(np.int32([3, 3, 0]))] = xp.asarray(np.float32([1, 2, 3]))
    want = base.copy()
    want[[3, 3, 0]] = [1, 2, 3]
    same(x, want)
    same(pending, base * 2)
    same(view, base[2:6])
    x[xp.asarray(np.int32([1]))] = x[xp.asarray(np.int32([7]))]  # the value reads x itself
    want[1] = want[7]
    same(x, want)


def test_errors_before_any_change(xb):
    x = xp.asarray(np.arange(6, dtype=np.float32))
    before = np.asarray(x).copy()
    with pytest.raises(ValueError, match="broadcast"):
        x[xp.asarray(np.int32([0, 1]))] = xp.asarray(np.float32([1, 2, 3]))
    with pytest.raises(IndexError):
        x[[9]] = 1.0  # a host list out of range: numpy's IndexError
    with pytest.raises(TypeError):
        x[xp.asarray(np.int32([0]))] = "a"
    same(x, before)


def test_under_a_tape_and_compile(xb):
    from vyre.autograd import GradientTape

    w = xp.asarray(np.arange(4, dtype=np.float32))
    with GradientTape() as tape:
        tape.watch(w)
        y = w * 2
        with pytest.raises(InvalidArgumentError, match="in-place change"):
            y[xp.asarray(np.int32([1, 1]))] = 5.0

    @vyre.compile
    def put(x, i, v):
        x[i] = v
        return x * 1

    for k in range(2):
        x = xp.asarray(np.arange(6, dtype=np.float32))
        i = xp.asarray(np.int32([k, 5 - k, k]))
        out = put(x, i, xp.asarray(np.float32([10, 20, 30])))
        want = np.arange(6, dtype=np.float32)
        want[[k, 5 - k, k]] = [10, 20, 30]
        same(out, want)
