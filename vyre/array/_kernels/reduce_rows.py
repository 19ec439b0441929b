"""The row-wise reduction kernels (vyre/array/_kernels/reduce.py picks them): a pending elementwise tree
is fused into the reduction's load, so ``(a * b).sum()`` reads ``a`` and ``b`` once and writes no product.

Layout: the reduced axes are moved last by a transposing :class:`~vyre.array._kernels.index_maps.Strided`
view fused into the load (no view when they already are last), so the input reads as M = prod(kept) rows of
L = prod(reduced) elements, row-major, output m being row m (the kept axes in their order).

Two kernels, chosen by (M, L):

* ``tree`` (L >= TREE_MIN): a workgroup of WG lanes per (row, block), grid (blocks, M) (rows past
  MAX_GRID_Y spill into grid z). Lane t of block k folds positions k*WG + t, then every blocks*WG
  further (a grid-stride loop with UNROLL accumulators: coalesced, the lanes of a row are adjacent
  invocations), then a tree over the lanes in workgroup memory (sequential addressing, a barrier per
  level). With blocks > 1 a second pass of the same kernel reduces the (M, blocks) partials.
  ``blocks`` keeps one pass to ~MAX_WORKGROUPS workgroups.
* ``lanes`` (LANES_MIN <= L < TREE_MIN): 32 adjacent invocations per row, WG / 32 rows per workgroup: lane
  j folds positions j, j + 32, ... (adjacent lanes read adjacent elements: coalesced), then a tree over the
  row's lanes in workgroup memory. The lane count does not depend on L, so a row extended by zeros (a
  causal attention row of a longer sequence) sums to the same bits, as in the serial kernel. One
  invocation per row reading its row serially left a warp's loads 4 L bytes apart: on the H200 the row sums
  of a transformer step (rows of 96 and 128) took 33-58 µs each, 40% of the step's GPU time.
* ``rows`` (rows shorter than LANES_MIN): one invocation per output, a serial loop over its row.

Accumulation: see :class:`~vyre.array._kernels.reduction.Reduction`. :func:`rows_depth` is the longest
chain of f32 roundings from an element to its result in these kernels (reduce.depth takes the larger of
it and the column kernels').

When the reduced axes all come before the kept ones (``x.sum(axis=0)``), the column-tiled kernels of
vyre/array/_kernels/reduce_columns.py run instead (no transposing view; coalesced reads).

Measured (H200, GPU timestamps vs torch CUDA events): ``(a * b).sum()`` on 2^26 f32 0.130 ms vs torch
eager 0.259 ms (UNROLL 1: 0.157 ms); the trailing axis of 8192 x 8192 0.070 vs 0.080 ms; its leading
axis was 0.71 ms vs 0.073 ms with these kernels (the column kernels: not yet measured there; lavapipe
2048 x 2048 23.2 -> 7.0 ms).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.values import BufRef, Val
from .dtypes import ir_type
from .emit import Emitter
from .index_maps import Strided, strides_of
from .nodes import Node, collect
from .reduction import (
    ITEMS,
    LANES,
    LANES_MIN,
    MAX_GRID_Y,
    MAX_WORKGROUPS,
    TREE_MIN,
    UNROLL,
    WG,
    Reduction,
    combine_pairwise,
    load,
    programs,
)


def rows_view(node: Node, axes: tuple[int, ...]) -> Node:
    """``node`` with the reduced ``axes`` (sorted) moved last: a fused transposing view, or ``node``."""
    nd = len(node.shape)
    kept = [d for d in range(nd) if d not in axes]
    perm = kept + list(axes)
    if perm == list(range(nd)):
        return node
    src = strides_of(node.shape)
    shape = tuple(node.shape[d] for d in perm)
    return Strided(node, shape, 0, tuple(src[d] for d in perm))


@dataclass(frozen=True)
class Shape:
    """One reduction's geometry: M rows of L elements; ``blocks`` workgroups per row (tree kernel)."""

    rows: int
    length: int

    @property
    def tree(self) -> bool:
        return self.length >= TREE_MIN

    @property
    def lanes(self) -> int:
        """Invocations per row of the lanes kernel (1: the serial rows kernel or the tree kernel)."""
        if self.tree or self.length < LANES_MIN:
            return 1
        return LANES

    @property
    def blocks(self) -> int:
        if not self.tree:
            return 1
        want = -(-self.length // (WG * ITEMS))
        return max(1, min(want, MAX_WORKGROUPS // self.rows, WG * ITEMS))


def rows_depth(rows: int, length: int) -> int:
    """Longest chain of f32 roundings from an element to its result in the rows or tree kernel reducing
    ``rows`` outputs of ``length`` elements."""
    s = Shape(rows, length)
    if s.lanes > 1:
        d = -(-length // s.lanes) + int(math.log2(s.lanes))
    elif not s.tree:
        d = length
    else:
        levels = int(math.log2(WG))
        first = -(-length // (WG * s.blocks)) + levels + int(math.log2(UNROLL))
        d = first + (-(-s.blocks // WG) + levels if s.blocks > 1 else 0)
    return d


def _tree_fold(b: ProgramBuilder, red: Reduction, read: Callable[[Val], Val], row: Val, length: int,
               blocks: int) -> Val:
    """The workgroup's folded value of row ``row`` (valid in lane 0): grid-stride loop, then the tree.
    The loop keeps UNROLL independent accumulators over whole chunks (more loads in flight), then a
    tail loop; the accumulators meet pairwise."""
    t, blk = b.local_index(), b.workgroup_id(0)
    stride = blocks * WG
    u = max(1, min(UNROLL, length // stride))
    chunk = stride * u
    full = length // chunk * chunk
    base = b.let(row * length, "base")
    start = b.let(blk * WG + t, "start")
    accs = [b.var(red.acc, red.identity(b), name=f"acc{k}") for k in range(u)]
    if full:
        with b.for_range(start, full, step=chunk, name="r") as r:
            vals = [b.let(read(base + r + k * stride)) for k in range(u)]  # all loads first
            for acc, v in zip(accs, vals):
                acc.set(red.combine(b, acc, v))
    if full < length:
        with b.for_range(start + full, length, step=stride, name="q") as q:
            accs[0].set(red.combine(b, accs[0], read(base + q)))
    tile = b.workgroup_array("tile", red.acc, WG)
    tile[t] = combine_pairwise(b, red, list(accs))
    b.barrier()
    s = WG // 2
    while s >= 1:  # unrolled at build time; the barrier is reached by every lane
        with b.if_(t < s):
            tile[t] = red.combine(b, tile[t], tile[t + s])
        b.barrier()
        s //= 2
    return tile[0]


def _row(b: ProgramBuilder, rows: int) -> tuple[Val, Val]:
    """(row index clamped into range, whether it is real): rows past MAX_GRID_Y spill into grid z; the
    clamp keeps every lane of a spare workgroup on the barriers (no divergent early exit)."""
    row = b.let(b.workgroup_id(1) + b.workgroup_id(2) * MAX_GRID_Y, "row")
    return b.let(b.min(row, rows - 1), "row_c"), row < rows


def grid(blocks: int, rows: int) -> tuple[int, int, int]:
    return blocks, min(rows, MAX_GRID_Y), -(-rows // MAX_GRID_Y)


def lanes_grid(shape: Shape) -> tuple[int, int, int]:
    """The lanes kernel's grid: one workgroup per WG / lanes rows, past MAX_GRID_Y along y."""
    groups = -(-shape.rows * shape.lanes // WG)
    return min(groups, MAX_GRID_Y), -(-groups // MAX_GRID_Y), 1


def _lanes_fold(b: ProgramBuilder, red: Reduction, read: Callable[[Val], Val], shape: Shape,
                out: BufRef) -> None:
    """The lanes kernel's body: see the module docstring (every lane reaches every barrier)."""
    p = shape.lanes
    t = b.local_index()
    group = b.let(b.workgroup_id(0) + b.workgroup_id(1) * MAX_GRID_Y, "group")
    row = b.let(group * (WG // p) + t / p, "row")
    lane = b.let(t % p, "lane")
    row_c = b.let(b.min(row, shape.rows - 1), "row_c")
    base = b.let(row_c * shape.length, "base")
    acc = b.var(red.acc, red.identity(b), name="acc")
    with b.for_range(lane, shape.length, step=p, name="r") as r:
        acc.set(red.combine(b, acc, read(base + r)))
    tile = b.workgroup_array("tile", red.acc, WG)
    tile[t] = acc
    b.barrier()
    s = p // 2
    while s >= 1:  # unrolled at build time
        with b.if_(lane < s):
            tile[t] = red.combine(b, tile[t], tile[t + s])
        b.barrier()
        s //= 2
    with b.if_((lane == 0) & (row < shape.rows)):
        out[row] = red.finish(b, tile[t])


def first_program(red: Reduction, node: Node, shape: Shape) -> Program:
    """The pass that reads the fused input (tree or rows kernel); the Emitter binds its inputs."""
    key = ("stats", red, shape.rows, shape.length, shape.blocks, shape.lanes, UNROLL, MAX_GRID_Y,
           collect(node).key)
    kind = "tree" if shape.tree else "lanes" if shape.lanes > 1 else "rows"

    def build() -> Program:
        b = ProgramBuilder(f"array_{red.op}_{kind}", WG)
        e = Emitter(b, node)  # its buffers first: Plan.bind(node)'s order
        src = node.dtype

        def read(i: Val) -> Val:
            return load(b, e.value(i), src, red.acc)

        if shape.tree:
            final = shape.blocks == 1
            out = (b.buffer("out", ir_type(red.out), "write", count=shape.rows) if final
                   else b.buffer("part", red.acc, "write", count=shape.rows * shape.blocks))
            row, real = _row(b, shape.rows)
            v = _tree_fold(b, red, read, row, shape.length, shape.blocks)
            with b.if_((b.local_index() == 0) & real):
                if final:
                    out[row] = red.finish(b, v)
                else:
                    out[row * shape.blocks + b.workgroup_id(0)] = v
        elif shape.lanes > 1:
            out = b.buffer("out", ir_type(red.out), "write", count=shape.rows)
            _lanes_fold(b, red, read, shape, out)
        else:
            out = b.buffer("out", ir_type(red.out), "write", count=max(1, shape.rows))
            b.set_grid_from(out)
            i = b.global_index()
            with b.if_(i < shape.rows):
                acc = b.var(red.acc, red.identity(b), name="acc")
                base = b.let(i * shape.length, "base")
                with b.for_range(0, shape.length, name="r") as r:
                    acc.set(red.combine(b, acc, read(base + r)))
                out[i] = red.finish(b, acc)
        return b.build()

    return programs.get(key, build)


def partials_program(red: Reduction, shape: Shape) -> Program:
    def build() -> Program:
        b = ProgramBuilder(f"array_{red.op}_partials", WG)
        part = b.buffer("part", red.acc, "read", count=shape.rows * shape.blocks)
        out = b.buffer("out", ir_type(red.out), "write", count=shape.rows)
        row, real = _row(b, shape.rows)
        v = _tree_fold(b, red, lambda i: part[i], row, shape.blocks, 1)
        with b.if_((b.local_index() == 0) & real):
            out[row] = red.finish(b, v)
        return b.build()

    return programs.get(("stats_partials", red, shape.rows, shape.blocks, UNROLL, MAX_GRID_Y), build)


__all__ = ["rows_view", "Shape", "rows_depth", "first_program", "partials_program", "grid", "lanes_grid"]
