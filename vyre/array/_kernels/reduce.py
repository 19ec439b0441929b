"""Reducing a fused tree over some of its axes into a new array, deferred into the submission of
whatever reads the result: :func:`reduce_node` picks the column-tiled kernels (vyre/array/_kernels/
reduce_columns.py: the reduced axes all come before the kept ones, as in ``x.sum(axis=0)``) or the
rows/tree kernels (reduce_rows.py: the reduced axes moved last by a fused transposing view). A pending
elementwise tree is fused into the first pass's load, so ``(a * b).sum()`` reads ``a`` and ``b`` once
and writes no product. :func:`depth` is the float tolerance budget of whichever kernel runs:
|sum - exact| <= (depth + 1) * eps * sum|x|.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .._array import Array
from . import reduce_columns as C
from . import reduce_rows as R
from .fused import Plan, defer
from .nodes import Node
from .reduction import Reduction

if TYPE_CHECKING:
    from ...backends.base import Backend


def depth(rows: int, length: int) -> int:
    """Longest chain of f32 roundings from an element to its result (the float tolerance budget), for
    whichever kernel reduces ``rows`` outputs of ``length`` elements (rows, tree or columns)."""
    d = R.rows_depth(rows, length)
    if rows >= 2 and length >= 2:
        d = max(d, C.depth(C.Columns(length, rows)))
    return d


def reduce_node(red: Reduction, node: Node, axes: tuple[int, ...], out_shape: tuple[int, ...],
                device: Backend) -> Array:
    """Reduce ``node`` (a pending tree or a leaf) over ``axes`` (sorted, distinct, non-empty reduction
    length) into a new Array of ``out_shape``, deferred (fused.defer): it runs in the submission of
    whatever reads it first (``float(x.sum())``: the reduction and the download together), the tree
    fused in pass 1."""
    cols = C.columns_for(node.shape, axes)
    if cols is not None:
        return _reduce_columns(red, node, cols, out_shape, device)
    view = R.rows_view(node, axes)
    rows = math.prod(node.shape[d] for d in range(len(node.shape)) if d not in axes)
    shape = R.Shape(rows, math.prod(node.shape[d] for d in axes))
    res = Array(out_shape, red.out, device)
    if rows == 0:
        res._allocate()
        return res
    prog = R.first_program(red, view, shape)
    second = R.partials_program(red, shape) if shape.tree and shape.blocks > 1 else None

    def build(p: Plan, out: Any) -> None:
        if shape.lanes > 1:
            p.steps.append((prog, [*p.bind(view), out], R.lanes_grid(shape)))
        elif not shape.tree:
            p.steps.append((prog, [*p.bind(view), out]))
        elif shape.blocks == 1:
            p.steps.append((prog, [*p.bind(view), out], R.grid(1, shape.rows)))
        else:
            part = p.backend.allocate_resident(4 * shape.rows * shape.blocks, zeroed=False)  # every block writes
            p.temps.append(part)  # freed after the submission (WebGPU keeps it for the submitted work)
            p.steps.append((prog, [*p.bind(view), part], R.grid(shape.blocks, shape.rows)))
            p.steps.append((second, [part, out], R.grid(1, shape.rows)))

    return defer(res, [view], build, zeroed=False)  # every row is written


def _reduce_columns(red: Reduction, node: Node, c: C.Columns, out_shape: tuple[int, ...], device: Backend) -> Array:
    """:func:`reduce_node` with the column-tiled kernels (reduce_columns.py), deferred too."""
    c = C.vec_columns(red, node, c)
    prog = C.first_program(red, node, c)
    second = C.partials_program(red, c) if c.blocks > 1 else None

    def build(p: Plan, out: Any) -> None:
        if second is None:
            p.steps.append((prog, [*p.bind(node), out], c.grid()))
            return
        part = p.backend.allocate_resident(4 * c.lanes * c.blocks * c.cols, zeroed=False)
        p.temps.append(part)
        p.steps.append((prog, [*p.bind(node), part], c.grid()))
        p.steps.append((second[0], [part, out], second[1].grid()))

    return defer(Array(out_shape, red.out, device), [node], build, zeroed=False)


__all__ = ["reduce_node", "depth"]
