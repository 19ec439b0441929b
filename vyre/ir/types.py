"""Data types of the vyre IR and their host (numpy) and storage layouts."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from enum import Enum
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    from typing_extensions import TypeIs


def loaded_numpy() -> ModuleType | None:
    """numpy when something has imported it, else None. No numpy object exists before numpy is imported, so
    the IR's checks for numpy scalars and dtypes skip it then, and building a program never imports numpy
    (~90 ms of import time)."""
    return sys.modules.get("numpy")


def is_integer(value: object) -> TypeIs[int | np.integer[Any]]:
    """A Python or numpy integer, not a bool."""
    if isinstance(value, int):
        return not isinstance(value, bool)
    np_ = loaded_numpy()
    return np_ is not None and isinstance(value, np_.integer)


def is_numpy_scalar(value: object) -> TypeIs[np.generic[Any]]:
    """A numpy scalar (``np.float32(1)``, ``np.bool_(True)``...)."""
    np_ = loaded_numpy()
    return np_ is not None and isinstance(value, np_.generic)


class DataType(str, Enum):
    """A value type. The string value is the WGSL spelling."""

    U32 = "u32"
    I32 = "i32"
    F32 = "f32"
    F16 = "f16"
    BOOL = "bool"
    VEC2_U32 = "vec2<u32>"
    VEC3_U32 = "vec3<u32>"
    VEC4_U32 = "vec4<u32>"
    VEC2_I32 = "vec2<i32>"
    VEC3_I32 = "vec3<i32>"
    VEC4_I32 = "vec4<i32>"
    VEC2_F32 = "vec2<f32>"
    VEC3_F32 = "vec3<f32>"
    VEC4_F32 = "vec4<f32>"
    VEC2_F16 = "vec2<f16>"
    VEC3_F16 = "vec3<f16>"
    VEC4_F16 = "vec4<f16>"
    # 64-bit scalars (appended: the members above keep their order). Not core WebGPU: they need the
    # adapter features shader-f64 / shader-int64 (wgpu-native's WGSL extensions; naga spells literals
    # 1.5lf, 7li, 7lu). No vectors of them.
    F64 = "f64"
    I64 = "i64"
    U64 = "u64"

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value

    # ---- structure -------------------------------------------------------
    @property
    def lanes(self) -> int:
        """Number of components (1 for scalars)."""
        return _LANES[self]

    @property
    def scalar(self) -> DataType:
        """The component type (itself for scalars)."""
        return _SCALAR[self]

    @property
    def is_vector(self) -> bool:
        return self.lanes > 1

    @property
    def is_float(self) -> bool:
        return self.scalar in (DataType.F32, DataType.F16, DataType.F64)

    @property
    def is_int(self) -> bool:
        return self.scalar in (DataType.U32, DataType.I32, DataType.I64, DataType.U64)

    @property
    def is_signed(self) -> bool:
        return self.scalar in (DataType.I32, DataType.F32, DataType.F16, DataType.I64, DataType.F64)

    @property
    def is_bool(self) -> bool:
        return self is DataType.BOOL

    @property
    def is_numeric(self) -> bool:
        return self.is_float or self.is_int

    @property
    def uses_f16(self) -> bool:
        return self.scalar is DataType.F16

    @property
    def bits(self) -> int:
        """Bit width of one component (bool counts as 32, its storage word)."""
        return _BITS.get(self.scalar, 32)

    @property
    def is_64bit(self) -> bool:
        """f64, i64 or u64: the types outside core WebGPU (see :attr:`feature`)."""
        return self.bits == 64

    @property
    def feature(self) -> str | None:
        """The WebGPU device feature this type needs (``shader-f16``, ``shader-f64``, ``shader-int64``), or
        None for core types."""
        return _FEATURE.get(self.scalar)

    # ---- host and storage layout ---------------------------------------
    @property
    def numpy_dtype(self) -> np.dtype:
        """numpy dtype of one component on the host (bool is numpy bool)."""
        import numpy as np  # why: import time (see loaded_numpy)

        return np.dtype(_NUMPY[self.scalar])

    @property
    def storage_scalar(self) -> DataType:
        """Component type as stored in a buffer (bool is stored as one u32 word)."""
        return DataType.U32 if self is DataType.BOOL else self.scalar

    @property
    def storage_lanes(self) -> int:
        """Components per element in storage: vec3 is padded to 4 (WGSL array stride)."""
        return 4 if self.lanes == 3 else self.lanes

    @property
    def element_nbytes(self) -> int:
        """Bytes one element occupies in a storage array (its WGSL array stride)."""
        return self.storage_lanes * _ITEMSIZE[self.storage_scalar]

    @staticmethod
    def vector(scalar: DataType, lanes: int) -> DataType:
        if lanes == 1:
            return scalar
        return DataType(f"vec{lanes}<{scalar.value}>")

    @staticmethod
    def parse(value: DataType | str | np.dtype | type) -> DataType:
        """A DataType from itself, its name (``"f32"``, ``"vec4<f32>"``), or a numpy dtype / dtype name
        of a scalar type vyre has (``np.float32``, ``"float32"`` -> f32; float16, int32, uint32, bool)."""
        if isinstance(value, DataType):
            return value
        if isinstance(value, str):
            name = value.replace(" ", "")
            if name in _NUMPY_NAMES:
                return _NUMPY_NAMES[name]
            try:
                return DataType(name)
            except ValueError:
                pass
        elif isinstance(value, type) or _is_numpy_dtype(value):
            import numpy as np  # why: import time (see loaded_numpy); a type (np.float32, bool) needs numpy

            try:
                found = _NUMPY_NAMES.get(np.dtype(value).name)
            except TypeError:
                found = None
            if found is not None:
                return found
        raise ValueError(
            f"unknown data type {value!r}; expected one of: " + ", ".join(d.value for d in DataType)
            + " or a numpy dtype (or its name) of one of: " + ", ".join(_NUMPY_NAMES)
        )


#: numpy dtype names of the scalar types (numpy loads only when a numpy dtype is asked for)
_NUMPY = {
    DataType.U32: "uint32",
    DataType.I32: "int32",
    DataType.F32: "float32",
    DataType.F16: "float16",
    DataType.BOOL: "bool",
    DataType.F64: "float64",
    DataType.I64: "int64",
    DataType.U64: "uint64",
}
#: bytes of one component in storage (numpy's itemsize of the storage scalar)
_ITEMSIZE = {DataType.U32: 4, DataType.I32: 4, DataType.F32: 4, DataType.F16: 2, DataType.F64: 8, DataType.I64: 8,
             DataType.U64: 8}
_BITS = {DataType.F16: 16, DataType.F64: 64, DataType.I64: 64, DataType.U64: 64}
#: the adapter feature a scalar type needs
_FEATURE = {DataType.F16: "shader-f16", DataType.F64: "shader-f64", DataType.I64: "shader-int64",
            DataType.U64: "shader-int64"}


def _is_numpy_dtype(value: object) -> bool:
    np_ = loaded_numpy()
    return np_ is not None and isinstance(value, np_.dtype)


#: numpy dtype names of the scalar types vyre has.
_NUMPY_NAMES = {"float32": DataType.F32, "float16": DataType.F16, "int32": DataType.I32, "uint32": DataType.U32,
                "bool": DataType.BOOL, "float64": DataType.F64, "int64": DataType.I64, "uint64": DataType.U64}

_LANES: dict[DataType, int] = {}
_SCALAR: dict[DataType, DataType] = {}
for _d in DataType:
    if _d.value.startswith("vec"):
        _LANES[_d] = int(_d.value[3])
        _SCALAR[_d] = DataType(_d.value[5:-1])
    else:
        _LANES[_d] = 1
        _SCALAR[_d] = _d

SCALAR_TYPES = (DataType.U32, DataType.I32, DataType.F32, DataType.F16, DataType.BOOL)
#: the 64-bit scalars (not in SCALAR_TYPES, whose users enumerate core WebGPU's types)
WIDE_TYPES = (DataType.F64, DataType.I64, DataType.U64)
ATOMIC_TYPES = (DataType.U32, DataType.I32)


class Access(str, Enum):
    """How a shader may use a buffer."""

    READ = "read"
    READ_WRITE = "read_write"
    WRITE = "write"
    UNIFORM = "uniform"

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.value

    @property
    def readable(self) -> bool:
        """The host supplies this buffer as an input."""
        return self in (Access.READ, Access.READ_WRITE, Access.UNIFORM)

    @property
    def writable(self) -> bool:
        """The shader may store into it; it is returned as an output."""
        return self in (Access.READ_WRITE, Access.WRITE)


def pad3(v: int | Iterable[int]) -> tuple[int, ...]:
    """An int or a 1-3 tuple as an (x, y, z) triple, missing dimensions 1 (workgroup sizes, grids)."""
    if isinstance(v, int):
        return (v, 1, 1)
    t = tuple(v)
    return t + (1,) * (3 - len(t)) if len(t) < 3 else t


__all__ = ["DataType", "Access", "SCALAR_TYPES", "WIDE_TYPES", "ATOMIC_TYPES", "pad3", "loaded_numpy", "is_integer",
           "is_numpy_scalar"]
