"""Helpers shared by the memory ops (dtype checks, index types, witness data)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...errors import DispatchError
from ...ir.builder import ProgramBuilder, Val

DTYPES = ("u32", "i32", "f32")
INDEX_DTYPES = ("u32", "i32")
_NAMES = {np.dtype(np.uint32): "u32", np.dtype(np.int32): "i32", np.dtype(np.float32): "f32"}
_NUMPY = {"u32": "np.uint32", "i32": "np.int32", "f32": "np.float32"}


def dtype_name(op: str, what: str, a: np.ndarray, allowed: Sequence[str] = DTYPES) -> str:
    """The vyre dtype name of array ``a``; DispatchError when it is not one of ``allowed``."""
    name = _NAMES.get(a.dtype)
    if name is None or name not in allowed:
        raise DispatchError(f"{op}: {what} has dtype {a.dtype}; supported: {', '.join(allowed)}",
                            fix=f"pass {what}.astype({_NUMPY[allowed[0]]}) (or another of {', '.join(allowed)})")
    return name


def check_1d(op: str, what: str, a: np.ndarray) -> None:
    if a.ndim != 1 or a.size == 0:
        raise DispatchError(f"{op}: {what} must be a non-empty 1-D array, got shape {a.shape}",
                            fix=f"pass {what}.ravel() with at least one element")


def index_in_range(b: ProgramBuilder, idx_value: Val, idx_dtype: str, n: Val | int) -> tuple[Val, Val]:
    """(u32 index, bool in range) for an index value of type u32 or i32 against length ``n``."""
    if idx_dtype == "i32":
        u = b.let(idx_value.bitcast("u32"))  # negative indices become >= 2^31 > any length
    else:
        u = b.let(idx_value)
    return u, u < n


def values(rng: np.random.Generator, dtype: str, n: int) -> np.ndarray:
    """Deterministic test values of ``dtype`` with sign, extreme and special values mixed in."""
    if dtype == "f32":
        v = rng.standard_normal(n).astype(np.float32)
        special = np.array([np.inf, -np.inf, -0.0, np.nan, 1e-40, -3.4e38], np.float32)
    elif dtype == "i32":
        v = rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
        special = np.array([-(2**31), 2**31 - 1, -1, 0], np.int32)
    else:
        v = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
        special = np.array([0xFFFFFFFF, 0x80000000, 0, 1], np.uint32)
    k = min(n, special.size)
    v[:k] = special[:k]
    return v
