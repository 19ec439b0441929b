"""The kernels behind sort and argsort (vyre/array/_sorting.py), and the order keys the searching and
set functions share.

* Order keys (elementwise ops in :data:`~vyre.array._kernels.emit.OPS`, so they fuse with the input's
  pending expression): a u32 whose unsigned order is numpy's sort order -- f32 through its bits
  (``reduce.argmax.order_key``: -0.0 made +0.0, every NaN 0xFFFFFFFF, last), f16 widened to f32 first
  (exact), i32 with the sign bit flipped, u32 itself, bool 0/1. ``search_key_desc`` complements it (a
  stable ascending sort of it is numpy's stable descending order with NaN first, as array-api-strict's
  flip-argsort-flip gives); ``search_argmin_key`` complements all but NaN, so reduce.argmax's (largest
  key, first index) finds the first minimum, or the first NaN, as numpy's argmin does; ``search_flag``
  is 1 for a non-zero element (NaN included).
* :func:`argsort_pipeline`: iota, then sort.radix_pairs' passes on (key, index); rows of a batch are
  sorted by a second stable pass on the row id of each sorted element (a lexicographic (row, key) sort:
  one submission for any number of rows), then the indices become positions within their row.
* :func:`gather_program`: the sorted values read through the order from the (fused) input expression.
* The value sorts of one row, without an index (vyre/array/_sorting.py's fast paths): :func:`keys_pipeline`
  sorts integer keys alone (``sort_key``/``sort_key_desc``: equal keys are equal values, so the values
  come back from the keys by ``sort_unkey``); :func:`values_pipeline` sorts float keys carrying the
  values' bits (``sort_bits``), so -0.0/+0.0 and NaN payloads keep their bits and stable order with no
  gather. Both leave out the digit passes above the key's width (:func:`key_bits`: 1 for bool).
"""

from __future__ import annotations

from typing import Any

from ...backends.schedule import BufferSpec, Pipeline, Step
from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.types import DataType
from ...ir.values import Val
from ...ops.reduce import argmax as _argmax
from ...ops.sort._radix import sort_steps
from . import cache
from . import dtypes as D
from .dtypes import DType
from .emit import OPS, Emitter
from .nodes import Node

WG = 256
NAN_KEY = 0xFFFFFFFF
U32 = DataType.U32


def order_key(b: ProgramBuilder, x: Val, d: DType) -> Val:
    """The ascending u32 key of ``x`` (a value of dtype ``d``); see the module docstring."""
    if d == D.bool:
        return b.select(x, b.lit(1, "u32"), b.lit(0, "u32"))
    if d == D.float16:
        return _argmax.order_key(b, x.cast("f32"), "f32")
    return _argmax.order_key(b, x, {"f": "f32", "i": "i32", "u": "u32"}[d.kind])


OPS["search_key"] = lambda b, args, dts, out: order_key(b, args[0], dts[0])
OPS["search_key_desc"] = lambda b, args, dts, out: ~order_key(b, args[0], dts[0])


def _argmin_key(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    k = b.let(order_key(b, args[0], dts[0]))
    return b.select(k == NAN_KEY, k, ~k) if dts[0].kind == "f" else ~k


def _flag(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
    truth = OPS["astype"](b, args, dts, D.bool)  # NaN counts as non-zero (numpy)
    return b.select(truth, b.lit(1, "u32"), b.lit(0, "u32"))


OPS["search_argmin_key"] = _argmin_key
OPS["search_flag"] = _flag


def key_bits(d: DType) -> int:
    """Bits of the ``sort_key``/``sort_key_desc`` keys of dtype ``d`` (the radix passes they need)."""
    return 1 if d == D.bool else 32


def _sort_key(desc: bool) -> Any:
    def emit(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
        k = order_key(b, args[0], dts[0])
        if not desc:
            return k
        return b.select(args[0], b.lit(0, "u32"), b.lit(1, "u32")) if dts[0] == D.bool else ~k
    return emit


def _unkey(desc: bool) -> Any:
    """The value of dtype ``out`` (bool, int32 or uint32) whose ``sort_key`` is the argument."""
    def emit(b: ProgramBuilder, args: list[Val], dts: list[DType], out: DType) -> Val:
        k = args[0]
        if out == D.bool:
            return k == b.lit(0 if desc else 1, "u32")
        if desc:
            k = ~k
        if out == D.int32:
            return (k ^ b.lit(0x80000000, "u32")).bitcast("i32")
        return k
    return emit


# the sort fast paths' keys (search_key_desc stays the searching functions': ~key for bool too)
OPS["sort_key"] = _sort_key(False)
OPS["sort_key_desc"] = _sort_key(True)
OPS["sort_unkey"] = _unkey(False)
OPS["sort_unkey_desc"] = _unkey(True)
OPS["sort_bits"] = lambda b, args, dts, out: args[0].bitcast("u32")  # float32's bits, carried by the sort


@cache.memoized("sort.iota", 1, Program)
def _iota_program() -> Program:
    b = ProgramBuilder("array_argsort_iota", WG)
    out = b.buffer("idx", U32, "write")
    b.set_grid_from(out)
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = i
    return b.build()


@cache.memoized("sort.row_index", 64, Program)
def _row_program(n: int, final: bool) -> Program:
    """``final``: out[j] = perm[j] % n as i32 (position within the row); else out[j] = perm[j] / n (row)."""
    b = ProgramBuilder(f"array_argsort_{'local' if final else 'row'}_{n}", WG)
    perm = b.buffer("perm", U32)
    out = b.buffer("out", "i32" if final else U32, "write")
    b.set_grid_from(out)
    i = b.global_index()
    with b.if_(i < out.len()):
        if final:
            out[i] = (perm[i] % b.lit(n, "u32")).bitcast("i32")
        else:
            out[i] = perm[i] / b.lit(n, "u32")
    return b.build()


def row_bits(rows: int) -> int:
    """Bits of the row ids 0 .. rows - 1 (the passes of the sort by row)."""
    return max(1, (rows - 1).bit_length())


@cache.memoized("sort.argsort", 64, Pipeline)
def argsort_pipeline(size: int, n: int, bits: int = 32) -> Pipeline:
    """Stable ascending argsort of ``size`` u32 keys below ``2**bits`` in rows of ``n``: output ``order`` (i32
    positions within each row). One row: one radix_pairs sort; more: a second stable sort by row id (only
    the passes of the row id's width)."""
    nblk = -(-size // WG)
    buffers = {"keys": BufferSpec(U32, size), "idx": BufferSpec(U32, size), "order": BufferSpec(DataType.I32, size)}
    steps = [Step(_iota_program(), ("idx",), (nblk, 1, 1))]
    steps += sort_steps(size, ("keys", "idx"), ("sorted_keys", "perm"), ("keys_tmp", "idx_tmp"), buffers, bits)
    if size > n:
        steps.append(Step(_row_program(n, False), ("perm", "rows"), (nblk, 1, 1)))
        buffers["rows"] = BufferSpec(U32, size)
        steps += sort_steps(size, ("rows", "perm"), ("sorted_rows", "perm2"), ("keys_tmp", "idx_tmp"), buffers,
                            row_bits(size // n))
        steps.append(Step(_row_program(n, True), ("perm2", "order"), (nblk, 1, 1)))
    else:
        steps.append(Step(_row_program(n, True), ("perm", "order"), (nblk, 1, 1)))
    return Pipeline("array.argsort", buffers, ("keys",), ("order",), tuple(steps))


@cache.memoized("sort.keys", 64, Pipeline)
def keys_pipeline(size: int, bits: int) -> Pipeline:
    """Stable ascending sort of ``size`` u32 keys below ``2**bits``: input ``keys``, output ``sorted``."""
    buffers = {"keys": BufferSpec(U32, size)}
    steps = sort_steps(size, ("keys",), ("sorted",), ("keys_tmp",), buffers, bits)
    return Pipeline("array.sort_keys", buffers, ("keys",), ("sorted",), tuple(steps))


@cache.memoized("sort.values", 64, Pipeline)
def values_pipeline(size: int, bits: int) -> Pipeline:
    """Stable ascending sort of ``size`` u32 ``keys`` below ``2**bits`` carrying u32 ``vals``; output ``sorted``:
    the values in key order."""
    buffers = {"keys": BufferSpec(U32, size), "vals": BufferSpec(U32, size)}
    steps = sort_steps(size, ("keys", "vals"), ("sorted_keys", "sorted"), ("keys_tmp", "vals_tmp"), buffers, bits)
    return Pipeline("array.sort_values", buffers, ("keys", "vals"), ("sorted",), tuple(steps))


_gathers = cache.register("sort.gather", 256, Program)


def gather_program(node: Node, key: tuple[Any, ...]) -> Program:
    """out[j] = node[order[j] + row_start(j)] (order: i32 positions within rows of ``node.shape[-1]``):
    the sorted values, read from the (fused) input expression. Bind: the emitter's, order, out."""
    def make() -> Program:
        b = ProgramBuilder("array_sort_gather", WG)
        e = Emitter(b, node)
        size, n = node.count, node.shape[-1]
        order = b.buffer("order", "i32", count=size)
        out = b.buffer("out", D.ir_type(node.dtype), "write", count=size)
        b.set_grid_from(out)
        i = b.global_index()
        with b.if_(i < b.lit(size, "u32")):
            start = i - i % b.lit(n, "u32")
            out[i] = e.value(b.let(start + order[i].bitcast("u32")))
        return b.build()
    return _gathers.get(("search_gather", key), make)


__all__ = ["order_key", "argsort_pipeline", "gather_program", "keys_pipeline", "values_pipeline", "key_bits",
           "row_bits", "WG", "NAN_KEY", "U32"]
