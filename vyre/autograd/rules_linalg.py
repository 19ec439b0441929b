"""Derivative rules of the linear-algebra functions (the rule form: vyre/autograd/rules_elementwise.py).
matmul, tensordot and outer are kernels that run when called, so their rules take ``needs`` (which inputs
want a gradient, from the tape) and run only those products.
"""

from __future__ import annotations

import operator
from typing import Any

import vyre.array as xp
from vyre.array._array import Array

from ..errors import InvalidArgumentError
from .rules_reduce import _kept

Grads = tuple[Any, ...]


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
    if ord != 2:
        raise InvalidArgumentError(f"vector_norm's gradient is given for ord=2, not ord={ord!r}",
                                   fix="write the norm from abs/sum/max for other orders")
    o = _kept(out, x, axis, keepdims)
    return (_kept(g, x, axis, keepdims) * x / xp.where(o == 0, 1.0, o),)


def _cross(g: Array, out: Array, x1: Array, x2: Array, axis: int) -> Grads:
    # c = a x b is linear in each: dL/da = b x g, dL/db = g x a
    return xp.linalg.cross(x2, g, axis=axis), xp.linalg.cross(g, x1, axis=axis)


def _matrix_norm(g: Array, out: Array, x: Array, keepdims: bool, ord: Any) -> Grads:  # noqa: A002
    if ord != "fro":
        raise InvalidArgumentError(f"matrix_norm's gradient is given for ord='fro', not ord={ord!r}",
                                   fix="write the norm from abs/sum/max for other orders")
    o = out if keepdims else xp.expand_dims(out, axis=(-2, -1))
    gk = g if keepdims else xp.expand_dims(g, axis=(-2, -1))
    return (gk * x / xp.where(o == 0, 1.0, o),)


def _matrix_power(g: Array, out: Array, x: Array, n: int) -> Grads:
    # d(X^n) = sum_k X^k dX X^(n-1-k): the gradient is sum_k (X^T)^k G (X^T)^(n-1-k)
    if n < 0:
        raise InvalidArgumentError("matrix_power's gradient is given for n >= 0 (a negative power needs the "
                                   "inverse)", fix="use n >= 0")
    if n == 0:
        return (xp.zeros_like(x), None)
    xt = xp.matrix_transpose(x)
    powers = [xp.eye(x.shape[-1], dtype=x.dtype, device=x.device), xt]  # powers[k] = (X^T)^k
    for _ in range(2, n):
        powers.append(xp.matmul(powers[-1], xt))
    total = g if n == 1 else xp.matmul(g, powers[n - 1])
    for k in range(1, n):
        term = xp.matmul(powers[k], g)
        total = total + (term if n - 1 - k == 0 else xp.matmul(term, powers[n - 1 - k]))
    return (total, None)


RULES: dict[str, Any] = {
    "matmul": _matmul,
    "vecdot": _vecdot,
    "tensordot": _tensordot,
    "outer": _outer,
    "diagonal": _diagonal,
    "trace": _trace,
    "vector_norm": _vector_norm,
    "matrix_norm": _matrix_norm,
    "cross": _cross,
    "matrix_power": _matrix_power,
}

__all__ = ["RULES"]
