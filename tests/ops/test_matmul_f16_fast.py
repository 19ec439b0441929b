"""matmul.f16_fast (packed vec4<f16> multiply-adds, blocked accumulation) and the precision="fast"
opt-in of matmul.batched and conv2d, beyond the registered witnesses."""

from __future__ import annotations

import re

import numpy as np
import pytest

import vyre.ops
from vyre.errors import DispatchError
from vyre.lower import lower
from vyre.ops.registry import compare, get

from gpu_policy import skip_or_fail

U = 2.0 ** -11  # f16 unit roundoff
BACKENDS = ["reference", "gpu"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    be = request.getfixturevalue(request.param)
    if be.name != "reference" and "shader-f16" not in be.features:
        skip_or_fail("the adapter lacks shader-f16")
    return be


def _quarters(shape, seed):
    """Multiples of 1/4 in [-1, 1]: products are multiples of 1/16, and every partial sum of up
    to 128 of them is exact in f16 (11 significant bits), so any blocking is exact."""
    return (np.random.default_rng(seed).integers(-4, 5, shape) / 4).astype(np.float16)


def _want(a, b):
    return a.astype(np.float64) @ b.astype(np.float64)


TILES = [
    {},  # the defaults for a small output: 64x64x16, 4x4 blocks, flushed every 16 k
    dict(tile_m=16, tile_n=16, tile_k=16, reg_m=4, reg_n=4, block=4),  # 4 flushes per K-tile
    dict(tile_m=64, tile_n=64, tile_k=16, reg_m=8, reg_n=8, block=16),  # the large-output default
    dict(tile_m=128, tile_n=128, tile_k=16, reg_m=8, reg_n=8, block=64),  # a block of 4 K-tiles
    dict(tile_m=32, tile_n=16, tile_k=32, reg_m=8, reg_n=4, block=8, sum_f16=True),
]


@pytest.mark.parametrize("k,n", [(50, 90), (52, 92)], ids=["scalar", "vec4"])
@pytest.mark.parametrize("tiles", TILES, ids=lambda t: "_".join(f"{v}" for v in t.values()) or "default")
def test_exact_on_a_grid(reference, tiles, k, n):
    """Where f16 arithmetic is exact the kernel must give numpy's product bit for bit: any tile,
    block, guard or operand-path bug shows."""
    a, b = _quarters((70, k), 1), _quarters((k, n), 2)
    out = vyre.ops.matmul_f16_fast(reference, a, b, **tiles)
    assert out.dtype == np.float16 and out.shape == (70, n)
    np.testing.assert_array_equal(out, _want(a, b).astype(np.float16))


@pytest.mark.parametrize("tiles", [TILES[1], TILES[3], TILES[4]], ids=["block4", "block64", "f16sums"])
def test_exact_on_a_grid_gpu(gpu, tiles):
    if "shader-f16" not in gpu.features:
        skip_or_fail("the adapter lacks shader-f16")
    a, b = _quarters((70, 52), 3), _quarters((52, 90), 4)
    np.testing.assert_array_equal(vyre.ops.matmul_f16_fast(gpu, a, b, **tiles), _want(a, b).astype(np.float16))


@pytest.mark.parametrize("tiles", [dict(block=16), dict(block=64, tile_k=16), dict(block=8, sum_f16=True)],
                         ids=["block16", "block64", "block8_f16sums"])
def test_error_within_the_guaranteed_bound(backend, tiles):
    """|got - ref| <= 2^-10 |ref| + (block + 1) u sum|a||b| (+ (K / block) u sum|a||b| with f16 sums)."""
    r = np.random.default_rng(5)
    a = r.uniform(-2, 2, (40, 200)).astype(np.float16)
    b = r.uniform(-2, 2, (200, 36)).astype(np.float16)
    got = vyre.ops.matmul_f16_fast(backend, a, b, **tiles).astype(np.float64)
    ref = _want(a, b).astype(np.float16).astype(np.float64)
    blk = tiles["block"]
    terms = blk + 1 + (200 / blk if tiles.get("sum_f16") else 0)
    bound = 2.0 ** -10 * np.abs(ref) + terms * U * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
    assert np.all(np.abs(got - ref) <= bound)


def test_blocking_bounds_the_error_growth(backend):
    """Positive data, K = 1024: partial sums grow to ~256, where one f16 ulp is 0.25. Flushing every
    16 k into f32 keeps the error near the final rounding; one block over all of K does not."""
    r = np.random.default_rng(6)
    a = r.uniform(0, 1, (8, 1024)).astype(np.float16)
    b = r.uniform(0, 1, (1024, 8)).astype(np.float16)
    want = _want(a, b)
    tiles = dict(tile_m=16, tile_n=16, tile_k=16, reg_m=4, reg_n=4)
    err = {blk: np.abs(vyre.ops.matmul_f16_fast(backend, a, b, block=blk, **tiles).astype(np.float64) - want).max()
           for blk in (16, 1024)}
    assert err[16] <= 2 * U * want.max()  # about one f16 ulp of the result: the final rounding dominates
    assert err[1024] > 8 * err[16]


def test_registered_tolerance_catches_a_dropped_product():
    """The witnesses' budget K 2^-10 is not vacuous: losing one k term of a 128^3 product fails it."""
    r = np.random.default_rng(7)
    a = r.uniform(-1, 1, (128, 128)).astype(np.float16)
    b = r.uniform(-1, 1, (128, 128)).astype(np.float16)
    want = _want(a, b).astype(np.float16)
    dropped = (_want(a, b) - np.outer(a[:, 17], b[17, :])).astype(np.float16)
    tol = get("matmul.f16_fast").tolerance_of({"k": 128})
    assert compare(want, want, tol)[0]
    assert not compare(dropped, want, tol)[0]


def test_the_kernel_multiplies_in_packed_f16():
    """The inner product is fma on vec4<f16> (two vec2<f16> halves: HFMA2), and the only f32
    arithmetic is the flush of each block into the running sums."""
    pipe = get("matmul.f16_fast").build(m=128, k=64, n=128, tile_m=64, tile_n=64, tile_k=16, reg_m=8, reg_n=8,
                                        block=16)
    wgsl = lower(pipe.steps[0].program).wgsl
    fmas = re.findall(r"= fma\(vec4<f16>\([^)]*\), [^,]+, [^)]+\);", wgsl)
    assert len(fmas) == 8 * 2 * 16  # reg_m x reg_n/4 vec4 accumulators x tile_k, unrolled
    assert "var<workgroup> w_a_tile: array<vec4<f16>" in wgsl and "fma(vec4<f32>" not in wgsl
    assert len(re.findall(r"\+ vec4<f32>\(", wgsl)) == 8 * 2  # one flush per K-tile (block == tile_k)


def test_batched_fast(backend):
    r = np.random.default_rng(8)
    a, b = r.uniform(-1, 1, (3, 33, 68)).astype(np.float32), r.uniform(-1, 1, (3, 68, 44)).astype(np.float32)
    params = get("matmul.batched").params_for(a, b, precision="fast")
    assert params["precision"] == "fast" and get("matmul.batched").needs_of(params) == {"shader-f16"}
    out = vyre.ops.matmul_batched(backend, a, b, precision="fast")
    assert out.dtype == np.float32 and out.shape == (3, 33, 44)
    want = np.einsum("bmk,bkn->bmn", a.astype(np.float64), b.astype(np.float64))
    ok, _, detail = compare(out, want.astype(np.float32), get("matmul.batched").tolerance_of(params))
    assert ok, detail
    # the f16 rounding of the operands shows: not the f32 kernel's answer
    assert np.abs(out - want).max() > 68 * 2.0 ** -22


def test_conv2d_fast(backend):
    r = np.random.default_rng(9)
    x = r.uniform(-1, 1, (2, 8, 11, 10)).astype(np.float32)
    w = r.uniform(-1, 1, (12, 8, 3, 3)).astype(np.float32)
    bias = r.uniform(-1, 1, 12).astype(np.float32)
    spec = get("conv2d")
    params = spec.params_for(x, w, bias, padding=1, precision="fast")
    out = vyre.ops.conv2d(backend, x, w, bias, padding=1, precision="fast")
    want = spec.reference(x, w, bias, padding=1)[0]
    ok, _, detail = compare(out, want, spec.tolerance_of(params))
    assert ok, detail
    assert spec.needs_of(params) == {"shader-f16"}


def test_bad_input_is_a_dispatch_error():
    h = np.ones((4, 4), np.float16)
    cases = [
        (lambda: get("matmul.f16_fast").params_for(h.astype(np.float32), h), "dtype float32"),
        (lambda: get("matmul.f16_fast").params_for(h, np.ones((3, 4), np.float16)), "do not line up"),
        (lambda: get("matmul.f16_fast").params_for(h, h, tile_z=4), "unknown parameter"),
        (lambda: get("matmul.f16_fast").params_for(h, h, block=24), "power of two"),
        (lambda: get("matmul.f16_fast").params_for(h, h, reg_n=2), "multiples of 4"),
        (lambda: get("matmul.batched").params_for(h[None].astype(np.float32), h[None].astype(np.float32),
                                                  precision="half"), "precision"),
        (lambda: get("matmul.batched").params_for(h[None].astype(np.float32), h[None].astype(np.float32),
                                                  block=16), "unknown parameter"),
        (lambda: get("conv2d").params_for(np.ones((1, 1, 4, 4), np.float32), np.ones((1, 1, 3, 3), np.float32),
                                          precision="bf16"), "precision"),
    ]
    for call, what in cases:
        with pytest.raises(DispatchError, match=what) as e:
            call()
        assert e.value.fix
