"""What names and expressions stand for while a kernel is translated: untyped Python constants
(:class:`Const`), arrays (:class:`Array`, a parameter or a workgroup array), ``x.shape`` and the
locals of one scope (:class:`Local`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir.types import DataType
from ..ir.values import BufRef, Val


@dataclass(frozen=True)
class Const:
    """A Python number or bool (a literal or a module constant): it takes the other operand's type."""

    value: bool | int | float

    @property
    def default_dtype(self) -> DataType:
        """Its type when nothing else decides: bool, i32 for ints, f32 for floats."""
        if isinstance(self.value, bool):
            return DataType.BOOL
        return DataType.I32 if isinstance(self.value, int) else DataType.F32


@dataclass
class Array:
    """An array the body indexes: a kernel parameter (``trailing``: the baked shape after the first
    dimension) or a workgroup array (``shared_count``)."""

    name: str
    ref: BufRef
    dtype: DataType
    ndim: int = 1
    trailing: tuple[int, ...] = ()
    shared_count: int | None = None
    writable: bool = True


@dataclass(frozen=True)
class Shape:
    """``x.shape`` of an array: only indexed with a constant (``x.shape[0]``)."""

    array: Array


@dataclass
class Local:
    """A local name: a mutable variable, or an immutable value (a loop variable, a scalar parameter)."""

    ir_name: str
    dtype: DataType
    val: Val
    mutable: bool = True
    what: str = "variable"
    line: int = 0


@dataclass
class Frame:
    """One function being translated (the kernel, or an inlined @vyre.func): its scopes of locals."""

    scopes: list[dict[str, Local | Array | Const]] = field(default_factory=lambda: [{}])
    gone: dict[str, int] = field(default_factory=dict)  # names whose block closed -> line of their first assignment

    def lookup(self, name: str) -> Local | Array | Const | None:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None


Value = Val | Const | Array | Shape | object  # object: a static marker (an intrinsic, a dtype, a module...)

__all__ = ["Const", "Array", "Shape", "Local", "Frame", "Value"]
