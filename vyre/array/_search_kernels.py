"""Kernels and pipelines behind vyre/array/_search.py.

* Order keys (elementwise ops in ``_expr.OPS``, so they fuse with the input's pending expression): a u32
  whose unsigned order is numpy's sort order -- f32 through its bits (``reduce.argmax.order_key``: -0.0
  made +0.0, every NaN 0xFFFFFFFF, last), f16 widened to f32 first (exact), i32 with the sign bit
  flipped, u32 itself, bool 0/1. ``search_key_desc`` complements it (a stable ascending sort of it is
  numpy's stable descending order with NaN first, as array-api-strict's flip-argsort-flip gives);
  ``search_argmin_key`` complements all but NaN, so reduce.argmax's (largest key, first index) finds
  the first minimum, or the first NaN, as numpy's argmin does.
* :func:`reduce_pipeline`: the registered reduce.argmax / reduce.sum pipelines (vec4 loads when rows are
  contiguous and a multiple of 4 long).
* :func:`argsort_pipeline`: iota, then sort.radix_pairs' passes on (key, index); rows of a batch are
  sorted by a second stable pass on the row id of each sorted element (a lexicographic (row, key) sort:
  one submission for any number of rows), then the indices become positions within their row.
* gather / compaction scatter / binary search: one invocation per output element.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from ..backends.schedule import BufferSpec, Pipeline, Step
from ..ir.builder import ProgramBuilder
from ..ir.program import Program
from ..ir.types import DataType
from ..ir.values import Val
from ..ops.reduce import argmax as _argmax
from ..ops.registry import get
from ..ops.sort._radix import sort_steps
from . import _dtypes as D
from ._expr import OPS, Emitter, Node

WG = 256
NAN_KEY = 0xFFFFFFFF
U32 = DataType.U32


def order_key(b: ProgramBuilder, x: Val, d: np.dtype) -> Val:
    """The ascending u32 key of ``x`` (a value of dtype ``d``); see the module docstring."""
    if d == D.bool:
        return b.select(x, b.lit(1, "u32"), b.lit(0, "u32"))
    if d == D.float16:
        return _argmax.order_key(b, x.cast("f32"), "f32")
    return _argmax.order_key(b, x, {"f": "f32", "i": "i32", "u": "u32"}[d.kind])


OPS["search_key"] = lambda b, args, dts, out: order_key(b, args[0], dts[0])
OPS["search_key_desc"] = lambda b, args, dts, out: ~order_key(b, args[0], dts[0])


def _argmin_key(b: ProgramBuilder, args: list[Val], dts: list, out: np.dtype) -> Val:
    k = b.let(order_key(b, args[0], dts[0]))
    return b.select(k == NAN_KEY, k, ~k) if dts[0].kind == "f" else ~k


def _flag(b: ProgramBuilder, args: list[Val], dts: list, out: np.dtype) -> Val:
    truth = OPS["astype"](b, args, dts, D.bool)  # NaN counts as non-zero (numpy)
    return b.select(truth, b.lit(1, "u32"), b.lit(0, "u32"))


OPS["search_argmin_key"] = _argmin_key
OPS["search_flag"] = _flag


# ---- reductions -----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=256)
def reduce_pipeline(op: str, outer: int, length: int, inner: int) -> Pipeline:
    """``op`` ("argmax": u32 keys -> u32 first index of the largest; "sum": u32) over a u32 input viewed as
    (outer, length, inner), along ``length``: the registered reduce.argmax / reduce.sum build (its vec4
    loads take the array as it is, see run_pipeline_on); output ``out`` of outer * inner u32."""
    return get(f"reduce.{op}").build(shape=(outer, length, inner), dtype="u32", axis=1)


# ---- argsort ----------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _iota_program() -> Program:
    b = ProgramBuilder("array_argsort_iota", WG)
    out = b.buffer("idx", U32, "write")
    b.set_grid_from(out)
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = i
    return b.build()


@functools.lru_cache(maxsize=64)
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


@functools.lru_cache(maxsize=64)
def argsort_pipeline(size: int, n: int) -> Pipeline:
    """Stable ascending argsort of ``size`` u32 keys in rows of ``n``: output ``order`` (i32 positions
    within each row). One row: one radix_pairs sort; more: a second stable sort by row id."""
    nblk = -(-size // WG)
    buffers = {"keys": BufferSpec(U32, size), "idx": BufferSpec(U32, size), "order": BufferSpec(DataType.I32, size)}
    steps = [Step(_iota_program(), ("idx",), (nblk, 1, 1))]
    steps += sort_steps(size, ("keys", "idx"), ("sorted_keys", "perm"), ("keys_tmp", "idx_tmp"), buffers)
    if size > n:
        steps.append(Step(_row_program(n, False), ("perm", "rows"), (nblk, 1, 1)))
        buffers["rows"] = BufferSpec(U32, size)
        steps += sort_steps(size, ("rows", "perm"), ("sorted_rows", "perm2"), ("keys_tmp", "idx_tmp"), buffers)
        steps.append(Step(_row_program(n, True), ("perm2", "order"), (nblk, 1, 1)))
    else:
        steps.append(Step(_row_program(n, True), ("perm", "order"), (nblk, 1, 1)))
    return Pipeline("array.argsort", buffers, ("keys",), ("order",), tuple(steps))


# ---- programs fusing an input expression (cached by its structure) ---------------------------------

_lock = threading.Lock()
_programs: OrderedDict[tuple, Program] = OrderedDict()


def cached(key: tuple, make: Any) -> Program:
    with _lock:
        prog = _programs.get(key)
        if prog is not None:
            _programs.move_to_end(key)
            return prog
    prog = make()
    with _lock:
        _programs[key] = prog
        while len(_programs) > 256:
            _programs.popitem(last=False)
    return prog


def gather_program(node: Node, key: tuple) -> Program:
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
    return cached(("search_gather", key), make)


def scatter_program(shape: tuple[int, ...], dims: tuple[int, ...]) -> Program:
    """Compaction: for every flagged element i (incl[i] > incl[i - 1]), out_d[incl[i] - 1] = coordinate d
    of i, for each d in ``dims``. Bind: incl, then one i32 output per dim."""
    def make() -> Program:
        b = ProgramBuilder("array_nonzero_scatter", WG)
        incl = b.buffer("incl", U32)
        outs = [b.buffer(f"out{d}", "i32", "write") for d in dims]
        i = b.global_index()
        n = incl.len()
        with b.if_(i < n):
            before = b.var(U32, b.lit(0, "u32"))
            with b.if_(i > b.lit(0, "u32")):
                before.set(incl[i - b.lit(1, "u32")])
            here = b.let(incl[i])
            with b.if_(here != before):
                pos = b.let(here - b.lit(1, "u32"))
                rest = 1
                stride = {}
                for d in reversed(range(len(shape))):
                    stride[d] = rest
                    rest *= shape[d]
                for d, out in zip(dims, outs):
                    c = i / b.lit(stride[d], "u32") if stride[d] != 1 else i
                    c = c % b.lit(shape[d], "u32") if d > 0 else c
                    out[pos] = c.bitcast("i32")
        return b.build()
    return cached(("search_scatter", shape, dims), make)


def searchsorted_program(node: Node, key: tuple, n1: int, right: bool, sorter: str | None) -> Program:
    """out[i] = the insertion point of key ``node[i]`` among the ascending u32 keys ``keys1`` (read through
    ``sorter`` when given): left (first k with keys1[k] >= v) or right (first k with keys1[k] > v).
    Bind: the emitter's, keys1, [sorter,] out."""
    def make() -> Program:
        b = ProgramBuilder("array_searchsorted", WG)
        e = Emitter(b, node)
        m = node.count
        keys1 = b.buffer("keys1", U32, count=max(1, n1))
        srt = b.buffer("sorter", sorter, count=max(1, n1)) if sorter is not None else None
        out = b.buffer("out", "i32", "write", count=max(1, m))
        b.set_grid_from(out)
        i = b.global_index()
        with b.if_(i < b.lit(m, "u32")):
            v = b.let(e.value(i))
            lo, hi = b.var(U32, b.lit(0, "u32")), b.var(U32, b.lit(n1, "u32"))
            with b.for_range(0, max(1, n1.bit_length())):
                with b.if_(lo < hi):
                    mid = b.let((lo + hi) >> b.lit(1, "u32"))  # n1 < 2^31: no overflow
                    at = srt[mid].bitcast("u32") if srt is not None and sorter == "i32" else \
                        (srt[mid] if srt is not None else mid)
                    km = b.let(keys1[at])
                    go = b.let((km <= v) if right else (km < v))
                    lo.set(b.select(go, mid + b.lit(1, "u32"), lo))
                    hi.set(b.select(go, hi, mid))
            out[i] = lo.bitcast("i32")
        return b.build()
    return cached(("search_searchsorted", key, n1, right, sorter), make)


__all__ = ["order_key", "reduce_pipeline", "argsort_pipeline", "gather_program", "scatter_program",
           "searchsorted_program", "cached"]
