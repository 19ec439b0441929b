"""The ``subgroup`` variant of reduce.sum: per-subgroup sums with ``subgroupAdd`` instead of a
workgroup-memory tree.

Applies to whole-buffer sums and sums along contiguous rows (``inner == 1``; strided columns keep
the generic kernel), for u32/i32/f32. Each pass is one output row per workgroup row of the grid
and ``blocks`` workgroups of 256 lanes along it:

* every lane folds its grid-stride positions in registers (vec4 loads on the first pass when the
  row length is a multiple of 4), exactly like the generic kernel;
* ``subgroup_add`` sums the lanes of each subgroup in registers; lane 0 of every subgroup writes
  that sum to workgroup memory at ``local_index / subgroup_size`` (subgroups are runs of
  consecutive local indices, as on NVIDIA and lavapipe, and in the reference's model); one
  barrier; local invocation 0 adds the ``256 / subgroup_size`` partials and writes the partial
  (or the output) of its block: one barrier instead of the generic kernel's eight.

While a pass leaves more than one block per row, the next pass sums those partials the same way.

Float error: an element passes through ``serial`` additions in its lane, 2 more for the vec4, at
most log2(S) in a tree-shaped ``subgroupAdd`` and ``256 / S - 1`` in the final serial sum; over
S in 4..128 that is at most ``serial + 2 + 65`` (:func:`depth`), which reduce.sum's tolerance
covers (``vyre.ops.reduce.basic``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ...backends.schedule import BufferSpec, Pipeline, Step
from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.types import DataType
from ..variants import Variant
from . import _blocks as blk

WG = 256
SLOTS = WG // 4  # subgroups per workgroup at the smallest subgroup size WGSL allows
_IDENTITY = {"u32": 0, "i32": 0, "f32": -0.0}  # -0.0: a sum of -0.0 is -0.0, as in the generic kernel
_WORST_COMBINE = max(int(math.log2(s)) + WG // s - 1 for s in (4, 8, 16, 32, 64, 128))


def _plan(outer: int, length: int, vec: int) -> list[tuple[int, int, int, int]]:
    """Passes as (rows, units per row, vec, blocks per row)."""
    passes = []
    rows, units = outer, length // vec
    while True:
        blocks = max(1, min(-(-units // (WG * blk.ITEMS)), blk.MAX_WORKGROUPS // rows))
        passes.append((rows, units, vec, blocks))
        if blocks == 1:
            return passes
        units, vec = blocks, 1


def applies(params: dict[str, Any]) -> bool:
    """Whole buffers and contiguous rows (strided columns keep the generic kernel)."""
    shape, _, axis = blk.check_params(params["shape"], params["dtype"], params.get("axis"))
    return blk.collapse(shape, axis)[2] == 1


def depth(shape: tuple[int, ...], axis: int | None) -> int:
    """Longest chain of f32 additions from an element to the output (see the module docstring)."""
    outer, length, _ = blk.collapse(shape, axis)
    vec = 4 if length % 4 == 0 else 1
    return sum(-(-units // (WG * blocks)) + (2 if v == 4 else 0) + _WORST_COMBINE
               for _, units, v, blocks in _plan(outer, length, vec))


def _pass(dtype: str, rows: int, units: int, vec: int, blocks: int, level: int, final: bool) -> Program:
    b = ProgramBuilder(f"reduce_sum_{dtype}_subgroup_pass{level}", WG)
    x = b.buffer("x" if level == 0 else "in0", f"vec4<{dtype}>" if vec == 4 else dtype, count=rows * units)
    out = b.buffer("out" if final else "part0", dtype, "write", count=rows if final else rows * blocks)
    lid = b.local_index()
    row = b.let(b.workgroup_id(1), "row")  # workgroup-uniform: the subgroup operation below stays legal
    block = b.let(b.workgroup_id(0), "block")
    base = b.let(row * units, "base")
    acc = b.var(dtype, b.lit(_IDENTITY[dtype], dtype), name="acc")
    with b.for_range(block * WG + lid, units, step=blocks * WG, name="r") as r:
        v = b.let(x[base + r], "v")
        acc.set(acc + ((v[0] + v[1]) + (v[2] + v[3])) if vec == 4 else acc + v)
    total = b.let(b.subgroup_add(acc), "sg_total")
    sh = b.workgroup_array("sh", dtype, SLOTS)
    with b.if_(b.subgroup_invocation_id() == 0):
        sh[lid / b.subgroup_size()] = total
    b.barrier()
    with b.if_(lid == 0):
        s = b.var(dtype, b.lit(_IDENTITY[dtype], dtype), name="s")
        with b.for_range(0, (WG + b.subgroup_size() - 1) / b.subgroup_size(), name="k") as k:
            s.set(s + sh[k])
        out[row if final else row * blocks + block] = s
    return b.build()


def build(shape: Sequence[int], dtype: str, axis: int | None = None) -> Pipeline:
    """reduce.sum of ``shape`` along ``axis`` (inner == 1) with subgroup operations."""
    shape, dtype, axis = blk.check_params(shape, dtype, axis)
    outer, length, inner = blk.collapse(shape, axis)
    if inner != 1:
        raise ValueError(f"the subgroup variant sums contiguous rows only, got shape {shape} axis {axis}")
    passes = _plan(outer, length, 4 if length % 4 == 0 else 1)
    first = passes[0]
    buffers = {"x": BufferSpec(DataType.parse(f"vec4<{dtype}>" if first[2] == 4 else dtype), math.prod(shape)
                               // first[2])}
    steps, current = [], "x"
    for level, (rows, units, vec, blocks) in enumerate(passes):
        final = level == len(passes) - 1
        name = "out" if final else f"partial{level}"
        buffers[name] = BufferSpec(DataType.parse(dtype), rows if final else rows * blocks)
        steps.append(Step(_pass(dtype, rows, units, vec, blocks, level, final), (current, name), (blocks, rows, 1)))
        current = name
    return Pipeline(name="reduce.sum", buffers=buffers, inputs=("x",), outputs=("out",), steps=tuple(steps),
                    output_shapes={"out": blk.result_shape(shape, axis)})


# Measured on the H200 (one run, device time per launch, resident buffers): f32 2^20 8.1 us vs the generic
# kernel's 8.3 us, u32 7.9 vs 8.2; at 2^26 both 67.5-67.8 us (~3.96 TB/s, memory bound). Chosen on discrete
# GPUs only: lavapipe (CPU, 8-lane subgroups) showed no consistent gain.
VARIANT = Variant(
    name="subgroup", build=build, features=frozenset({"subgroup"}), applies=applies,
    prefer_on=frozenset({"discrete-gpu"}),
    summary="subgroupAdd per subgroup, then one barrier across the subgroups (whole buffers and contiguous rows)",
)

__all__ = ["VARIANT", "build", "applies", "depth"]
