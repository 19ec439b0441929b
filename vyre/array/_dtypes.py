"""The standard's data types and data type functions (2024.12): the dtype objects (bool, int32, uint32,
int64, uint64, float32, float16, float64, complex64, complex128),
``astype``, ``can_cast``, ``finfo``, ``iinfo``, ``isdtype`` and
``result_type``.

The tables behind them (supported dtypes, their IR types, the promotion rule, the range check of Python
scalars) are in vyre/array/_kernels/dtypes.py, where the kernels and the array object read them; its
module docstring gives the promotion choices (mixed kinds are implementation-defined in the standard).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import UnsupportedDTypeError
from ._array import Array
from ._device import check_dtype_on
from ._kernels.dtypes import FLOATS as FLOATS
from ._kernels.dtypes import INTS as INTS
from ._kernels.dtypes import SUPPORTED as SUPPORTED
from ._kernels.dtypes import DType as DType
from ._kernels.dtypes import as_dtype as as_dtype
from ._kernels.dtypes import bool as bool  # noqa: A004 - the standard's name
from ._kernels.dtypes import check_scalar as check_scalar
from ._kernels.dtypes import complex64 as complex64
from ._kernels.dtypes import complex128 as complex128
from ._kernels.dtypes import complex_of, is_complex, real_of
from ._kernels.dtypes import float16 as float16
from ._kernels.dtypes import float32 as float32
from ._kernels.dtypes import float64 as float64
from ._kernels.dtypes import int32 as int32
from ._kernels.dtypes import int64 as int64
from ._kernels.dtypes import ir_type as ir_type
from ._kernels.dtypes import is_float as is_float
from ._kernels.dtypes import is_int as is_int
from ._kernels.dtypes import promote as promote
from ._kernels.dtypes import uint32 as uint32
from ._kernels.dtypes import uint64 as uint64
from ._kernels.nodes import Map

if TYPE_CHECKING:
    from ..backends.base import Backend


def result_type(*arrays_and_dtypes: Any) -> DType:
    """The promoted dtype of arrays and dtypes (Python scalars are ignored when an array is present, per the
    standard; alone they give int32/float32/bool). A real numpy scalar counts as the Python scalar of its kind."""
    arrays_and_dtypes = tuple(a.item() if isinstance(a, np.generic) and a.dtype.kind in "biufc" else a
                              for a in arrays_and_dtypes)
    dts = [a.dtype if isinstance(a, Array) else as_dtype(a) for a in arrays_and_dtypes
           if not isinstance(a, (int, float, complex)) or isinstance(a, np.generic)]
    cplx = any(isinstance(a, complex) for a in arrays_and_dtypes)
    if dts and cplx:  # a Python complex makes real floating (or integer) operands complex
        out = dts[0]
        for d in dts[1:]:
            out = promote(out, d)
        return out if is_complex(out) else complex_of(out) if out.kind == "f" else complex64
    if not dts:
        if cplx:
            return complex64
        if any(isinstance(a, float) for a in arrays_and_dtypes):
            return float32
        if any(isinstance(a, int) and not isinstance(a, builtins.bool) for a in arrays_and_dtypes):
            return int32
        if arrays_and_dtypes:
            return bool
        raise UnsupportedDTypeError("result_type() needs at least one array or dtype", fix="pass one")
    out = dts[0]
    for d in dts[1:]:
        out = promote(out, d)
    return out


def can_cast(from_: Any, to: Any) -> builtins.bool:
    """Whether promotion alone may turn ``from_`` into ``to`` (the standard's table, kinds not mixed: a wider
    type of the same kind, uint32 -> int64)."""
    f = from_.dtype if isinstance(from_, Array) else as_dtype(from_)
    t = as_dtype(to)
    if f == t or f == bool:
        return True
    if is_complex(t) and (is_float(f) or is_complex(f)):  # complex64 holds float16/float32 exactly
        return real_of(t).itemsize >= real_of(f).itemsize  # (f == t returned above)
    if is_complex(f) or is_complex(t):
        return False
    if is_float(f) and is_float(t):
        return t.itemsize > f.itemsize
    if f.kind == t.kind:
        return t.itemsize > f.itemsize
    return (f, t) == (uint32, int64)


def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    """The standard's ``isdtype``: ``kind`` is a dtype, a kind name ('bool', 'signed integer',
    'unsigned integer', 'integral', 'real floating', 'complex floating', 'numeric') or a tuple of those."""
    d = as_dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(d, k) for k in kind)
    if not isinstance(kind, str):
        return d == as_dtype(kind)
    kinds = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
             "real floating": "f", "complex floating": "c", "numeric": "iufc"}
    if kind not in kinds:
        raise UnsupportedDTypeError(f"isdtype: unknown kind {kind!r}", fix="use one of " + ", ".join(kinds))
    return d.kind in kinds[kind]


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's names
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801
    bits: int
    max: int
    min: int
    dtype: DType


def finfo(type: Any) -> finfo_object:  # noqa: A002 - the standard's signature
    """Machine limits of a float dtype (of a complex dtype: those of its real components, the standard)."""
    d = type.dtype if isinstance(type, Array) else as_dtype(type)
    d = real_of(d)
    if not is_float(d):
        raise UnsupportedDTypeError(f"finfo: {d} is not a floating dtype", fix="use iinfo for integers")
    f = np.finfo(d)
    return finfo_object(f.bits, float(f.eps), float(f.max), float(f.min), float(f.smallest_normal), d)


def iinfo(type: Any) -> iinfo_object:  # noqa: A002
    """Machine limits of an integer dtype."""
    d = type.dtype if isinstance(type, Array) else as_dtype(type)
    if not is_int(d):
        raise UnsupportedDTypeError(f"iinfo: {d} is not an integer dtype", fix="use finfo for floats")
    i = np.iinfo(d)
    return iinfo_object(i.bits, int(i.max), int(i.min), d)


def astype(x: Array, dtype: Any, /, *, copy: builtins.bool = True, device: Backend | None = None) -> Array:
    """``x`` converted to ``dtype`` (float -> int truncates toward zero and saturates; NaN -> 0); the same
    array when ``copy=False`` and the dtype matches. Real -> complex sets the imaginary part to 0; complex
    -> a real number type is refused (the standard: take ``real``/``abs`` first); complex -> bool is
    ``x != 0``."""
    dt = as_dtype(dtype, "astype")
    if is_complex(x.dtype) and not is_complex(dt) and dt != bool:
        raise UnsupportedDTypeError(f"astype: {x.dtype} -> {dt} would drop the imaginary part (the standard "
                                    "does not allow it)", fix="use real(x), imag(x) or abs(x) first")
    if device is not None and device is not x.device:
        x = x.to_device(device)
    if dt == x.dtype and not copy:
        return x
    check_dtype_on(x.device, dt)
    return Array(x.shape, dt, x.device, Map("astype" if dt != x.dtype else "positive", (x._node(),), dt, x.shape))


__all__ = ["bool", "int32", "uint32", "int64", "uint64", "float32", "float16", "float64", "complex64", "complex128",
           "astype", "result_type",
           "can_cast", "isdtype", "finfo", "iinfo"]
