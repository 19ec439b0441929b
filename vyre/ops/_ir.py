"""Small typed helpers the op kernels share over the IR builder's values."""

from __future__ import annotations

from ..ir.builder import Val
from ..ir.types import DataType


def dtype_of(v: Val) -> DataType:
    """``v.dtype`` (what the builder infers for the expression); TypeError where it infers none."""
    t = v.dtype
    if t is None:
        raise TypeError(f"the type of {v!r} is not known")
    return t


def lanes_of(v: Val) -> int:
    """The vector width of ``v`` (1 for a scalar)."""
    return dtype_of(v).lanes


__all__ = ["dtype_of", "lanes_of"]
