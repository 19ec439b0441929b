"""The annotations of kernel parameters: dtype markers (``f32``, ``f16``, ``i32``, ``u32``, ``bool_``)
and the array access markers ``In[dt]``, ``Out[dt]``, ``InOut[dt]``.

The markers are plain objects the translator recognises by identity; they do nothing when called
outside a kernel (a dtype marker called in a kernel body is a cast: ``f32(i)``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ArgumentTypeError, KernelError
from ..ir.types import Access, DataType


class DType:
    """A scalar dtype marker: an annotation (``n: u32``, ``acc: f32 = 0``) and, in a kernel body, a cast."""

    __slots__ = ("dtype", "name", "numpy")

    def __init__(self, name: str, dtype: DataType, numpy: type) -> None:
        self.name, self.dtype, self.numpy = name, dtype, np.dtype(numpy)

    def __repr__(self) -> str:
        return f"vyre.{self.name}"

    def __call__(self, value: object) -> object:
        raise outside_kernel(self.name)


f32 = DType("f32", DataType.F32, np.float32)
f16 = DType("f16", DataType.F16, np.float16)
i32 = DType("i32", DataType.I32, np.int32)
u32 = DType("u32", DataType.U32, np.uint32)
bool_ = DType("bool_", DataType.BOOL, np.bool_)
DTYPES = (f32, f16, i32, u32, bool_)
BY_NUMPY = {d.numpy: d for d in DTYPES}


@dataclass(frozen=True)
class ArrayType:
    """The annotation ``In[dt]`` / ``Out[dt]`` / ``InOut[dt]``: an array parameter of one dtype."""

    access: Access
    dtype: DType

    @property
    def marker(self) -> str:
        return {Access.READ: "In", Access.WRITE: "Out", Access.READ_WRITE: "InOut"}[self.access]

    def __repr__(self) -> str:
        return f"vyre.{self.marker}[{self.dtype.name}]"


class AccessMarker:
    """``In``, ``Out`` or ``InOut``: subscript with a dtype marker to annotate an array parameter."""

    __slots__ = ("access", "name")

    def __init__(self, name: str, access: Access) -> None:
        self.name, self.access = name, access

    def __getitem__(self, dtype: object) -> ArrayType:
        if not isinstance(dtype, DType):
            raise ArgumentTypeError(f"{self.name}[...] takes a vyre dtype marker (vyre.f32, vyre.u32, ...), got "
                                    f"{dtype!r:.60}", fix=f"write {self.name}[f32] (or f16, i32, u32, bool_)")
        return ArrayType(self.access, dtype)

    def __repr__(self) -> str:
        return f"vyre.{self.name}"


In = AccessMarker("In", Access.READ)
Out = AccessMarker("Out", Access.WRITE)
InOut = AccessMarker("InOut", Access.READ_WRITE)


def outside_kernel(name: str) -> KernelError:
    """The error of a kernel intrinsic or dtype marker called by ordinary Python code."""
    return KernelError.at("<python>", "<python>", 0, f"{name}(...)",
                       f"vyre.{name} only has a meaning inside a @vyre.kernel or @vyre.func body",
                       "call it in a function decorated with @vyre.kernel (the body is translated, not executed)")


__all__ = ["DType", "ArrayType", "AccessMarker", "f32", "f16", "i32", "u32", "bool_", "In", "Out", "InOut",
           "DTYPES", "BY_NUMPY", "outside_kernel"]
