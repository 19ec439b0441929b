"""Split-K for the tiled GEMM: a float32 (m, k) @ (k, n) whose output is a few tiles but whose K is long
(a weight gradient summed over a large batch) would otherwise walk all of K in those few workgroups, on
lavapipe a few CPU threads. K is cut into ``S`` slices of ``L`` (a multiple of the tile depth): the op
library's GEMM kernel (vyre/ops/linalg/_gemm.py) runs once per slice on the grid's z axis with operand
hooks that read A's columns and B's rows of that slice (zero past K) and write ``part[s]``; then the thin
module's fixed-order kernel adds ``part[0] + ... + part[S - 1]`` per element (deterministic, no atomics).
Products with a side <= 16 take the thin kernel's own split instead (vyre/array/_kernels/matmul_thin.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...ir.builder import ProgramBuilder, Val
from ...ir.program import Program
from . import cache

MIN_K = 4096  # split only long sums
MAX_TILES = 8  # ... into an output of at most this many tiles
TARGET_WORKGROUPS = 32
MIN_SLICE = 512

_cached = cache.register("matmul_split", 64, Program).get


@dataclass(frozen=True)
class SplitShape:
    m: int
    k: int
    n: int
    slices: int
    slice_len: int


def split_shape(m: int, k: int, n: int) -> SplitShape | None:
    """The split for a 2-D float32 product, or None where the plain GEMM has workgroups enough."""
    from ...ops.linalg._gemm import default_tiles  # why: vyre.ops loads the wgpu backend; imported on use
    t = default_tiles(m, n, k)
    tiles = -(-m // t.tile_m) * -(-n // t.tile_n)
    if k < MIN_K or tiles > MAX_TILES:
        return None
    slices = max(2, min(-(-TARGET_WORKGROUPS // tiles), k // MIN_SLICE))
    length = -(-k // slices)
    length = -(-length // t.tile_k) * t.tile_k  # whole K-tiles: no guard inside a slice
    return SplitShape(m, k, n, -(-k // length), length)


def split_steps(s: SplitShape) -> tuple[Program, Any]:
    """The per-slice GEMM (buffers a, b, part) and its grid."""
    from ...backends.config import DispatchConfig
    from ...ops.linalg._gemm import GemmOperands, default_tiles, gemm_grid, gemm_program
    t = default_tiles(s.m, s.n, s.slice_len)
    m, k, n, length = s.m, s.k, s.n, s.slice_len

    def declare(b: ProgramBuilder) -> tuple[Any, Any, Any]:
        return (b.buffer("a", "f32", count=m * k), b.buffer("b", "f32", count=k * n),
                b.buffer("part", "f32", "write", count=s.slices * m * n))

    def kg(b: ProgramBuilder, z: Val, kk: Val) -> tuple[Val, Val]:
        g = b.let(z * length + kk)
        return g, b.min(g, k - 1)  # clamped: the last slice's tail reads a valid element, then drops it

    def load_a(b: ProgramBuilder, ctx: Any, z: Val, row: Val, kk: Val) -> Val:
        g, c = kg(b, z, kk)
        return b.select(g < k, ctx[0][row * k + c], b.lit(0.0, "f32"))

    def load_b(b: ProgramBuilder, ctx: Any, z: Val, kk: Val, col: Val, k_info: object, col_info: object) -> Val:
        g, c = kg(b, z, kk)
        return b.select(g < k, ctx[1][c * n + col], b.lit(0.0, "f32"))

    def store(b: ProgramBuilder, ctx: Any, z: Val, row: Val, col: Val, col_info: object, value: Val) -> None:
        ctx[2][z * (m * n) + row * n + col] = value

    def build() -> Program:
        return gemm_program("array_matmul_split_k", m, n, length, t, GemmOperands(declare, load_a, load_b, store))

    return _cached(("split", s), build), DispatchConfig.coerce(gemm_grid(m, n, t, s.slices))


def depth(s: SplitShape) -> int:
    return s.slice_len + s.slices


__all__ = ["SplitShape", "split_shape", "split_steps", "depth"]
