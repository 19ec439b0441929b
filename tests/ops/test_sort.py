"""Focused tests of the sort ops (sort.radix, sort.radix_pairs, sort.topk) beyond the witnesses."""

from __future__ import annotations

import numpy as np
import pytest

import vyre.ops
from vyre.backends.schedule import BufferSpec, Pipeline, run_pipeline
from vyre.errors import DispatchError
from vyre.ops.registry import get
from vyre.ops.sort import _radix

BACKENDS = ["reference", "gpu"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.getfixturevalue(request.param)


def test_radix_known_values(backend):
    keys = np.array([5, 3, 0xFFFFFFFF, 0, 3, 1 << 31, 7], np.uint32)
    out = vyre.ops.sort_radix(backend, keys)
    np.testing.assert_array_equal(out, [0, 3, 3, 5, 7, 1 << 31, 0xFFFFFFFF])
    assert out.dtype == np.uint32


def test_radix_pairs_is_stable(backend):
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 4, 700).astype(np.uint32) << np.uint32(28)  # only the top digit differs
    vals = np.arange(700, dtype=np.uint32)
    k, v = vyre.ops.sort_radix_pairs(backend, keys, vals)
    np.testing.assert_array_equal(k, np.sort(keys))
    for key in np.unique(keys):
        run = v[k == key]
        assert np.all(np.diff(run.astype(np.int64)) > 0), "equal keys must keep their input order"
    np.testing.assert_array_equal(v, np.argsort(keys, kind="stable"))


def test_radix_many_blocks_multi_level_scan(gpu):
    # 300k keys: 1172 blocks, 18752 (digit, block) counts -> 19 scan blocks (two scan levels)
    rng = np.random.default_rng(2)
    keys = rng.integers(0, 2**32, 300_000, dtype=np.uint64).astype(np.uint32)
    pipe = get("sort.radix").build(n=keys.size)
    assert any(s.program.name == "sort_radix_block_sums" for s in pipe.steps)
    np.testing.assert_array_equal(vyre.ops.sort_radix(gpu, keys), np.sort(keys))


@pytest.mark.parametrize("m", [1, 1023, 1024, 1025, 5000, _radix.SCAN_BLOCK * _radix.SCAN_BLOCK + 7])
def test_scan_steps_any_length(gpu, reference, m):
    """The counts scan is an exclusive prefix sum of any length (recursive over block sums)."""
    buffers = {"data": BufferSpec(_radix.U32, m)}
    steps = _radix.scan_steps("data", m, buffers)
    pipe = Pipeline("scan", buffers, ("data",), ("data",), tuple(steps))
    rng = np.random.default_rng(m)
    data = rng.integers(0, 1 << 20, m).astype(np.uint32)
    want = (np.cumsum(data, dtype=np.uint64) - data).astype(np.uint32)
    backends = [gpu] if m > 100_000 else [gpu, reference]
    for be in backends:
        (got,) = run_pipeline(be, pipe, [data])
        np.testing.assert_array_equal(got, want)


def test_programs_do_not_depend_on_the_key_count():
    small = {p.fingerprint for p in get("sort.radix").build(n=10).programs}
    large = {p.fingerprint for p in get("sort.radix").build(n=100_000).programs}
    assert large >= small  # the larger sort only adds the block-sums/scan-with-base programs
    pairs = get("sort.radix_pairs").build(n=10).programs
    assert len(pairs) == 2 * _radix.PASSES + 1  # hist + scatter per pass, one scan


def test_topk_known_values(backend):
    x = np.array([3, 1, 4, 1, 5, 9, 2, 6], np.float32)
    values, idx = vyre.ops.sort_topk(backend, x, k=3)
    np.testing.assert_array_equal(values, [9, 6, 5])
    np.testing.assert_array_equal(idx, [5, 7, 4])
    assert values.dtype == np.float32 and idx.dtype == np.uint32


def test_topk_ties_lower_index_first_and_signed_zero(backend):
    x = np.array([-1.0, 0.0, -0.0, 2.0, 0.0, -np.inf, np.inf, 2.0], np.float32)
    values, idx = vyre.ops.sort_topk(backend, x, k=8)
    np.testing.assert_array_equal(idx, [6, 3, 7, 1, 2, 4, 0, 5])
    assert np.signbit(values[4]) and not np.signbit(values[3])  # -0.0 comes back as -0.0
    u = np.array([7, 0xFFFFFFFF, 7, 0, 0xFFFFFFFF], np.uint32)
    uv, ui = vyre.ops.sort_topk(backend, u, k=4)
    np.testing.assert_array_equal(ui, [1, 4, 0, 2])
    np.testing.assert_array_equal(uv, [0xFFFFFFFF, 0xFFFFFFFF, 7, 7])


def test_param_errors():
    with pytest.raises(DispatchError, match="u32"):
        get("sort.radix").params_for(np.arange(4, dtype=np.int32))
    with pytest.raises(DispatchError, match="value per key"):
        get("sort.radix_pairs").params_for(np.arange(4, dtype=np.uint32), np.arange(3, dtype=np.uint32))
    with pytest.raises(DispatchError, match="1-D"):
        get("sort.radix").params_for(np.zeros((2, 2), np.uint32))
    topk = get("sort.topk")
    x = np.arange(5, dtype=np.float32)
    with pytest.raises(DispatchError, match="k=6"):
        topk.params_for(x, k=6)
    with pytest.raises(DispatchError, match="needs k"):
        topk.params_for(x)
    with pytest.raises(DispatchError, match="NaN"):
        topk.params_for(np.array([1.0, np.nan], np.float32), k=1)
    with pytest.raises(DispatchError, match="f32 or u32") as err:
        topk.params_for(np.arange(3, dtype=np.int64), k=1)
    assert err.value.fix
