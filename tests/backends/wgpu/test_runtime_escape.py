"""Escape hatches: dispatch_wgsl (raw WGSL) and probe_op (one f32 unary op over many values),
with the GPU error of every op measured against numpy within the tolerances docs/runtime.md states."""

from __future__ import annotations

import numpy as np
import pytest

import vyre
from vyre.backends.wgpu.escape import F32_UNARY_OPS
from vyre.errors import DispatchError, LoweringError, NoAdapterError, UnsupportedFeatureError
from vyre.ir.nodes import UnOp

from gpu_policy import skip_or_fail


@pytest.fixture(scope="module")
def gpu():
    try:
        return vyre.WgpuBackend.new(disk_cache=False)
    except NoAdapterError as exc:
        skip_or_fail(f"no GPU adapter: {exc}")


MIX = """
@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> sums: array<u32>;
@group(0) @binding(3) var<storage, read_write> scaled: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < arrayLength(&a)) { sums[i] = a[i] * 3u + arrayLength(&sums); }
    if (i < arrayLength(&b)) { scaled[i] = b[i] * 0.5; }
}
"""


def test_dispatch_wgsl_round_trip(gpu):
    a = np.arange(100, dtype=np.uint32)
    b = np.linspace(-1, 1, 37, dtype=np.float32)
    sums, scaled = gpu.dispatch_wgsl(MIX, [a, b], [400, 37 * 4], 2)
    assert sums.dtype == np.uint8 and sums.nbytes == 400 and scaled.nbytes == 148
    np.testing.assert_array_equal(sums.view(np.uint32), a * 3 + 100)  # arrayLength sees the exact size
    np.testing.assert_array_equal(scaled.view(np.float32), b * np.float32(0.5))
    # typed outputs; a shorter output whose size is not a multiple of 4 is trimmed; outputs start zeroed
    s0 = gpu.stats()
    sums, scaled = gpu.dispatch_wgsl(MIX, [a[:10], b[:3]], [40, 14], (1, 1, 1), output_dtypes=["u32", np.uint8])
    np.testing.assert_array_equal(sums, a[:10] * 3 + 10)
    assert scaled.shape == (14,) and scaled.dtype == np.uint8
    np.testing.assert_array_equal(scaled[:12].view(np.float32), b[:3] * np.float32(0.5))
    assert not scaled[12:].any()
    s1 = gpu.stats()
    assert s1["pipeline_cache"]["compiled"] == s0["pipeline_cache"]["compiled"]  # cached by source
    assert s1["pipeline_cache"]["hits"] == s0["pipeline_cache"]["hits"] + 1
    # bytes-like inputs work too
    (out,) = gpu.dispatch_wgsl(MIX.replace("arrayLength(&b)", "0u"), [bytes(a[:4]), b[:1]], [16, 4], 1)[:1]
    np.testing.assert_array_equal(out.view(np.uint32), a[:4] * 3 + 4)


def test_dispatch_wgsl_errors(gpu):
    with pytest.raises(LoweringError, match="dispatch_wgsl") as ei:
        gpu.dispatch_wgsl("fn main( {", [], [4], 1)
    assert "expected" in str(ei.value) and "WGSL line 1" in str(ei.value) and "binding" in ei.value.fix
    # the shader's bindings disagree with the layout dispatch_wgsl builds (binding 0 must be read-only)
    wrong = MIX.replace("var<storage, read> a", "var<storage, read_write> a")
    with pytest.raises(LoweringError):
        gpu.dispatch_wgsl(wrong, [np.zeros(4, np.uint32), np.zeros(4, np.float32)], [16, 16], 1)
    with pytest.raises(DispatchError, match="workgroups"):
        gpu.dispatch_wgsl(MIX, [np.zeros(4, np.uint32), np.zeros(4, np.float32)], [16, 16], (1, 2, 3, 4))
    with pytest.raises(DispatchError, match="per-dimension limit"):
        gpu.dispatch_wgsl(MIX, [np.zeros(4, np.uint32), np.zeros(4, np.float32)], [16, 16], 10**6)
    with pytest.raises(DispatchError, match="output_dtypes"):
        gpu.dispatch_wgsl(MIX, [np.zeros(4, np.uint32), np.zeros(4, np.float32)], [16, 6], 1,
                          output_dtypes=["u32", "f32"])
    with pytest.raises(DispatchError):
        gpu.dispatch_wgsl(MIX, [np.zeros(4, np.uint32), object()], [16, 16], 1)
    with pytest.raises(DispatchError):
        gpu.dispatch_wgsl("", [], [4], 1)
    # the backend still works afterwards
    (sums, _) = gpu.dispatch_wgsl(MIX, [np.ones(4, np.uint32), np.zeros(4, np.float32)], [16, 16], 1)
    np.testing.assert_array_equal(sums.view(np.uint32), [7, 7, 7, 7])


# ----------------------------------------------------------------------------- probe_op
def ordered(a: np.ndarray) -> np.ndarray:
    """f32 bit patterns mapped to integers in the order of the values (ulp distance = difference)."""
    i = np.asarray(a, np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def ulps(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return np.abs(ordered(got) - ordered(np.asarray(want, np.float64).astype(np.float32)))


R = np.random.default_rng(1234)
WIDE = np.concatenate([R.uniform(-50, 50, 3000), R.uniform(-1, 1, 1000), [0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5]])
WIDE = WIDE.astype(np.float32)
POS = np.concatenate([R.uniform(1e-3, 100, 2000), 2.0 ** R.uniform(-60, 60, 2000)]).astype(np.float32)
TRIG = R.uniform(-np.pi, np.pi, 4000).astype(np.float32)

# op: (inputs, float64 reference, check(got, want64, x)) -- the tolerances of docs/runtime.md
EXACT = lambda got, want, x: ulps(got, want).max() == 0  # noqa: E731
CASES = {
    "abs": (WIDE, np.abs, EXACT),
    "neg": (WIDE, np.negative, EXACT),
    "sign": (WIDE, np.sign, EXACT),
    "floor": (WIDE, np.floor, EXACT),
    "ceil": (WIDE, np.ceil, EXACT),
    "round": (WIDE, np.round, EXACT),  # half to even, like numpy
    "trunc": (WIDE, np.trunc, EXACT),
    "fract": (WIDE, lambda x: x - np.floor(x), lambda g, w, x: ulps(g, w).max() <= 1),
    "sqrt": (POS, np.sqrt, lambda g, w, x: ulps(g, w).max() <= 3),
    "inverse_sqrt": (POS, lambda x: 1 / np.sqrt(x), lambda g, w, x: ulps(g, w).max() <= 2),
    "exp": (R.uniform(-80, 80, 4000).astype(np.float32), np.exp,
            lambda g, w, x: (ulps(g, w) <= 3 + 2 * np.abs(x)).all()),
    "exp2": (R.uniform(-120, 120, 4000).astype(np.float32), np.exp2,
             lambda g, w, x: (ulps(g, w) <= 3 + 2 * np.abs(x)).all()),
    "log": (POS, np.log, None),
    "log2": (POS, np.log2, None),
    "sin": (TRIG, np.sin, lambda g, w, x: np.abs(g - w).max() <= 2.0**-11),
    "cos": (TRIG, np.cos, lambda g, w, x: np.abs(g - w).max() <= 2.0**-11),
    "tan": (R.uniform(-1.4, 1.4, 4000).astype(np.float32), np.tan,
            lambda g, w, x: (np.abs(g - w) <= 2.0**-11 * np.maximum(1, w * w)).all()),
    "tanh": (WIDE, np.tanh, lambda g, w, x: np.abs(g - w).max() <= 1e-5),
}


def _log_ok(got, want, x):
    """WGSL: absolute error <= 2^-21 for x in [0.5, 2], else <= 3 ulp."""
    near = (x >= 0.5) & (x <= 2.0)
    return (np.abs(got[near] - want[near]).max() <= 2.0**-21) and (ulps(got[~near], want[~near]).max() <= 3)


def test_probe_op_covers_every_f32_unary_op():
    assert {UnOp(name) for name in CASES} == F32_UNARY_OPS


@pytest.mark.parametrize("op", sorted(CASES))
def test_probe_op_against_numpy(gpu, op):
    x, ref, ok = CASES[op]
    ok = ok or _log_ok
    s0 = gpu.stats()["dispatches"]
    got = gpu.probe_op(UnOp(op) if op in ("sqrt", "exp") else op, x)
    assert gpu.stats()["dispatches"] == s0 + 1  # all the values in one dispatch
    assert got.dtype == np.float32 and got.shape == x.shape
    want = ref(x.astype(np.float64))
    assert ok(got, want, x), f"{op}: max ulp {ulps(got, want).max()}, max abs {np.abs(got - want).max():.3g}"


def test_probe_op_rejects_other_ops(gpu):
    for op in ("count_ones", UnOp.NOT, "reverse_bits", "nope", 3):
        with pytest.raises(UnsupportedFeatureError):
            gpu.probe_op(op, [1.0])
    with pytest.raises(DispatchError):
        gpu.probe_op("sqrt", ["a"])
    assert gpu.probe_op("sqrt", []).shape == (0,)
    np.testing.assert_array_equal(gpu.probe_op("sqrt", [[4.0, 9.0], [16.0, 0.25]]), [2, 3, 4, 0.5])
