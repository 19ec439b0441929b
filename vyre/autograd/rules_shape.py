"""Derivative rules of the manipulation, indexing, sorting and linear-algebra functions (the rule form:
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


def _take(g: Array, out: Array, x: Array, indices: Array, axis: Any) -> Grads:
    ax = 0 if axis is None else _ax(axis, x.ndim)
    n = x.shape[ax]
    idx = xp.astype(indices, xp.int32)
    idx = xp.clip(xp.where(idx < 0, idx + n, idx), 0, n - 1)  # take's reading of an index
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


# ---- linear algebra ------------------------------------------------------------------------------------

def _matmul(g: Array, out: Array, x1: Array, x2: Array, *, needs: tuple[bool, ...] = (True, True)) -> Grads:
    a = xp.reshape(x1, (1, x1.shape[0])) if x1.ndim == 1 else x1
    b = xp.reshape(x2, (x2.shape[0], 1)) if x2.ndim == 1 else x2
    # g as (..., m, n): the axes a 1-D operand dropped put back
    gm = g
    if x1.ndim == 1:
        gm = xp.expand_dims(gm, axis=-2 if x2.ndim > 1 else 0)
    if x2.ndim == 1:
        gm = xp.expand_dims(gm, axis=-1)
    # matmul runs at once: only the products an input wants
    ga = xp.reshape(_unbatch(xp.matmul(gm, xp.matrix_transpose(b)), a.shape), x1.shape) if needs[0] else None
    gb = xp.reshape(_unbatch(xp.matmul(xp.matrix_transpose(a), gm), b.shape), x2.shape) if needs[1] else None
    return ga, gb


def _unbatch(g: Array, shape: tuple[int, ...]) -> Array:
    lead = g.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape[:-2]) if d == 1 and g.shape[lead + i] != 1)
    return xp.reshape(xp.sum(g, axis=axes, keepdims=True), shape) if axes else g


def _vecdot(g: Array, out: Array, x1: Array, x2: Array, axis: int) -> Grads:
    ge = xp.expand_dims(g, axis=axis)  # axis counts in the broadcast shape, as g's new axis does
    return ge * x2, ge * x1


def _tensordot(g: Array, out: Array, x1: Array, x2: Array, axes: Any, *,
               needs: tuple[bool, ...] = (True, True, False)) -> Grads:
    if isinstance(axes, int):
        a_ax, b_ax = list(range(x1.ndim - axes, x1.ndim)), list(range(axes))
    else:
        a_ax = [operator.index(a) % x1.ndim for a in axes[0]]
        b_ax = [operator.index(b) % x2.ndim for b in axes[1]]
    a_free = [i for i in range(x1.ndim) if i not in a_ax]
    b_free = [i for i in range(x2.ndim) if i not in b_ax]
    nf = len(a_free)
    g_b = list(range(nf, g.ndim))  # g's axes of x2's free axes
    # d x1: g (a_free, b_free) . x2 over b_free -> (a_free, b_ax in sorted order): to x1's order
    d1 = d2 = None
    if needs[0]:
        d1 = xp.tensordot(g, x2, axes=(g_b, b_free))
        got1 = a_free + [a_ax[b_ax.index(b)] for b in sorted(b_ax)]
        d1 = xp.permute_dims(d1, tuple(got1.index(i) for i in range(x1.ndim)))
    if needs[1]:  # d x2: x1 over a_free . g (a_free, b_free) -> (a_ax in sorted order, b_free): to x2's order
        d2 = xp.tensordot(x1, g, axes=(a_free, list(range(nf))))
        got2 = [b_ax[a_ax.index(a)] for a in sorted(a_ax)] + b_free
        d2 = xp.permute_dims(d2, tuple(got2.index(i) for i in range(x2.ndim)))
    return d1, d2, None


def _outer(g: Array, out: Array, x1: Array, x2: Array, *, needs: tuple[bool, ...] = (True, True)) -> Grads:
    return xp.matmul(g, x2) if needs[0] else None, xp.matmul(x1, g) if needs[1] else None


def _diagonal_mask(x: Array, offset: int) -> tuple[Array, Array, Array]:
    m, n = x.shape[-2], x.shape[-1]
    i = xp.reshape(xp.arange(m, dtype=xp.int32, device=x.device), (m, 1))
    j = xp.reshape(xp.arange(n, dtype=xp.int32, device=x.device), (1, n))
    return (j - i) == offset, i, j


def _diagonal(g: Array, out: Array, x: Array, offset: int) -> Grads:
    mask, i, j = _diagonal_mask(x, offset)
    length = g.shape[-1]
    if length == 0:
        return (xp.zeros_like(x),)
    # element d of the diagonal is x[d, d + offset] (offset >= 0) or x[d - offset, d]: its row or column
    at = xp.reshape(i, (-1,)) if offset >= 0 else xp.reshape(j, (-1,))
    spread = xp.take(g, xp.clip(at, 0, length - 1), axis=-1)
    spread = xp.expand_dims(spread, axis=-1) if offset >= 0 else xp.expand_dims(spread, axis=-2)
    return (xp.where(mask, spread, 0.0),)


def _trace(g: Array, out: Array, x: Array, offset: int, dtype: Any) -> Grads:
    mask, _, _ = _diagonal_mask(x, offset)
    return (xp.where(mask, xp.expand_dims(g, axis=(-2, -1)), 0.0),)


def _vector_norm(g: Array, out: Array, x: Array, axis: Any, keepdims: bool, ord: Any) -> Grads:  # noqa: A002
    from .rules_reduce import _kept
    if ord != 2:
        from ..errors import InvalidArgumentError
        raise InvalidArgumentError(f"vector_norm's gradient is given for ord=2, not ord={ord!r}",
                                   fix="write the norm from abs/sum/max for other orders")
    o = _kept(out, x, axis, keepdims)
    return (_kept(g, x, axis, keepdims) * x / xp.where(o == 0, 1.0, o),)


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
    "matmul": _matmul,
    "vecdot": _vecdot,
    "tensordot": _tensordot,
    "outer": _outer,
    "diagonal": _diagonal,
    "trace": _trace,
    "vector_norm": _vector_norm,
}

__all__ = ["RULES"]
