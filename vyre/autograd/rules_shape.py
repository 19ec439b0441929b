"""Derivative rules of the manipulation, indexing and sorting functions (the rule form:
vyre/autograd/rules_elementwise.py). Views go back as the inverse view; concat/stack as slices of the
gradient; gathers as a deterministic scatter-add (vyre/autograd/_scatter.py); sort through the inverse of
argsort's permutation (a gather: no sums, as the permutation is one to one).
"""

from __future__ import annotations

import operator
from typing import Any

import vyre.array as xp
from vyre.array._array import Array

from ._scatter import index_scatter, scatter_add

Grads = tuple[Any, ...]


def _ax(axis: Any, ndim: int) -> int:
    return operator.index(axis) % ndim


def _reshape(g: Array, out: Array, x: Array, *rest: Any) -> Grads:
    return (xp.reshape(g, x.shape),)


def _permute(g: Array, out: Array, x: Array, axes: Any) -> Grads:
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[operator.index(a) % len(axes)] = i
    return (xp.permute_dims(g, tuple(inverse)),)


def _moveaxis(g: Array, out: Array, x: Array, source: Any, destination: Any) -> Grads:
    return (xp.moveaxis(g, destination, source),)


def _roll(g: Array, out: Array, x: Array, shift: Any, axis: Any) -> Grads:
    back = tuple(-s for s in shift) if isinstance(shift, tuple) else -shift
    return (xp.roll(g, back, axis=axis),)


def _tile(g: Array, out: Array, x: Array, reps: Any) -> Grads:
    reps = tuple(reps)
    nd = max(x.ndim, len(reps))
    base = (1,) * (nd - x.ndim) + x.shape
    reps = (1,) * (nd - len(reps)) + reps
    g = xp.reshape(g, tuple(v for r, d in zip(reps, base, strict=True) for v in (r, d)))
    return (xp.reshape(xp.sum(g, axis=tuple(range(0, 2 * nd, 2))), x.shape),)


def _repeat(g: Array, out: Array, x: Array, repeats: Any, axis: Any) -> Grads:
    src = xp.reshape(x, (-1,)) if axis is None else x
    ax = 0 if axis is None else _ax(axis, x.ndim)
    n = src.shape[ax]
    g = xp.moveaxis(g, ax, 0)
    if isinstance(repeats, Array):  # per-element counts: a scatter of the rows to their source
        rows = xp.repeat(xp.arange(n, dtype=xp.int32, device=g.device), repeats)
        rest = g.shape[1:]
        gt = xp.reshape(xp.moveaxis(g, 0, -1), (-1, g.shape[0]))  # (rest, m): one scatter per column
        cols = [scatter_add(gt[c], rows, n) for c in range(gt.shape[0])] if rest else [scatter_add(g, rows, n)]
        back = xp.reshape(xp.stack(cols, axis=-1), (n, *rest)) if rest else cols[0]
    else:
        back = xp.sum(xp.reshape(g, (n, int(repeats), *g.shape[1:])), axis=1)
    return (xp.reshape(xp.moveaxis(back, 0, ax), x.shape),)


def _concat(g: Array, out: Array, arrays: Any, axis: Any) -> Grads:
    grads, start = [], 0
    if axis is None:
        flat = xp.reshape(g, (-1,))
        for a in arrays:
            grads.append(xp.reshape(flat[start:start + a.size], a.shape))
            start += a.size
        return (grads,)
    ax = _ax(axis, out.ndim)
    for a in arrays:
        key = tuple(slice(start, start + a.shape[ax]) if i == ax else slice(None) for i in range(out.ndim))
        grads.append(g[key])
        start += a.shape[ax]
    return (grads,)


def _stack(g: Array, out: Array, arrays: Any, axis: Any) -> Grads:
    return (list(xp.unstack(g, axis=_ax(axis, out.ndim))),)


def _unstack(g: Any, out: Any, x: Array, axis: Any) -> Grads:
    return (xp.stack(list(g), axis=_ax(axis, x.ndim)),)


def _broadcast_arrays(g: Any, out: Any, arrays: Any) -> Grads:
    return (list(g),)  # each summed back to its input's shape by the tape


def _meshgrid(g: Any, out: Any, arrays: Any, indexing: str) -> Grads:
    grads = []
    for i, (gi, a) in enumerate(zip(g, arrays, strict=True)):
        own = 1 - i if indexing == "xy" and len(arrays) >= 2 and i < 2 else i
        other = tuple(d for d in range(gi.ndim) if d != own)
        grads.append(xp.reshape(xp.sum(gi, axis=other), a.shape) if other else xp.reshape(gi, a.shape))
    return (grads,)


def _getitem(g: Array, out: Array, x: Array, key: Any) -> Grads:
    return index_scatter(g, x.shape, key), None


#: the largest one-hot matrix (rows x indices) the gradient of ``take`` builds; above it, the sort-based
#: scatter-add (which downloads its longest run)
ONE_HOT_MAX = 1 << 24


def _take(g: Array, out: Array, x: Array, indices: Array, axis: Any) -> Grads:
    ax = 0 if axis is None else _ax(axis, x.ndim)
    n = x.shape[ax]
    idx = xp.astype(indices, xp.int32)
    idx = xp.clip(xp.where(idx < 0, idx + n, idx), 0, n - 1)  # take's reading of an index
    m = idx.shape[0] if idx.ndim == 1 else 0
    if 0 < n * m <= ONE_HOT_MAX and g.size:
        # rows gathered by a 1-D index (an embedding): their gradient is one_hot(idx).T @ g, a matmul with
        # a fixed summation order, no sort and no download (so a compiled step can take it)
        gm = xp.moveaxis(g, ax, 0)
        onehot = xp.reshape(idx, (1, m)) == xp.reshape(xp.arange(n, dtype=xp.int32, device=g.device), (n, 1))
        back = xp.astype(onehot, g.dtype) @ xp.reshape(gm, (m, -1))
        return xp.moveaxis(xp.reshape(back, (n, *gm.shape[1:])), 0, ax), None
    where = xp.take(xp.reshape(xp.arange(x.size, dtype=xp.int32, device=g.device), x.shape), idx, axis=ax)
    return xp.reshape(scatter_add(xp.reshape(g, (-1,)), xp.reshape(where, (-1,)), x.size), x.shape), None


def _take_along_axis(g: Array, out: Array, x: Array, indices: Array, axis: Any) -> Grads:
    where = xp.take_along_axis(xp.reshape(xp.arange(x.size, dtype=xp.int32, device=g.device), x.shape), indices,
                               axis=axis)
    return xp.reshape(scatter_add(xp.reshape(g, (-1,)), xp.reshape(where, (-1,)), x.size), x.shape), None


def _sort(g: Array, out: Array, x: Array, axis: Any, descending: bool, stable: bool) -> Grads:
    # out = take_along_axis(x, perm): x[perm[j]] got g[j], so x[i] gets g[inverse[i]]
    perm = xp.argsort(x, axis=axis, descending=descending, stable=stable)
    inverse = xp.argsort(perm, axis=axis)
    return (xp.take_along_axis(g, inverse, axis=axis),)


RULES: dict[str, Any] = {
    "reshape": _reshape,
    "expand_dims": _reshape,
    "squeeze": _reshape,
    "permute_dims": _permute,
    "matrix_transpose": lambda g, out, x: (xp.matrix_transpose(g),),
    "flip": lambda g, out, x, axis: (xp.flip(g, axis=axis),),
    "moveaxis": _moveaxis,
    "roll": _roll,
    "tile": _tile,
    "repeat": _repeat,
    "broadcast_to": lambda g, out, x, shape: (g,),  # summed back by the tape
    "broadcast_arrays": _broadcast_arrays,
    "concat": _concat,
    "stack": _stack,
    "unstack": _unstack,
    "meshgrid": _meshgrid,
    "tril": lambda g, out, x, k: (xp.tril(g, k=k),),
    "triu": lambda g, out, x, k: (xp.triu(g, k=k),),
    "getitem": _getitem,
    "take": _take,
    "take_along_axis": _take_along_axis,
    "sort": _sort,
}

__all__ = ["RULES"]
