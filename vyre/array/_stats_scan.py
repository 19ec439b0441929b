"""cumulative_sum / cumulative_prod: one invocation per line along the axis (outer * inner lines of L
elements), a serial running sum or product over the line, the pending input tree fused into the load.

Accumulation as in the reductions (f32 for floats, float16 rounded per output; integers wrap). The running
float sum of element k has k roundings, so the tolerance is (k + 1) * eps * sum|x[:k]|. Serial lines are
the simple correct layout: a long 1-d scan runs on one invocation (a parallel block scan is future work).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import DispatchError
from ..ir.builder import ProgramBuilder
from ._array import Array
from ._dtypes import ir_type
from ._expr import Emitter, collect
from ._fuse import plan_for_node
from ._stats_kernel import WG, Reduction, _cached, load


def _program(red: Reduction, node: Any, outer: int, length: int, inner: int, initial: bool,
             key: tuple) -> Any:
    length2 = length + int(initial)

    def build() -> Any:
        b = ProgramBuilder(f"array_cumulative_{red.op}", WG)
        e = Emitter(b, node)  # its buffers first: Plan.bind(node)'s order
        out = b.buffer("out", ir_type(red.out), "write", count=max(1, outer * length2 * inner))
        b.set_grid_from(out)  # at least one invocation per line (outer * inner <= the output's size)
        i = b.global_index()
        with b.if_(i < outer * inner):
            o, c = b.let(i / inner, "o"), b.let(i % inner, "c")
            src = b.let(o * (length * inner) + c, "src")
            dst = b.let(o * (length2 * inner) + c, "dst")
            acc = b.var(red.acc, red.identity(b), name="acc")
            if initial:
                out[dst] = red.finish(b, b.lit(0 if red.op == "sum" else 1, red.acc))  # +0, not -0.0
            with b.for_range(0, length, name="r") as r:
                acc.set(red.combine(b, acc, load(b, e.value(src + r * inner), node.dtype, red.acc)))
                out[dst + (r + int(initial)) * inner] = red.finish(b, acc)
        return b.build()

    return _cached(key, build)


def cumulative(x: Array, op: str, axis: int | None, out_dtype: np.dtype, include_initial: bool,
               name: str) -> Array:
    """The cumulative sum or product of ``x`` along ``axis`` as a new materialised array."""
    if x.ndim == 0:
        raise DispatchError(f"{name}: x must have at least one dimension", fix="reshape it to (1,) first")
    if axis is None:
        if x.ndim != 1:
            raise DispatchError(f"{name}: axis is required for a {x.ndim}-d array",
                                fix="pass axis=k (the standard leaves no default beyond 1-d)")
        axis = 0
    if isinstance(axis, bool) or not isinstance(axis, int) or not -x.ndim <= axis < x.ndim:
        raise DispatchError(f"{name}: axis {axis!r} is out of range for {x.ndim} dimension(s)",
                            fix=f"use an int in [{-x.ndim}, {x.ndim})")
    if not isinstance(include_initial, bool):
        raise DispatchError(f"{name}: include_initial must be a bool", fix="pass True or False")
    axis %= x.ndim
    outer, length, inner = math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1:])
    shape = (*x.shape[:axis], length + int(include_initial), *x.shape[axis + 1:])
    red = Reduction(op, "f32" if out_dtype.kind == "f" else ir_type(out_dtype).value, out_dtype)
    res = Array(shape, out_dtype, x.device)
    out = res._allocate()
    if outer * inner == 0 or (length == 0 and not include_initial):
        return res
    if length == 0:  # only the initial values
        from ._creation import full
        return full(shape, 0 if op == "sum" else 1, dtype=out_dtype, device=x.device)
    node = x._node()
    key = ("stats_cumulative", red, outer, length, inner, include_initial, collect(node).key)
    prog = _program(red, node, outer, length, inner, include_initial, key)
    p = plan_for_node(node, x.device)
    p.steps.append((prog, [*p.bind(node), out]))
    p.run()
    return res


__all__ = ["cumulative"]
