"""Statistical functions of the standard (sum, prod, min, max, mean, var, std, cumulative_sum, cumulative_prod)
with axis (None, an int, a tuple; negative counts from the end) and keepdims. Every reduction fuses the
pending elementwise work that feeds it (``(a * b).sum()`` is one kernel reading ``a`` and ``b``); the
kernels are in vyre/array/_kernels (reduce.py and the reduce_* modules; scan.py for the cumulative ones).

dtype rules (2024.12): sum/prod keep int32, uint32, float32 and float16 (the standard's "same dtype unless a
narrower integer"); bool (not numeric in the standard; numpy accepts it) sums to int32, the default integer;
``dtype=`` converts each element before accumulating. Integers wrap. float16 accumulates in f32 and rounds
once at the end. mean/var/std take floats only. Empty reductions: sum 0, prod 1, mean/var/std NaN (numpy
too), min/max raise DispatchError (numpy raises ValueError). min/max propagate NaN. var is two-pass (mean,
then the sum of squared deviations, divided by max(N - correction, 0) as numpy does).
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Any

from ..errors import ArgumentTypeError, AxisError, DispatchError, InvalidArgumentError
from . import _dtypes as D
from ._array import Array
from ._complex import dispatch as complex_form
from ._creation import full, zeros
from ._device import check_dtype_on
from ._elementwise import sqrt
from ._kernels.dtypes import DType
from ._kernels.reduce import reduce_node
from ._kernels.reduction import Reduction
from ._kernels.scan import scan

Axis = int | tuple[int, ...] | None


def _check(x: Any, name: str, kinds: str) -> None:
    if not isinstance(x, Array):
        raise ArgumentTypeError(f"{name}: x must be a vyre array, not {type(x).__name__}",
                                fix="wrap it with vyre.array.asarray(x)")
    if x.dtype.kind not in kinds:
        what = {"f": "floating-point", "iuf": "real numeric", "biuf": "numeric or bool"}[kinds]
        raise ArgumentTypeError(f"{name}: needs a {what} array, not {x.dtype}",
                                fix="convert first, e.g. x.astype(vyre.array.float32)")


def normalize_axes(axis: Axis, ndim: int, name: str) -> tuple[int, ...]:
    """``axis`` as sorted distinct non-negative axes (None: all); a typed error when out of range."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in items:
        try:
            k = operator.index(a)
        except TypeError:
            raise ArgumentTypeError(f"{name}: axis must be an int or a tuple of ints, not {a!r}",
                                    fix="pass axis=None, an int or a tuple of ints") from None
        if not -ndim <= k < ndim:
            raise AxisError(f"{name}: axis {k} is out of range for {ndim} dimension(s)",
                            fix=f"use an axis in [{-ndim}, {ndim})")
        out.append(k % ndim)
    if len(set(out)) != len(out):
        raise AxisError(f"{name}: repeated axis in {axis!r}", fix="name each axis once")
    return tuple(sorted(out))


def _out_shape(shape: tuple[int, ...], axes: tuple[int, ...], keepdims: bool) -> tuple[int, ...]:
    if keepdims:
        return tuple(1 if d in axes else n for d, n in enumerate(shape))
    return tuple(n for d, n in enumerate(shape) if d not in axes)


def _sum_dtype(x: Array, dtype: Any, name: str) -> DType:
    if dtype is None:
        return D.int32 if x.dtype == D.bool else x.dtype
    d = D.as_dtype(dtype, f"{name} dtype")
    if d == D.bool:
        raise InvalidArgumentError(f"{name}: dtype=bool is not a numeric accumulator",
                                   fix="use int32, uint32, float32 or float16")
    check_dtype_on(x.device, d)
    return d


def _acc(d: DType) -> str:
    return ("f64" if d == D.float64 else "f32") if d.kind == "f" else D.ir_type(d).value


def _reduce(x: Array, op: str, axis: Axis, keepdims: bool, out: DType, name: str, *,
            empty: float | None, divide: bool = False) -> Array:
    axes = normalize_axes(axis, x.ndim, name)
    shape = _out_shape(x.shape, axes, keepdims)
    n = math.prod(x.shape[d] for d in axes)
    if n == 0:
        if empty is None:
            raise InvalidArgumentError(f"{name}: reduction over zero elements has no identity (shape "
                                       f"{list(x.shape)}, axis {axis!r})", fix="check the array is not empty first")
        return zeros(shape, dtype=out, device=x.device) if empty == 0 else full(
            shape, empty if out.kind == "f" else int(empty), dtype=out, device=x.device)
    red = Reduction(op, _acc(out), out, float(n) if divide else 0.0)
    return reduce_node(red, x._node(), axes, shape, x.device)


def sum(x: Array, /, *, axis: Axis = None, dtype: Any = None, keepdims: bool = False) -> Array:  # noqa: A001
    """Sum over ``axis`` (see the module docstring for dtypes, wrapping and float16)."""
    if isinstance(x, Array) and x.dtype.kind == "c":
        return complex_form("sum", x, axis=axis, dtype=dtype, keepdims=keepdims)
    _check(x, "sum", "biuf")
    return _reduce(x, "sum", axis, keepdims, _sum_dtype(x, dtype, "sum"), "sum", empty=0)


def prod(x: Array, /, *, axis: Axis = None, dtype: Any = None, keepdims: bool = False) -> Array:
    """Product over ``axis`` (integers wrap)."""
    if isinstance(x, Array) and x.dtype.kind == "c":
        return complex_form("prod", x, axis=axis, dtype=dtype, keepdims=keepdims)
    _check(x, "prod", "biuf")
    return _reduce(x, "prod", axis, keepdims, _sum_dtype(x, dtype, "prod"), "prod", empty=1)


def min(x: Array, /, *, axis: Axis = None, keepdims: bool = False) -> Array:  # noqa: A001
    """Minimum over ``axis`` (NaN propagates; an empty reduction raises)."""
    _check(x, "min", "iuf")
    return _reduce(x, "min", axis, keepdims, x.dtype, "min", empty=None)


def max(x: Array, /, *, axis: Axis = None, keepdims: bool = False) -> Array:  # noqa: A001
    """Maximum over ``axis`` (NaN propagates; an empty reduction raises)."""
    _check(x, "max", "iuf")
    return _reduce(x, "max", axis, keepdims, x.dtype, "max", empty=None)


def mean(x: Array, /, *, axis: Axis = None, keepdims: bool = False) -> Array:
    """Arithmetic mean over ``axis`` (floats; summed in f32, divided by N in f32)."""
    if isinstance(x, Array) and x.dtype.kind == "c":
        return complex_form("mean", x, axis=axis, keepdims=keepdims)
    _check(x, "mean", "f")
    return _reduce(x, "sum", axis, keepdims, x.dtype, "mean", empty=math.nan, divide=True)


def var(x: Array, /, *, axis: Axis = None, correction: int | float = 0.0, keepdims: bool = False) -> Array:
    """Variance over ``axis``: sum((x - mean)^2) / max(N - correction, 0), two passes in f32 (f64 for
    float64)."""
    _check(x, "var", "f")
    return _var(x, axis, correction, keepdims, "var")


def std(x: Array, /, *, axis: Axis = None, correction: int | float = 0.0, keepdims: bool = False) -> Array:
    """Standard deviation over ``axis``: sqrt of :func:`var` (computed in f32; f64 for float64)."""
    _check(x, "std", "f")
    v = _var(x, axis, correction, keepdims, "std", cast=False)
    return _back(sqrt(v), x.dtype)


def _back(v: Array, dtype: DType) -> Array:
    return v if v.dtype == dtype else D.astype(v, dtype)


def _var(x: Array, axis: Axis, correction: Any, keepdims: bool, name: str, cast: bool = True) -> Array:
    if isinstance(correction, builtins.bool) or not isinstance(correction, (int, float)) or correction < 0:
        raise InvalidArgumentError(f"{name}: correction must be a non-negative int or float, not {correction!r}",
                                   fix="e.g. correction=1 for the unbiased sample variance")
    axes = normalize_axes(axis, x.ndim, name)
    n = math.prod(x.shape[d] for d in axes)
    work = D.float64 if x.dtype == D.float64 else D.float32
    xf = D.astype(x, work) if x.dtype != work else x  # lazy: fused into both passes
    if n == 0:
        shape = _out_shape(x.shape, axes, keepdims)
        return full(shape, math.nan, dtype=work if not cast else x.dtype, device=x.device)
    m = _reduce(xf, "sum", axes, True, work, name, empty=math.nan, divide=True)
    d = xf - m
    ss = _reduce(d * d, "sum", axes, keepdims, work, name, empty=math.nan)
    v = ss / float(builtins.max(n - correction, 0))
    return _back(v, x.dtype) if cast else v


def _cumulative(x: Array, op: str, axis: int | None, out_dtype: DType, include_initial: bool,
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
    red = Reduction(op, _acc(out_dtype), out_dtype)
    res = Array(shape, out_dtype, x.device)
    if outer * inner == 0 or (length == 0 and not include_initial):
        res._allocate()
        return res
    if length == 0:  # only the initial values
        return full(shape, 0 if op == "sum" else 1, dtype=out_dtype, device=x.device)
    return scan(red, x._node(), (outer, length, inner), include_initial, res)  # deferred, parallel along axis


def cumulative_sum(x: Array, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> Array:
    """Running sums along ``axis`` (optional for 1-d arrays); ``include_initial`` prepends 0."""
    if isinstance(x, Array) and x.dtype.kind == "c":
        return complex_form("cumulative_sum", x, axis=axis, dtype=dtype, include_initial=include_initial)
    _check(x, "cumulative_sum", "biuf")
    return _cumulative(x, "sum", axis, _sum_dtype(x, dtype, "cumulative_sum"), include_initial, "cumulative_sum")


def cumulative_prod(x: Array, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> Array:
    """Running products along ``axis`` (optional for 1-d arrays); ``include_initial`` prepends 1."""
    if isinstance(x, Array) and x.dtype.kind == "c":
        return complex_form("cumulative_prod", x, axis=axis, dtype=dtype, include_initial=include_initial)
    _check(x, "cumulative_prod", "biuf")
    return _cumulative(x, "prod", axis, _sum_dtype(x, dtype, "cumulative_prod"), include_initial,
                      "cumulative_prod")


__all__ = ["sum", "prod", "min", "max", "mean", "var", "std", "cumulative_sum", "cumulative_prod"]
