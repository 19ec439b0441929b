"""``x[integer arrays] = value``: a scatter in which every destination element has exactly one writer.

Duplicate indices would race if each entry simply stored its value. As numpy (whose assignment leaves the
last entry's value in C order), entry ``i`` of the index result wins its destination ``t`` when it is the
last one naming ``t``: a claim kernel takes ``atomicMax(win[t], i + 1)`` over a zeroed word per
destination element, then a write kernel stores ``value[i]`` where ``win[t] == i + 1``. Two kernels in one
submission, the same result on every adapter (no order of atomics decides it, only the maximum).
"""

from __future__ import annotations

import math
from typing import Any

from ...ir.builder import ProgramBuilder
from ...ir.program import Program
from .dtypes import ir_type
from .emit import Emitter
from .fused import WORKGROUP, Plan
from .gather import cached, grid
from .nodes import Node, collect

U32 = "u32"


def index_scatter_steps(p: Plan, dst: Any, dst_count: int, dtype: Any, targets: Node, value: Node) -> None:
    """Append the claim and write steps storing ``value`` (a node of ``targets``' shape and ``dst``'s dtype)
    at the flat positions ``targets`` (an int32 node, each in ``0 .. dst_count - 1``) of ``dst``."""
    m = math.prod(targets.shape)
    if m == 0:
        return
    win = p.backend.allocate_resident(4 * max(1, dst_count))  # zeroed: no entry has claimed yet
    p.temps.append(win)  # freed after the submission

    def claim() -> Program:
        b = ProgramBuilder("array_index_claim", WORKGROUP)
        t = Emitter(b, targets, "t")
        w = b.buffer("win", U32, "read_write", count=max(1, dst_count))
        i = b.global_index()
        with b.if_(i < b.lit(m, U32)):
            w.atomic_max(t.value(i).cast(U32), i + b.lit(1, U32), discard=True)
        return b.build()

    def write() -> Program:
        b = ProgramBuilder("array_index_write", WORKGROUP)
        v = Emitter(b, value, "v")
        t = Emitter(b, targets, "t")
        w = b.buffer("win", U32, "read", count=max(1, dst_count))
        d = b.buffer("dst", ir_type(dtype), "read_write", count=max(1, dst_count))
        i = b.global_index()
        with b.if_(i < b.lit(m, U32)):
            at = b.let(t.value(i).cast(U32))
            with b.if_(w[at] == i + b.lit(1, U32)):
                d[at] = v.value(i)
        return b.build()

    tkey = collect(targets).key
    p.steps.append((cached(("array_index_claim", tkey, m, dst_count), claim), [*p.bind(targets), win], grid(m)))
    key = ("array_index_write", collect(value).key, tkey, m, dst_count, dtype.str)
    p.steps.append((cached(key, write), [*p.bind(value), *p.bind(targets), win, dst], grid(m)))


__all__ = ["index_scatter_steps"]
