"""The kernels behind the searching functions (vyre/array/_searching.py): the registered reduce.argmax /
reduce.sum pipelines (argmax, argmin, count_nonzero over u32 keys or flags), the compaction scatter of
nonzero and searchsorted's binary search, one invocation per output element (the search values' pending
expression fused in).
"""

from __future__ import annotations

from typing import Any

from ...backends.schedule import Pipeline
from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ops.registry import get
from . import cache
from .emit import Emitter
from .nodes import Node
from .sort import U32, WG


@cache.memoized("search.reduce", 256, Pipeline)
def reduce_pipeline(op: str, outer: int, length: int, inner: int) -> Pipeline:
    """``op`` ("argmax": u32 keys -> u32 first index of the largest; "sum": u32) over a u32 input viewed as
    (outer, length, inner), along ``length``: the registered reduce.argmax / reduce.sum build (its vec4
    loads take the array as it is, see run_pipeline_on); output ``out`` of outer * inner u32."""
    return get(f"reduce.{op}").build(shape=(outer, length, inner), dtype="u32", axis=1)


_programs = cache.register("search", 256, Program)


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
    return _programs.get(("search_scatter", shape, dims), make)


def searchsorted_program(node: Node, key: tuple[Any, ...], n1: int, right: bool, sorter: str | None,
                         key_type: str = "u32") -> Program:
    """out[i] = the insertion point of key ``node[i]`` among the ascending ``key_type`` keys ``keys1`` (u32;
    u64 for 64-bit values, sort64.order_key64; read through ``sorter`` when given): left (first k with
    keys1[k] >= v) or right (first k with keys1[k] > v). Bind: the emitter's, keys1, [sorter,] out."""
    def make() -> Program:
        b = ProgramBuilder("array_searchsorted", WG)
        e = Emitter(b, node)
        m = node.count
        keys1 = b.buffer("keys1", key_type, count=max(1, n1))
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
    wide = () if key_type == "u32" else (key_type,)
    return _programs.get(("search_searchsorted", key, n1, right, sorter, *wide), make)


__all__ = ["reduce_pipeline", "scatter_program", "searchsorted_program"]
