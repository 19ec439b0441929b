"""Focused tests of nn.embedding and nn.embedding_bag beyond the witnesses.

Out-of-range indices: the convenience layer raises DispatchError before any backend use;
the kernels themselves (reached through a built pipeline, as a resident or pipeline caller
would) read such rows as zeros and clamp offsets. Both halves are tested.
"""

from __future__ import annotations

import numpy as np
import pytest

import vyre.ops
from vyre.errors import DispatchError
from vyre.ops.api import execute
from vyre.ops.registry import compare, get

from gpu_policy import skip_or_fail

BACKENDS = ["reference", "gpu"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.getfixturevalue(request.param)


def _table(num, dim, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-1, 1, (num, dim)).astype(dtype)


def _loop_bag(table, indices, offsets, mode, weights=None, include_last_offset=False):
    """torch's embedding_bag, one bag at a time (float64 sums; max: first row, then strictly larger)."""
    ends = list(offsets[1:]) + ([] if include_last_offset else [len(indices)])
    out = np.zeros((len(ends), table.shape[1]))
    for g, (s, e) in enumerate(zip(offsets, ends)):
        rows = table[indices[s:e]].astype(np.float64)
        if len(rows) == 0:
            continue
        if weights is not None:
            rows = rows * weights[s:e, None]
        if mode == "max":
            best = rows[0].copy()
            for r in rows[1:]:
                with np.errstate(invalid="ignore"):
                    best = np.where(r > best, r, best)
            out[g] = best
        else:
            out[g] = rows.sum(axis=0) / (len(rows) if mode == "mean" else 1)
    return out


# ----------------------------------------------------------------------------- nn.embedding
@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 4), (2, 3, 5)])
@pytest.mark.parametrize("index", [np.uint32, np.int32])
def test_embedding_shapes_and_rows(backend, shape, index):
    table = _table(11, 6, 1)
    idx = np.random.default_rng(2).integers(0, 11, shape).astype(index)
    got = vyre.ops.nn_embedding(backend, table, idx)
    assert got.shape == (*shape, 6) and got.dtype == np.float32
    np.testing.assert_array_equal(got, table[idx.astype(np.int64)])


def test_embedding_first_last_repeated_and_specials_bit_exact(backend):
    table = np.array([[np.nan, -0.0], [np.inf, 1e-40], [-np.inf, 3.0]], np.float32)
    got = vyre.ops.nn_embedding(backend, table, np.array([2, 0, 0, 2, 1], np.uint32))
    want = table[[2, 0, 0, 2, 1]]
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_embedding_f16(gpu):
    if "shader-f16" not in gpu.features:
        skip_or_fail("the adapter lacks shader-f16")
    table = _table(40, 24, 3, np.float16)
    idx = np.random.default_rng(4).integers(0, 40, (5, 9)).astype(np.int32)
    got = vyre.ops.nn_embedding(gpu, table, idx)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got.view(np.uint16), table[idx].view(np.uint16))


@pytest.mark.parametrize("idx", [np.array([0, 5], np.uint32), np.array([0, -1], np.int32),
                                 np.array([[1], [2**31 - 1]], np.int32)])
def test_embedding_out_of_range_raises_on_the_host(idx):
    with pytest.raises(DispatchError, match="outside the table's rows 0..4") as info:
        vyre.ops.nn_embedding(_Untouchable(), _table(5, 3), idx)
    assert "[0, 5)" in info.value.fix


def test_embedding_kernel_reads_out_of_range_rows_as_zeros(backend):
    table = _table(5, 3)
    idx = np.array([[4, 5, -1], [0, -(2**31), 2**31 - 1]], np.int32)
    pipe = get("nn.embedding").build(num=5, dim=3, shape=[2, 3], dtype="f32", index="i32")
    (got,) = execute(backend, pipe, [table, idx])
    want = np.zeros((2, 3, 3), np.float32)
    want[0, 0], want[1, 0] = table[4], table[0]
    np.testing.assert_array_equal(got, want)
    pipe = get("nn.embedding").build(num=5, dim=3, shape=[3], dtype="f32", index="u32")
    (got,) = execute(backend, pipe, [table, np.array([5, 0xFFFFFFFF, 1], np.uint32)])
    np.testing.assert_array_equal(got, [[0, 0, 0], [0, 0, 0], table[1]])


@pytest.mark.parametrize("args,words", [
    ((_table(4, 2).astype(np.float64), np.array([0], np.uint32)), "table has dtype float64"),
    ((_table(4, 2)[0], np.array([0], np.uint32)), "(num, dim)"),
    ((np.zeros((0, 3), np.float32), np.array([0], np.uint32)), "(num, dim)"),
    ((_table(4, 2), np.array([0], np.int64)), "idx has dtype int64"),
    ((_table(4, 2), np.array([0.0], np.float32)), "idx has dtype float32"),
    ((_table(4, 2), np.zeros(0, np.uint32)), "idx is empty"),
])
def test_embedding_bad_input(args, words):
    with pytest.raises(DispatchError) as info:
        vyre.ops.nn_embedding(_Untouchable(), *args)
    assert words in str(info.value) and info.value.fix


# ----------------------------------------------------------------------------- nn.embedding_bag
IDX = np.array([3, 0, 9, 9, 1, 4, 4, 4, 2, 0, 7], np.uint32)
OFFS = np.array([0, 2, 2, 6, 6, 10], np.uint32)  # bags 1 and 3 empty; the last bag is one index


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_bag_modes_match_loops(backend, mode):
    table = _table(10, 5, 5)
    got = vyre.ops.nn_embedding_bag(backend, table, IDX, OFFS, mode=mode)
    want = _loop_bag(table, IDX, OFFS, mode)
    assert got.shape == (6, 5) and got.dtype == np.float32
    np.testing.assert_array_equal(got[[1, 3]], 0.0)  # empty bags: zeros
    tol = get("nn.embedding_bag").tolerance_of({"mode": mode, "n": IDX.size, "dtype": "f32"})
    ok, err, detail = compare(got, want.astype(np.float32), tol)
    assert ok, detail


def test_bag_default_mode_is_mean_like_torch(backend):
    table = _table(10, 5, 6)
    np.testing.assert_array_equal(vyre.ops.nn_embedding_bag(backend, table, IDX, OFFS),
                                  vyre.ops.nn_embedding_bag(backend, table, IDX, OFFS, mode="mean"))


def test_bag_known_values(backend):
    table = np.array([[1, 2], [3, 4], [5, 6]], np.float32)
    idx, offs = np.array([0, 2, 1, 1], np.int32), np.array([0, 2, 2], np.int32)
    np.testing.assert_array_equal(vyre.ops.nn_embedding_bag(backend, table, idx, offs, mode="sum"),
                                  [[6, 8], [0, 0], [6, 8]])
    np.testing.assert_array_equal(vyre.ops.nn_embedding_bag(backend, table, idx, offs, mode="mean"),
                                  [[3, 4], [0, 0], [3, 4]])
    np.testing.assert_array_equal(vyre.ops.nn_embedding_bag(backend, table, idx, offs, mode="max"),
                                  [[5, 6], [0, 0], [3, 4]])
    w = np.array([2, -1, 0.5, 0.25], np.float32)
    np.testing.assert_array_equal(vyre.ops.nn_embedding_bag(backend, table, idx, offs, w, mode="sum"),
                                  [[-3, -2], [0, 0], [2.25, 3]])
    last = vyre.ops.nn_embedding_bag(backend, table, idx, offs, mode="sum", include_last_offset=True)
    np.testing.assert_array_equal(last, [[6, 8], [0, 0]])  # the last offset closes bag 1; index 2.. unused


def test_bag_weighted_sum_matches_loops(backend):
    table = _table(10, 5, 7)
    w = np.random.default_rng(8).uniform(-1, 1, IDX.size).astype(np.float32)
    got = vyre.ops.nn_embedding_bag(backend, table, IDX, OFFS, w, mode="sum")
    np.testing.assert_allclose(got, _loop_bag(table, IDX, OFFS, "sum", w), rtol=1e-6, atol=1e-6)


def test_bag_max_torch_rule(backend):
    """max: the first row, then strictly larger values: -0.0 before 0.0 stays -0.0, a first NaN stays,
    a later NaN is never taken."""
    table = np.array([[-0.0, np.nan, 1.0], [0.0, 2.0, np.nan], [-1.0, -3.0, -1.0]], np.float32)
    got = vyre.ops.nn_embedding_bag(backend, table, np.array([0, 1, 2, 2], np.uint32),
                                    np.array([0, 3], np.uint32), mode="max")
    assert got[0, 0] == 0 and np.signbit(got[0, 0])
    assert np.isnan(got[0, 1]) and got[0, 2] == 1.0
    np.testing.assert_array_equal(got[1], [-1.0, -3.0, -1.0])


def test_bag_f16(gpu):
    if "shader-f16" not in gpu.features:
        skip_or_fail("the adapter lacks shader-f16")
    table = _table(30, 16, 9, np.float16)
    idx = np.random.default_rng(10).integers(0, 30, 25).astype(np.uint32)
    offs = np.array([0, 4, 4, 20], np.uint32)
    for mode in ("sum", "mean", "max"):
        got = vyre.ops.nn_embedding_bag(gpu, table, idx, offs, mode=mode)
        assert got.dtype == np.float16
        params = get("nn.embedding_bag").params_for(table, idx, offs, mode=mode)
        assert get("nn.embedding_bag").needs_of(params) == {"shader-f16"}
        ok, err, detail = compare(got, _loop_bag(table, idx, offs, mode).astype(np.float16),
                                  get("nn.embedding_bag").tolerance_of(params))
        assert ok, f"{mode}: {detail}"


def test_bag_kernel_out_of_range_indices_and_offsets(backend):
    """Past the host checks: an out-of-range index is a zero row (counted by the mean, part of the max),
    offsets clamp to [0, len(indices)]."""
    table = np.array([[1, 1], [2, -2], [3, -3]], np.float32)
    idx = np.array([1, 7, -1, 2, 0], np.int32)
    offs = np.array([-5, 2, 1, 4, 99], np.int32)  # -> 0, 2, 1, 4, 5: bags [0:2], [2:1] empty, [1:4], [4:5], [5:5]
    for mode, want in [("sum", [[2, -2], [0, 0], [3, -3], [1, 1], [0, 0]]),
                       ("mean", [[1, -1], [0, 0], [1, -1], [1, 1], [0, 0]]),
                       ("max", [[2, 0], [0, 0], [3, 0], [1, 1], [0, 0]])]:
        pipe = get("nn.embedding_bag").build(num=3, dim=2, n=5, n_offsets=5, index="i32", offset="i32", mode=mode)
        (got,) = execute(backend, pipe, [table, idx, offs])
        np.testing.assert_array_equal(got, want, err_msg=mode)


TB, IX, OF = _table(6, 2), np.array([0, 1, 2], np.uint32), np.array([0, 1], np.uint32)


@pytest.mark.parametrize("args,kw,words", [
    ((TB, np.array([0, 6], np.uint32), OF), {}, "outside the table's rows 0..5"),
    ((TB, np.array([0, -2], np.int32), OF), {}, "outside the table's rows 0..5"),
    ((TB, IX.reshape(3, 1), OF), {}, "must be 1-D"),
    ((TB, IX, np.array([1, 2], np.uint32)), {}, "must start at 0"),
    ((TB, IX, np.array([0, 2, 1], np.uint32)), {}, "never decrease"),
    ((TB, IX, np.array([0, 4], np.uint32)), {}, "<= len(indices) = 3"),
    ((TB, IX, np.zeros(0, np.uint32)), {}, "must start at 0"),
    ((TB, IX, OF.astype(np.int64)), {}, "offsets has dtype int64"),
    ((TB, IX, OF), {"mode": "median"}, "mode 'median'"),
    ((TB, IX, OF), {"include_last_offset": "no"}, "include_last_offset"),
    ((TB, IX, OF[:1]), {"include_last_offset": True}, "include_last_offset"),
    ((TB, IX, OF, np.ones(3, np.float32)), {"mode": "mean"}, "per_sample_weights"),
    ((TB, IX, OF, np.ones(3, np.float64)), {"mode": "sum"}, "per_sample_weights"),
    ((TB, IX, OF, np.ones(2, np.float32)), {"mode": "sum"}, "per_sample_weights"),
    ((TB, IX, OF, np.ones(3, np.float32), np.ones(3, np.float32)), {"mode": "sum"}, "at most four"),
    ((TB, IX, OF), {"per_sample_weights": np.ones(3, np.float32)}, "unknown parameter"),
    ((TB.astype(np.int32), IX, OF), {}, "table has dtype int32"),
])
def test_bag_bad_input(args, kw, words):
    with pytest.raises(DispatchError) as info:
        vyre.ops.nn_embedding_bag(_Untouchable(), *args, **kw)
    assert words in str(info.value) and info.value.fix


def test_build_rejects_bad_params():
    with pytest.raises(ValueError, match="per_sample_weights only with 'sum'"):
        get("nn.embedding_bag").build(num=2, dim=2, n=2, n_offsets=1, mode="mean", weighted=True)
    with pytest.raises(ValueError, match="index"):
        get("nn.embedding").build(num=2, dim=2, shape=[2], index="i64")


class _Untouchable:
    """A backend that fails any use: the bad-input errors must come first."""

    def __getattr__(self, name):
        raise AssertionError(f"the backend was used ({name}) before the input was checked")


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_matches_torch(reference, mode):
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    table = _table(10, 5, 12)
    want = F.embedding(torch.from_numpy(IDX.astype(np.int64)), torch.from_numpy(table)).numpy()
    np.testing.assert_array_equal(vyre.ops.nn_embedding(reference, table, IDX), want)
    want = F.embedding_bag(torch.from_numpy(IDX.astype(np.int64)), torch.from_numpy(table),
                           torch.from_numpy(OFFS.astype(np.int64)), mode=mode).numpy()
    got = vyre.ops.nn_embedding_bag(reference, table, IDX, OFFS, mode=mode)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
