"""Declarations of a program: its buffers and workgroup arrays."""

from __future__ import annotations

from .records import Node, coerce_enum, node_class
from .types import Access, DataType


@node_class
class BufferDecl(Node):
    """A storage or uniform buffer bound at ``@group(0) @binding(binding)``.

    ``count`` fixes the element count; ``None`` means runtime-sized (the size of
    the array given at dispatch).
    """

    name: str
    binding: int
    dtype: DataType
    access: Access = Access.READ
    count: int | None = None

    def __post_init__(self) -> None:
        coerce_enum(self, "dtype", DataType)
        coerce_enum(self, "access", Access)


@node_class
class WorkgroupDecl(Node):
    """A ``var<workgroup>`` array shared by one workgroup."""

    name: str
    dtype: DataType
    count: int

    def __post_init__(self) -> None:
        coerce_enum(self, "dtype", DataType)


__all__ = ["BufferDecl", "WorkgroupDecl"]
