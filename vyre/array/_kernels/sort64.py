"""Sorting 64-bit keys (float64, int64, uint64) with the 32-bit radix sort: an order key of 64 bits whose
unsigned order is numpy's sort order (float64 through its bits: -0.0 made +0.0, every NaN all ones, last;
int64 with the sign bit flipped; uint64 itself), split into its low and high words. A stable sort by the
low word, then a stable sort by the high word gathered through that permutation, is the sort by the whole
key (least significant digit first); rows of a batch then sort stably by row id, as in sort.py.
"""

from __future__ import annotations

from collections.abc import Callable

from ...backends.schedule import BufferSpec, Pipeline, Step
from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.types import DataType
from ...ir.values import Val
from ...ops.sort._radix import sort_steps
from . import cache
from . import dtypes as D
from .dtypes import DType
from .emit import OPS
from .sort import WG, _iota_program, _row_program, row_bits

U32 = DataType.U32
SIGN = 1 << 63


def order_key64(b: ProgramBuilder, x: Val, d: DType) -> Val:
    """The ascending u64 key of ``x`` (dtype float64, int64 or uint64)."""
    sign = b.lit(SIGN, "u64")
    if d == D.uint64:
        return x
    u = b.let(x.bitcast("u64"))
    if d == D.int64:
        return u ^ sign
    mag = u & b.lit(SIGN - 1, "u64")
    nan = mag > b.lit(0x7FF0000000000000, "u64")
    key = b.select((u & sign) == sign, ~u, u | sign)
    key = b.select(mag == b.lit(0, "u64"), sign, key)  # -0.0 sorts as +0.0
    return b.select(nan, b.lit(2**64 - 1, "u64"), key)


def _half(high: bool, desc: bool) -> Callable[[ProgramBuilder, list[Val], list[DType], DType], Val]:
    def emit(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
        k = b.let(order_key64(b, args[0], dts[0]))
        if desc:  # a stable ascending sort of the complement: numpy's stable descending order, NaN first
            k = b.let(~k)
        w = (k >> b.lit(32, "u32")) if high else (k & b.lit(0xFFFFFFFF, "u64"))
        return w.cast("u32")
    return emit


for _high in (False, True):
    for _desc in (False, True):
        OPS[f"search_key64_{'hi' if _high else 'lo'}{'_desc' if _desc else ''}"] = _half(_high, _desc)


OPS["search_key64"] = lambda b, args, dts, out: order_key64(b, args[0], dts[0])


@cache.memoized("sort.gather_words", 1, Program)
def _gather_program() -> Program:
    """out[j] = src[perm[j]]: the high words in the order of the first pass."""
    b = ProgramBuilder("array_argsort64_gather", WG)
    src, perm = b.buffer("src", U32), b.buffer("perm", U32)
    out = b.buffer("out", U32, "write")
    b.set_grid_from(out)
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = src[perm[i]]
    return b.build()


@cache.memoized("sort.argsort64", 64, Pipeline)
def argsort64_pipeline(size: int, n: int) -> Pipeline:
    """Stable ascending argsort of ``size`` 64-bit keys given as low and high u32 words, in rows of ``n``:
    output ``order`` (i32 positions within each row)."""
    nblk = -(-size // WG)
    buffers = {"lo": BufferSpec(U32, size), "hi": BufferSpec(U32, size), "idx": BufferSpec(U32, size),
               "hi_p": BufferSpec(U32, size), "order": BufferSpec(DataType.I32, size)}
    steps = [Step(_iota_program(), ("idx",), (nblk, 1, 1))]
    steps += sort_steps(size, ("lo", "idx"), ("sorted_lo", "perm"), ("keys_tmp", "idx_tmp"), buffers)
    steps.append(Step(_gather_program(), ("hi", "perm", "hi_p"), (nblk, 1, 1)))
    steps += sort_steps(size, ("hi_p", "perm"), ("sorted_hi", "perm2"), ("keys_tmp", "idx_tmp"), buffers)
    last = "perm2"
    if size > n:
        steps.append(Step(_row_program(n, False), ("perm2", "rows"), (nblk, 1, 1)))
        buffers["rows"] = BufferSpec(U32, size)
        steps += sort_steps(size, ("rows", "perm2"), ("sorted_rows", "perm3"), ("keys_tmp", "idx_tmp"), buffers,
                            row_bits(size // n))
        last = "perm3"
    steps.append(Step(_row_program(n, True), (last, "order"), (nblk, 1, 1)))
    return Pipeline("array.argsort64", buffers, ("lo", "hi"), ("order",), tuple(steps))


__all__ = ["order_key64", "argsort64_pipeline"]
