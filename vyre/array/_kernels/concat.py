"""The kernel of ``concat`` and ``stack`` (vyre/array/_manipulation.py), a copy: each output element
finds its piece by its coordinate along the axis and reads that piece only (pending pieces are fused
into the kernel: no piece is materialised on its own). The result is a materialised array. Pieces
whose buffers do not fit one kernel (8 storage buffers) are split into groups, one kernel per group, all
in one submission; the programs are the registry's ``gather`` family (vyre/array/_kernels/gather.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from ...ir.values import Val
from .._array import Array
from .dtypes import DType, ir_type
from .emit import Emitter
from .fused import WORKGROUP
from .gather import MAX_STORAGE, cached, grid, n_buffers, plan_nodes
from .nodes import Node, collect


def _groups(nodes: list[Node]) -> list[tuple[int, int]]:
    """Consecutive runs of pieces whose buffers fit one kernel with the output."""
    out, start, used = [], 0, 0
    for k, node in enumerate(nodes):
        need = n_buffers(node)
        if used + need > MAX_STORAGE - 1 and k > start:
            out.append((start, k))
            start, used = k, 0
        used += need
    out.append((start, len(nodes)))
    return out


def _program(nodes: list[Node], lens: list[int], pre: int, post: int, total: int, g0: int,
             dtype: DType, count: int) -> Program:
    width = sum(lens)
    m = pre * width * post

    def build() -> Program:
        b = ProgramBuilder("array_concat", WORKGROUP)
        es = [Emitter(b, node, f"p{k}") for k, node in enumerate(nodes)]
        out = b.buffer("out", ir_type(dtype), "read_write", count=count)
        i = b.global_index()
        with b.if_(i < b.lit(m, "u32")):
            # i = (pr, l, q) in (pre, width, post); piece k holds l in [lo, lo + n_k)
            pr = b.let(i / b.lit(width * post, "u32")) if pre > 1 else b.lit(0, "u32")
            l_ = b.let((i / b.lit(post, "u32") if post > 1 else i) % b.lit(width, "u32"))
            dst: Val = i + pr * b.lit((total - width) * post, "u32") + b.lit(g0 * post, "u32") \
                if (pre > 1 and total != width) or g0 else i
            dst = b.let(dst)
            lo = 0
            for e, n in zip(es, lens):
                if n:
                    src = i - pr * b.lit((width - n) * post, "u32") - b.lit(lo * post, "u32")
                    cond = (l_ >= b.lit(lo, "u32")) & (l_ < b.lit(lo + n, "u32"))
                    with b.if_(cond):
                        out[dst] = e.value(b.let(src))
                lo += n
        return b.build()

    key = ("array_concat", tuple(collect(n).key for n in nodes), tuple(lens), pre, post, total, g0, dtype.str,
           count)
    return cached(key, build)


def concat_into(out: Array, pieces: Sequence[Array], ax: int) -> None:
    """Join ``pieces`` (one dtype, the same shape off axis ``ax``) along ``ax`` into ``out`` (a new array
    of the joined shape): a copy kernel per group of pieces, one submission, pending pieces fused in."""
    handle = out._allocate()
    if out.size == 0:
        return
    lens = [a.shape[ax] for a in pieces]
    total = sum(lens)
    pre, post = math.prod(out.shape[:ax]), math.prod(out.shape[ax + 1:])
    keep = [k for k, n in enumerate(lens) if n]  # empty pieces contribute nothing
    nodes = [pieces[k]._node() for k in keep]
    p = plan_nodes(nodes, out.device)
    g0 = 0
    for s, e in _groups(nodes):
        glens = [lens[keep[k]] for k in range(s, e)]
        prog = _program(nodes[s:e], glens, pre, post, total, g0, out.dtype, out.size)
        handles = [h for node in nodes[s:e] for h in p.bind(node)]
        p.steps.append((prog, [*handles, handle], grid(pre * sum(glens) * post)))
        g0 += sum(glens)
    p.run()


__all__ = ["concat_into"]
