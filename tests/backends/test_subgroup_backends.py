"""Subgroup operations on the reference interpreter (simulated sizes 32 and 8, and others) and on the
GPU: size-independent programs agree exactly everywhere; size-dependent ones agree with the reference
run at the subgroup size the adapter really uses (measured with the ``subgroup_size`` built-in)."""

from __future__ import annotations

import numpy as np
import pytest

from vyre.backends.config import DispatchConfig
from vyre.backends.reference import ReferenceBackend
from vyre.errors import DispatchError, UnsupportedFeatureError
from vyre.ir.builder import ProgramBuilder
from vyre.lower import lower

from gpu_policy import skip_or_fail

SENTINEL = 0xDEAD  # where a shuffle's source lane would be inactive (indeterminate on a GPU)


def _all_ops(wg: int):
    """Every subgroup operation, K u32 results per invocation (floats as their bits)."""
    b = ProgramBuilder(f"sg_all_{wg}", wg)
    x = b.buffer("x", "u32")
    o = b.buffer("o", "u32", "write")
    i = b.global_index()
    v = b.let(b.select(i < x.len(), x[i], 0), "v")
    f = b.let((v % 64).cast("f32") - 32.0, "f")  # small integers: every float sum is exact
    s = b.let((v % 97).cast("i32") - 48, "s")
    lane = b.subgroup_invocation_id()
    nact = b.let(b.subgroup_add(b.lit(1, "u32")), "nact")  # active lanes: 0..nact-1

    def guarded(src, value):
        return b.select(src < nact, value, b.lit(SENTINEL, "u32"))

    ballot = b.let(b.subgroup_ballot(v % 3 == 0), "ballot")
    pair = b.let(b.subgroup_add(b.vec("vec2<u32>", v, v * 3)), "pair")
    results = [
        b.subgroup_add(v), b.subgroup_mul(v | 1), b.subgroup_min(v), b.subgroup_max(v), b.subgroup_and(v | 0x10000),
        b.subgroup_or(v), b.subgroup_xor(v), b.subgroup_inclusive_add(v), b.subgroup_exclusive_add(v),
        b.subgroup_inclusive_mul(v | 1), b.subgroup_exclusive_mul(v | 1),
        guarded(b.lit(3, "u32"), b.subgroup_broadcast(v, 3)), b.subgroup_broadcast_first(v),
        guarded(lane ^ 1, b.subgroup_shuffle(v, lane ^ 1)), guarded(lane ^ 2, b.subgroup_shuffle_xor(v, 2)),
        b.select(lane >= 1, b.subgroup_shuffle_up(v, 1), b.lit(SENTINEL, "u32")),
        guarded(lane + 1, b.subgroup_shuffle_down(v, 1)),
        ballot[0], ballot[1], ballot[2], ballot[3],
        b.subgroup_all(v > 5).cast("u32"), b.subgroup_any(v > 1_000_000).cast("u32"),
        b.subgroup_size(), lane, nact,
        b.subgroup_add(f).bitcast("u32"), b.subgroup_inclusive_add(f).bitcast("u32"),
        b.subgroup_exclusive_add(f).bitcast("u32"), b.subgroup_max(f).bitcast("u32"),
        b.subgroup_add(s).bitcast("u32"), b.subgroup_min(s).bitcast("u32"), pair[0], pair[1],
    ]
    k = len(results)
    for j, r in enumerate(results):
        o[i * k + j] = r
    return b.build(), k


def _independent(wg: int):
    """Results that do not depend on the subgroup size (nor on how lanes are grouped)."""
    b = ProgramBuilder(f"sg_indep_{wg}", wg)
    x = b.buffer("x", "u32")
    o = b.buffer("o", "u32", "write")
    tot = b.buffer("tot", "u32", "read_write")
    i = b.global_index()
    v = b.let(b.select(i < x.len(), x[i], 0), "v")
    lane = b.subgroup_invocation_id()
    t = b.let(b.subgroup_add(v), "t")
    with b.if_(lane == 0):
        b.eval(tot.atomic_add(b.workgroup_id(0), t))  # one add per subgroup: the workgroup total
    ballot = b.let(b.subgroup_ballot(b.lit(True)), "ballot")
    ones = ballot[0].count_ones() + ballot[1].count_ones() + ballot[2].count_ones() + ballot[3].count_ones()
    o[i * 4] = b.subgroup_inclusive_add(v) - b.subgroup_exclusive_add(v)  # = v
    o[i * 4 + 1] = b.subgroup_shuffle(v, lane)  # = v
    o[i * 4 + 2] = (ones == b.subgroup_add(b.lit(1, "u32"))).cast("u32")  # = 1
    o[i * 4 + 3] = b.subgroup_broadcast_first(b.workgroup_id(0))  # = workgroup id
    return b.build()


def _inputs(n: int) -> np.ndarray:
    return np.random.default_rng(n).integers(0, 1 << 20, n, dtype=np.int64).astype(np.uint32)


def _run(backend, program, x: np.ndarray, k: int, groups: int, extra=()):
    cfg = DispatchConfig(grid=(groups, 1, 1), counts={"o": groups * program.workgroup_invocations * k})
    return backend.dispatch(program, [x, *extra], cfg)


def _adapter_size(gpu) -> int:
    b = ProgramBuilder("sg_probe", 64)
    o = b.buffer("o", "u32", "write", count=64)
    o[b.local_index()] = b.subgroup_size()
    sizes = set(gpu.dispatch(b.build(), [], DispatchConfig(grid=(1, 1, 1)))[0].tolist())
    assert len(sizes) == 1
    return sizes.pop()


@pytest.fixture(scope="module")
def sg_gpu(gpu):
    if not gpu.supports_subgroup_ops():
        skip_or_fail("the adapter has no subgroup feature")
    return gpu


# ----------------------------------------------------------------------------- reference
@pytest.mark.parametrize("size", [32, 8])
@pytest.mark.parametrize("wg", [64, 12])
def test_reference_semantics_by_hand(size, wg):
    """Lane i of subgroup g holds local index g*size + i; a partial last subgroup has fewer active lanes."""
    p, k = _all_ops(wg)
    x = _inputs(3 * wg)
    got = _run(ReferenceBackend(subgroup_size=size), p, x, k, 3)[0].reshape(3 * wg, k)
    for gi in range(3 * wg):
        w, loc = divmod(gi, wg)
        start = w * wg + (loc // size) * size
        members = x[start: min(start + size, (w + 1) * wg)].astype(np.uint64)
        lane = loc % size
        assert got[gi, 0] == members.sum() % 2**32
        assert got[gi, 7] == members[: lane + 1].sum() % 2**32
        assert got[gi, 8] == members[:lane].sum() % 2**32
        assert got[gi, 12] == members[0]
        assert got[gi, 13] == (members[lane ^ 1] if (lane ^ 1) < len(members) else SENTINEL)
        assert got[gi, 15] == (members[lane - 1] if lane >= 1 else SENTINEL)
        bits = sum(1 << j for j, m in enumerate(members) if m % 3 == 0)
        assert [got[gi, 17 + q] for q in range(4)] == [(bits >> (32 * q)) & 0xFFFFFFFF for q in range(4)]
        assert (got[gi, 23], got[gi, 24], got[gi, 25]) == (size, lane, len(members))


def test_reference_excludes_guarded_out_lanes():
    b = ProgramBuilder("sg_masked", 64)
    o = b.buffer("o", "u32", "write")
    i = b.global_index()
    with b.if_(b.workgroup_id(0) == 1):  # workgroup-uniform: whole workgroups are inactive
        o[i] = b.subgroup_add(b.lit(1, "u32")) + b.subgroup_exclusive_add(b.lit(1, "u32")) * 1000
    got = ReferenceBackend(subgroup_size=16).dispatch(b.build(), [], DispatchConfig(grid=(2, 1, 1),
                                                                                    counts={"o": 128}))[0]
    assert not got[:64].any()
    assert np.array_equal(got[64:], 16 + 1000 * (np.arange(64) % 16))


@pytest.mark.parametrize("size", [4, 8, 32, 128])
def test_size_independent_results_on_the_reference(size):
    wg, groups = 48, 3
    p = _independent(wg)
    x = _inputs(groups * wg)
    o, tot = _run(ReferenceBackend(subgroup_size=size), p, x, 4, groups, [np.zeros(groups, np.uint32)])
    o = o.reshape(-1, 4)
    assert np.array_equal(o[:, 0], x) and np.array_equal(o[:, 1], x) and (o[:, 2] == 1).all()
    assert np.array_equal(o[:, 3], np.repeat(np.arange(groups), wg))
    assert np.array_equal(tot, x.reshape(groups, wg).sum(axis=1, dtype=np.uint32))


def test_reference_subgroup_size_is_checked():
    for bad in (6, 2, 256, 32.0):
        with pytest.raises(DispatchError, match="subgroup_size"):
            ReferenceBackend(subgroup_size=bad)


# ----------------------------------------------------------------------------- lowering
def test_lowering_enables_subgroups_only_when_used():
    p, _ = _all_ops(64)
    low = lower(p)
    assert low.wgsl.splitlines()[1] == "enable subgroups;" and low.features == {"subgroups"}
    assert "@builtin(subgroup_invocation_id) _sgid: u32" in low.wgsl and "subgroupShuffleXor(" in low.wgsl
    b = ProgramBuilder("plain", 64)
    o = b.buffer("o", "u32", "write")
    o[b.global_index()] = b.local_index()
    plain = lower(b.build())
    assert "subgroup" not in plain.wgsl and not plain.features


# ----------------------------------------------------------------------------- GPU
@pytest.mark.parametrize("wg", [64, 12])
def test_gpu_matches_the_reference_at_the_adapter_size(sg_gpu, wg):
    size = _adapter_size(sg_gpu)
    p, k = _all_ops(wg)
    x = _inputs(3 * wg)
    want = _run(ReferenceBackend(subgroup_size=size), p, x, k, 3)[0]
    got = _run(sg_gpu, p, x, k, 3)[0]
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, (f"subgroup size {size}: {bad.size} mismatches, first at invocation {bad[0] // k} "
                           f"result {bad[0] % k}: gpu {got[bad[0]]} reference {want[bad[0]]}")


def test_gpu_size_independent_results(sg_gpu):
    wg, groups = 48, 3
    p = _independent(wg)
    x = _inputs(groups * wg)
    runs = [_run(be, p, x, 4, groups, [np.zeros(groups, np.uint32)])
            for be in (ReferenceBackend(subgroup_size=32), ReferenceBackend(subgroup_size=8), sg_gpu)]
    for o, tot in runs[1:]:
        assert np.array_equal(o, runs[0][0]) and np.array_equal(tot, runs[0][1])


def test_gpu_without_the_feature_raises_before_gpu_work(sg_gpu, monkeypatch):
    monkeypatch.setattr(sg_gpu._dev, "features", frozenset(f for f in sg_gpu.features if f != "subgroup"))
    p, k = _all_ops(64)
    with pytest.raises(UnsupportedFeatureError) as ei:
        _run(sg_gpu, p, _inputs(64), k, 1)
    assert "subgroup" in str(ei.value) and ei.value.fix


def test_float_model_runs_integer_subgroup_ops_and_refuses_float_ones():
    from vyre.backends.float_model import run_model

    b = ProgramBuilder("sg_model", 16)
    x = b.buffer("x", "u32")
    y = b.buffer("y", "u32", "write")
    i = b.global_index()
    y[i] = b.subgroup_add(x[i]) + b.subgroup_shuffle(x[i], b.subgroup_invocation_id() ^ 1)
    x_in = _inputs(32)
    (out,) = run_model(b.build(), [x_in])
    assert np.array_equal(out.value, ReferenceBackend().dispatch(b.build(), [x_in])[0]) and not out.unspecified.any()
    p, _ = _all_ops(64)
    with pytest.raises(UnsupportedFeatureError, match="float model does not cover subgroup operations on floats"):
        run_model(p, [_inputs(64)], DispatchConfig(grid=(1, 1, 1)))


@pytest.mark.parametrize("dtype", ["f16", "vec2<f16>", "vec4<f32>", "vec2<i32>", "vec3<u32>"])
def test_gpu_vectors_and_f16_match_the_reference(sg_gpu, dtype):
    if "f16" in dtype and not sg_gpu.supports_f16():
        skip_or_fail("the adapter has no shader-f16")
    b = ProgramBuilder("sg_types", 16)
    x = b.buffer("x", dtype)
    y = b.buffer("y", dtype, "write")
    i = b.global_index()
    v = x[i]
    y[i] = b.subgroup_add(v) + b.subgroup_inclusive_add(v) + b.subgroup_shuffle_xor(v, 1) + b.subgroup_max(v)
    p = b.build()
    lanes = p.buffers[0].dtype.lanes
    host = p.buffers[0].dtype.numpy_dtype
    x_in = (np.arange(32 * lanes) % 7).astype(host).reshape((32, lanes) if lanes > 1 else (32,))  # exact sums
    want = ReferenceBackend(subgroup_size=_adapter_size(sg_gpu)).dispatch(p, [x_in])[0]
    assert np.array_equal(sg_gpu.dispatch(p, [x_in])[0], want)


def test_reduce_sum_chooses_the_subgroup_variant_where_it_is_preferred():
    from vyre.ops.api import call, variant_for
    from vyre.ops.registry import get
    from vyre.ops.variants import AdapterFacts, choose

    spec = get("reduce.sum")
    whole = {"shape": (1 << 20,), "dtype": "f32", "axis": None}
    cols = {"shape": (1000, 3), "dtype": "u32", "axis": 0}
    h200 = AdapterFacts("wgpu", "discrete-gpu", frozenset({"subgroup"}), {})
    assert choose(spec, whole, h200) == "subgroup"
    assert choose(spec, cols, h200) == "generic"  # strided columns keep the generic kernel
    assert choose(spec, whole, AdapterFacts("wgpu", "cpu", frozenset({"subgroup"}), {})) == "generic"
    assert choose(spec, whole, AdapterFacts("wgpu", "discrete-gpu", frozenset(), {})) == "generic"
    ref = ReferenceBackend(subgroup_size=8)
    x = np.arange(5000, dtype=np.uint32)
    assert variant_for("reduce.sum", ref, x) == "generic"  # the reference runs generic kernels unless forced
    assert variant_for("reduce.sum", ref, x, variant="subgroup") == "subgroup"
    assert call("reduce.sum", ref, x, variant="subgroup") == x.sum(dtype=np.uint32)
