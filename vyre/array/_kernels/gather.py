"""The kernels behind indexing with data (gather: integer-array indexing, ``take``, ``take_along_axis``)
and assignment (scatter: ``x[basic key] = value``), plus the helpers the copy kernels share (concat
and run_pipeline_on use them too): the registry's ``gather`` family, buffer counting and one plan over
several fused inputs.

Each kernel fuses its pending inputs (an :class:`~vyre.array._kernels.emit.Emitter` per input), so an indexing
expression over lazy work is one kernel and one submission. Index values are wrapped (negative counts
from the end) and then clamped into the axis: an out-of-range index array never reads outside the
source (the standard leaves it unspecified; checking would need a download).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import DispatchError
from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.values import Val
from .._array import Array
from . import cache
from .dtypes import ir_type
from .emit import Emitter
from .fused import WORKGROUP, Plan, plan
from .index_maps import Strided, strides_of
from .nodes import Node, Scalar, collect

if TYPE_CHECKING:
    from ...backends.base import Backend

MAX_STORAGE = 8  # storage buffers per shader stage in portable WebGPU

programs = cache.register("gather", 256, Program)  # the gather, scatter, copy and concat programs


def cached(key: tuple[Any, ...], build: Callable[[], Program]) -> Program:
    """The program under ``key`` in the registry's ``gather`` family (the indexing and copy kernels)."""
    return programs.get(key, build)


def n_buffers(node: Node) -> int:
    """Storage buffers an Emitter of ``node`` declares (its leaves, and its parameter buffer)."""
    c = collect(node)
    return len(c.leaves) + (1 if c.scalars else 0)


def fit(arrays: list[Array], extra: int, what: str) -> list[Array]:
    """``arrays`` whose fused trees fit in one kernel with ``extra`` more buffers: while they do not,
    the input using the most buffers is materialised first (its own submission) and read as one buffer."""
    arrays = list(arrays)
    while sum(n_buffers(a._node()) for a in arrays) + extra > MAX_STORAGE:
        k = max(range(len(arrays)), key=lambda k: n_buffers(arrays[k]._node()))
        if n_buffers(arrays[k]._node()) <= 1:
            raise DispatchError(f"{what}: {len(arrays)} inputs need more than {MAX_STORAGE} storage buffers "
                                "in one kernel", fix="index with fewer arrays at once")
        arrays[k] = materialised(arrays[k])
    return arrays


def materialised(a: Array) -> Array:
    """``a`` evaluated (its own submission): one buffer in the kernel that reads it. Inputs of these
    kernels that use more than one buffer are always pending expressions or views."""
    return a.evaluate()


def plan_nodes(nodes: Sequence[Node], backend: Backend) -> Plan:
    """A plan materialising the lazy arrays cut out of every node of ``nodes`` (see fused.plan_for_node)."""
    return plan([], backend, nodes)


def grid(count: int) -> tuple[int, int, int]:
    return (max(1, math.ceil(count / WORKGROUP)), 1, 1)


def coord(b: ProgramBuilder, i: Val, shape: tuple[int, ...], d: int) -> Val:
    """Coordinate ``d`` of row-major index ``i`` in ``shape``."""
    rest = strides_of(shape)[d]
    c = i / b.lit(rest, "u32") if rest != 1 else i
    return c % b.lit(shape[d], "u32") if d > 0 else c


def clamp_index(b: ProgramBuilder, v: Val, kind: str, n: int) -> Val:
    """An index value (i32: negative counts from the end) clamped into [0, n) as u32."""
    if kind == "i":
        v = b.let(v)
        w = b.select(v < 0, v + b.lit(n, "i32"), v)
        return w.max(b.lit(0, "i32")).min(b.lit(n - 1, "i32")).cast("u32")
    return v.min(b.lit(n - 1, "u32"))


def gather(src: Array, out_shape: tuple[int, ...], spec: Sequence[tuple[str, int]], indices: Sequence[Array]) -> Array:
    """A new array of ``out_shape``: element at output coordinate ``c`` is ``src`` at the coordinate whose
    axis ``k`` is ``c[d]`` for ``spec[k] == ("out", d)``, or the value of ``indices[j]`` (arrays of shape
    ``out_shape``, integer) at ``c`` for ``spec[k] == ("idx", j)`` (wrapped and clamped). One kernel."""
    dev = src.device
    out = Array(out_shape, src.dtype, dev)
    handle = out._allocate()
    n = out.size
    if n == 0:
        return out
    arrays = fit([src, *indices], 1, "indexing")
    src, idx = arrays[0], arrays[1:]
    nodes = [a._node() for a in arrays]
    S = src.shape

    def build() -> Program:
        b = ProgramBuilder("array_gather", WORKGROUP)
        es = Emitter(b, nodes[0], "src")
        eis = [Emitter(b, node, f"ix{j}") for j, node in enumerate(nodes[1:])]
        o = b.buffer("out", ir_type(src.dtype), "write", count=n)
        b.set_grid_from(o)
        i = b.global_index()
        with b.if_(i < b.lit(n, "u32")):
            acc: Val | None = None
            for k, (kind, v) in enumerate(spec):
                if S[k] == 1:
                    continue
                if kind == "out":
                    c = coord(b, i, out_shape, v)
                else:
                    c = clamp_index(b, eis[v].value(i), idx[v].dtype.kind, S[k])
                st = strides_of(S)[k]
                term = c * b.lit(st, "u32") if st != 1 else c
                acc = term if acc is None else acc + term
            o[i] = es.value(b.let(acc) if acc is not None else b.lit(0, "u32"))
        return b.build()

    key = ("array_gather", tuple(collect(nd).key for nd in nodes), out_shape, tuple(spec))
    prog = cached(key, build)
    p = plan_nodes(nodes, dev)
    handles = [h for nd in nodes for h in p.bind(nd)]
    p.steps.append((prog, [*handles, handle]))
    p.run()
    return out


def scatter_step(p: Plan, dst: Any, dst_count: int, dtype: Any, region: tuple[tuple[int, ...], int, tuple[int, ...]],
                 value: Node) -> None:
    """Append a step writing ``value`` (a node of the region's shape, at most 6 buffers) into the region
    ``(shape, offset, strides)`` of the buffer ``dst`` (``dst_count`` elements of ``dtype``), the rest
    untouched. The offset is a runtime parameter: ``x[i] = v`` in a loop over ``i`` builds one program."""
    shape, offset, strides = region
    m = math.prod(shape)
    if m == 0:
        return

    def build() -> Program:
        b = ProgramBuilder("array_scatter", WORKGROUP)
        ev = Emitter(b, value, "v")
        off = b.buffer("offset", "u32", "read", count=1)
        d = b.buffer("dst", ir_type(dtype), "read_write", count=max(1, dst_count))
        i = b.global_index()
        with b.if_(i < b.lit(m, "u32")):
            # the destination index is the region's strided map (the Scalar child is never emitted)
            at = Strided(Scalar(0, dtype), shape, 0, strides).source_index(b, i)
            d[b.let(at + off[0])] = ev.value(i)
        return b.build()

    key = ("array_scatter", collect(value).key, dst_count, dtype.str, shape, strides)
    prog = cached(key, build)
    words = np.array([offset & 0xFFFFFFFF], dtype=np.uint32)
    p.steps.append((prog, [*p.bind(value), p.backend.params_handle(words), dst], grid(m)))


def copy_step(p: Plan, src: Any, dst: Any, count: int, dtype: Any) -> None:
    """Append a step copying ``count`` elements of ``dtype`` from buffer ``src`` to buffer ``dst``."""
    def build() -> Program:
        b = ProgramBuilder("array_copy", WORKGROUP)
        s = b.buffer("src", ir_type(dtype), "read", count=count)
        d = b.buffer("dst", ir_type(dtype), "write", count=count)
        b.set_grid_from(d)
        i = b.global_index()
        with b.if_(i < b.lit(count, "u32")):
            d[i] = s[i]
        return b.build()

    p.steps.append((cached(("array_copy", count, dtype.str), build), [src, dst]))


__all__ = ["cached", "n_buffers", "fit", "plan_nodes", "grid", "coord", "clamp_index", "gather",
           "scatter_step", "copy_step", "materialised", "MAX_STORAGE"]
