"""The ``subgroup`` variants of scan.inclusive/exclusive, softmax, layernorm and rmsnorm.

Each forced variant against the op's numpy reference within the op's tolerance (integer scans
bit-exact) on ragged sizes: on the reference interpreter at simulated subgroup sizes 32, 8, 4 and
128 (the kernels read the size at run time and must work for every size WGSL allows), and on the
GPU at the adapter's own size (lavapipe: 8). Plus: where the variants are chosen, and the shared
combine's depth bounds. tests/ops/test_ops.py runs them on every witness too.
"""

from __future__ import annotations

import numpy as np
import pytest

from vyre.backends.reference import ReferenceBackend
from vyre.errors import UnsupportedFeatureError
from vyre.ops import _subgroup as sg
from vyre.ops.api import call, variant_for
from vyre.ops.registry import compare, get
from vyre.ops.scan import _subgroup as scan_sg
from vyre.ops.scan import _tiles
from vyre.ops.variants import AdapterFacts, choose

from gpu_policy import skip_or_fail

SIZES = (32, 8, 4, 128)
SCAN_N = [1, 7, 255, 256, 1000, _tiles.TILE, _tiles.TILE + 1, 3 * _tiles.TILE + 17]
ROWS = [(1, 1), (3, 17), (5, 33), (2, 300), (3, 1000), (4, 257), (9, 64)]
ROW_OPS = ("softmax", "layernorm", "rmsnorm")


def _scan_input(dtype: str, n: int) -> np.ndarray:
    rng = np.random.default_rng(n)
    if dtype == "f32":
        return rng.uniform(-1, 1, n).astype(np.float32)
    if dtype == "u32":
        return rng.integers(2**31, 2**32, n, dtype=np.uint64).astype(np.uint32)  # wraps often
    return rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)


def _row_inputs(op: str, rows: int, cols: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(rows * 1000 + cols)
    x = (rng.standard_normal((rows, cols)) * 3 + rng.uniform(-50, 50, (rows, 1))).astype(np.float32)
    if op == "softmax":
        return (x,)
    gamma = rng.uniform(0.5, 1.5, cols).astype(np.float32)
    return (x, gamma) if op == "rmsnorm" else (x, gamma, rng.uniform(-1, 1, cols).astype(np.float32))


def _check(op: str, backend, inputs) -> None:
    spec = get(op)
    params = spec.params_for(*inputs)
    got = call(op, backend, *inputs, variant="subgroup")
    want = spec.reference(*inputs, **params)[0]
    tol = spec.tolerance_of(params)
    ok, err, detail = compare(got, want, tol)
    assert ok, f"{op} {params}: {detail} (largest error {err:g}; tolerance {tol.describe()})"
    if np.dtype(got.dtype).kind in "iu":
        np.testing.assert_array_equal(got, want)


@pytest.fixture(scope="module")
def sg_gpu(gpu):
    if not gpu.supports_subgroup_ops():
        skip_or_fail("the adapter has no subgroup feature")
    return gpu


# ----------------------------------------------------------------------------- reference
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", ["u32", "i32", "f32"])
@pytest.mark.parametrize("op", ["scan.inclusive", "scan.exclusive"])
def test_scans_on_the_reference(op, dtype, size):
    ref = ReferenceBackend(subgroup_size=size)
    for n in SCAN_N:
        _check(op, ref, (_scan_input(dtype, n),))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("op", ROW_OPS)
def test_row_ops_on_the_reference(op, size):
    ref = ReferenceBackend(subgroup_size=size)
    for rows, cols in ROWS:
        _check(op, ref, _row_inputs(op, rows, cols))


def test_softmax_masked_rows_on_the_reference():
    x = np.full((3, 200), -np.inf, np.float32)
    x[0, 5] = 2.0  # a single unmasked entry -> exactly 1
    x[1, ::3] = np.linspace(-80, 80, 67, dtype=np.float32)
    x[2, 150:] = 7.0
    for size in (32, 8):
        got = call("softmax", ReferenceBackend(subgroup_size=size), x, variant="subgroup")
        assert got[0, 5] == 1.0 and not got[0, :5].any()
        _check("softmax", ReferenceBackend(subgroup_size=size), (x,))


# ----------------------------------------------------------------------------- GPU
@pytest.mark.parametrize("dtype", ["u32", "i32", "f32"])
@pytest.mark.parametrize("op", ["scan.inclusive", "scan.exclusive"])
def test_scans_on_the_gpu(sg_gpu, op, dtype):
    for n in SCAN_N:
        _check(op, sg_gpu, (_scan_input(dtype, n),))


@pytest.mark.parametrize("op", ROW_OPS)
def test_row_ops_on_the_gpu(sg_gpu, op):
    for rows, cols in ROWS:
        _check(op, sg_gpu, _row_inputs(op, rows, cols))


def test_gpu_agrees_with_the_reference_at_its_subgroup_size_on_integers(sg_gpu):
    """Integer scans are exact whatever the order: bit-equal to the interpreter at any size."""
    x = _scan_input("u32", 5 * _tiles.TILE + 3)
    want = call("scan.exclusive", ReferenceBackend(subgroup_size=8), x, variant="subgroup")
    np.testing.assert_array_equal(call("scan.exclusive", sg_gpu, x, variant="subgroup"), want)


# ----------------------------------------------------------------------------- selection and bounds
@pytest.mark.parametrize("op", ["scan.inclusive", "scan.exclusive", *ROW_OPS])
def test_chosen_on_discrete_gpus_with_subgroups_only(op):
    spec = get(op)
    params = spec.witnesses()[1].params
    h200 = AdapterFacts("wgpu", "discrete-gpu", frozenset({"subgroup"}), {})
    assert spec.variant_names() == ["subgroup", "generic"]
    # the scans' variant measured no faster on the H200: it runs only when forced or tuned
    assert choose(spec, params, h200) == ("generic" if op.startswith("scan.") else "subgroup")
    assert choose(spec, params, h200, force="subgroup") == "subgroup"
    assert choose(spec, params, AdapterFacts("wgpu", "cpu", frozenset({"subgroup"}), {})) == "generic"
    assert choose(spec, params, AdapterFacts("wgpu", "discrete-gpu", frozenset(), {})) == "generic"
    with pytest.raises(UnsupportedFeatureError, match="feature subgroup"):
        choose(spec, params, AdapterFacts("wgpu", "discrete-gpu", frozenset(), {}), force="subgroup")


def test_the_reference_runs_generic_unless_forced():
    ref = ReferenceBackend(subgroup_size=8)
    x = np.arange(3000, dtype=np.uint32)
    assert variant_for("scan.inclusive", ref, x) == "generic"
    assert variant_for("scan.inclusive", ref, x, variant="subgroup") == "subgroup"


def test_depth_bounds_and_the_scan_tolerance():
    # At 256 invocations: log2(S) + log2(256 / S) = 8 levels from 16 lanes up (the tree's depth),
    # longer serial chunks at 4 and 8 lanes (k = 16 and 4 totals per lane).
    assert sg.sum_depth(256) == 2 + 15 + 2  # S = 4: subgroup sum, 16 totals serially, 4 chunks
    assert sg.prefix_depth(256) == 2 + 15 + 2 + 15 + 1
    assert sg.sum_depth(32) == 5  # one subgroup of 32 (or a partial bigger one) covers the row
    assert scan_sg.depth(1) == 3 + sg.prefix_depth(256) + 2
    spec = get("scan.inclusive")
    for n in (1, _tiles.TILE + 1, _tiles.TILE**2 + 1):
        tol = spec.tolerance_of({"n": n, "dtype": "f32"})
        h = max(_tiles.depth(n), scan_sg.depth(n))
        assert tol.rtol == pytest.approx((h + 2) * np.finfo(np.float32).eps)


def test_programs_read_the_subgroup_size_at_run_time():
    """One program serves every subgroup size: the kernels hold no size fixed at build time."""
    pipe = get("scan.inclusive").variants[0].build(n=5000, dtype="f32")
    from vyre.ir.subgroups import program_uses_subgroups

    assert all(program_uses_subgroups(p) for p in pipe.programs)
    counts = [d.count for p in pipe.programs for d in p.workgroup if d.name == "totals"]
    assert counts and all(c == sg.slots(256) == 64 for c in counts)
