"""Creation functions built from views of existing arrays (2024.12): ``meshgrid``, ``tril``, ``triu``.

* ``meshgrid``: each output is a lazy broadcast view of one input (strides 0 along the other axes): no
  copy, it fuses into whatever consumes it.
* ``tril``/``triu``: a lazy elementwise select ``where(col - row <= k, x, 0)`` (``>= k`` for triu). The
  expression IR has no node for the element's own coordinates, so the row and column numbers are views
  (strides 0/1) of one small uploaded int32 ramp of max(rows, cols) elements; the select fuses with the
  pending work on ``x`` and with its consumer (one kernel).
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from ..errors import DispatchError
from . import _dtypes as D
from ._array import Array
from ._creation import upload
from ._device import same_device
from ._expr import Strided


def _check(x: Any, what: str) -> Array:
    if not isinstance(x, Array):
        raise DispatchError(f"{what}: expected a vyre array, got {type(x).__name__}",
                            fix="convert with vyre.array.asarray first")
    return x


def meshgrid(*arrays: Array, indexing: str = "xy") -> list[Array]:
    """Coordinate grids from 1-D arrays (of one dtype): with N inputs of sizes n_0..n_{N-1}, N arrays of
    shape (n_0, ..., n_{N-1}) for ``indexing='ij'``, or with the first two sizes swapped for ``'xy'``
    (Cartesian; only when N >= 2). Lazy views: nothing is copied."""
    if indexing not in ("xy", "ij"):
        raise DispatchError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}", fix="indexing='ij'")
    xs = [_check(a, "meshgrid") for a in arrays]
    if not xs:
        return []
    same_device(xs, "meshgrid")
    for a in xs:
        if a.ndim != 1:
            raise DispatchError(f"meshgrid: inputs must be 1-D, got shape {list(a.shape)}",
                                fix="reshape each input to 1-D first")
        if a.dtype != xs[0].dtype:
            raise DispatchError(f"meshgrid: inputs must share one dtype, got {xs[0].dtype} and {a.dtype}",
                                fix="convert them with astype to one dtype")
    axis = list(range(len(xs)))  # the output axis each input runs along
    if indexing == "xy" and len(xs) >= 2:
        axis[0], axis[1] = 1, 0
    shape = [0] * len(xs)
    for k, a in enumerate(xs):
        shape[axis[k]] = a.shape[0]
    out_shape = tuple(shape)
    return [Array(out_shape, a.dtype, a.device,
                  Strided(a._node(), out_shape, 0, tuple(1 if d == axis[k] else 0 for d in range(len(xs)))))
            for k, a in enumerate(xs)]


def _triangle(x: Any, k: Any, lower: bool, what: str) -> Array:
    x = _check(x, what)
    try:
        kk = operator.index(k)
    except TypeError:
        raise DispatchError(f"{what}: k must be an int, got {k!r}", fix="e.g. k=0 (the main diagonal)") from None
    if isinstance(k, bool):
        raise DispatchError(f"{what}: k must be an int, got {k!r}", fix="e.g. k=0 (the main diagonal)")
    if x.ndim < 2:
        raise DispatchError(f"{what}: needs an array of at least 2 dimensions, got shape {list(x.shape)}",
                            fix="reshape it to (..., M, N)")
    m, n = x.shape[-2:]
    if x.size == 0:
        return x
    # col - row lies in [-(m - 1), n - 1]: a k beyond that keeps or clears everything, and clamping it
    # keeps the scalar in int32 range without changing the result
    kk = max(-m, min(n, kk))
    ramp = upload(np.arange(max(m, n), dtype=np.int32), x.device)
    nd = x.ndim
    rows = Array(x.shape, D.int32, x.device,
                 Strided(ramp._node(), x.shape, 0, tuple(1 if d == nd - 2 else 0 for d in range(nd))))
    cols = Array(x.shape, D.int32, x.device,
                 Strided(ramp._node(), x.shape, 0, tuple(1 if d == nd - 1 else 0 for d in range(nd))))
    from ._functions import greater_equal, less_equal, where
    keep = less_equal(cols - rows, kk) if lower else greater_equal(cols - rows, kk)
    zero: bool | int | float = False if x.dtype == D.bool else 0.0 if x.dtype.kind == "f" else 0
    return where(keep, x, zero)


def tril(x: Array, /, *, k: int = 0) -> Array:
    """The lower triangle of the last two axes of ``x`` (elements with col - row <= k; the rest zero)."""
    return _triangle(x, k, True, "tril")


def triu(x: Array, /, *, k: int = 0) -> Array:
    """The upper triangle of the last two axes of ``x`` (elements with col - row >= k; the rest zero)."""
    return _triangle(x, k, False, "triu")


__all__ = ["meshgrid", "tril", "triu"]
