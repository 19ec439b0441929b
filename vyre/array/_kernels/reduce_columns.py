"""Column-tiled reductions: the reduced axes all come before the kept ones (unit axes aside), as in
``x.sum(axis=0)`` or ``x.mean(axis=(0, 1))`` of a 3-D array. The input then reads, with no view, as L
rows of M columns (element (r, m) at r * M + m), and the row kernel's layout would walk each column
with stride M (one lane per output, or a tree whose lanes are M elements apart).

Here a workgroup of WG lanes owns a tile of TX adjacent columns (TX = M rounded up to a power of two,
at most 32) and a block of rows; its TY = WG / TX row lanes split the block's rows, lane (ty, tx)
reading rows ty, ty + TY, ... of column tx, so 32 adjacent lanes read one contiguous row segment
(coalesced). Each lane keeps COL_UNROLL accumulators (loads in flight), then the row lanes meet in
workgroup memory (a tree over ty, a barrier per level). With more than one block per tile the
(blocks, M) partials go through the same kernel once more. The order of every combination is fixed
by the geometry, so float results are deterministic (run to run and backend to backend).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.types import DataType
from ...ir.values import BufRef, Val
from .dtypes import ir_type
from .emit import Emitter
from .nodes import Leaf, Node, collect
from .reduction import MAX_GRID_Y, MAX_WORKGROUPS, TREE_MIN, WG, Reduction, combine_pairwise, load, programs

TX_MAX = 32  # columns per tile: one warp's contiguous row segment
ITEMS = 16  # rows per lane before another block is added
# independent loads in flight per lane: a lane's loads are 4 bytes, so the tree kernel's 4 keep only 32 KiB
# in flight per H200 SM (8 workgroups of 256 lanes), about the bandwidth-latency product; 8 doubles it
COL_UNROLL = 8


@dataclass(frozen=True)
class Columns:
    """The geometry: L rows (``length``) of M columns (``cols``)."""

    length: int
    cols: int
    one_block: bool = False  # the partials pass: every row in one block
    lanes: int = 1  # 4: every column is a vec4 of 4 adjacent ones (vec_columns), read with one 16-byte load

    @property
    def tx(self) -> int:
        return min(TX_MAX, 1 << (self.cols - 1).bit_length())

    @property
    def ty(self) -> int:
        return WG // self.tx

    @property
    def tiles(self) -> int:
        return -(-self.cols // self.tx)

    @property
    def chunk(self) -> int:
        """Rows per block (a multiple of TY)."""
        if self.one_block:
            return -(-self.length // self.ty) * self.ty
        want = -(-self.length // (self.ty * ITEMS))
        blocks = max(1, min(want, MAX_WORKGROUPS // self.tiles, MAX_GRID_Y))
        per = -(-self.length // blocks)
        return -(-per // self.ty) * self.ty

    @property
    def blocks(self) -> int:
        return -(-self.length // self.chunk)

    def grid(self) -> tuple[int, int, int]:
        return self.tiles, self.blocks, 1


def columns_for(shape: tuple[int, ...], axes: tuple[int, ...]) -> Columns | None:
    """The column geometry when reducing ``axes`` of ``shape`` suits this kernel, else None: the
    non-unit reduced axes all precede the non-unit kept axes (at least 2 columns and 2 rows), and the
    rows kernel would not do as well -- short columns (L < TREE_MIN) with at least WG of them give it
    one coalesced lane per output."""
    big = [d for d, n in enumerate(shape) if n != 1]
    red = [d for d in big if d in axes]
    kept = [d for d in big if d not in axes]
    if not red or not kept or max(red) > min(kept):
        return None
    c = Columns(math.prod(shape[d] for d in red), math.prod(shape[d] for d in kept))
    if c.length < TREE_MIN and c.cols >= WG:
        return None
    return c if c.tiles <= MAX_GRID_Y else None


def depth(c: Columns) -> int:
    """Longest chain of f32 roundings from an element to its result (the float tolerance budget); of a
    scalar geometry whose columns come in fours, the longer of it and its vec4 form's (either may run)."""
    one = -(-c.chunk // c.ty) + int(math.log2(COL_UNROLL)) + int(math.log2(c.ty))
    d = one if c.blocks == 1 else one + depth(Columns(c.blocks, c.cols, True, c.lanes))
    if c.lanes == 1 and not c.one_block and c.cols % 4 == 0:
        d = max(d, depth(Columns(c.length, c.cols // 4, lanes=4)))
    return d


def vec_columns(red: Reduction, node: Node, c: Columns) -> Columns:
    """``c`` in vec4 columns when every lane can read 4 adjacent columns with one load: an f32 sum (or mean)
    of a plain array (a Leaf: its buffer is the rows, with no expression to emit) of a multiple of 4 columns.
    Each lane then moves 16 bytes per load -- 4x the bytes in flight of the scalar form, and for 4 columns
    (``2^26 x 4``) a warp reads 32 whole rows (512 contiguous bytes) instead of 8. Else ``c``."""
    if (isinstance(node, Leaf) and node.dtype == np.float32 and red.op == "sum" and red.acc == "f32"
            and red.out == np.float32 and c.lanes == 1 and not c.one_block and c.cols % 4 == 0):
        return Columns(c.length, c.cols // 4, lanes=4)
    return c


def _fold(b: ProgramBuilder, red: Reduction, c: Columns, read: Callable[[Val], Val], final: bool,
          out: BufRef) -> None:
    """The kernel body: lane (ty, tx) folds its rows of column tile*TX + tx in block ``blk``, the row
    lanes meet in workgroup memory, lane ty == 0 writes (finished when ``final``)."""
    t = b.local_index()
    tx, ty = b.let(t % c.tx, "tx"), b.let(t / c.tx, "ty")
    col = b.let(b.workgroup_id(0) * c.tx + tx, "col")
    blk = b.workgroup_id(1)
    r0 = b.let(blk * c.chunk, "r0")
    r1 = b.let(b.min(r0 + c.chunk, c.length), "r1")
    step = c.ty * COL_UNROLL
    full = b.let(r0 + (r1 - r0) / step * step, "full")  # rows [r0, full) in whole rounds of COL_UNROLL
    acc_t = DataType.VEC4_F32 if c.lanes == 4 else red.acc
    ident = b.vec(acc_t, *[red.identity(b)] * 4) if c.lanes == 4 else red.identity(b)
    accs = [b.var(acc_t, ident, name=f"acc{k}") for k in range(COL_UNROLL)]
    with b.if_(col < c.cols):
        with b.for_range(r0 + ty, full, step=step, name="r") as r:
            loaded = [b.let(read((r + k * c.ty) * c.cols + col)) for k in range(COL_UNROLL)]  # loads first
            for acc, v in zip(accs, loaded):
                acc.set(red.combine(b, acc, v))
        with b.for_range(full + ty, r1, step=c.ty, name="q") as q:
            accs[0].set(red.combine(b, accs[0], read(q * c.cols + col)))
    tile = b.workgroup_array("tile", acc_t, WG)
    tile[t] = combine_pairwise(b, red, list(accs))
    b.barrier()
    s = c.ty // 2
    while s >= 1:  # unrolled at build time; every lane reaches every barrier
        with b.if_(ty < s):
            tile[t] = red.combine(b, tile[t], tile[t + s * c.tx])
        b.barrier()
        s //= 2
    with b.if_((ty == 0) & (col < c.cols)):
        if final:
            out[col] = red.finish(b, tile[tx])
        else:
            out[blk * c.cols + col] = tile[tx]


def first_program(red: Reduction, node: Node, c: Columns) -> Program:
    """The pass reading the fused input ``node`` (shape irrelevant: element r * M + m is row r, column
    m); writes the results (one block) or the (blocks, M) partials."""
    final = c.blocks == 1

    def build() -> Program:
        if c.lanes == 4:  # vec_columns: node is a Leaf of f32 rows, read as vec4 (Plan.bind(node): its buffer)
            b = ProgramBuilder(f"array_{red.op}_columns_vec4", WG)
            x = b.buffer("x", DataType.VEC4_F32, count=c.length * c.cols)
            out = (b.buffer("out", DataType.VEC4_F32, "write", count=c.cols) if final
                   else b.buffer("part", DataType.VEC4_F32, "write", count=c.blocks * c.cols))
            _fold(b, red, c, lambda i: x[i], final, out)
            return b.build()
        b = ProgramBuilder(f"array_{red.op}_columns", WG)
        e = Emitter(b, node)  # its buffers first: Plan.bind(node)'s order
        out = (b.buffer("out", ir_type(red.out), "write", count=c.cols) if final
               else b.buffer("part", red.acc, "write", count=c.blocks * c.cols))
        _fold(b, red, c, lambda i: load(b, e.value(i), node.dtype, red.acc), final, out)
        return b.build()

    return programs.get(("stats_columns", red, c, COL_UNROLL, collect(node).key), build)


def partials_program(red: Reduction, c: Columns) -> tuple[Program, Columns]:
    """The pass over the (blocks, M) partials of ``c``, one block (at most MAX_WORKGROUPS rows: a
    lane folds at most MAX_WORKGROUPS / TY of them); returns it with its own geometry."""
    p = Columns(c.blocks, c.cols, True, c.lanes)

    def build() -> Program:
        b = ProgramBuilder(f"array_{red.op}_columns_partials{'_vec4' if c.lanes == 4 else ''}", WG)
        t = DataType.VEC4_F32 if c.lanes == 4 else None
        part = b.buffer("part", t or red.acc, "read", count=c.blocks * c.cols)
        out = b.buffer("out", t or ir_type(red.out), "write", count=c.cols)
        _fold(b, red, p, lambda i: part[i], True, out)
        return b.build()

    return programs.get(("stats_columns_partials", red, p, COL_UNROLL), build), p


__all__ = ["Columns", "columns_for", "vec_columns", "depth", "first_program", "partials_program"]
