"""The namespace's data types (numpy dtype objects), the standard's promotion table and its data-type
functions (``finfo``, ``iinfo``, ``result_type``, ``can_cast``, ``isdtype``).

Supported: bool, int32, uint32, float32, float16 (float16 only on backends with ``shader-f16``). The IR has no
64-bit types, so int64/uint64/float64 raise :class:`~vyre.errors.UnsupportedDTypeError`; numpy input of
those dtypes is refused (never narrowed silently).

Promotion follows the standard within a kind (int32 + uint32 has no common type there: vyre picks int32,
wrapping, like the IR's integer arithmetic). Mixed kinds are implementation-defined; vyre's choices:
bool + number -> the number's dtype; integer + float -> the float dtype (float16 + int32 -> float16, as
numpy does not). Python scalars take the array's dtype (range-checked: out of range raises); a Python float
with an integer or bool array gives float32, a Python int with a bool array int32.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import UnsupportedDTypeError
from ..ir.types import DataType

bool = np.dtype(np.bool_)  # noqa: A001 - the standard's name
int32 = np.dtype(np.int32)
uint32 = np.dtype(np.uint32)
float32 = np.dtype(np.float32)
float16 = np.dtype(np.float16)

SUPPORTED = (bool, int32, uint32, float32, float16)
INTS = (int32, uint32)
FLOATS = (float32, float16)
_IR = {bool: DataType.BOOL, int32: DataType.I32, uint32: DataType.U32, float32: DataType.F32, float16: DataType.F16}
_WIDE = {np.dtype(t) for t in (np.int64, np.uint64, np.float64, np.int16, np.int8, np.uint16, np.uint8,
                               np.complex64, np.complex128)}


def as_dtype(dtype: Any, what: str = "dtype") -> np.dtype:
    """``dtype`` (a numpy dtype, a type such as ``np.float32``, or a name) as one of the supported numpy
    dtypes; anything else raises UnsupportedDTypeError (64-bit types: the IR has none)."""
    if dtype is float:
        return float32
    if dtype is int:
        return int32
    try:
        d = np.dtype(dtype)
    except TypeError:
        raise UnsupportedDTypeError(f"{what}: {dtype!r} is not a data type",
                                    fix="use one of bool, int32, uint32, float32, float16") from None
    if d in SUPPORTED:
        return d
    why = ("the vyre IR has no 64-bit types (WGSL has none in its core)" if d.itemsize == 8 and d.kind in "iuf"
           else "vyre arrays hold bool, int32, uint32, float32 and float16 only")
    raise UnsupportedDTypeError(f"{what}: {d} is not supported: {why}",
                                fix=f"convert first (e.g. x.astype(np.{_narrow(d)})) or pick a supported dtype")


def _narrow(d: np.dtype) -> str:
    return {"f": "float32", "i": "int32", "u": "uint32", "b": "bool_"}.get(d.kind, "float32")


def ir_type(dtype: np.dtype) -> DataType:
    """The IR DataType of a supported numpy dtype."""
    return _IR[dtype]


def is_float(d: np.dtype) -> builtins.bool: return d.kind == "f"
def is_int(d: np.dtype) -> builtins.bool: return d.kind in "iu"


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """The promoted dtype of arrays and dtypes (Python scalars are ignored when an array is present, per the
    standard; alone they give int32/float32/bool)."""
    from ._array import Array
    dts = [a.dtype if isinstance(a, Array) else as_dtype(a) for a in arrays_and_dtypes
           if not isinstance(a, (int, float, complex)) or isinstance(a, np.generic)]
    if not dts:
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


def promote(a: np.dtype, b: np.dtype) -> np.dtype:
    """The pairwise promotion rule (see the module docstring for the mixed-kind choices)."""
    if a == b:
        return a
    if a == bool:
        return b
    if b == bool:
        return a
    if is_float(a) and is_float(b):
        return float32
    if is_float(a):
        return a
    if is_float(b):
        return b
    return int32  # int32 with uint32


def can_cast(from_: Any, to: Any) -> builtins.bool:
    """Whether promotion alone may turn ``from_`` into ``to`` (the standard's table, kinds not mixed)."""
    from ._array import Array
    f = from_.dtype if isinstance(from_, Array) else as_dtype(from_)
    t = as_dtype(to)
    if f == t or f == bool:
        return True
    return (f, t) == (float16, float32)


def isdtype(dtype: Any, kind: Any) -> builtins.bool:
    """The standard's ``isdtype``: ``kind`` is a dtype, a kind name ('bool', 'signed integer',
    'unsigned integer', 'integral', 'real floating', 'complex floating', 'numeric') or a tuple of those."""
    d = as_dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(d, k) for k in kind)
    if not isinstance(kind, str):
        return d == as_dtype(kind)
    kinds = {"bool": "b", "signed integer": "i", "unsigned integer": "u", "integral": "iu",
             "real floating": "f", "complex floating": "", "numeric": "iuf"}
    if kind not in kinds:
        raise UnsupportedDTypeError(f"isdtype: unknown kind {kind!r}", fix="use one of " + ", ".join(kinds))
    return d.kind in kinds[kind] and kinds[kind] != ""


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's names
    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801
    bits: int
    max: int
    min: int
    dtype: np.dtype


def finfo(type: Any) -> finfo_object:  # noqa: A002 - the standard's signature
    """Machine limits of a float dtype."""
    from ._array import Array
    d = type.dtype if isinstance(type, Array) else as_dtype(type)
    if not is_float(d):
        raise UnsupportedDTypeError(f"finfo: {d} is not a floating dtype", fix="use iinfo for integers")
    f = np.finfo(d)
    return finfo_object(f.bits, float(f.eps), float(f.max), float(f.min), float(f.smallest_normal), d)


def iinfo(type: Any) -> iinfo_object:  # noqa: A002
    """Machine limits of an integer dtype."""
    from ._array import Array
    d = type.dtype if isinstance(type, Array) else as_dtype(type)
    if not is_int(d):
        raise UnsupportedDTypeError(f"iinfo: {d} is not an integer dtype", fix="use finfo for floats")
    i = np.iinfo(d)
    return iinfo_object(i.bits, int(i.max), int(i.min), d)


def check_scalar(value: Any, dtype: np.dtype, what: str) -> None:
    """A Python scalar operand takes the array's dtype: check it fits (the standard leaves out-of-range
    values undefined; vyre refuses them)."""
    if isinstance(value, float) and not is_float(dtype):
        if dtype == bool or not float(value).is_integer():
            raise UnsupportedDTypeError(f"{what}: float {value!r} cannot combine with a {dtype} array",
                                        fix="convert the array first (x.astype(float32)) or pass an int")
    if isinstance(value, int) and not isinstance(value, builtins.bool) and is_int(dtype):
        info = np.iinfo(dtype)
        if not info.min <= value <= info.max:
            raise UnsupportedDTypeError(f"{what}: {value} is out of range for {dtype}",
                                        fix=f"pass a value in [{info.min}, {info.max}]")
    if isinstance(value, int) and not isinstance(value, builtins.bool) and dtype == bool:
        raise UnsupportedDTypeError(f"{what}: int {value!r} cannot combine with a bool array",
                                    fix="convert the array first (x.astype(int32))")


__all__ = ["bool", "int32", "uint32", "float32", "float16", "result_type", "can_cast", "isdtype", "finfo",
           "iinfo"]
