"""Deterministic scatter-add, the backward pass of gathers (indexing, take, take_along_axis, repeat).

``scatter_add(values, positions, n)``: ``out[j] = sum of values[i] over positions[i] == j`` for a flat
``out`` of n elements, with no atomics: the positions are sorted (a stable argsort, so equal positions keep
their order), each output slot finds its run of equal positions by binary search (``searchsorted``), and
the runs are summed as rows of a (n, K) gather, K the longest run (one small download), by the sum
reduction, whose order is fixed. The same inputs give the same bits on every run; the cost is the sort
plus n * K additions.

``index_scatter(g, shape, key)``: the gradient of ``x[key]`` (x of ``shape``): zeros with ``g`` at the
indexed places, repeated places summed. A key of ints, slices, ``...`` and ``None`` only is an item
assignment into zeros (its places are distinct); one with integer arrays or boolean masks goes through the
flat positions ``arange(x.size).reshape(shape)[key]`` and :func:`scatter_add`.

Both are recorded functions with their own rules (the adjoint of a scatter is the gather), so a gradient
through indexing is itself differentiable.
"""

from __future__ import annotations

from typing import Any

import vyre.array as xp
from vyre.array import _record
from vyre.array._array import Array


def _scatter_add(values: Array, positions: Array, n: int) -> Array:
    """``values`` (1-D) summed into ``n`` slots by ``positions`` (1-D int, in [0, n)); see the module."""
    m = values.shape[0]
    if m == 0 or n == 0:
        return xp.zeros((n,), dtype=values.dtype, device=values.device)
    pos = xp.astype(positions, xp.int32)
    order = xp.argsort(pos, stable=True)
    sorted_pos = xp.take(pos, order)
    sorted_vals = xp.take(values, order)
    slots = xp.arange(n, dtype=xp.int32, device=values.device)
    lo = xp.searchsorted(sorted_pos, slots, side="left")
    count = xp.searchsorted(sorted_pos, slots, side="right") - lo
    k = int(xp.max(count))  # the longest run: one download
    if k == 0:
        return xp.zeros((n,), dtype=values.dtype, device=values.device)
    step = xp.arange(k, dtype=xp.int32, device=values.device)
    at = xp.reshape(lo, (n, 1)) + xp.reshape(step, (1, k))
    picked = xp.take(sorted_vals, xp.reshape(xp.clip(at, 0, m - 1), (-1,)))
    picked = xp.reshape(picked, (n, k))
    valid = xp.reshape(step, (1, k)) < xp.reshape(count, (n, 1))
    return xp.sum(xp.where(valid, picked, 0.0), axis=1)


def _basic(key: Any) -> bool:
    items = key if isinstance(key, tuple) else (key,)
    return all(k is None or k is Ellipsis or isinstance(k, (int, slice)) and not isinstance(k, bool) for k in items)


def _index_scatter(g: Array, shape: tuple[int, ...], key: Any) -> Array:
    if _basic(key):
        out = xp.zeros(shape, dtype=g.dtype, device=g.device)
        out[key] = g  # distinct places: an assignment, no sums
        return out
    size = 1
    for d in shape:
        size *= d
    where = xp.reshape(xp.arange(size, dtype=xp.int32, device=g.device), shape)[key]
    flat = _scatter_add(xp.reshape(g, (-1,)), xp.reshape(where, (-1,)), size)
    return xp.reshape(flat, shape)


scatter_add = _record.recorded(_scatter_add, "autograd.scatter_add")
index_scatter = _record.recorded(_index_scatter, "autograd.index_scatter")

RULES: dict[str, Any] = {
    "autograd.scatter_add": lambda g, out, values, positions, n: (xp.take(g, xp.astype(positions, xp.int32)),),
    "autograd.index_scatter": lambda g, out, gin, shape, key: (g[key],),
}

__all__ = ["scatter_add", "index_scatter", "RULES"]
