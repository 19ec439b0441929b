"""Derivative rules of the reductions and scans (the rule form: vyre/autograd/rules_elementwise.py).

Ties of max/min: the gradient is split equally among the tied elements (each of k maxima gets g / k), so it
sums to g as the subgradient of the mean of the maxima; prod handles zeros exactly (one zero: that element
gets the product of the others; two or more: all zero); var/std take ``correction`` (N - correction in the
denominator); std's gradient at a zero deviation is 0.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import vyre.array as xp
from vyre.array._array import Array

Grads = tuple[Any, ...]


def axes_of(axis: Any, ndim: int) -> tuple[int, ...]:
    """``axis`` (None, an int or a tuple, negative from the end) as sorted non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    return tuple(sorted({operator.index(a) % ndim for a in items})) if ndim else ()


def _kept(g: Array, x: Array, axis: Any, keepdims: bool) -> Array:
    """The reduction's gradient (or output) ``g`` with the reduced axes back as 1s (broadcasts to x)."""
    if keepdims:
        return g
    red = axes_of(axis, x.ndim)
    return xp.reshape(g, tuple(1 if i in red else d for i, d in enumerate(x.shape)))


def _count(x: Array, axis: Any) -> int:
    return math.prod(x.shape[i] for i in axes_of(axis, x.ndim))


def _sum(g: Array, out: Array, x: Array, axis: Any, dtype: Any, keepdims: bool) -> Grads:
    return (xp.broadcast_to(_kept(g, x, axis, keepdims), x.shape),)


def _mean(g: Array, out: Array, x: Array, axis: Any, keepdims: bool) -> Grads:
    return (xp.broadcast_to(_kept(g, x, axis, keepdims) / max(_count(x, axis), 1), x.shape),)


def _prod(g: Array, out: Array, x: Array, axis: Any, dtype: Any, keepdims: bool) -> Grads:
    zero = x == 0
    nonzero_prod = _kept(xp.prod(xp.where(zero, 1.0, x), axis=axis, keepdims=True), x, axis, True)
    zeros = xp.sum(xp.astype(zero, x.dtype), axis=axis, keepdims=True)
    gk = _kept(g, x, axis, keepdims)
    safe = xp.where(zero, 1.0, x)
    d = xp.where(zeros == 0, nonzero_prod / safe, xp.where(xp.logical_and(zeros == 1, zero), nonzero_prod, 0.0))
    return (gk * d,)


def _extreme(g: Array, out: Array, x: Array, axis: Any, keepdims: bool) -> Grads:
    hit = xp.astype(x == _kept(out, x, axis, keepdims), x.dtype)
    share = hit / xp.sum(hit, axis=axis, keepdims=True)  # ties: split equally (module docstring)
    return (_kept(g, x, axis, keepdims) * share,)


def _var(g: Array, out: Array, x: Array, axis: Any, correction: Any, keepdims: bool) -> Grads:
    n = _count(x, axis) - correction
    dev = x - xp.mean(x, axis=axis, keepdims=True)
    return (_kept(g, x, axis, keepdims) * dev * (2.0 / n),)


def _std(g: Array, out: Array, x: Array, axis: Any, correction: Any, keepdims: bool) -> Grads:
    n = _count(x, axis) - correction
    dev = x - xp.mean(x, axis=axis, keepdims=True)
    o = _kept(out, x, axis, keepdims)
    return (_kept(g, x, axis, keepdims) * dev / xp.where(o == 0, math.inf, o * n),)


def _reverse_cumsum(g: Array, axis: int) -> Array:
    return xp.flip(xp.cumulative_sum(xp.flip(g, axis=axis), axis=axis), axis=axis)


def _cumulative_sum(g: Array, out: Array, x: Array, axis: Any, dtype: Any, include_initial: bool) -> Grads:
    ax = 0 if axis is None else operator.index(axis) % x.ndim
    if include_initial:  # out[k] sums x[:k]: x[i] reaches out[i+1:], so drop the first gradient
        g = xp.take(g, xp.arange(1, g.shape[ax], device=g.device), axis=ax)
    return (_reverse_cumsum(g, ax),)


def _cumulative_prod(g: Array, out: Array, x: Array, axis: Any, dtype: Any, include_initial: bool) -> Grads:
    # d out[k] / d x[i] = out[k] / x[i] for k >= i: NaN/inf at zero elements (not hidden)
    ax = 0 if axis is None else operator.index(axis) % x.ndim
    if include_initial:
        idx = xp.arange(1, g.shape[ax], device=g.device)
        g, out = xp.take(g, idx, axis=ax), xp.take(out, idx, axis=ax)
    return (_reverse_cumsum(g * out, ax) / x,)


def _diff(g: Array, out: Array, x: Array, axis: int, n: int, prepend: Any, append: Any) -> Grads:
    # one difference is out[i] = z[i+1] - z[i] over z = concat(prepend, x, append): its adjoint is
    # gz[j] = g[j-1] - g[j] (missing terms 0); n differences, n adjoints; then z's parts
    ax = axis % x.ndim
    for _ in range(n):
        pad = list(g.shape)
        pad[ax] = 1
        zero = xp.zeros(tuple(pad), dtype=g.dtype, device=g.device)
        g = xp.concat([zero, g], axis=ax) - xp.concat([g, zero], axis=ax)
    parts = [prepend, x, append]
    sizes = [p.shape[ax] if isinstance(p, Array) else 0 for p in parts]
    grads: list[Any] = []
    start = 0
    for p, size in zip(parts, sizes, strict=True):
        if p is None or not isinstance(p, Array):
            grads.append(None)
        else:
            key = tuple(slice(None) if i != ax else slice(start, start + size) for i in range(x.ndim))
            grads.append(g[key])
        start += size
    return grads[1], None, None, grads[0], grads[2]


RULES: dict[str, Any] = {
    "sum": _sum,
    "mean": _mean,
    "prod": _prod,
    "max": _extreme,
    "min": _extreme,
    "var": _var,
    "std": _std,
    "cumulative_sum": _cumulative_sum,
    "cumulative_prod": _cumulative_prod,
    "diff": _diff,
}

__all__ = ["RULES", "axes_of"]
