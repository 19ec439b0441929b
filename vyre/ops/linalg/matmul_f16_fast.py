"""matmul.f16_fast: C = A @ B for f16 row-major matrices, multiplied and added in packed f16.

Kernel: ``_gemm_f16.packed_gemm_program``: ``vec4<f16>`` accumulators updated with packed
multiply-adds (HFMA2 on NVIDIA, nominally twice the f32 rate), flushed every ``block`` k (default 16)
into f32 running sums, the result rounded once to f16. Params (all optional): ``tile_m,
tile_n, tile_k, reg_m, reg_n, block`` (powers of two) and ``sum_f16`` (running sums in f16
as well). ``matmul.f16`` is the precise variant (f32 products and sums).

Speed on an H200 (Vulkan, kernel time, same run): 4096^3 44.9 TFLOP/s (f32 ``matmul`` 34.1,
``matmul.f16`` 29.4: 1.32x and 1.53x), 2048^3 43.4 (29.0, 29.8), 8192^3 46.1 (35.4, 28.8);
``sum_f16=True, block=32``: 50.3 at 4096^3, with 5x the error (0.31 against 0.0625). Not 2x
f32: a trivial loop of independent packed-f16 fma through WGSL/SPIR-V peaks at 64.1 TFLOP/s
there, against 52.0 for the same loop in f32 (1.23x), so this kernel runs at 70% of the
packed ceiling (the f32 GEMM at 66% of its own).

Tolerance. With u = 2^-11 (f16 unit roundoff) and inputs exactly f16, each block of ``block``
sequential f16 multiply-adds errs by at most ``block * u * sum_block |a||b|`` (first order,
fused or not), the f32 sums add ``K * 2^-24 * sum |a||b|``, the final rounding ``u |c|``, and
the reference (float64 product rounded to f16) another ``u |c|``. So, guaranteed:
``|got - ref| <= 2^-10 |ref| + (block + 1) * u * sum_k |a_mk| |b_kn|`` (``sum_f16`` adds
``(K / block) * u * sum_k |a_mk||b_kn|``): bounded by the block length, not by K.
That worst case assumes every rounding goes the same way with partial sums as large as
``sum |a||b|``; for data with mixed signs (the witnesses: |a|, |b| <= 1, uniform) the block
partial sums stay within a few |a||b| and each k adds about one f16 ulp of the largest product,
so the registered budget is ``rel(2^-10, K * 2^-10)`` (scale the atol by max|a|*max|b| for
other data, and use the guaranteed bound for adversarial data). f16 overflow (|partial
sums| > 65504) gives inf: keep the products' block sums in f16 range.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...errors import DispatchError
from ..pipeline import single
from ..registry import OpSpec, Tolerance, Witness, register, rel
from ._gemm_f16 import PACKED_KEYS, packed_gemm_program, packed_grid, packed_tiles_from
from .matmul import _check, _mats, _operands, reference_f16

OP = "matmul.f16_fast"


def build_packed(name: str, m: int, k: int, n: int, dtype: str, batch: int, params: dict[str, Any]) -> Pipeline:
    """The packed-f16 GEMM over row-major ``dtype`` operands (f16: read as they are; f32:
    rounded to f16 while staged), C stored in ``dtype``; ``params`` are tile keys."""
    for label, v in (("m", m), ("k", k), ("n", n), ("batch", batch)):
        if int(v) < 1:
            raise ValueError(f"{name}: {label} must be >= 1, got {v}")
    tiles = packed_tiles_from(params, m, n, k)
    ops = _operands(m, n, k, dtype, batch, vec_io=True, native=True)
    program = packed_gemm_program(name.replace(".", "_"), m, n, k, tiles, ops)
    shape = (m, n) if batch == 1 and name != "matmul.batched" else (batch, m, n)
    return single(program, grid=packed_grid(m, n, tiles, batch), output_shapes={"c": shape})


def build(m: int, k: int, n: int, **tiles: Any) -> Pipeline:
    return build_packed(OP, m, k, n, "f16", 1, tiles)


def packed_kwargs(name: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The tile params of the packed kernel from a caller's keyword arguments, or a DispatchError."""
    unknown = sorted(set(kwargs) - set(PACKED_KEYS))
    if unknown:
        raise DispatchError(f"{name}: unknown parameter(s) {unknown}", fix=f"pass only {', '.join(PACKED_KEYS)}")
    out: dict[str, Any] = {}
    for key, v in kwargs.items():
        if v is None:
            continue
        out[key] = bool(v) if key == "sum_f16" else int(v)
    try:
        packed_tiles_from(out, 512, 512, 512)
    except ValueError as exc:
        raise DispatchError(f"{name}: {exc}", fix="pick tile params that are powers of two within the limits") \
            from None
    return out


def params_for(a: np.ndarray, b: np.ndarray, **kwargs: Any) -> dict[str, Any]:
    _check(OP, a, b, np.float16, 2)
    return {"m": a.shape[0], "k": a.shape[1], "n": b.shape[1], **packed_kwargs(OP, kwargs)}


def tolerance(params: dict[str, Any]) -> Tolerance:
    return rel(2.0 ** -10, params["k"] * 2.0 ** -10)


def witnesses() -> list[Witness]:
    r = np.random.default_rng(4004)
    out = []
    # default 64x64 tiles: one partial tile; scalar loads/stores (k, n not multiples of 4)
    for m, k, n in [(1, 1, 1), (17, 9, 33), (65, 70, 31), (128, 128, 128)]:
        a, bm = _mats(r, m, k, n, np.float16)
        out.append(Witness(f"{m}x{k}x{n}", {"m": m, "k": k, "n": n}, (a, bm)))
    # 128x128 tiles with 8x8 blocks, partial on every side, block (32) spanning two K-tiles of 16
    a, bm = _mats(r, 130, 100, 132, np.float16)
    out.append(Witness("130x100x132_large_tiles", {"m": 130, "k": 100, "n": 132, "tile_m": 128, "tile_n": 128,
                                                   "tile_k": 16, "reg_m": 8, "reg_n": 8, "block": 32}, (a, bm)))
    # a block shorter than the K-tile (several flushes per tile), f16 running sums, 8x4 register blocks
    a, bm = _mats(r, 40, 72, 36, np.float16)
    out.append(Witness("40x72x36_block8_f16sums", {"m": 40, "k": 72, "n": 36, "tile_m": 32, "tile_n": 16,
                                                   "tile_k": 32, "reg_m": 8, "reg_n": 4, "block": 8,
                                                   "sum_f16": True}, (a, bm)))
    a, bm = _mats(r, 5, 7, 8, np.float16)  # IEEE specials propagate through any summation order
    a[1, 2], a[3, 0], bm[4, 5] = np.inf, np.nan, -np.inf
    a[0, :] = -0.0
    out.append(Witness("5x7x8_inf_nan_negzero", {"m": 5, "k": 7, "n": 8}, (a, bm)))
    return out


register(OpSpec(
    id=OP, category="linalg",
    summary="C = A @ B for f16 (m, k) @ (k, n) in packed vec2<f16> multiply-adds (twice the f32 rate), "
            "blocked accumulation (f16 over 16 k, then f32), f16 result.",
    build=build, reference=reference_f16, witnesses=witnesses, params_for=params_for,
    tolerance=rel(2.0 ** -10, 2.0 ** -10), tolerance_for=tolerance, needs=frozenset({"shader-f16"}),
    tolerance_rule="rtol=2^-10 atol=k·2^-10",
))
