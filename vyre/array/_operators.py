"""The array object's operators and function methods, bound to :class:`~vyre.array._array.Array` when
vyre.array is imported: each is the namespace's function itself (``x + y`` is ``add(x, y)``, ``x @ y``
``matmul``, ``x[k]`` ``getitem``, ``x.sum()`` ``sum``, ...), so the modules defining them import
vyre/array/_array.py and it imports none of them (no import cycle, no lookup per call). The class
declares them for type checkers; the in-place operators (``x += y``: the result committed into x) are
methods of the class, written with these operators.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import InvalidArgumentError
from . import _elementwise as E
from ._array import Array
from ._creation import asarray
from ._device import check_backend
from ._dtypes import astype
from ._indexing import getitem, setitem
from ._interop import wgpu_buffer
from ._linalg import matmul
from ._searching import argmax, argmin
from ._statistical import max, mean, min, prod, sum  # noqa: A004 - the standard's names
from ._views import permute_dims, reshape

if TYPE_CHECKING:
    from ..backends.base import Backend

Binary = Callable[[Any, Any], Array]


def _reflected(name: str, fn: Binary) -> Binary:
    def op(self: Any, other: Any, /) -> Array:  # positional-only, as the standard's operator methods
        return fn(other, self)
    op.__name__ = op.__qualname__ = name
    return op


_BINARY: dict[str, Binary] = {
    "add": E.add, "sub": E.subtract, "mul": E.multiply, "truediv": E.divide, "floordiv": E.floor_divide,
    "mod": E.remainder, "pow": E.pow, "and": E.bitwise_and, "or": E.bitwise_or, "xor": E.bitwise_xor,
    "lshift": E.bitwise_left_shift, "rshift": E.bitwise_right_shift, "matmul": matmul,
}
_COMPARISONS: dict[str, Binary] = {
    "lt": E.less, "le": E.less_equal, "gt": E.greater, "ge": E.greater_equal, "eq": E.equal, "ne": E.not_equal,
}
_UNARY: dict[str, Callable[[Array], Array]] = {
    "neg": E.negative, "pos": E.positive, "abs": E.abs, "invert": E.bitwise_invert,
}


def _mT(x: Array) -> Array:  # noqa: N802 - the standard's name
    """The last two axes swapped (a lazy view)."""
    if x.ndim < 2:
        raise InvalidArgumentError("mT needs an array of at least 2 dimensions", fix="use expand_dims first")
    return permute_dims(x, (*range(x.ndim - 2), x.ndim - 1, x.ndim - 2))


def _T(x: Array) -> Array:  # noqa: N802
    """The transpose of a 2-D array (a lazy view)."""
    if x.ndim != 2:
        raise InvalidArgumentError("T is for 2-D arrays (the standard)", fix="use permute_dims or mT")
    return permute_dims(x, (1, 0))


def _to_device(x: Array, device: Backend, /, *, stream: Any = None) -> Array:
    """A copy on ``device`` (another backend), through the host; the same array when already there."""
    check_backend(device, "to_device")
    if device is x.device:
        return x
    return asarray(np.asarray(x), device=device)


def bind(wrap: Callable[..., Any] | None = None) -> None:
    """Set the operators and function methods on :class:`Array` (see the module docstring). ``wrap(fn,
    name=None)``: what each function becomes (vyre/array/_record.py's ``recorded``, so the tape sees the
    operators and methods as it sees the namespace's functions; the comparisons give bools and are not
    wrapped). The first binding, at import, uses the functions themselves."""
    w: Callable[..., Any] = wrap if wrap is not None else (lambda fn, name=None: fn)
    reshape_: Callable[..., Array] = w(reshape)
    astype_: Callable[..., Array] = w(astype)

    def _reshape(x: Array, *shape: Any) -> Array:
        """``reshape(x, shape)``, the shape given as one tuple or as separate ints."""
        return reshape_(x, shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape)

    def _astype(x: Array, dtype: Any, copy: bool = True) -> Array:
        return astype_(x, dtype, copy=copy)

    def _reduction(fn: Callable[..., Array]) -> Callable[..., Array]:
        def method(self: Array, axis: Any = None, keepdims: bool = False) -> Array:
            return fn(self, axis=axis, keepdims=keepdims)
        method.__name__ = method.__qualname__ = fn.__name__
        method.__doc__ = fn.__doc__
        return method

    methods: dict[str, Any] = {}
    for name, fn in _BINARY.items():
        fn = w(fn)
        methods[f"__{name}__"] = fn
        methods[f"__r{name}__"] = _reflected(f"__r{name}__", fn)
    methods.update({f"__{name}__": fn for name, fn in _COMPARISONS.items()})
    methods.update({f"__{name}__": w(fn) for name, fn in _UNARY.items()})
    methods.update(__getitem__=w(getitem), __setitem__=setitem, mT=property(w(_mT, "matrix_transpose")),
                   T=property(w(_T, "matrix_transpose")), wgpu_buffer=property(wgpu_buffer, doc=wgpu_buffer.__doc__),
                   to_device=w(_to_device, "to_device"), reshape=_reshape, astype=_astype)
    methods.update({fn.__name__: _reduction(w(fn)) for fn in (sum, prod, min, max, mean, argmax, argmin)})
    for name, value in methods.items():
        setattr(Array, name, value)


bind()

__all__: list[str] = []
