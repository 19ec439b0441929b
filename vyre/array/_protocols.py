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
* ``__array_function__``: the numpy functions with a vyre.array equivalent (``FUNCTIONS`` of
  vyre/array/_numpy_functions.py, one adapter each: numpy's parameter names, the ones vyre has no
  equivalent for refused when given).

Everything else (another ufunc method such as ``np.add.reduce``, ``out=``, a numpy function not in the
table, a numpy array mixed with a vyre array -- except in ``np.allclose`` and ``np.array_equal``, which answer
a Python bool and then compare on the host) raises ArgumentTypeError saying how to do it: the
vyre.array function, or ``np.asarray(x)`` to compute on the host (a download). ``np.asarray(x)`` itself is
``__array__`` (a download), unchanged.
"""

from __future__ import annotations

import builtins
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from ..errors import ArgumentTypeError
from . import _elementwise as E
from . import _linalg as L
from ._array import Array
from ._creation import asarray
from ._device import current_backend
from ._dtypes import astype
from ._numpy_functions import FUNCTIONS, refuse

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
    fn = FUNCTIONS.get(func)
    name = getattr(func, "__name__", repr(func))
    if fn is None:
        module = getattr(func, "__module__", None) or "numpy"
        ours = sys.modules[__name__.rpartition(".")[0]]  # vyre.array (imported before its submodules)
        hint = f"use vyre.array.{name}" if module == "numpy" and hasattr(ours, name) else \
            f"vyre.array has no equivalent of {module}.{name}: compose it from vyre.array's functions"
        raise ArgumentTypeError(f"{module}.{name} does not run on vyre arrays", fix=f"{hint}, {_HOST}")
    refuse(name, out=kwargs.get("out"))
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
