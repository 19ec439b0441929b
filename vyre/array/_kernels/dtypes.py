"""The dtype tables every layer shares: the supported dtypes (numpy dtype objects), their IR types, the
pairwise promotion rule and the range check of Python scalars. The standard's data-type functions that
take arrays (``result_type``, ``can_cast``, ``finfo``, ``iinfo``, ``astype``) are in vyre/array/_dtypes.py.

Supported: bool, int32, uint32, float32, and on backends with the adapter features float16 (``shader-f16``),
float64 (``shader-f64``), int64 and uint64 (``shader-int64``: wgpu-native's extensions, which lavapipe and
the usual Vulkan drivers have). On a backend without them those dtypes raise
:class:`~vyre.errors.UnsupportedDTypeError` before any GPU work (vyre/array/_device.py:check_dtype_on);
complex64 is held as interleaved (re, im) f32 pairs (``vec2<f32>`` elements: vyre/array/_kernels/complex.py),
complex128 (with ``shader-f64``) as f64 pairs, an element being the four u32 words of the two parts
(``vec4<u32>``: the IR has no vectors of f64); int8/int16/uint8/uint16 are always refused, and nothing is
narrowed silently.

Promotion follows the standard within a kind (int32 + int64 -> int64, uint32 + int64 -> int64, uint32 + uint64
-> uint64, float32 + float64 -> float64). A signed and an unsigned integer type of the same width (int32 +
uint32, int64 + uint64; int32 + uint64 too) have no common type there: vyre picks the signed type of the wider
width, wrapping, like the IR's integer arithmetic. Mixed kinds are implementation-defined; vyre's choices:
bool + number -> the number's dtype; integer + float -> the float dtype (float16 + int32 -> float16, as
numpy does not); bool, integers, float16 and float32 with complex64 -> complex64, float64 + complex64 ->
complex128 (the standard's table). Python scalars
take the array's dtype (range-checked: out of range raises); a Python float
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
float64 = np.dtype(np.float64)
int64 = np.dtype(np.int64)
uint64 = np.dtype(np.uint64)
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

SUPPORTED = (bool, int32, uint32, float32, float16, int64, uint64, float64, complex64, complex128)
INTS = (int32, uint32, int64, uint64)
FLOATS = (float32, float16, float64)
COMPLEX = (complex64, complex128)
#: the dtypes that need an adapter feature (vyre/array/_device.py checks it per backend)
FEATURE_DTYPES = {float16: "shader-f16", float64: "shader-f64", int64: "shader-int64", uint64: "shader-int64",
                  complex128: "shader-f64"}
_IR = {bool: DataType.BOOL, int32: DataType.I32, uint32: DataType.U32, float32: DataType.F32, float16: DataType.F16,
       float64: DataType.F64, int64: DataType.I64, uint64: DataType.U64, complex64: DataType.VEC2_F32,
       complex128: DataType.VEC4_U32}


def as_dtype(dtype: Any, what: str = "dtype") -> DType:
    """``dtype`` (a numpy dtype, a type such as ``np.float32``, or a name) as one of the supported numpy
    dtypes; anything else raises UnsupportedDTypeError. Whether a backend has the feature a dtype needs
    (float16, float64, int64, uint64) is checked where arrays are made (_device.check_dtype_on)."""
    if dtype is float:
        return float32
    if dtype is int:
        return int32
    try:
        d = np.dtype(dtype)
    except TypeError:
        raise UnsupportedDTypeError(f"{what}: {dtype!r} is not a data type",
                                    fix="use one of bool, int32, uint32, float32, float16, int64, uint64, float64"
                                    ) from None
    if d in SUPPORTED:
        return cast(DType, d)
    why = ("WGSL has no 8- or 16-bit integer storage types" if d.kind in "iu"
           else "vyre arrays hold bool, int32, uint32, int64, uint64, float16, float32, float64, complex64 and "
                "complex128 only")
    raise UnsupportedDTypeError(f"{what}: {d} is not supported: {why}",
                                fix=f"convert first (e.g. x.astype(np.{_narrow(d)})) or pick a supported dtype")


def _narrow(d: DType) -> str:
    return {"f": "float32", "i": "int32", "u": "uint32", "b": "bool_", "c": "complex64"}.get(d.kind, "float32")


def ir_type(dtype: DType) -> DataType:
    """The IR DataType of a supported numpy dtype."""
    return _IR[dtype]


def is_float(d: DType) -> builtins.bool: return d.kind == "f"
def is_int(d: DType) -> builtins.bool: return d.kind in "iu"
def is_complex(d: DType) -> builtins.bool: return d.kind == "c"


def real_of(d: DType) -> DType:
    """The real dtype of a complex one's components (float32 for complex64); a real dtype itself."""
    return float32 if d == complex64 else float64 if d == complex128 else d


def complex_of(d: DType) -> DType:
    """The complex dtype holding a real one exactly (float64, int64, uint64 -> complex128, else complex64)."""
    if d.kind == "c":
        return d
    return complex128 if d.itemsize == 8 else complex64


def promote(a: DType, b: DType) -> DType:
    """The pairwise promotion rule (see the module docstring for the mixed-kind choices)."""
    if a == b:
        return a
    if a == bool:
        return b
    if b == bool:
        return a
    if is_complex(a) or is_complex(b):  # the standard's table: the complex type holding both
        return complex128 if float64 in (a, b) or complex128 in (a, b) else complex64  # integers: like floats
    if is_float(a) and is_float(b):
        return float64 if float64 in (a, b) else float32
    if is_float(a):
        return a
    if is_float(b):
        return b
    if a.kind == b.kind:  # both signed or both unsigned: the wider
        return a if a.itemsize >= b.itemsize else b
    return int64 if 8 in (a.itemsize, b.itemsize) else int32  # signed with unsigned: wrapping (docstring)


def check_scalar(value: Any, dtype: DType, what: str) -> None:
    """A Python scalar operand takes the array's dtype: check it fits (the standard leaves out-of-range
    values undefined; vyre refuses them)."""
    if isinstance(value, complex) and not is_complex(dtype):
        raise UnsupportedDTypeError(f"{what}: complex {value!r} cannot combine with a {dtype} array",
                                    fix="convert the array first (x.astype(complex64))")
    if isinstance(value, float) and not is_float(dtype) and not is_complex(dtype):
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


__all__ = ["DType", "bool", "int32", "uint32", "float32", "float16", "float64", "int64", "uint64", "complex64",
           "complex128", "SUPPORTED", "INTS", "FLOATS", "COMPLEX", "FEATURE_DTYPES", "as_dtype",
           "ir_type", "is_float", "is_int", "is_complex", "real_of", "complex_of", "promote", "check_scalar"]
