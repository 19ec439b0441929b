"""A GEMM kernel builder that multiplies and adds in packed f16 (``vec4<f16>`` = two
``vec2<f16>`` halves, what NVIDIA compiles to HFMA2: twice the f32 FMA rate), with blocked
accumulation to bound the error.

``C[z, m, n] = sum_k A[z, m, k] * B[z, k, n]`` through the same operand hooks as the f32
kernel (:class:`vyre.ops.linalg._gemm.GemmOperands`): the hooks may return f16 or f32
values (f32 ones are rounded to f16 while the tiles are staged), and ``store``/``store4``
receive the f32 (or f16, see ``sum_f16``) block sums.

Kernel (one workgroup per ``tile_m x tile_n`` output tile, ``z`` on the grid's third axis):

* ``(tile_m / reg_m) * (tile_n / reg_n)`` invocations; invocation (ty, tx) owns rows
  ``ty + i * TY`` (i < reg_m) and column groups ``tx + h * TX`` (4 columns each, h <
  reg_n / 4) of the tile: its ``reg_m x reg_n`` block of C lives in ``vec4<f16>``
  accumulators along n.
* A's tile is kept row-major in workgroup memory (``As[m][k/4]``, a ``vec4<f16>`` holds 4
  consecutive k of one row: no transpose) and B's as ``Bs[k][n/4]``. Per 4 k an invocation
  reads ``reg_m`` A vectors and ``4 * reg_n / 4`` B vectors, then does
  ``acc[i][h] = fma(vec4(a_i[j]), b_jh, acc[i][h])``: packed multiply-adds, the broadcast of
  ``a_i[j]`` being an HFMA2 operand selector. Half-warps read one A row (broadcast) and
  consecutive B vectors (no bank conflicts for 8-byte accesses).
* Blocked accumulation: the f16 accumulators sum ``block`` consecutive k, then are added
  into the running sums (``vec4<f32>``, or ``vec4<f16>`` with ``sum_f16``) and cleared, so
  the f16 rounding error grows with ``block``, not with K (see ``matmul_fast``).
* Two stages of workgroup memory with a register prefetch (the next K-tile is loaded into
  registers before the current one is multiplied, then parked in the other stage: one
  barrier per K-tile); the K-tile body is unrolled at build time.
* Guards only where a tile can be partial (``select(in_bounds, load, 0)``), as in ``_gemm``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ...ir.builder import Val
from ...ir.program import Program
from ...ir.types import DataType
from ...ir.values import MutVar
from ._gemm import GemmOperands, TileGeometry, _all, _maybe, _pow2, tile_frame

H = "f16"
H4 = "vec4<f16>"
F4 = "vec4<f32>"


@dataclass(frozen=True)
class PackedTiles(TileGeometry):
    """Tile shape of the packed-f16 kernel (see :class:`~._gemm.TileGeometry`); the f16 accumulators
    are flushed every ``block`` k. All powers of two; ``reg_n`` and ``tile_k`` multiples of 4."""

    tile_m: int = 64
    tile_n: int = 64
    tile_k: int = 16
    reg_m: int = 8
    reg_n: int = 8
    block: int = 16
    sum_f16: bool = False  # running sums in f16 too (fewer registers, error grows with K / block)
    ELEMENT = "f16"
    ELEMENT_BYTES = 2

    def as_params(self) -> dict:
        return asdict(self)

    def check(self) -> PackedTiles:
        for name, v in asdict(self).items():
            if name != "sum_f16" and not _pow2(v):
                raise ValueError(f"packed GEMM tile {name}={v} must be a power of two")
        if self.reg_n % 4 or self.tile_k % 4:
            raise ValueError(f"reg_n={self.reg_n} and tile_k={self.tile_k} must be multiples of 4 (vec4<f16>)")
        self.check_limits()
        return self


PACKED_KEYS = ("tile_m", "tile_n", "tile_k", "reg_m", "reg_n", "block", "sum_f16")


def default_packed_tiles(m: int, n: int, k: int) -> PackedTiles:
    """64x64x16 tiles, flushed every 16 k, with 8x8 blocks (64 invocations) once both output
    sides reach 512, else 4x4 blocks (256 invocations: more of them on small outputs).
    Measured on an H200 (Vulkan, kernel time, 4096^3, f32 sums unless noted): 64x64x16 8x8
    flushed every 16: 44.9 TFLOP/s; 64x128 or 128x64: 45.2 / 45.1; 4x16 blocks: 43.4; flushed
    every 32 (a flush under a branch every other K-tile): 42.7; 64x64x32: 33.5; 64x64x8: 36.1;
    128x128x16: 34.0; with f16 sums 48.6 (flushed every 16) and 50.3 (every 32). Same run:
    f32 ``matmul`` 34.1, ``matmul.f16`` 29.3."""
    if m >= 512 and n >= 512:
        return PackedTiles(64, 64, 16, 8, 8, 16)
    return PackedTiles(64, 64, 16, 4, 4, 16)


def packed_tiles_from(params: dict[str, Any], m: int, n: int, k: int) -> PackedTiles:
    """Tile shape from build params (any of :data:`PACKED_KEYS`), defaults filled in."""
    base = default_packed_tiles(m, n, k)
    ints = {f: int(params[f]) if params.get(f) is not None else getattr(base, f) for f in PACKED_KEYS[:-1]}
    s16 = params.get("sum_f16")
    return PackedTiles(**ints, sum_f16=base.sum_f16 if s16 is None else bool(s16)).check()


def packed_grid(m: int, n: int, tiles: PackedTiles, batch: int = 1) -> tuple[int, int, int]:
    return (-(-n // tiles.tile_n), -(-m // tiles.tile_m), batch)


def _half(v: Val, vec: bool) -> Val:
    want = DataType.VEC4_F16 if vec else DataType.F16
    return v if v.dtype is want else v.cast(want.value)


def packed_gemm_program(name: str, m: int, n: int, k: int, tiles: PackedTiles, ops: GemmOperands) -> Program:
    """Build the packed-f16 GEMM program; dispatch it over :func:`packed_grid` workgroups."""
    t = tiles.check()
    TX, TY = t.threads_x, t.threads_y
    TK, TK4, TN4 = t.tile_k, t.tile_k // 4, t.tile_n // 4
    A_SZ, B_SZ = t.tile_m * TK4, TK * TN4  # vec4<f16> elements per stage
    f = tile_frame(name, m, n, k, t, ops, H4, A_SZ, B_SZ)
    b, ctx, a_sh, b_sh, tx, ty, col0, row0, z = f.b, f.ctx, f.a_sh, f.b_sh, f.tx, f.ty, f.col0, f.row0, f.z
    guard_m, guard_n, guard_k, units = f.guard_m, f.guard_n, f.guard_k, f.units
    load_a4 = ops.load_a4
    zero_h, zero4 = b.lit(0.0, H), b.vec(H4, 0.0)

    a_units = units(A_SZ, TK4, "a")  # inner = k4 within the tile, outer = row
    b_units = units(B_SZ, TN4, "b")  # inner = column group n4, outer = k
    a_regs = [b.var(H4, name=f"pa{i}") for i in range(len(a_units))]
    b_regs = [b.var(H4, name=f"pb{i}") for i in range(len(b_units))]

    guarded = f.guarded

    def fetch(k0: Val) -> None:
        for (k4, r, _), reg in zip(a_units, a_regs):
            row = b.let(row0 + r)
            rok = row < m if guard_m else None
            if load_a4 is not None:
                kq = b.let((k0 >> 2) + k4)
                reg.set(guarded([rok, kq < k // 4 if guard_k else None],
                                lambda row=row, kq=kq: _half(load_a4(b, ctx, z, row, kq), True), zero4))
                continue
            vals = []
            for j in range(4):
                kg = b.let(k0 + k4 * 4 + j)
                vals.append(guarded([rok, kg < k if guard_k else None],
                                    lambda row=row, kg=kg: _half(ops.load_a(b, ctx, z, row, kg), False), zero_h))
            reg.set(b.vec(H4, *vals))
        f.fetch_b(ops, k0, n, k, b_units, b_regs, H4, zero_h, zero4, _half)

    def stash(stage_a: Val, stage_b: Val) -> None:
        for (k4, r, ok), reg in zip(a_units, a_regs):
            def put_a(k4: Val = k4, r: Val = r, reg: MutVar = reg) -> None:
                a_sh[stage_a + r * TK4 + k4] = reg
            _maybe(b, ok, put_a)
        for (n4, kk, ok), reg in zip(b_units, b_regs):
            def put_b(n4: Val = n4, kk: Val = kk, reg: MutVar = reg) -> None:
                b_sh[stage_b + kk * TN4 + n4] = reg
            _maybe(b, ok, put_b)

    HN = t.reg_n // 4
    acc = [[b.var(H4, zero4, name=f"acc{i}_{h}") for h in range(HN)] for i in range(t.reg_m)]
    sum_t = H4 if t.sum_f16 else F4
    sums = [[b.var(sum_t, b.vec(sum_t, 0.0), name=f"sum{i}_{h}") for h in range(HN)] for i in range(t.reg_m)]

    def flush() -> None:
        for i in range(t.reg_m):
            for h in range(HN):
                sums[i][h].set(sums[i][h] + (acc[i][h] if t.sum_f16 else acc[i][h].cast(F4)))
                acc[i][h].set(zero4)

    def multiply(stage_a: Val, stage_b: Val) -> None:
        for kq in range(TK4):
            av = [b.let(a_sh[stage_a + (ty + i * TY) * TK4 + kq]) for i in range(t.reg_m)]
            for j in range(4):
                kk = kq * 4 + j
                bv = [b.let(b_sh[stage_b + kk * TN4 + h * TX + tx]) for h in range(HN)]
                for i in range(t.reg_m):
                    a = b.vec(H4, av[i][j])
                    for h in range(HN):
                        acc[i][h].set(b.fma(a, bv[h], acc[i][h]))
                if t.block <= TK and (kk + 1) % t.block == 0:
                    flush()

    n_tiles = -(-k // TK)
    per_block = t.block // TK  # K-tiles per flush when a block spans several

    def flush_every_block(kt: Val) -> None:
        with b.if_((kt & (per_block - 1)) == per_block - 1):
            flush()

    f.k_loop(k, TK, A_SZ, B_SZ, fetch, stash, multiply,
             flush_every_block if per_block > 1 and n_tiles > per_block else None)
    if per_block > 1:
        flush()  # the last (partial) block; a no-op add of zeros when it was flushed already

    # --- epilogue: each invocation writes its reg_m x reg_n block ---
    rows = [b.let(row0 + ty + i * TY, f"orow{i}") for i in range(t.reg_m)]
    store4 = ops.store4
    for h in range(HN):
        c4 = b.let((col0 >> 2) + tx + h * TX, f"ocol4_{h}")
        for i, row in enumerate(rows):
            rok = row < m if guard_m else None
            if store4 is not None:
                ok = _all([rok, c4 < n // 4 if guard_n else None])
                _maybe(b, ok, lambda row=row, c4=c4, v=sums[i][h]: store4(b, ctx, z, row, c4, v))
                continue
            for c in range(4):
                col = b.let(c4 * 4 + c)
                cinfo = ops.col_info(b, ctx, z, col)
                ok = _all([rok, col < n if guard_n else None])
                _maybe(b, ok, lambda row=row, col=col, ci=cinfo, v=sums[i][h][c]:
                       ops.store(b, ctx, z, row, col, ci, v))
    return b.build()


__all__ = ["PackedTiles", "PACKED_KEYS", "default_packed_tiles", "packed_tiles_from", "packed_grid",
           "packed_gemm_program"]
