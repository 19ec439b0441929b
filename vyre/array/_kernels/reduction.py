"""What a reduction computes, shared by the reduction kernels (vyre/array/_kernels/reduce_rows.py,
reduce_columns.py) and the cumulative ones (scan.py): :class:`Reduction` (the op, its accumulator,
identity, combination and finish), :func:`load` (an element as an accumulator value) and the launch
constants. Accumulation: float16 and float32 accumulate in f32 (float16 results are rounded once at the
end), float64 in f64; int32, uint32, int64 and uint64 wrap (bit-exact with numpy's wrapping integer
arithmetic); min/max propagate NaN (tested on the bits, see float_math.isnan). Their programs share the
registry's ``reduce`` family.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.values import Val
from . import cache
from . import float_math as M
from . import float_math64 as M64
from .dtypes import DType, ir_type

WG = 256  # lanes per workgroup
TREE_MIN = 256  # rows at least this long use the tree kernel
LANES_MIN = 32  # rows at least this long (and shorter than TREE_MIN) use LANES lanes per row
LANES = 32
MAX_GRID_Y = 65535  # workgroups along one grid axis (WebGPU's default limit)
MAX_WORKGROUPS = 2048  # workgroups one tree pass aims at
ITEMS = 32  # elements per lane before a tree pass adds blocks
UNROLL = 4  # independent accumulators per lane in the tree kernel's loop


_F32_IDENT = {"sum": -0.0, "prod": 1.0, "min": math.inf, "max": -math.inf}
_INT_IDENT = {"i32": {"sum": 0, "prod": 1, "min": 2**31 - 1, "max": -(2**31)},
              "u32": {"sum": 0, "prod": 1, "min": 2**32 - 1, "max": 0},
              "i64": {"sum": 0, "prod": 1, "min": 2**63 - 1, "max": -(2**63)},
              "u64": {"sum": 0, "prod": 1, "min": 2**64 - 1, "max": 0}}


@dataclass(frozen=True)
class Reduction:
    """What to compute: ``op`` (sum, prod, min, max) accumulating in ``acc`` (f32, f64, i32, u32, i64, u64), the
    result dtype ``out`` (numpy), and ``divide`` (the result is divided by it, in the float accumulator: mean's
    N; 0 = not)."""

    op: str
    acc: str
    out: DType
    divide: float = 0.0

    def identity(self, b: ProgramBuilder) -> Val:
        if self.acc in ("f32", "f64"):
            return b.lit(_F32_IDENT[self.op], self.acc)
        return b.lit(_INT_IDENT[self.acc][self.op], self.acc)

    def combine(self, b: ProgramBuilder, x: Val, y: Val) -> Val:
        if self.op == "sum":
            return x + y
        if self.op == "prod":
            return x * y
        r = b.min(x, y) if self.op == "min" else b.max(x, y)
        if self.acc == "f64":
            return b.select(M64.isnan(b, x) | M64.isnan(b, y), x + y, r)
        if self.acc != "f32":
            return r
        return b.select(M.isnan(b, x) | M.isnan(b, y), x + y, r)  # x + y is NaN: propagate it

    def finish(self, b: ProgramBuilder, v: Val) -> Val:
        if self.divide:
            v = v / b.lit(float(self.divide), "f64" if self.acc == "f64" else "f32")
        t = ir_type(self.out).value
        return v if t == self.acc else v.cast(t)


def load(b: ProgramBuilder, v: Val, src: DType, acc: str) -> Val:
    """Element ``v`` (of dtype ``src``) as an accumulator value (bool counts as 0/1)."""
    if src.kind == "b":
        return b.select(v, b.lit(1, acc), b.lit(0, acc))
    return v if ir_type(src).value == acc else v.cast(acc)


programs = cache.register("reduce", 256, Program)


def combine_pairwise(b: ProgramBuilder, red: Reduction, vals: list[Val]) -> Val:
    """The unrolled accumulators combined in pairs (a fixed tree: the same float result every run)."""
    while len(vals) > 1:
        vals = [b.let(red.combine(b, vals[k], vals[k + 1])) if k + 1 < len(vals) else vals[k]
                for k in range(0, len(vals), 2)]
    return vals[0]


__all__ = ["Reduction", "load", "combine_pairwise", "programs", "WG", "TREE_MIN", "LANES_MIN", "LANES", "MAX_GRID_Y",
           "MAX_WORKGROUPS",
           "ITEMS", "UNROLL"]
