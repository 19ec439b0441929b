"""Python's and numpy's protocols of the array object, bound to :class:`~vyre.array._array.Array` when
vyre.array is imported (after the namespace's functions, which they call):

* pickling (``__reduce__``): the values are downloaded; loading uploads them to the current default
  backend (the innermost ``vyre.use`` block, else :func:`vyre.default_backend`) -- a backend does not
  pickle, and the process loading may have another one;
* ``copy.copy`` / ``copy.deepcopy``: a new array with the same values on the same backend (a lazy copy:
  it fuses into its consumer; later in-place writes to either do not reach the other);
* ``__iter__``: the sub-arrays along the first axis, as numpy (a 0-d array is not iterable);
* ``__array_ufunc__``: the numpy ufuncs with a vyre.array function of the same semantics (``_UFUNCS``),
  called as ``ufunc(...)`` (method ``"__call__"``) without ``out=``/``where=``/``dtype=``; their results are
  vyre arrays on the operands' backend (numpy scalars and Python scalars combine as Python scalars do);
* ``__array_function__``: the numpy functions with a vyre.array equivalent (``_FUNCTIONS``, one adapter
  each: numpy's parameter names, the ones vyre has no equivalent for refused when given).

Everything else (another ufunc method such as ``np.add.reduce``, ``out=``, a numpy function not in the
table, a numpy array mixed with a vyre array -- except in ``np.allclose`` and ``np.array_equal``, which answer
a Python bool and then compare on the host) raises ArgumentTypeError saying how to do it: the
vyre.array function, or ``np.asarray(x)`` to compute on the host (a download). ``np.asarray(x)`` itself is
``__array__`` (a download), unchanged.
"""

from __future__ import annotations

import builtins
import math
import sys
from collections.abc import Callable, Iterator, Sequence
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
from ._device import current_backend
from ._dtypes import astype
from ._indexing import take, take_along_axis

_HOST = "or compute on the host: np.asarray(x) downloads the array to numpy"


# ---- pickle, copy, iteration ------------------------------------------------------------------------

def from_pickle(host: np.ndarray) -> Array:
    """An unpickled array: ``host``'s values uploaded to the current default backend."""
    return asarray(host, device=current_backend())


def _reduce(self: Array) -> tuple[Callable[[np.ndarray], Array], tuple[np.ndarray]]:
    return from_pickle, (np.asarray(self),)


def _copy(self: Array) -> Array:
    return astype(self, self.dtype, copy=True)


def _deepcopy(self: Array, memo: dict[int, Any]) -> Array:
    out = astype(self, self.dtype, copy=True)
    memo[id(self)] = out
    return out


def _iter(self: Array) -> Iterator[Array]:
    if self.ndim == 0:  # raised by iter(x) itself, as numpy does
        raise ArgumentTypeError("iteration over a 0-d array", fix="a 0-d array holds one value: use float(x), "
                                "int(x) or bool(x), or iterate over reshape(x, (1,))")
    return (self[i] for i in range(self.shape[0]))


# ---- numpy: shared helpers ----------------------------------------------------------------------------

def _refuse(what: str, **given: Any) -> None:
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
        _refuse(name, out=out, initial=initial, where=None if where is True else where)
        kw: dict[str, Any] = {"axis": axis, "keepdims": _keep(keepdims)}
        if dtype is not None:
            if not with_dtype or fn not in (ST.sum, ST.prod):
                _refuse(name, dtype=dtype)
            kw["dtype"] = dtype
        return fn(a, **kw)
    adapter.__name__ = name
    return adapter


def _spread(name: str, fn: Callable[..., Array]) -> Callable[..., Array]:
    """std/var: numpy (a, axis, dtype, out, ddof, keepdims, *, where, mean, correction)."""
    def adapter(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, ddof: Any = 0, keepdims: Any = None,
                *, where: Any = None, mean: Any = None, correction: Any = None) -> Array:
        _refuse(name, dtype=dtype, out=out, where=None if where is True else where, mean=mean)
        return fn(a, axis=axis, correction=ddof if correction is None else correction, keepdims=_keep(keepdims))
    return adapter


def _arg(fn: Callable[..., Array]) -> Callable[..., Array]:
    def adapter(a: Any, axis: Any = None, out: Any = None, *, keepdims: Any = None) -> Array:
        _refuse(fn.__name__, out=out)
        return fn(a, axis=axis, keepdims=_keep(keepdims))
    return adapter


def _np_where(condition: Any, x: Any = None, y: Any = None, /) -> Any:
    if x is None and y is None:
        return S.nonzero(condition)
    return E.where(condition, x, y)


def _concatenate(arrays: Any, /, axis: Any = 0, out: Any = None, *, dtype: Any = None,
                 casting: Any = None) -> Array:
    _refuse("concatenate", out=out, dtype=dtype, casting=casting)
    return M.concat(list(arrays), axis=axis)


def _stack(arrays: Any, axis: Any = 0, out: Any = None, *, dtype: Any = None, casting: Any = None) -> Array:
    _refuse("stack", out=out, dtype=dtype, casting=casting)
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
    _refuse("dot", out=out)
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
        _refuse(what, order=order)
        x = _flat(a) if axis is None else a
        return fn(x, axis=-1 if axis is None else axis, stable=True)
    return adapter


def _clip(a: Any, a_min: Any = None, a_max: Any = None, out: Any = None, *, min: Any = None,  # noqa: A002
          max: Any = None, **kwargs: Any) -> Array:  # noqa: A002
    _refuse("clip", out=out, **{k: v for k, v in kwargs.items()})
    return E.clip(a, a_min if min is None else min, a_max if max is None else max)


def _cumulative(fn: Callable[..., Array], what: str) -> Callable[..., Array]:
    def adapter(a: Any, axis: Any = None, dtype: Any = None, out: Any = None) -> Array:
        _refuse(what, out=out)
        x = _flat(a) if axis is None else a
        return fn(x, axis=0 if axis is None else axis, dtype=dtype)
    return adapter


def _np_take(a: Any, indices: Any, axis: Any = None, out: Any = None, mode: Any = None) -> Array:
    _refuse("take", out=out, mode=None if mode == "raise" else mode)
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
    _refuse("round", out=out)
    if decimals != 0:
        raise ArgumentTypeError(f"numpy.round on vyre arrays: decimals={decimals!r} has no vyre.array equivalent",
                                fix=f"scale first: vyre.array.round(x * 10**d) / 10**d, {_HOST}")
    return E.round(a)


def _outer(a: Any, b: Any, out: Any = None) -> Array:
    _refuse("outer", out=out)
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
    _refuse("trace", out=out)
    _two_d("trace", a, axis1, axis2)
    return L.trace(a, offset=offset, dtype=dtype)


def _like(fn: Callable[..., Array], what: str) -> Callable[..., Array]:
    def adapter(a: Any, dtype: Any = None, order: Any = None, subok: Any = None, shape: Any = None, *,
                device: Any = None) -> Array:
        _refuse(what, shape=shape, device=device)
        _order(what, order)
        return fn(a, dtype=dtype)
    return adapter


def _full_like(a: Any, fill_value: Any, dtype: Any = None, order: Any = None, subok: Any = None, shape: Any = None,
               *, device: Any = None) -> Array:
    _refuse("full_like", shape=shape, device=device)
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
        _refuse("meshgrid", sparse=sparse)
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


_FUNCTIONS: dict[Any, Callable[..., Any]] = {
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
    if hasattr(np, _alias) and getattr(np, _alias) not in _FUNCTIONS:
        _FUNCTIONS[getattr(np, _alias)] = _FUNCTIONS[getattr(np, _canon)]

_HOST_ANSWERS = (np.allclose, np.array_equal)  # answer a Python bool: given numpy arrays too, run on the host

_UFUNCS: dict[Any, Callable[..., Array]] = {
    np.add: E.add, np.subtract: E.subtract, np.multiply: E.multiply, np.true_divide: E.divide,
    np.floor_divide: E.floor_divide, np.remainder: E.remainder, np.power: E.pow, np.negative: E.negative,
    np.positive: E.positive, np.absolute: E.abs, np.square: E.square, np.sign: E.sign,
    np.reciprocal: E.reciprocal, np.sqrt: E.sqrt, np.exp: E.exp, np.expm1: E.expm1, np.log: E.log,
    np.log1p: E.log1p, np.log2: E.log2, np.log10: E.log10, np.sin: E.sin, np.cos: E.cos, np.tan: E.tan,
    np.arcsin: E.asin, np.arccos: E.acos, np.arctan: E.atan, np.arctan2: E.atan2, np.sinh: E.sinh,
    np.cosh: E.cosh, np.tanh: E.tanh, np.arcsinh: E.asinh, np.arccosh: E.acosh, np.arctanh: E.atanh,
    np.hypot: E.hypot, np.logaddexp: E.logaddexp, np.copysign: E.copysign, np.nextafter: E.nextafter,
    np.maximum: E.maximum, np.minimum: E.minimum, np.equal: E.equal, np.not_equal: E.not_equal,
    np.less: E.less, np.less_equal: E.less_equal, np.greater: E.greater, np.greater_equal: E.greater_equal,
    np.logical_and: E.logical_and, np.logical_or: E.logical_or, np.logical_xor: E.logical_xor,
    np.logical_not: E.logical_not, np.bitwise_and: E.bitwise_and, np.bitwise_or: E.bitwise_or,
    np.bitwise_xor: E.bitwise_xor, np.invert: E.bitwise_invert, np.left_shift: E.bitwise_left_shift,
    np.right_shift: E.bitwise_right_shift, np.floor: E.floor, np.ceil: E.ceil, np.trunc: E.trunc,
    np.rint: E.round, np.isnan: E.isnan, np.isinf: E.isinf, np.isfinite: E.isfinite, np.signbit: E.signbit,
    np.matmul: L.matmul,
}
if hasattr(np, "vecdot"):  # numpy >= 2.0
    _UFUNCS[np.vecdot] = L.vecdot
_REDUCE_FIX = {"add": "vyre.array.sum", "multiply": "vyre.array.prod", "maximum": "vyre.array.max",
               "minimum": "vyre.array.min", "logical_and": "vyre.array.all", "logical_or": "vyre.array.any"}
_ACCUMULATE_FIX = {"add": "vyre.array.cumulative_sum", "multiply": "vyre.array.cumulative_prod"}


def _mixed(what: str) -> ArgumentTypeError:
    return ArgumentTypeError(f"numpy.{what}: a numpy array mixed with a vyre array (arrays never move between "
                             "host and device silently)",
                             fix="upload it with vyre.array.asarray(a, device=x.device), " + _HOST)


def _operands(what: str, inputs: Sequence[Any]) -> list[Any]:
    """The operands of a numpy ufunc call on vyre arrays: vyre arrays, Python and numpy scalars (as Python
    ones); a numpy array (even 0-d) is refused."""
    out = []
    for v in inputs:
        if isinstance(v, np.ndarray):
            raise _mixed(what)
        out.append(E.py_scalar(v))
    return out


def _unset(key: str, value: Any) -> builtins.bool:
    """Whether a ufunc keyword holds numpy's default (out=None or (None,), where=True, casting='same_kind')."""
    if key == "out":
        return value is None or (isinstance(value, tuple) and builtins.all(v is None for v in value))
    if key == "where":
        return value is True
    return key == "casting" and value == "same_kind"


def _array_ufunc(self: Array, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    name = getattr(ufunc, "__name__", repr(ufunc))
    fn = _UFUNCS.get(ufunc)
    if method != "__call__":
        table = _REDUCE_FIX if method == "reduce" else _ACCUMULATE_FIX if method == "accumulate" else {}
        hint = f"use {table[name]}" if name in table else "use the vyre.array functions"
        raise ArgumentTypeError(f"numpy.{name}.{method} is not run on vyre arrays", fix=f"{hint}, {_HOST}")
    if fn is None:
        raise ArgumentTypeError(f"numpy.{name} has no vyre.array equivalent", fix=f"look for it in vyre.array, {_HOST}")
    given = [k for k, v in kwargs.items() if not _unset(k, v)]
    if given:
        raise ArgumentTypeError(f"numpy.{name} on vyre arrays: {', '.join(f'{k}=' for k in given)} has no "
                                "vyre.array equivalent",
                                fix="call it without them (the result is a new vyre array; x.astype(dtype) "
                                    f"converts it), {_HOST}")
    return fn(*_operands(name, inputs))


def _array_function(self: Array, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    fn = _FUNCTIONS.get(func)
    name = getattr(func, "__name__", repr(func))
    if fn is None:
        module = getattr(func, "__module__", None) or "numpy"
        ours = sys.modules[__name__.rpartition(".")[0]]  # vyre.array (imported before its submodules)
        hint = f"use vyre.array.{name}" if module == "numpy" and hasattr(ours, name) else \
            f"vyre.array has no equivalent of {module}.{name}: compose it from vyre.array's functions"
        raise ArgumentTypeError(f"{module}.{name} does not run on vyre arrays", fix=f"{hint}, {_HOST}")
    _refuse(name, out=kwargs.get("out"))
    if any(issubclass(t, np.ndarray) for t in types):
        if func in _HOST_ANSWERS:  # a Python bool either way: compare on the host (a download, as bool(x) is)
            return func(*[np.asarray(a) if isinstance(a, Array) else a for a in args], **kwargs)
        raise _mixed(name)
    return fn(*args, **kwargs)


def bind() -> None:
    """Set the protocols above on :class:`Array`."""
    for name, value in (("__reduce__", _reduce), ("__copy__", _copy), ("__deepcopy__", _deepcopy),
                        ("__iter__", _iter), ("__array_ufunc__", _array_ufunc),
                        ("__array_function__", _array_function)):
        setattr(Array, name, value)


bind()

__all__: list[str] = []
