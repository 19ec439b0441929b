"""numpy's functions on vyre arrays (``__array_function__``, bound in :mod:`vyre.array._protocols`): one
adapter per numpy function that has a vyre.array equivalent of the same semantics, taking numpy's
parameter names and refusing (ArgumentTypeError) the ones vyre has no equivalent for, and the table
``FUNCTIONS`` from numpy function to adapter."""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..errors import ArgumentTypeError
from . import _elementwise as E
from . import _linalg as L
from . import _manipulation as M
from . import _searching as S
from . import _sorting as SO
from . import _statistical as ST
from . import _utility as U
from ._array import Array
from ._creation import asarray, empty_like, full_like, meshgrid, ones_like, tril, triu, zeros_like
from ._dtypes import astype
from ._indexing import take, take_along_axis

_HOST = "or compute on the host: np.asarray(x) downloads the array to numpy"


# ---- numpy: shared helpers ----------------------------------------------------------------------------

def refuse(what: str, **given: Any) -> None:
    """ArgumentTypeError for the first numpy argument vyre has no equivalent of (given: not None)."""
    for name, value in given.items():
        if value is not None:
            raise ArgumentTypeError(f"numpy.{what} on vyre arrays: {name}= has no vyre.array equivalent",
                                    fix=f"call it without {name}= (results are new vyre arrays), use the "
                                        f"vyre.array function, {_HOST}")


def _dims(shape: Any) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(shape)


def _flat(x: Any) -> Any:
    return M.reshape(x, (-1,)) if isinstance(x, Array) else x


def _keep(keepdims: Any) -> builtins.bool:
    return builtins.bool(keepdims) if keepdims is not None else False


def _reduction(fn: Callable[..., Array], with_dtype: builtins.bool, with_initial: builtins.bool) -> Callable[..., Any]:
    name = fn.__name__

    def adapter(a: Any, axis: Any = None, *args: Any, out: Any = None, keepdims: Any = None, dtype: Any = None,
                initial: Any = None, where: Any = None) -> Array:
        # numpy's positional order: sum/prod (a, axis, dtype, out, keepdims, initial, where),
        # mean/all/any (a, axis, dtype|out, ...), max/min (a, axis, out, keepdims, initial, where)
        names = (["dtype"] if with_dtype else []) + ["out", "keepdims"] + (["initial"] if with_initial else []) \
            + ["where"]
        extra = dict(zip(names, args))
        dtype, out = extra.get("dtype", dtype), extra.get("out", out)
        keepdims = extra.get("keepdims", keepdims)
        initial, where = extra.get("initial", initial), extra.get("where", where)
        refuse(name, out=out, initial=initial, where=None if where is True else where)
        kw: dict[str, Any] = {"axis": axis, "keepdims": _keep(keepdims)}
        if dtype is not None:
            if not with_dtype or fn not in (ST.sum, ST.prod):
                refuse(name, dtype=dtype)
            kw["dtype"] = dtype
        return fn(a, **kw)
    adapter.__name__ = name
    return adapter


def _spread(name: str, fn: Callable[..., Array]) -> Callable[..., Array]:
    """std/var: numpy (a, axis, dtype, out, ddof, keepdims, *, where, mean, correction)."""
    def adapter(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: Any = None,
                *, where: Any = None, mean: Any = None, correction: Any = None) -> Array:
        refuse(name, dtype=dtype, out=out, where=None if where is True else where, mean=mean)
        return fn(a, axis=axis, correction=ddof if correction is None else correction, keepdims=_keep(keepdims))
    return adapter


def _arg(fn: Callable[..., Array]) -> Callable[..., Array]:
    def adapter(a: Any, axis: Any = None, out: Any = None, *, keepdims: Any = None) -> Array:
        refuse(fn.__name__, out=out)
        return fn(a, axis=axis, keepdims=_keep(keepdims))
    return adapter


def _np_where(condition: Any, x: Any = None, y: Any = None, /) -> Any:
    if x is None and y is None:
        return S.nonzero(condition)
    return E.where(condition, x, y)


def _concatenate(arrays: Any, /, axis: Any = 0, out: Any = None, *, dtype: Any = None,
                 casting: Any = None) -> Array:
    refuse("concatenate", out=out, dtype=dtype, casting=casting)
    return M.concat(list(arrays), axis=axis)


def _stack(arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None, casting: Any = None) -> Array:
    refuse("stack", out=out, dtype=dtype, casting=casting)
    return M.stack(list(arrays), axis=axis)


def _order(what: str, order: Any) -> None:
    if order not in (None, "C", "A", "K"):
        raise ArgumentTypeError(f"numpy.{what} on vyre arrays: order={order!r}: vyre arrays are row-major (C)",
                                fix=f"pass order='C' (the default), {_HOST}")


def _np_reshape(a: Any, /, shape: Any = None, order: Any = "C", *, newshape: Any = None, copy: Any = None) -> Array:
    _order("reshape", order)
    s = newshape if shape is None else shape
    return M.reshape(a, _dims(s), copy=copy)


def _transpose(a: Any, axes: Any = None) -> Array:
    if not isinstance(a, Array):
        raise ArgumentTypeError("numpy.transpose: expected a vyre array", fix="convert with vyre.array.asarray")
    return M.permute_dims(a, tuple(range(a.ndim))[::-1] if axes is None else tuple(axes))


def _dot(a: Any, b: Any, out: Any = None) -> Array:
    refuse("dot", out=out)
    if isinstance(a, Array) and isinstance(b, Array):
        if a.ndim == 0 or b.ndim == 0:
            return E.multiply(a, b)
        if a.ndim == 1 and b.ndim == 1:
            return L.vecdot(a, b)
        if a.ndim <= 2 and b.ndim <= 2:
            return L.matmul(a, b)
        raise ArgumentTypeError(f"numpy.dot of {a.ndim}-d and {b.ndim}-d vyre arrays: only 1-D and 2-D operands "
                                "map to vyre.array (numpy's N-d dot is not matmul)",
                                fix=f"use vyre.array.matmul (x @ y) or tensordot, {_HOST}")
    return E.multiply(a, b)  # a scalar operand


def _sorter(fn: Callable[..., Array], what: str) -> Callable[..., Array]:
    def adapter(a: Any, axis: Any = -1, kind: Any = None, order: Any = None, *, stable: Any = None) -> Array:
        refuse(what, order=order)
        x = _flat(a) if axis is None else a
        return fn(x, axis=-1 if axis is None else axis, stable=True)
    return adapter


def _clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, *, min: Any = None,  # noqa: A002
          max: Any = None, **kwargs: Any) -> Array:  # noqa: A002
    refuse("clip", out=out, **{k: v for k, v in kwargs.items()})
    return E.clip(a, a_min if min is None else min, a_max if max is None else max)


def _cumulative(fn: Callable[..., Array], what: str) -> Callable[..., Array]:
    def adapter(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Array:
        refuse(what, out=out)
        x = _flat(a) if axis is None else a
        return fn(x, axis=0 if axis is None else axis, dtype=dtype)
    return adapter


def _np_take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: Any = None) -> Array:
    refuse("take", out=out, mode=None if mode == "raise" else mode)
    idx = indices if isinstance(indices, Array) else asarray(indices, device=a.device if isinstance(a, Array)
                                                             else None)
    return take(_flat(a) if axis is None else a, idx, axis=0 if axis is None else axis)


def _np_take_along_axis(arr: Any, indices: Any, axis: Any = -1) -> Array:
    if axis is None:
        return take_along_axis(_flat(arr), _flat(indices), axis=0)
    return take_along_axis(arr, indices, axis=axis)


def _squeeze(a: Any, axis: Any = None) -> Array:
    if axis is None:
        if not isinstance(a, Array):
            raise ArgumentTypeError("numpy.squeeze: expected a vyre array", fix="convert with vyre.array.asarray")
        axis = tuple(k for k, n in enumerate(a.shape) if n == 1)
        if not axis:
            return a
    return M.squeeze(a, axis)


def _round(a: Any, decimals: Any = 0, out: Any = None) -> Array:
    refuse("round", out=out)
    if decimals != 0:
        raise ArgumentTypeError(f"numpy.round on vyre arrays: decimals={decimals!r} has no vyre.array equivalent",
                                fix=f"scale first: vyre.array.round(x * 10**d) / 10**d, {_HOST}")
    return E.round(a)


def _outer(a: Any, b: Any, out: Any = None) -> Array:
    refuse("outer", out=out)
    return L.outer(_flat(a), _flat(b))


def _diff(a: Any, n: Any = 1, axis: Any = -1, prepend: Any = None, append: Any = None) -> Array:
    return U.diff(a, axis=axis, n=n, prepend=prepend, append=append)


def _two_d(what: str, a: Any, axis1: Any, axis2: Any) -> None:
    if not isinstance(a, Array) or a.ndim != 2 or (axis1 % 2, axis2 % 2) != (0, 1):
        raise ArgumentTypeError(f"numpy.{what} on vyre arrays maps to vyre.array only for 2-D arrays and the "
                                "default axes (numpy counts from the first axes, vyre from the last two)",
                                fix=f"use vyre.array.linalg.{what} (the last two axes), {_HOST}")


def _diagonal(a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1) -> Array:
    _two_d("diagonal", a, axis1, axis2)
    return L.diagonal(a, offset=offset)


def _trace(a: Any, offset: Any = 0, axis1: Any = 0, axis2: Any = 1, dtype: Any = None, out: Any = None) -> Array:
    refuse("trace", out=out)
    _two_d("trace", a, axis1, axis2)
    return L.trace(a, offset=offset, dtype=dtype)


def _like(fn: Callable[..., Array], what: str) -> Callable[..., Array]:
    def adapter(a: Any, dtype: Any = None, order: Any = None, subok: Any = None, shape: Any = None, *,
                device: Any = None) -> Array:
        refuse(what, shape=shape, device=device)
        _order(what, order)
        return fn(a, dtype=dtype)
    return adapter


def _full_like(a: Any, fill_value: Any, dtype: Any = None, order: Any = None, subok: Any = None, shape: Any = None,
               *, device: Any = None) -> Array:
    refuse("full_like", shape=shape, device=device)
    _order("full_like", order)
    return full_like(a, E.py_scalar(fill_value), dtype=dtype)


def _copy_fn(a: Any, order: Any = None, subok: Any = None) -> Array:
    _order("copy", order)
    if not isinstance(a, Array):
        raise ArgumentTypeError("numpy.copy: expected a vyre array", fix="convert with vyre.array.asarray")
    return astype(a, a.dtype, copy=True)


def _isclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: Any = False) -> Array:
    """numpy's isclose: |a - b| <= atol + rtol * |b|, infinities equal only to themselves (in float32)."""
    if not isinstance(a, Array) and not isinstance(b, Array):
        raise ArgumentTypeError("numpy.isclose: expected a vyre array", fix="convert with vyre.array.asarray")
    fa, fb = (astype(v, np.float32) if isinstance(v, Array) and v.dtype.kind != "f" else
              v if isinstance(v, Array) else float(E.py_scalar(v)) for v in (a, b))

    def fn(name: str, v: Any) -> Any:
        host: dict[str, Callable[[Any], Any]] = {"isfinite": math.isfinite, "isnan": math.isnan}
        return getattr(E, name)(v) if isinstance(v, Array) else host[name](v)
    tol = E.add(E.multiply(E.abs(fb), float(rtol)), float(atol)) if isinstance(fb, Array) else \
        float(atol) + float(rtol) * builtins.abs(fb)
    near = E.less_equal(E.abs(E.subtract(fa, fb)), tol)
    out = E.logical_or(E.logical_and(near, fn("isfinite", fb)), E.equal(fa, fb))
    if equal_nan:
        out = E.logical_or(out, E.logical_and(fn("isnan", fa), fn("isnan", fb)))
    return out


def _allclose(a: Any, b: Any, rtol: Any = 1e-05, atol: Any = 1e-08, equal_nan: Any = False) -> builtins.bool:
    return builtins.bool(U.all(_isclose(a, b, rtol, atol, equal_nan)))


def _array_equal(a1: Any, a2: Any, equal_nan: Any = False) -> builtins.bool:
    s1 = a1.shape if isinstance(a1, Array) else np.shape(a1)
    s2 = a2.shape if isinstance(a2, Array) else np.shape(a2)
    if tuple(s1) != tuple(s2):
        return False
    same = E.equal(a1, a2)
    if equal_nan:
        same = E.logical_or(same, E.logical_and(E.isnan(a1), E.isnan(a2)))
    return builtins.bool(U.all(same))


def _meshgrid(*xi: Any, copy: Any = True, sparse: Any = False, indexing: Any = "xy") -> list[Array]:
    if sparse:
        refuse("meshgrid", sparse=sparse)
    return meshgrid(*xi, indexing=indexing)


def _broadcast_to(array: Any, shape: Any, subok: Any = False) -> Array:
    return M.broadcast_to(array, _dims(shape))


def _tile(A: Any, reps: Any) -> Array:  # noqa: N803 - numpy's name
    return M.tile(A, _dims(reps))


def _repeat(a: Any, repeats: Any, axis: Any = None) -> Array:
    if isinstance(repeats, (list, tuple, np.ndarray)):
        repeats = asarray(np.asarray(repeats, dtype=np.int32), device=a.device if isinstance(a, Array) else None)
    return M.repeat(a, repeats, axis=axis)


def _expand_dims(a: Any, axis: Any) -> Array:
    return M.expand_dims(a, axis=axis)


def _flip(m: Any, axis: Any = None) -> Array:
    return M.flip(m, axis=axis)


def _roll(a: Any, shift: Any, axis: Any = None) -> Array:
    return M.roll(a, shift, axis=axis)


def _moveaxis(a: Any, source: Any, destination: Any) -> Array:
    return M.moveaxis(a, source, destination)


def _searchsorted(a: Any, v: Any, side: Any = "left", sorter: Any = None) -> Array:
    return S.searchsorted(a, v, side=side, sorter=sorter)


def _count_nonzero(a: Any, axis: Any = None, *, keepdims: Any = False) -> Array:
    return S.count_nonzero(a, axis=axis, keepdims=builtins.bool(keepdims))


def _tensordot(a: Any, b: Any, axes: Any = 2) -> Array:
    return L.tensordot(a, b, axes=axes)


def _tri(fn: Callable[..., Array]) -> Callable[..., Array]:
    def adapter(m: Any, k: Any = 0) -> Array:
        return fn(m, k=k)
    return adapter


def _shape(a: Any) -> tuple[int, ...]:
    return tuple(a.shape)


def _ndim(a: Any) -> int:
    return int(a.ndim)


def _size(a: Any, axis: Any = None) -> int:
    return int(a.size) if axis is None else int(a.shape[axis])


FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.sum: _reduction(ST.sum, True, True), np.prod: _reduction(ST.prod, True, True),
    np.max: _reduction(ST.max, False, True), np.min: _reduction(ST.min, False, True),
    np.mean: _reduction(ST.mean, True, False), np.all: _reduction(U.all, False, False),
    np.any: _reduction(U.any, False, False),
    np.std: _spread("std", ST.std), np.var: _spread("var", ST.var),
    np.argmax: _arg(S.argmax), np.argmin: _arg(S.argmin),
    np.where: _np_where, np.nonzero: S.nonzero, np.count_nonzero: _count_nonzero, np.searchsorted: _searchsorted,
    np.concatenate: _concatenate, np.stack: _stack, np.reshape: _np_reshape, np.transpose: _transpose,
    np.squeeze: _squeeze, np.expand_dims: _expand_dims, np.flip: _flip, np.roll: _roll, np.tile: _tile,
    np.repeat: _repeat, np.moveaxis: _moveaxis, np.broadcast_to: _broadcast_to,
    np.broadcast_arrays: lambda *args, subok=False: M.broadcast_arrays(*args), np.meshgrid: _meshgrid,
    np.dot: _dot, np.tensordot: _tensordot, np.outer: _outer, np.diagonal: _diagonal, np.trace: _trace,
    np.sort: _sorter(SO.sort, "sort"), np.argsort: _sorter(SO.argsort, "argsort"), np.clip: _clip,
    np.cumsum: _cumulative(ST.cumulative_sum, "cumsum"), np.cumprod: _cumulative(ST.cumulative_prod, "cumprod"),
    np.take: _np_take, np.take_along_axis: _np_take_along_axis, np.diff: _diff, np.round: _round,
    np.tril: _tri(tril), np.triu: _tri(triu), np.zeros_like: _like(zeros_like, "zeros_like"),
    np.ones_like: _like(ones_like, "ones_like"), np.empty_like: _like(empty_like, "empty_like"),
    np.full_like: _full_like, np.copy: _copy_fn, np.isclose: _isclose, np.allclose: _allclose,
    np.array_equal: _array_equal, np.shape: _shape, np.ndim: _ndim, np.size: _size,
}
# aliases numpy keeps as separate objects (np.amax is not np.max in every numpy)
for _alias, _canon in (("amax", "max"), ("amin", "min"), ("around", "round"), ("concat", "concatenate"),
                       ("permute_dims", "transpose")):
    if hasattr(np, _alias) and getattr(np, _alias) not in FUNCTIONS:
        FUNCTIONS[getattr(np, _alias)] = FUNCTIONS[getattr(np, _canon)]


__all__ = ["FUNCTIONS", "refuse"]
