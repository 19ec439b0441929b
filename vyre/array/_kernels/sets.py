"""The kernels behind the set functions (vyre/array/_sets.py, the unique_* functions).

* :func:`group_pipeline`: one pipeline, one submission: the stable argsort of the order keys
  (vyre/array/_kernels/sort.argsort_pipeline), then a flags step (1 where a sorted element starts a
  group: the first one, a key differing from the previous one, or a NaN, every NaN being its own group),
  then scan.inclusive of the flags (vyre/ops/scan). Outputs: ``order`` (i32) and ``incl`` (u32); the last
  prefix is the number of distinct values.
* :func:`scatter_program`: element i of the sorted order belongs to group incl[i] - 1: the inverse index
  of its original position is that group; a group start writes the group's value, its start position in
  the sorted order and its first original index (the sort is stable, so the smallest one).
* :func:`counts_program`: counts[g] = start[g + 1] - start[g] (n for the last group's end).
"""

from __future__ import annotations

import numpy as np

from ...backends.schedule import BufferSpec, Pipeline, Step
from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.types import DataType
from ...ops.scan import _tiles
from . import cache
from . import dtypes as D
from .sort import NAN_KEY, argsort_pipeline, order_key
from .sort64 import argsort64_pipeline, order_key64

WG = 256
U32, I32 = DataType.U32, DataType.I32


@cache.memoized("sets.flags", 16, Program)
def _flags_program(dtype: str) -> Program:
    """flags[i] = 1 when sorted element i starts a group (binds: vals, order, flags)."""
    d = np.dtype(dtype)
    b = ProgramBuilder(f"array_unique_flags_{dtype}", WG)
    vals = b.buffer("vals", D.ir_type(d), "read")
    order = b.buffer("order", I32, "read")
    flags = b.buffer("flags", U32, "write")
    i = b.global_index()
    wide = d.itemsize == 8  # u64 keys (sort64.order_key64)
    key = order_key64 if wide else order_key
    with b.if_(i < flags.len()):
        k = b.let(key(b, vals[order[i].bitcast("u32")], d))
        new = b.var("bool", i == b.lit(0, "u32"))
        with b.if_(i > b.lit(0, "u32")):
            prev = b.let(key(b, vals[order[i - b.lit(1, "u32")].bitcast("u32")], d))
            new.set(k != prev)
        if d.kind == "f":  # NaN keys are all equal, NaNs are distinct (the standard)
            new.set(new | (k == (b.lit(2**64 - 1, "u64") if wide else b.lit(NAN_KEY, "u32"))))
        flags[i] = b.select(new, b.lit(1, "u32"), b.lit(0, "u32"))
    return b.build()


def _renamed(p: Pipeline, names: dict[str, str]) -> tuple[dict[str, BufferSpec], list[Step]]:
    """``p``'s buffers and steps with buffer ``n`` renamed ``names[n]`` (to join pipelines into one)."""
    buffers = {names[n]: s for n, s in p.buffers.items()}
    steps = [Step(s.program, tuple(names[n] for n in s.bind), s.grid) for s in p.steps]
    return buffers, steps


@cache.memoized("sets.groups", 64, Pipeline)
def group_pipeline(n: int, dtype: str) -> Pipeline:
    """Inputs ``keys`` (u32 order keys of the flat values; for 64-bit values ``lo`` and ``hi``, the words of
    their u64 keys) and ``vals`` (the values, ``dtype``), n > 1 elements; outputs ``order`` (i32 stable
    sorting permutation) and ``incl`` (u32 inclusive group ids)."""
    wide = np.dtype(dtype).itemsize == 8
    sort = argsort64_pipeline(n, n) if wide else argsort_pipeline(n, n)
    scan = _tiles.build_scan(n, "u32", False)
    keep = ("lo", "hi", "order") if wide else ("keys", "order")
    buffers, steps = _renamed(sort, {m: (m if m in keep else f"sort_{m}") for m in sort.buffers})
    sb, ss = _renamed(scan, {m: ("flags" if m == "x" else "incl" if m == "out" else f"scan_{m}")
                             for m in scan.buffers})
    buffers.update(sb)
    buffers["vals"] = BufferSpec(D.ir_type(np.dtype(dtype)), n)
    grid = (-(-n // WG), 1, 1)
    steps.append(Step(_flags_program(dtype), ("vals", "order", "flags"), grid))
    steps += ss
    inputs = ("lo", "hi", "vals") if wide else ("keys", "vals")
    return Pipeline("array.unique_groups", buffers, inputs, ("order", "incl"), tuple(steps))


@cache.memoized("sets.scatter", 16, Program)
def scatter_program(dtype: str) -> Program:
    """Binds: vals, order, incl, values (write), inverse (i32, write), starts (u32, write), indices (i32,
    write); one invocation per sorted element."""
    t = D.ir_type(np.dtype(dtype))
    b = ProgramBuilder(f"array_unique_scatter_{dtype}", WG)
    vals = b.buffer("vals", t, "read")
    order = b.buffer("order", I32, "read")
    incl = b.buffer("incl", U32, "read")
    values = b.buffer("values", t, "write")
    inverse = b.buffer("inverse", I32, "write")
    starts = b.buffer("starts", U32, "write")
    indices = b.buffer("indices", I32, "write")
    i = b.global_index()
    with b.if_(i < incl.len()):
        here = b.let(incl[i])
        g = b.let(here - b.lit(1, "u32"))
        o = b.let(order[i])
        inverse[o.bitcast("u32")] = g.bitcast("i32")
        before = b.var(U32, b.lit(0, "u32"))
        with b.if_(i > b.lit(0, "u32")):
            before.set(incl[i - b.lit(1, "u32")])
        with b.if_(here != before):
            values[g] = vals[o.bitcast("u32")]
            starts[g] = i
            indices[g] = o
    return b.build()


@cache.memoized("sets.counts", 1, Program)
def counts_program() -> Program:
    """Binds: starts (u32), order (its length is n), counts (i32, write: one per group)."""
    b = ProgramBuilder("array_unique_counts", WG)
    starts = b.buffer("starts", U32, "read")
    order = b.buffer("order", I32, "read")
    counts = b.buffer("counts", I32, "write")
    g = b.global_index()
    m = counts.len()
    with b.if_(g < m):
        end = b.var(U32, order.len())
        with b.if_(g + b.lit(1, "u32") < m):
            end.set(starts[g + b.lit(1, "u32")])
        counts[g] = (end - starts[g]).bitcast("i32")
    return b.build()


__all__ = ["group_pipeline", "scatter_program", "counts_program", "WG"]
