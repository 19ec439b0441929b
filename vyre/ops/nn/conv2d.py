"""conv2d: 2-D convolution (cross-correlation, like PyTorch) of NCHW f32 input.

x (N, C, H, W), weights (O, C, KH, KW), optional bias (O,) -> out (N, O, OH, OW) with
``OH = (H + 2 * pad_h - dil_h * (KH - 1) - 1) // stride_h + 1`` (OW likewise). ``stride``,
``padding`` and ``dilation`` are ints or (h, w) pairs; padding is zeros.

Kernel: implicit GEMM on the tiled, register-blocked GEMM of ``vyre.ops.linalg._gemm``
(no im2col matrix is built): ``out[o, (n, oh, ow)] = sum_{(c, kh, kw)} W[o, (c, kh, kw)] *
X_col[(c, kh, kw), (n, oh, ow)]`` with M = O, K = C*KH*KW, N = N*OH*OW. The weights are
the row-major A operand as they are (vec4 loads when K is a multiple of 4 and the tiles
allow, see ``GemmTiles.vec_io``); B's tile is gathered from x while it is loaded into
workgroup memory (the (c, kh, kw) split is computed once per k, the (n, oh, ow) split once
per column), out-of-image taps read 0. The bias is added in the epilogue. Tile params
(tile_m, tile_n, tile_k, reg_m, reg_n) pass through to the GEMM. ``precision="fast"`` runs the
same operands through the packed-f16 GEMM of ``matmul.f16_fast`` (x and the weights rounded
to f16 while staged, f16 multiply-adds in blocks, f32 sums, bias and output; needs
shader-f16; its tile params also take ``block`` and ``sum_f16``).

Tolerance: like matmul, K-scaled: rel(2^-20, (C*KH*KW + 1) * 2^-22) for
|x|, |w|, |bias| <= 1 (the witnesses' range); the +1 is the bias add. Fast: K * 2^-9 (the
operands' f16 rounding plus the blocked f16 accumulation, as ``matmul.batched`` fast).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...errors import DispatchError
from ...ir.builder import ProgramBuilder, Val
from ...ir.values import BufRef
from ..linalg._gemm import GemmOperands, gemm_grid, gemm_program, tiles_from
from ..linalg._gemm_f16 import packed_gemm_program, packed_grid, packed_tiles_from
from ..pipeline import single
from ..registry import OpSpec, Tolerance, Witness, register, rel

TILE_KEYS = ("tile_m", "tile_n", "tile_k", "reg_m", "reg_n")
PACKED_KEYS = (*TILE_KEYS, "block", "sum_f16")

IntPair = int | np.integer | Sequence[int]  # an int (both axes) or an (h, w) pair
Ctx = tuple[BufRef, BufRef, BufRef | None, BufRef]  # x, weight, bias (None without one), out


def _pair(name: str, v: IntPair) -> tuple[int, int]:
    if isinstance(v, (int, np.integer)):
        return int(v), int(v)
    try:
        h, w = (int(x) for x in v)
    except (TypeError, ValueError):
        raise ValueError(f"conv2d: {name} must be an int or an (h, w) pair, got {v!r}") from None
    return h, w


def out_size(size: int, k: int, stride: int, pad: int, dil: int) -> int:
    return (size + 2 * pad - dil * (k - 1) - 1) // stride + 1


def _geometry(n: int, c: int, h: int, w: int, o: int, kh: int, kw: int, stride: IntPair, padding: IntPair,
              dilation: IntPair) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int], int, int]:
    (sh, sw), (ph, pw), (dh, dw) = _pair("stride", stride), _pair("padding", padding), _pair("dilation", dilation)
    for label, val in (("n", n), ("c", c), ("h", h), ("w", w), ("o", o), ("kh", kh), ("kw", kw),
                       ("stride", min(sh, sw)), ("dilation", min(dh, dw))):
        if int(val) < 1:
            raise ValueError(f"conv2d: {label} must be >= 1, got {val}")
    if min(ph, pw) < 0:
        raise ValueError(f"conv2d: padding must be >= 0, got {(ph, pw)}")
    oh, ow = out_size(h, kh, sh, ph, dh), out_size(w, kw, sw, pw, dw)
    if oh < 1 or ow < 1:
        raise ValueError(f"conv2d: the (dilated) {kh}x{kw} kernel does not fit the padded {h}x{w} input")
    return (sh, sw), (ph, pw), (dh, dw), oh, ow


def build(n: int, c: int, h: int, w: int, o: int, kh: int, kw: int, stride: IntPair = 1, padding: IntPair = 0,
          dilation: IntPair = 1, bias: bool = False, precision: str = "precise", **tiles: Any) -> Pipeline:
    (sh, sw), (ph, pw), (dh, dw), oh, ow = _geometry(n, c, h, w, o, kh, kw, stride, padding, dilation)
    gm, gn, gk = o, n * oh * ow, c * kh * kw
    taps, pix = kh * kw, oh * ow
    fast = packed_tiles_from(tiles, gm, gn, gk) if precision == "fast" else None
    tl = tiles_from({} if fast else tiles, gm, gn, gk)
    w4 = gk % 4 == 0 and (fast is not None or tl.vec_io)  # weight rows in vec4s: A moves with vec4 loads

    def declare(b: ProgramBuilder) -> Ctx:
        xs = b.buffer("x", "f32", count=n * c * h * w)
        ws = b.buffer("weight", "vec4<f32>" if w4 else "f32", count=o * gk // (4 if w4 else 1))
        bs = b.buffer("bias", "f32", count=o) if bias else None
        out = b.buffer("out", "f32", "write", count=n * o * pix)
        return xs, ws, bs, out

    def load_a(b: ProgramBuilder, ctx: Ctx, z: Val, row: Val, k: Val) -> Val:
        return ctx[1][row * gk + k]

    def load_a4(b: ProgramBuilder, ctx: Ctx, z: Val, row: Val, k4: Val) -> Val:
        return ctx[1][row * (gk // 4) + k4]

    # k -> (channel, tap row offset, tap column offset), i32
    def k_info(b: ProgramBuilder, ctx: Ctx, z: Val, k: Val) -> tuple[Val, Val, Val]:
        ch = b.let(k / taps)
        tap = b.let(k % taps)
        return ch, b.let((tap / kw).cast("i32") * dh - ph), b.let((tap % kw).cast("i32") * dw - pw)

    # col -> (image, output row * stride, output column * stride, pixel)
    def col_info(b: ProgramBuilder, ctx: Ctx, z: Val, col: Val) -> tuple[Val, Val, Val, Val]:
        img = b.let(col / pix)
        p = b.let(col % pix)
        return img, b.let((p / ow).cast("i32") * sh), b.let((p % ow).cast("i32") * sw), p

    def load_b(b: ProgramBuilder, ctx: Ctx, z: Val, k: Val, col: Val, kinfo: tuple[Val, Val, Val],
               cinfo: tuple[Val, Val, Val, Val]) -> Val:
        ch, dy, dx = kinfo
        img, y0, x0, _ = cinfo
        iy = b.let(y0 + dy)
        ix = b.let(x0 + dx)
        inside = (iy >= 0) & (iy < h) & (ix >= 0) & (ix < w)
        src = ((img * c + ch) * h + iy.cast("u32")) * w + ix.cast("u32")
        return b.select(inside, ctx[0][src], 0.0)

    def store(b: ProgramBuilder, ctx: Ctx, z: Val, row: Val, col: Val, cinfo: tuple[Val, Val, Val, Val],
              value: Val) -> None:
        img, _, _, p = cinfo
        bias_buf = ctx[2]
        ctx[3][(img * o + row) * pix + p] = value + bias_buf[row] if bias_buf is not None else value

    ops = GemmOperands(declare, load_a, load_b, store, k_info, col_info, load_a4=load_a4 if w4 else None)
    if fast is not None:
        program, grid = packed_gemm_program("conv2d", gm, gn, gk, fast, ops), packed_grid(gm, gn, fast)
    else:
        program, grid = gemm_program("conv2d", gm, gn, gk, tl, ops), gemm_grid(gm, gn, tl)
    return single(program, grid=grid, output_shapes={"out": (n, o, oh, ow)})


def reference(x: np.ndarray, weight: np.ndarray, *maybe_bias: np.ndarray, stride: IntPair = 1, padding: IntPair = 0,
              dilation: IntPair = 1, **params: Any) -> list[np.ndarray]:
    x = np.asarray(x, np.float64)
    wt = np.asarray(weight, np.float64)
    n, c, h, w = x.shape
    o, _, kh, kw = wt.shape
    (sh, sw), (ph, pw), (dh, dw), oh, ow = _geometry(n, c, h, w, o, kh, kw, stride, padding, dilation)
    xp = np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)))
    out = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dh: i * dh + sh * (oh - 1) + 1: sh, j * dw: j * dw + sw * (ow - 1) + 1: sw]
            out += np.einsum("nchw,oc->nohw", patch, wt[:, :, i, j])
    if maybe_bias:
        out += np.asarray(maybe_bias[0], np.float64)[None, :, None, None]
    return [out.astype(np.float32)]


def params_for(x: np.ndarray, weight: np.ndarray, *maybe_bias: np.ndarray, stride: IntPair = 1, padding: IntPair = 0,
               dilation: IntPair = 1, precision: str = "precise", **tiles: Any) -> dict[str, Any]:
    for name, a, nd in (("x", x, 4), ("weight", weight, 4)):
        if a.dtype != np.float32 or a.ndim != nd or a.size == 0:
            raise DispatchError(f"conv2d: {name} has dtype {a.dtype} and shape {a.shape}; expected non-empty "
                                f"float32 of {nd} dims ({'N, C, H, W' if name == 'x' else 'O, C, KH, KW'})",
                                fix=f"pass {name} as float32 in NCHW / OIHW layout")
    if x.shape[1] != weight.shape[1]:
        raise DispatchError(f"conv2d: x has {x.shape[1]} channels but weight expects {weight.shape[1]}",
                            fix="weight must be (out_channels, in_channels, KH, KW) with x's in_channels")
    if len(maybe_bias) > 1:
        raise DispatchError("conv2d takes x, weight and an optional bias", fix="pass at most three arrays")
    if maybe_bias:
        bv = maybe_bias[0]
        if bv.dtype != np.float32 or bv.shape != (weight.shape[0],):
            raise DispatchError(f"conv2d: bias has dtype {bv.dtype} and shape {bv.shape}; expected float32 "
                                f"({weight.shape[0]},)", fix="pass one float32 bias per output channel")
    if precision not in ("precise", "fast"):
        raise DispatchError(f"conv2d: precision={precision!r}",
                            fix="pass precision='precise' (f32, the default) or 'fast' (packed f16 multiply-adds)")
    keys = PACKED_KEYS if precision == "fast" else TILE_KEYS
    unknown = sorted(set(tiles) - set(keys))
    if unknown:
        raise DispatchError(f"conv2d: unknown parameter(s) {unknown}",
                            fix="pass stride, padding, dilation, precision and optionally " + ", ".join(keys))
    n, c, h, w = x.shape
    o, _, kh, kw = weight.shape
    params = {"n": n, "c": c, "h": h, "w": w, "o": o, "kh": kh, "kw": kw, "stride": list(_pair("stride", stride)),
              "padding": list(_pair("padding", padding)), "dilation": list(_pair("dilation", dilation)),
              "bias": bool(maybe_bias), **{k: bool(v) if k == "sum_f16" else int(v) for k, v in tiles.items()}}
    if precision == "fast":
        params["precision"] = "fast"
    try:
        _geometry(n, c, h, w, o, kh, kw, stride, padding, dilation)
    except ValueError as exc:
        raise DispatchError(str(exc), fix="use a smaller kernel/dilation or more padding") from None
    return params


def _tol(params: dict[str, Any]) -> Tolerance:
    k = params["c"] * params["kh"] * params["kw"]
    return rel(2.0 ** -20, k * 2.0 ** -9 + 2.0 ** -22) if params.get("precision") == "fast" else \
        rel(2.0 ** -20, (k + 1) * 2.0 ** -22)


def _needs(params: dict[str, Any]) -> frozenset[str]:
    return frozenset({"shader-f16"}) if params.get("precision") == "fast" else frozenset()


def witnesses() -> list[Witness]:
    r = np.random.default_rng(4401)
    out = []
    cases: list[tuple[str, tuple[int, ...], dict[str, Any]]] = [
        ("1x1x1x1_k1", (1, 1, 1, 1, 1, 1, 1), {}),
        ("stride2_pad1_bias", (2, 3, 15, 13, 5, 3, 3), {"stride": [2, 2], "padding": [1, 1], "bias": True}),
        ("dilation2_pad2_bias", (1, 4, 12, 12, 6, 3, 3), {"padding": [2, 2], "dilation": [2, 2], "bias": True}),
        ("asym_5x2_s21_p10_d12", (1, 2, 10, 9, 3, 5, 2), {"stride": [2, 1], "padding": [1, 0], "dilation": [1, 2]}),
        # 16x16x16 tiles: 5 row tiles, K = 40 in 3 K-tiles, weights moved in vec4 4x4 blocks
        ("1x1_conv_40ch_to_70_vec4_weights", (2, 40, 6, 7, 70, 1, 1),
         {"bias": True, "tile_m": 16, "tile_n": 16, "tile_k": 16, "reg_m": 4, "reg_n": 4}),
        # the packed-f16 GEMM: im2col gathers rounded to f16 (scalar weights, then vec4 weights)
        ("stride2_pad1_bias_fast", (2, 3, 15, 13, 5, 3, 3),
         {"stride": [2, 2], "padding": [1, 1], "bias": True, "precision": "fast"}),
        ("1x1_conv_40ch_to_70_fast", (2, 40, 6, 7, 70, 1, 1), {"bias": True, "precision": "fast"}),
    ]
    for name, (n, c, h, w, o, kh, kw), extra in cases:
        x = r.uniform(-1, 1, (n, c, h, w)).astype(np.float32)
        wt = r.uniform(-1, 1, (o, c, kh, kw)).astype(np.float32)
        inputs = (x, wt) + ((r.uniform(-1, 1, o).astype(np.float32),) if extra.get("bias") else ())
        params = {"n": n, "c": c, "h": h, "w": w, "o": o, "kh": kh, "kw": kw, "stride": [1, 1], "padding": [0, 0],
                  "dilation": [1, 1], "bias": False, **extra}
        out.append(Witness(name, params, inputs))
    return out


register(OpSpec(
    id="conv2d", category="nn",
    summary="2-D convolution of NCHW f32 input with OIHW weights, optional bias, stride, padding, dilation "
            "(implicit GEMM); precision='fast': packed f16 multiply-adds.",
    build=build, reference=reference, witnesses=witnesses, params_for=params_for,
    tolerance=rel(2.0 ** -20, 2.0 ** -20), tolerance_for=_tol, needs_for=_needs,
    tolerance_rule="rtol=2^-20 atol=(c·kh·kw + 1)·2^-22 (precision='fast': atol=c·kh·kw·2^-9 + 2^-22)",
))
