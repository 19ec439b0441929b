"""Focused tests of the reductions and the histogram beyond the witnesses: known values,
the convenience layer, the kernel plan (passes, vec4, limits) and parameter errors."""

from __future__ import annotations

import numpy as np
import pytest

import vyre.ops
from vyre.backends.schedule import run_pipeline
from vyre.errors import DispatchError
from vyre.ops.reduce import _blocks, histogram
from vyre.ops.registry import compare, get

BACKENDS = ["reference", "gpu"]
REDUCTIONS = ["reduce.sum", "reduce.prod", "reduce.min", "reduce.max", "reduce.mean", "reduce.argmax"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.getfixturevalue(request.param)


def test_known_values(backend):
    x = np.array([3, -1, 7, 7, 2], np.int32)
    assert vyre.ops.reduce_sum(backend, x) == 18
    assert vyre.ops.reduce_prod(backend, x) == -294
    assert vyre.ops.reduce_min(backend, x) == -1
    assert vyre.ops.reduce_max(backend, x) == 7
    assert vyre.ops.reduce_argmax(backend, x) == 2  # the first of the two 7s
    mean = vyre.ops.reduce_mean(backend, x)
    assert mean.dtype == np.float32 and mean.shape == ()
    # sum / n: WGSL division may be 2.5 ulp off (NVIDIA's is; lavapipe's is exact)
    assert abs(float(mean) - 3.6) <= 3 * float(np.spacing(np.float32(3.6)))


def test_axis_results_have_numpy_shapes(backend):
    x = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    for axis in (None, 0, 1, 2, -1, -3):
        got = vyre.ops.reduce_sum(backend, x, axis=axis)
        want = np.sum(x, axis=axis)
        assert got.shape == np.shape(want) and got.dtype == np.float32
        np.testing.assert_array_equal(got, want)  # small integers: exact in any order
        np.testing.assert_array_equal(vyre.ops.reduce_argmax(backend, x, axis=axis), np.argmax(x, axis=axis))


def test_integer_sum_and_prod_wrap(backend):
    x = np.full(1000, 0xFFFFFFFF, np.uint32)
    assert vyre.ops.reduce_sum(backend, x) == np.uint32(-1000 % 2**32)
    y = np.array([2**31 - 1, 1, 2], np.int32)
    assert vyre.ops.reduce_sum(backend, y) == np.int32(-(2**31) + 2)
    assert vyre.ops.reduce_prod(backend, np.full(33, 2, np.uint32)) == 0
    assert vyre.ops.reduce_prod(backend, np.array([65536, 65537], np.int32)) == 65536


def test_float_specials(backend):
    f = lambda v: np.array(v, np.float32)  # noqa: E731
    assert vyre.ops.reduce_sum(backend, f([1, np.inf, 2])) == np.inf
    assert np.isnan(vyre.ops.reduce_sum(backend, f([np.inf, 1, -np.inf])))
    assert np.isnan(vyre.ops.reduce_mean(backend, f([1, np.nan])))
    assert vyre.ops.reduce_max(backend, f([-np.inf, -3, -np.inf])) == -3
    assert vyre.ops.reduce_min(backend, f([np.inf, -0.0, 5])) == 0.0


def test_argmax_nan_and_signed_zero_follow_numpy(backend):
    f = lambda v: np.array(v, np.float32)  # noqa: E731
    for x in (f([1, np.inf, np.nan, 2, np.nan]), f([-0.0, 0.0, -1]), f([-1, 0.0, -0.0]), f([-np.nan, 5, 6]),
              f([-np.inf, -np.inf]), f(np.full(9, np.nan))):
        assert vyre.ops.reduce_argmax(backend, x) == np.argmax(x), x


def test_mean_of_integers_is_f32(backend):
    x = np.array([[0xFFFFFFFF, 1], [3, 5]], np.uint32)
    got = vyre.ops.reduce_mean(backend, x, axis=1)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, [2.0**31, 4.0], rtol=1e-7)


def test_zero_d_input(backend):
    assert vyre.ops.reduce_max(backend, np.float32(2.5)) == np.float32(2.5)


@pytest.mark.parametrize("op_id", REDUCTIONS)
def test_large_multipass_axis_matches_numpy(reference, op_id):
    # rows long enough for several blocks per row: two passes on the reference backend
    spec = get(op_id)
    x = np.random.default_rng(3).integers(-1000, 1000, (3, 40000)).astype(np.int32)
    params = spec.params_for(x, axis=1)
    pipe = spec.build(**params)
    assert len(pipe.steps) == 2
    got = run_pipeline(reference, pipe, [x])
    want = spec.reference(x, **params)
    ok, err, how = compare(got[0], want[0], spec.tolerance_of(params))
    assert ok, how


# ----------------------------------------------------------------------------- plan
@pytest.mark.parametrize("shape,axis", [((1,), None), ((1000,), None), ((1 << 22,), None), ((1 << 25,), None),
                                        ((3, 1000), 0), ((1000, 3), 1), ((20000, 5), 0), ((7, 1, 9), 1),
                                        ((64, 4096), 0), ((100_000, 8), 1)])
def test_plan_respects_limits(shape, axis):
    passes = _blocks.plan(shape, axis)
    assert passes[-1].blocks == 1
    for g in passes:
        assert g.wx * g.wy == _blocks.WG and g.wy & (g.wy - 1) == 0
        assert g.blocks * g.tiles <= max(_blocks.MAX_WORKGROUPS, g.tiles)
    assert len(passes) <= 2  # blocks are capped, so one partials pass always suffices


def test_vec4_loads_when_rows_are_contiguous():
    assert _blocks.plan((1000,), None)[0].vec == 4
    assert _blocks.plan((1001,), None)[0].vec == 1
    assert _blocks.plan((3, 1000), 1)[0].vec == 4  # N-d inputs are flattened for vector buffers
    assert _blocks.plan((3, 1000), 0)[0].vec == 1  # strided columns
    x = get("reduce.sum").build(shape=(1 << 18,), dtype="f32", axis=None)
    assert x.buffers["x"].dtype.value == "vec4<f32>" and x.buffers["x"].count == 1 << 16


def test_programs_are_deterministic_and_small():
    for op_id in REDUCTIONS + ["histogram"]:
        spec = get(op_id)
        for w in spec.witnesses():
            a, b = spec.build(**w.params), spec.build(**w.params)
            assert [p.fingerprint for p in a.programs] == [p.fingerprint for p in b.programs]
            for p in a.programs:
                assert p.workgroup_invocations <= 256
                assert sum(d.count * 4 for d in p.workgroup) <= 16 * 1024


# ----------------------------------------------------------------------------- errors
def test_params_errors(reference):
    with pytest.raises(DispatchError) as e:
        vyre.ops.reduce_sum(reference, np.ones(4, np.float64))
    assert e.value.fix
    with pytest.raises(DispatchError):
        vyre.ops.reduce_sum(reference, np.ones((2, 2), np.float32), axis=2)
    with pytest.raises(DispatchError):
        vyre.ops.reduce_max(reference, np.zeros(0, np.int32))
    with pytest.raises(ValueError):
        get("reduce.min").build(shape=(3,), dtype="f16")
    with pytest.raises(ValueError):
        get("reduce.min").build(shape=(3, 0), dtype="f32", axis=0)


# ----------------------------------------------------------------------------- histogram
def test_histogram_known_values(backend):
    x = np.array([1, 1, 2, 9, 0, 3, 3, 3, 4, 0xFFFFFFFF], np.uint32)
    got = vyre.ops.histogram(backend, x, bins=4)
    np.testing.assert_array_equal(got, [1, 2, 1, 3])  # 4, 9 and 0xFFFFFFFF are ignored
    assert got.dtype == np.uint32


@pytest.mark.parametrize("bins", [1, 4096, 4097, 20000, 40000])
def test_histogram_paths(backend, bins):
    x = np.random.default_rng(bins).integers(0, bins + 100, 30000).astype(np.uint32).reshape(100, 300)
    want = np.bincount(x[x < bins], minlength=bins)
    np.testing.assert_array_equal(vyre.ops.histogram(backend, x, bins=bins), want)


def test_histogram_kernel_choice():
    assert histogram.build(n=10, bins=4096).steps[0].program.name.startswith("histogram_private")
    three = histogram.build(n=10_000, bins=10_000).steps[0]
    assert three.grid[1] == 3
    assert histogram.build(n=10, bins=histogram.RANGE * histogram.MAX_RANGES + 1).steps[0].program.name \
        .startswith("histogram_global")


def test_histogram_params_errors(reference):
    with pytest.raises(DispatchError):
        vyre.ops.histogram(reference, np.ones(4, np.int32), bins=3)
    with pytest.raises(DispatchError):
        vyre.ops.histogram(reference, np.ones(4, np.uint32))
    with pytest.raises(DispatchError):
        vyre.ops.histogram(reference, np.ones(4, np.uint32), bins=0)
