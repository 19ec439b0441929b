"""The dtype tables every layer shares: the supported dtypes (numpy dtype objects), their IR types, the
pairwise promotion rule and the range check of Python scalars. The standard's data-type functions that
take arrays (``result_type``, ``can_cast``, ``finfo``, ``iinfo``, ``astype``) are in vyre/array/_dtypes.py.

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
from typing import Any, cast

import numpy as np

from ...errors import UnsupportedDTypeError
from ...ir.types import DataType

DType = np.dtype[Any]  # a numpy dtype object (the annotations' name for one)

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


def as_dtype(dtype: Any, what: str = "dtype") -> DType:
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
        return cast(DType, d)
    why = ("the vyre IR has no 64-bit types (WGSL has none in its core)" if d.itemsize == 8 and d.kind in "iuf"
           else "vyre arrays hold bool, int32, uint32, float32 and float16 only")
    raise UnsupportedDTypeError(f"{what}: {d} is not supported: {why}",
                                fix=f"convert first (e.g. x.astype(np.{_narrow(d)})) or pick a supported dtype")


def _narrow(d: DType) -> str:
    return {"f": "float32", "i": "int32", "u": "uint32", "b": "bool_"}.get(d.kind, "float32")


def ir_type(dtype: DType) -> DataType:
    """The IR DataType of a supported numpy dtype."""
    return _IR[dtype]


def is_float(d: DType) -> builtins.bool: return d.kind == "f"
def is_int(d: DType) -> builtins.bool: return d.kind in "iu"


def promote(a: DType, b: DType) -> DType:
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


def check_scalar(value: Any, dtype: DType, what: str) -> None:
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


__all__ = ["DType", "bool", "int32", "uint32", "float32", "float16", "SUPPORTED", "INTS", "FLOATS", "as_dtype",
           "ir_type", "is_float", "is_int", "promote", "check_scalar"]
