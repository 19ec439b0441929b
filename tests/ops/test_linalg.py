"""Focused tests of the linalg ops (matmul, matmul.batched, matmul.f16) beyond the witnesses."""

from __future__ import annotations

import numpy as np
import pytest

import vyre.ops
from vyre.backends.schedule import run_pipeline
from vyre.errors import DispatchError
from vyre.ops.linalg import _gemm
from vyre.ops.registry import compare, get

from gpu_policy import skip_or_fail

BACKENDS = ["reference", "gpu"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.getfixturevalue(request.param)


def _rand(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


def test_matmul_known_values(backend):
    a = np.array([[1, 2], [3, 4]], np.float32)
    b = np.array([[5, 6], [7, 8]], np.float32)
    out = vyre.ops.matmul(backend, a, b)
    assert out.dtype == np.float32 and out.shape == (2, 2)
    np.testing.assert_array_equal(out, [[19, 22], [43, 50]])


def test_matmul_integers_are_exact_across_tiles(backend):
    """Small integers multiply and add exactly in f32: any tiling must give numpy's answer bit for bit."""
    r = np.random.default_rng(3)
    a = r.integers(-8, 9, (67, 45)).astype(np.float32)
    b = r.integers(-8, 9, (45, 71)).astype(np.float32)
    np.testing.assert_array_equal(vyre.ops.matmul(backend, a, b), a @ b)


TILE_CONFIGS = [
    dict(tile_m=16, tile_n=16, tile_k=16, reg_m=4, reg_n=4),  # 16 invocations, 4 load units each
    dict(tile_m=32, tile_n=64, tile_k=16, reg_m=4, reg_n=4),
    dict(tile_m=64, tile_n=64, tile_k=16, reg_m=8, reg_n=8),  # 64 invocations
    dict(tile_m=128, tile_n=128, tile_k=8, reg_m=8, reg_n=8),
    dict(tile_m=64, tile_n=128, tile_k=8, reg_m=4, reg_n=8),
    dict(tile_m=128, tile_n=64, tile_k=4, reg_m=8, reg_n=4),  # tile_k < tile_m / 4: swizzle mask wider than k
]


@pytest.mark.parametrize("k", [50, 52], ids=["scalar", "vec4"])  # k % 4 == 0: vec4 A (where the tiles allow)
@pytest.mark.parametrize("tiles", TILE_CONFIGS, ids=lambda t: "{tile_m}x{tile_n}x{tile_k}_r{reg_m}x{reg_n}".format(**t))
def test_matmul_tile_shapes_agree(reference, tiles, k):
    a, b = _rand((70, k), 1), _rand((k, 90), 2)
    out = vyre.ops.matmul(reference, a, b, **tiles)
    ok, err, detail = compare(out, (a.astype(np.float64) @ b).astype(np.float32), get("matmul").tolerance_of({"k": k}))
    assert ok, detail


def test_vec4_buffers_where_aligned():
    def dtypes(**p):
        return [d.dtype.value for d in get("matmul").build(**p).steps[0].program.sorted_buffers]
    deep = dict(tile_m=64, tile_n=64, tile_k=16, reg_m=8, reg_n=8)
    assert dtypes(m=64, k=64, n=64, **deep) == ["vec4<f32>"] * 3
    assert dtypes(m=64, k=63, n=64, **deep) == ["f32", "vec4<f32>", "vec4<f32>"]
    assert dtypes(m=64, k=64, n=63, **deep) == ["vec4<f32>", "f32", "f32"]
    # 128x128x8 tiles have fewer 4x4 A blocks than invocations: scalar global access
    assert dtypes(m=64, k=64, n=64, tile_m=128, tile_n=128, tile_k=8, reg_m=8, reg_n=8) == ["f32"] * 3


def test_matmul_large_tiles_on_gpu(gpu):
    a, b = _rand((200, 150), 4), _rand((150, 260), 5)
    want = (a.astype(np.float64) @ b).astype(np.float32)
    for tiles in TILE_CONFIGS[2:4]:
        ok, _, detail = compare(vyre.ops.matmul(gpu, a, b, **tiles), want, get("matmul").tolerance_of({"k": 150}))
        assert ok, detail


def test_matmul_vector_shapes(backend):
    a, b = _rand((1, 300), 6), _rand((300, 1), 7)
    out = vyre.ops.matmul(backend, a, b)
    assert out.shape == (1, 1)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5, atol=300 * 2.0**-22)


def test_batched_matches_per_batch(backend):
    a, b = _rand((5, 19, 23), 8), _rand((5, 23, 11), 9)
    out = vyre.ops.matmul_batched(backend, a, b)
    assert out.shape == (5, 19, 11)
    for i in range(5):
        np.testing.assert_allclose(out[i], a[i].astype(np.float64) @ b[i], rtol=1e-5, atol=23 * 2.0**-22)


def test_batched_uses_the_z_grid():
    pipe = get("matmul.batched").build(batch=7, m=65, k=3, n=130)
    assert pipe.steps[0].grid == (3, 2, 7)


def test_f16_matmul(backend):
    if backend.name != "reference" and "shader-f16" not in backend.features:
        skip_or_fail("the adapter lacks shader-f16")
    a, b = _rand((33, 40), 10, np.float16), _rand((40, 17), 11, np.float16)
    out = vyre.ops.matmul_f16(backend, a, b)
    assert out.dtype == np.float16 and out.shape == (33, 17)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)
    ok, err, detail = compare(out, want, get("matmul.f16").tolerance_of({"k": 40}))
    assert ok, detail


# ----------------------------------------------------------------------------- kernel structure
def _barriers(stmts) -> int:
    n = 0
    for s in stmts:
        n += s.kind == "barrier"
        for field in ("then", "otherwise", "body"):
            n += _barriers(getattr(s, field, None) or [])
    return n


def test_one_barrier_per_k_tile():
    program = get("matmul").build(m=256, k=256, n=256).steps[0].program
    top = sum(s.kind == "barrier" for s in program.body)
    loop = next(s for s in program.body if s.kind == "for")
    assert top == 1 and _barriers(loop.body) == 1  # the prologue's, and one per K-tile


def test_workgroup_memory_within_portable_limit():
    for tiles in [_gemm.SMALL, _gemm.LARGE, _gemm.NARROW, _gemm.DEEP]:
        program = get("matmul").build(m=300, k=300, n=300, **tiles.as_params()).steps[0].program
        assert sum(w.count * w.dtype.element_nbytes for w in program.workgroup) <= 16384
        assert program.workgroup_invocations <= 256


def test_guards_only_for_partial_tiles():
    full = get("matmul").build(m=128, k=64, n=128).steps[0].program.to_text()
    ragged = get("matmul").build(m=127, k=64, n=128).steps[0].program.to_text()
    assert "select(" not in full and "select(" in ragged


def test_default_tiles():
    assert _gemm.default_tiles(4096, 4096, 4096) == _gemm.DEEP
    assert _gemm.default_tiles(1024, 2048, 64) == _gemm.DEEP
    assert _gemm.default_tiles(4000, 4000, 4000) == _gemm.LARGE
    assert _gemm.default_tiles(4096, 1000, 64) == _gemm.LARGE
    assert _gemm.default_tiles(256, 256, 256) == _gemm.SMALL
    assert _gemm.default_tiles(512, 1024, 784) == _gemm.SMALL  # 128 tiles: 8x8 blocks leave the GPU idle
    assert _gemm.default_tiles(512, 784, 1024) == _gemm.SMALL
    assert _gemm.default_tiles(8, 1000, 64) == _gemm.NARROW


@pytest.mark.parametrize("bad, match", [
    (dict(tile_m=48), "power of two"),
    (dict(reg_m=2), "power of two|multiples of 4"),
    (dict(tile_m=256, tile_n=256, reg_m=4, reg_n=4), "invocations"),
    (dict(tile_m=128, tile_n=128, tile_k=16, reg_m=8, reg_n=8), "workgroup memory"),
])
def test_bad_tiles_raise(bad, match):
    with pytest.raises(ValueError, match=match):
        get("matmul").build(m=64, k=64, n=64, **bad)


def test_same_params_same_programs():
    p1 = get("matmul").build(m=65, k=70, n=31)
    p2 = get("matmul").build(m=65, k=70, n=31, tile_m=64, tile_n=64, tile_k=16, reg_m=4, reg_n=4)
    assert [p.fingerprint for p in p1.programs] == [p.fingerprint for p in p2.programs]


# ----------------------------------------------------------------------------- param errors
@pytest.mark.parametrize("a, b, fix", [
    (np.ones((2, 3), np.float64), np.ones((3, 2), np.float32), "astype"),
    (np.ones((2, 3), np.float32), np.ones((4, 2), np.float32), "last axis"),
    (np.ones(3, np.float32), np.ones((3, 2), np.float32), "reshape"),
    (np.ones((0, 3), np.float32), np.ones((3, 2), np.float32), "reshape"),
])
def test_matmul_param_errors(reference, a, b, fix):
    with pytest.raises(DispatchError) as exc:
        vyre.ops.matmul(reference, a, b)
    assert fix in exc.value.fix


def test_batched_param_errors(reference):
    with pytest.raises(DispatchError, match="line up"):
        vyre.ops.matmul_batched(reference, np.ones((2, 3, 4), np.float32), np.ones((3, 4, 5), np.float32))
    with pytest.raises(DispatchError, match="unknown parameter"):
        vyre.ops.matmul(reference, np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), tile=4)


def test_f16_wants_f16(reference):
    with pytest.raises(DispatchError, match="float16"):
        vyre.ops.matmul_f16(reference, np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))


def test_pipeline_direct(reference):
    a, b = _rand((3, 4), 12), _rand((4, 5), 13)
    (out,) = run_pipeline(reference, get("matmul").build(m=3, k=4, n=5), [a, b])
    np.testing.assert_allclose(out, a @ b, rtol=1e-6, atol=1e-6)
