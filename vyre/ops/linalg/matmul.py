"""matmul, matmul.batched, matmul.f16: C = A @ B for row-major matrices.

Kernel: the tiled, register-blocked GEMM of ``_gemm`` (workgroup tiles of A and B in
workgroup memory, two stages with a register prefetch and one barrier per K-tile, a
``reg_m x reg_n`` block of vec4 accumulators per invocation, XOR-swizzled A tile). Tile
shape params (all optional, powers of two): ``tile_m, tile_n, tile_k, reg_m, reg_n``;
default 64x64x16 with 4x4 blocks (32x64x16 when M <= 32), and 8x8 blocks once M and N are
>= 512: 64x64x16 tiles when they divide the output evenly, else 128x128x8 (see
``_gemm.default_tiles``). Aligned operands move with vec4 loads/stores where the tiles
take that path (``GemmTiles.vec_io``). On an H200 (Vulkan, kernel time): 4096^3 at 33.1
TFLOP/s, 8192^3 at 35.3, 2048^3 at 27.0, 4000^3 at 29.5 (PyTorch/cuBLAS fp32 without TF32
at 4096^3: 51).
``matmul.batched`` puts the batch on the grid's z axis; ``precision="fast"`` opts into the
packed-f16 kernel of ``matmul.f16_fast`` (operands rounded to f16, f16 multiply-adds in blocks,
f32 sums and result; needs shader-f16; budget ``K * 2^-9``, see ``_tol_batched``). ``matmul.f16``
reads f16, multiplies and accumulates in f32 and rounds each result once to f16.

Tolerance: the GPU sums K products in a different order (and may fuse multiply-adds), so
the error bound is ``K * 2^-22 * max|a| * max|b|`` absolute (4 K f32 half-ulps of the
largest product) plus a small relative term. The witnesses keep |a|, |b| <= 1, so the
registered budget is ``atol = K * 2^-22``; scale it by max|a|*max|b| for other data.
For f16 the output rounding adds one f16 ulp (rtol 2^-10).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from ...backends.schedule import Pipeline
from ...errors import DispatchError
from ...ir.builder import ProgramBuilder, Val
from ...ir.values import BufRef
from ..pipeline import single
from ..registry import OpSpec, Tolerance, Witness, register, rel
from ._gemm import GemmOperands, gemm_grid, gemm_program, tiles_from

TILE_KEYS = ("tile_m", "tile_n", "tile_k", "reg_m", "reg_n")

Ctx = tuple[BufRef, BufRef, BufRef]  # what _operands' declare returns: A, B, C


def _operands(m: int, n: int, k: int, dtype: str, batch: int, vec_io: bool, native: bool = False) -> GemmOperands:
    """Row-major A, B, C; with tiles that take the vec4 paths (``GemmTiles.vec_io``), A (B and
    C) is a vec4 buffer when k (n) is a multiple of 4, so tiles move with vec4 loads and C
    with vec4 stores (host arrays are flattened for vec4 buffers). Loads give f32 values,
    or with ``native`` the buffer's own type (the packed-f16 kernel of ``matmul_f16_fast``)."""
    a4, b4 = k % 4 == 0 and vec_io, n % 4 == 0 and vec_io
    vec = f"vec4<{dtype}>"

    def declare(b: ProgramBuilder) -> tuple[BufRef, BufRef, BufRef]:
        return (b.buffer("a", vec if a4 else dtype, count=batch * m * k // (4 if a4 else 1)),
                b.buffer("b", vec if b4 else dtype, count=batch * k * n // (4 if b4 else 1)),
                b.buffer("c", vec if b4 else dtype, "write", count=batch * m * n // (4 if b4 else 1)))

    def f32(v: Val, lanes: int = 1) -> Val:
        return v if dtype == "f32" or native else v.cast("f32" if lanes == 1 else "vec4<f32>")

    def zoff(b: ProgramBuilder, z: Val, size: int) -> Val | int:
        return z * size if batch > 1 else 0

    def load_a(b: ProgramBuilder, ctx: Ctx, z: Val, row: Val, kk: Val) -> Val:
        return f32(ctx[0][zoff(b, z, m * k) + row * k + kk])

    def load_b(b: ProgramBuilder, ctx: Ctx, z: Val, kk: Val, col: Val, k_info: object, col_info: object) -> Val:
        return f32(ctx[1][zoff(b, z, k * n) + kk * n + col])

    def store(b: ProgramBuilder, ctx: Ctx, z: Val, row: Val, col: Val, col_info: object, value: Val) -> None:
        ctx[2][zoff(b, z, m * n) + row * n + col] = value if dtype == "f32" else value.cast(dtype)

    def load_a4(b: ProgramBuilder, ctx: Ctx, z: Val, row: Val, k4: Val) -> Val:
        return f32(ctx[0][zoff(b, z, m * k // 4) + row * (k // 4) + k4], 4)

    def load_b4(b: ProgramBuilder, ctx: Ctx, z: Val, kk: Val, c4: Val) -> Val:
        return f32(ctx[1][zoff(b, z, k * n // 4) + kk * (n // 4) + c4], 4)

    def store4(b: ProgramBuilder, ctx: Ctx, z: Val, row: Val, c4: Val, value: Val) -> None:
        ctx[2][zoff(b, z, m * n // 4) + row * (n // 4) + c4] = value if dtype == "f32" else value.cast(vec)

    return GemmOperands(declare, load_a, load_b, store, load_a4=load_a4 if a4 else None,
                        load_b4=load_b4 if b4 else None, store4=store4 if b4 else None)


def _build(name: str, m: int, k: int, n: int, dtype: str, batch: int, params: dict[str, Any]) -> Pipeline:
    for label, v in (("m", m), ("k", k), ("n", n), ("batch", batch)):
        if int(v) < 1:
            raise ValueError(f"{name}: {label} must be >= 1, got {v}")
    tiles = tiles_from(params, m, n, k)
    program = gemm_program(name.replace(".", "_"), m, n, k, tiles, _operands(m, n, k, dtype, batch, tiles.vec_io))
    shape = (m, n) if name not in ("matmul.batched", "matmul.f16.batched") else (batch, m, n)
    return single(program, grid=gemm_grid(m, n, tiles, batch), output_shapes={"c": shape})


def build(m: int, k: int, n: int, **tiles: int) -> Pipeline:
    return _build("matmul", m, k, n, "f32", 1, tiles)


def build_f16(m: int, k: int, n: int, **tiles: int) -> Pipeline:
    return _build("matmul.f16", m, k, n, "f16", 1, tiles)


def build_f16_batched(batch: int, m: int, k: int, n: int, **tiles: int) -> Pipeline:
    """matmul.f16's kernel over a stack (the batch on the grid's z axis; f32 sums, one rounding): not a
    registered op, the float16 batched products of vyre.array (attention under autocast)."""
    return _build("matmul.f16.batched", m, k, n, "f16", batch, tiles)


def build_batched(batch: int, m: int, k: int, n: int, precision: str = "precise", **tiles: Any) -> Pipeline:
    if precision == "fast":  # the packed-f16 kernel (lazy import: matmul_f16_fast imports this module)
        from .matmul_f16_fast import build_packed

        return build_packed("matmul.batched", m, k, n, "f32", batch, tiles)
    return _build("matmul.batched", m, k, n, "f32", batch, tiles)


def _product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 and inf - inf are NaN, as on the GPU
        return np.asarray(a, np.float64) @ np.asarray(b, np.float64)


def reference(a: np.ndarray, b: np.ndarray, **params: Any) -> list[np.ndarray]:
    return [_product(a, b).astype(np.float32)]


def reference_f16(a: np.ndarray, b: np.ndarray, **params: Any) -> list[np.ndarray]:
    with np.errstate(over="ignore"):
        return [_product(a, b).astype(np.float16)]


def _tile_kwargs(name: str, kwargs: dict[str, Any]) -> dict[str, int]:
    unknown = sorted(set(kwargs) - set(TILE_KEYS))
    if unknown:
        raise DispatchError(f"{name}: unknown parameter(s) {unknown}", fix=f"pass only {', '.join(TILE_KEYS)}")
    return {key: int(v) for key, v in kwargs.items() if v is not None}


def _check(name: str, a: np.ndarray, b: np.ndarray, dtype: npt.DTypeLike, ndim: int) -> None:
    for label, x in (("a", a), ("b", b)):
        if x.dtype != dtype:
            raise DispatchError(f"{name}: {label} has dtype {x.dtype}, expected {np.dtype(dtype)}",
                                fix=f"pass {label}.astype(np.{np.dtype(dtype).name})")
        if x.ndim != ndim or x.size == 0:
            want = "(batch, m, k) and (batch, k, n)" if ndim == 3 else "(m, k) and (k, n)"
            raise DispatchError(f"{name}: {label} has shape {x.shape}; expected non-empty arrays of shapes {want}",
                                fix="reshape the operands" + (" (use matmul.batched for stacks)" if ndim == 2 else ""))
    if a.shape[-1] != b.shape[-2] or (ndim == 3 and a.shape[0] != b.shape[0]):
        raise DispatchError(f"{name}: shapes {a.shape} and {b.shape} do not line up",
                            fix="a's last axis must equal b's second-to-last axis (and the batch sizes must match)")


def params_for(a: np.ndarray, b: np.ndarray, **kwargs: Any) -> dict[str, Any]:
    _check("matmul", a, b, np.float32, 2)
    return {"m": a.shape[0], "k": a.shape[1], "n": b.shape[1], **_tile_kwargs("matmul", kwargs)}


def params_for_f16(a: np.ndarray, b: np.ndarray, **kwargs: Any) -> dict[str, Any]:
    _check("matmul.f16", a, b, np.float16, 2)
    return {"m": a.shape[0], "k": a.shape[1], "n": b.shape[1], **_tile_kwargs("matmul.f16", kwargs)}


def params_for_batched(a: np.ndarray, b: np.ndarray, precision: str = "precise", **kwargs: Any) -> dict[str, Any]:
    _check("matmul.batched", a, b, np.float32, 3)
    shape = {"batch": a.shape[0], "m": a.shape[1], "k": a.shape[2], "n": b.shape[2]}
    if precision == "fast":
        from .matmul_f16_fast import packed_kwargs  # here: matmul_f16_fast imports this module (a cycle)

        return {**shape, "precision": "fast", **packed_kwargs("matmul.batched", kwargs)}
    if precision != "precise":
        raise DispatchError(f"matmul.batched: precision={precision!r}",
                            fix="pass precision='precise' (f32, the default) or 'fast' (packed f16 multiply-adds)")
    return {**shape, **_tile_kwargs("matmul.batched", kwargs)}


def _tol(params: dict[str, Any]) -> Tolerance:
    return rel(2.0 ** -20, params["k"] * 2.0 ** -22)


def _tol_batched(params: dict[str, Any]) -> Tolerance:
    """precise: as matmul. fast: the f16 rounding of the operands (2^-10 of each |a||b|, at most
    K 2^-10 for |a|, |b| <= 1) plus the blocked f16 accumulation's budget K 2^-10 (see
    matmul_f16_fast), output in f32."""
    return rel(2.0 ** -20, params["k"] * 2.0 ** -9) if params.get("precision") == "fast" else _tol(params)


def _fast_needs(params: dict[str, Any]) -> frozenset[str]:
    return frozenset({"shader-f16"}) if params.get("precision") == "fast" else frozenset()


def _tol_f16(params: dict[str, Any]) -> Tolerance:
    return rel(2.0 ** -10, params["k"] * 2.0 ** -22)


def _mats(r: np.random.Generator, m: int, k: int, n: int, dtype: npt.DTypeLike = np.float32,
          batch: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    lead = () if batch is None else (batch,)
    return (r.uniform(-1, 1, lead + (m, k)).astype(dtype), r.uniform(-1, 1, lead + (k, n)).astype(dtype))


LARGE_TILES = {"tile_m": 128, "tile_n": 128, "tile_k": 8, "reg_m": 8, "reg_n": 8}


def witnesses() -> list[Witness]:
    r = np.random.default_rng(4001)
    out = []
    # default tiles: 32x64 (m <= 32), 64x64 with partial tiles, 64x64 with full tiles (unguarded,
    # vec4 loads and stores); scalar global access wherever k or n is not a multiple of 4
    for m, k, n in [(1, 1, 1), (17, 9, 33), (65, 70, 31), (128, 128, 128)]:
        a, bm = _mats(r, m, k, n)
        out.append(Witness(f"{m}x{k}x{n}", {"m": m, "k": k, "n": n}, (a, bm)))
    a, bm = _mats(r, 130, 20, 129)  # 128x128 tiles, 8x8 blocks: partial tiles on every side; vec4 A, scalar B
    out.append(Witness("130x20x129_large_tiles", {"m": 130, "k": 20, "n": 129, **LARGE_TILES}, (a, bm)))
    a, bm = _mats(r, 40, 24, 36)  # a small tile with more load units than invocations; guarded vec4 paths
    out.append(Witness("40x24x36_tile16", {"m": 40, "k": 24, "n": 36, "tile_m": 16, "tile_n": 16, "tile_k": 16,
                                          "reg_m": 4, "reg_n": 4}, (a, bm)))
    a, bm = _mats(r, 5, 7, 8)  # IEEE specials: inf/NaN propagate through any summation order
    a[1, 2], a[3, 0], bm[4, 5] = np.inf, np.nan, -np.inf
    a[0, :] = -0.0
    out.append(Witness("5x7x8_inf_nan_negzero", {"m": 5, "k": 7, "n": 8}, (a, bm)))
    return out


def witnesses_f16() -> list[Witness]:
    r = np.random.default_rng(4002)
    out = []
    for m, k, n in [(1, 1, 1), (17, 9, 33), (65, 72, 40)]:  # the last one through vec4<f16> buffers
        a, bm = _mats(r, m, k, n, np.float16)
        out.append(Witness(f"{m}x{k}x{n}", {"m": m, "k": k, "n": n}, (a, bm)))
    return out


def witnesses_batched() -> list[Witness]:
    r = np.random.default_rng(4003)
    out = []
    for batch, m, k, n in [(1, 1, 1, 1), (3, 17, 9, 33), (2, 65, 68, 36)]:
        a, bm = _mats(r, m, k, n, batch=batch)
        out.append(Witness(f"{batch}x{m}x{k}x{n}", {"batch": batch, "m": m, "k": k, "n": n}, (a, bm)))
    for batch, m, k, n in [(3, 17, 9, 33), (2, 65, 68, 36)]:  # the packed-f16 kernel: scalar, then vec4 operands
        a, bm = _mats(r, m, k, n, batch=batch)
        out.append(Witness(f"{batch}x{m}x{k}x{n}_fast", {"batch": batch, "m": m, "k": k, "n": n,
                                                          "precision": "fast"}, (a, bm)))
    return out


register(OpSpec(
    id="matmul", category="linalg",
    summary="C = A @ B for f32 row-major (m, k) @ (k, n): tiled, register-blocked GEMM.",
    build=build, reference=reference, witnesses=witnesses, params_for=params_for,
    tolerance=rel(2.0 ** -20, 2.0 ** -22), tolerance_for=_tol, tolerance_rule="rtol=2^-20 atol=k·2^-22",
))

register(OpSpec(
    id="matmul.batched", category="linalg",
    summary="C[i] = A[i] @ B[i] for f32 stacks (batch, m, k) @ (batch, k, n); the batch is the grid's z axis; "
            "precision='fast': packed f16 multiply-adds.",
    build=build_batched, reference=reference, witnesses=witnesses_batched, params_for=params_for_batched,
    tolerance=rel(2.0 ** -20, 2.0 ** -22), tolerance_for=_tol_batched, needs_for=_fast_needs,
    tolerance_rule="rtol=2^-20 atol=k·2^-22 (precision='fast': atol=k·2^-9)",
))

register(OpSpec(
    id="matmul.f16", category="linalg",
    summary="C = A @ B for f16 (m, k) @ (k, n): f32 accumulation, f16 result rounded once.",
    build=build_f16, reference=reference_f16, witnesses=witnesses_f16, params_for=params_for_f16,
    tolerance=rel(2.0 ** -10, 2.0 ** -22), tolerance_for=_tol_f16, needs=frozenset({"shader-f16"}),
    tolerance_rule="rtol=2^-10 atol=k·2^-22",
))

