"""``vyre.array.linalg``: the standard's linear algebra extension (2024.12), the part that needs no matrix
decomposition: matmul, matrix_transpose, tensordot, vecdot (the main namespace's, vyre/array/_linalg.py),
and cross, diagonal, matrix_norm, matrix_power, outer, trace, vector_norm built on them, on views and on
the reductions (vyre/array/_stats.py), so pending work fuses in:

* diagonal: a strided view (stride N + 1 along the last two axes); trace sums it;
* outer: ``x1[:, None] * x2[None, :]``, lazy; cross: three lazy components joined by ``stack``;
* vector_norm / matrix_norm: ``abs``/powers fused into one reduction per pass (float32 sums);
* matrix_power: repeated squaring with ``matmul``.

Not provided (they need decompositions or pivoting, none written for WebGPU here): cholesky, det, eigh,
eigvalsh, inv, matrix_rank, pinv, qr, slogdet, solve, svd, svdvals; matrix_norm's ord 2, -2 and 'nuc'
(singular values) and matrix_power with n < 0 (an inverse) raise UnsupportedFeatureError.
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any

from ..errors import DispatchError, UnsupportedFeatureError
from . import _dtypes as D
from ._array import Array
from ._device import same_device
from ._expr import Strided, strides_of
from ._linalg import matmul, matrix_transpose, tensordot, vecdot

_Ord = int | float | str | None


def _check(x: Any, what: str) -> Array:
    if not isinstance(x, Array):
        raise DispatchError(f"{what}: expected a vyre array, got {type(x).__name__}",
                            fix="convert with vyre.array.asarray first")
    return x


def _int(v: Any, what: str) -> int:
    if isinstance(v, builtins.bool):
        raise DispatchError(f"{what} must be an int, got {v!r}", fix="pass an int")
    try:
        return operator.index(v)
    except TypeError:
        raise DispatchError(f"{what} must be an int, got {v!r}", fix="pass an int") from None


def diagonal(x: Array, /, *, offset: int = 0) -> Array:
    """The diagonals of the last two axes (``offset`` > 0: above the main one, < 0: below), shape
    (..., k): a lazy strided view."""
    x = _check(x, "diagonal")
    off = _int(offset, "diagonal: offset")
    if x.ndim < 2:
        raise DispatchError(f"diagonal: needs an array of at least 2 dimensions, got shape {list(x.shape)}",
                            fix="reshape it to (..., M, N)")
    m, n = x.shape[-2:]
    k = builtins.max(0, builtins.min(m, n - off) if off >= 0 else builtins.min(m + off, n))
    shape = (*x.shape[:-2], k)
    if k == 0 or math.prod(shape) == 0:
        from ._creation import zeros
        return zeros(shape, dtype=x.dtype, device=x.device)
    st = strides_of(x.shape)
    start = off if off >= 0 else -off * n
    return Array(shape, x.dtype, x.device, Strided(x._node(), shape, start, (*st[:-2], n + 1)))


def trace(x: Array, /, *, offset: int = 0, dtype: Any = None) -> Array:
    """The sum of each diagonal (see :func:`diagonal`), with ``sum``'s dtype rules (int32 stays int32)."""
    from ._stats import sum as _sum
    d = diagonal(x, offset=offset)
    return _sum(d, axis=-1, dtype=dtype)


def outer(x1: Array, x2: Array, /) -> Array:
    """The outer product of two 1-D arrays, shape (len(x1), len(x2)): lazy (fuses into its consumer)."""
    a, b = _check(x1, "outer"), _check(x2, "outer")
    same_device([a, b], "outer")
    if a.ndim != 1 or b.ndim != 1:
        raise DispatchError(f"outer: needs 1-D arrays, got shapes {list(a.shape)} and {list(b.shape)}",
                            fix="reshape both to 1-D")
    if D.promote(a.dtype, b.dtype) == D.bool:
        raise DispatchError("outer: needs numeric arrays", fix="convert with astype first")
    from ._views import reshape
    return reshape(a, (a.shape[0], 1)) * reshape(b, (1, b.shape[0]))


def cross(x1: Array, x2: Array, /, *, axis: int = -1) -> Array:
    """The 3-vector cross product along ``axis`` (counted from the last axis; the other axes broadcast)."""
    a, b = _check(x1, "cross"), _check(x2, "cross")
    same_device([a, b], "cross")
    if D.promote(a.dtype, b.dtype) == D.bool:
        raise DispatchError("cross: needs numeric arrays", fix="convert with astype first")
    ax = _int(axis, "cross: axis")
    low = builtins.min(a.ndim, b.ndim)
    if low == 0 or not -low <= ax <= -1:
        raise DispatchError(f"cross: axis {axis} is out of range for {a.ndim}-d and {b.ndim}-d arrays",
                            fix=f"use an axis in [-{builtins.max(low, 1)}, -1] (counted from the last axis)")
    if a.shape[ax] != 3 or b.shape[ax] != 3:
        raise DispatchError(f"cross: axis {axis} must have size 3 in both arrays, got {a.shape[ax]} and "
                            f"{b.shape[ax]}", fix="pass arrays of 3-vectors")
    from ._elementwise import broadcast_shapes
    from ._manip import stack
    broadcast_shapes(a.shape, b.shape)
    tail = (slice(None),) * (-ax - 1)
    u = [a[(..., k, *tail)] for k in range(3)]
    v = [b[(..., k, *tail)] for k in range(3)]
    parts = (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])
    return stack(parts, axis=ax)


def _float(x: Array) -> Array:
    """Integer and bool inputs of the norms are computed in float32 (numpy: float64)."""
    from ._functions import astype
    return x if x.dtype.kind == "f" else astype(x, D.float32)


def _back(v: Array, dtype: Any) -> Array:
    from ._functions import astype
    return v if v.dtype == dtype else astype(v, dtype)


def _largest(v: Array, *, axis: Any, keepdims: bool) -> Array:
    """max over ``axis`` of a non-negative ``v``; 0 over zero elements (numpy's norms: an empty max is 0)."""
    from ._stats import max as _max
    from ._stats import normalize_axes
    axes = normalize_axes(axis, v.ndim, "norm")
    if math.prod(v.shape[d] for d in axes) == 0:
        from ._creation import zeros
        shape = tuple(1 if d in axes else k for d, k in enumerate(v.shape) if keepdims or d not in axes)
        return zeros(shape, dtype=v.dtype, device=v.device)
    return _max(v, axis=axis, keepdims=keepdims)


def vector_norm(x: Array, /, *, axis: int | tuple[int, ...] | None = None, keepdims: bool = False,
                ord: int | float = 2) -> Array:  # noqa: A002 - the standard's name
    """The vector p-norm over ``axis`` (None: all elements): ``ord`` 2 (default), 1, any p != 0
    (sum(|x|^p)^(1/p)), 0 (the count of non-zeros), inf (max |x|), -inf (min |x|). Sums in float32;
    float16 results are rounded once at the end; integers give float32."""
    from ._functions import abs as _abs
    from ._functions import astype, not_equal, sqrt
    from ._stats import min as _min
    from ._stats import sum as _sum
    x = _float(_check(x, "vector_norm"))
    if isinstance(ord, builtins.bool) or not isinstance(ord, (int, float)):
        raise DispatchError(f"vector_norm: ord must be a number, got {ord!r}", fix="e.g. ord=2 or ord=math.inf")
    out = x.dtype
    wide = astype(x, D.float32) if out == D.float16 else x  # lazy: fused into the reduction
    if ord == math.inf:
        return _largest(_abs(x), axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return _min(_abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return _back(_sum(astype(not_equal(wide, 0.0), D.float32), axis=axis, keepdims=keepdims), out)
    if ord == 2:
        return _back(sqrt(_sum(wide * wide, axis=axis, keepdims=keepdims)), out)
    if ord == 1:
        return _back(_sum(_abs(wide), axis=axis, keepdims=keepdims), out)
    p = float(ord)
    if p > 0:
        return _back(_sum(_abs(wide) ** p, axis=axis, keepdims=keepdims) ** (1.0 / p), out)
    # p < 0: a zero element makes the norm 0 (|0|^p = inf); WGSL's pow leaves pow(0, p < 0) and
    # pow(inf, 1/p) undefined, so both are spelled out
    from ._functions import equal, where
    mag = _abs(wide)
    s = _sum(where(equal(mag, 0.0), math.inf, mag ** p), axis=axis, keepdims=keepdims)
    return _back(where(equal(s, math.inf), 0.0, s ** (1.0 / p)), out)


def matrix_norm(x: Array, /, *, keepdims: bool = False, ord: _Ord = "fro") -> Array:  # noqa: A002
    """The norm of each matrix (the last two axes): 'fro' (default), 1 / -1 (max / min column sum of
    |x|), inf / -inf (max / min row sum). 2, -2 and 'nuc' need singular values: UnsupportedFeatureError."""
    from ._functions import abs as _abs
    from ._functions import astype, sqrt
    from ._stats import min as _min
    from ._stats import sum as _sum
    x = _float(_check(x, "matrix_norm"))
    if x.ndim < 2:
        raise DispatchError(f"matrix_norm: needs an array of at least 2 dimensions, got shape {list(x.shape)}",
                            fix="reshape it to (..., M, N)")
    if ord in (2, -2, "nuc"):
        raise UnsupportedFeatureError(f"matrix_norm: ord={ord!r} needs singular values (an SVD), which "
                                      "vyre.array does not compute", fix="use ord='fro', 1, -1, inf or -inf")
    out = x.dtype
    wide = astype(x, D.float32) if out == D.float16 else x
    if ord == "fro":
        return _back(sqrt(_sum(wide * wide, axis=(-2, -1), keepdims=keepdims)), out)
    pairs = {1: (-2, _largest), -1: (-2, _min), math.inf: (-1, _largest), -math.inf: (-1, _min)}
    if isinstance(ord, builtins.bool) or ord not in pairs:
        raise DispatchError(f"matrix_norm: unknown ord {ord!r}", fix="use 'fro', 1, -1, inf or -inf")
    inner, pick = pairs[ord]
    sums = _sum(_abs(wide), axis=inner, keepdims=True)  # column sums (1, -1) or row sums (inf, -inf)
    r = pick(sums, axis=-1 if inner == -2 else -2, keepdims=True)
    if not keepdims:
        from ._views import reshape
        r = reshape(r, x.shape[:-2])
    return _back(r, out)


def matrix_power(x: Array, n: int, /) -> Array:
    """``x`` (square matrices, (..., M, M)) raised to the integer power ``n`` >= 0 by repeated squaring
    (n = 0: the identity). A negative ``n`` needs an inverse: UnsupportedFeatureError."""
    x = _check(x, "matrix_power")
    k = _int(n, "matrix_power: n")
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise DispatchError(f"matrix_power: needs square matrices (..., M, M), got shape {list(x.shape)}",
                            fix="pass a stack of square matrices")
    if k < 0:
        raise UnsupportedFeatureError("matrix_power: a negative power needs a matrix inverse, which vyre.array "
                                      "does not compute", fix="pass n >= 0")
    if x.dtype == D.bool:
        raise DispatchError("matrix_power: needs a numeric array", fix="convert with astype first")
    if k == 0:
        from ._creation import eye
        from ._views import broadcast_to
        return broadcast_to(eye(x.shape[-1], dtype=x.dtype, device=x.device), x.shape)
    result: Array | None = None
    base = x
    while True:
        if k & 1:
            result = base if result is None else matmul(result, base)
        k >>= 1
        if not k:
            break
        base = matmul(base, base)
    assert result is not None
    if result is x:  # a new array, as for every other power
        from ._functions import astype
        return astype(x, x.dtype, copy=True)
    return result


__all__ = ["cross", "diagonal", "matmul", "matrix_norm", "matrix_power", "matrix_transpose", "outer", "tensordot",
           "trace", "vecdot", "vector_norm"]
