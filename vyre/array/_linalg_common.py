"""Shared checks and plumbing of the decomposition functions (vyre/array/_linalg_solve.py, _linalg_qr.py,
_linalg_eig.py): argument checks (typed errors before any GPU work), the compute dtype, a fresh work
buffer holding a contiguous copy of the input, and the small per-matrix info download that some
functions check after the work (a singular matrix, one that is not positive definite)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ArgumentTypeError, InvalidArgumentError, UnsupportedDTypeError
from . import _dtypes as D
from ._array import Array
from ._kernels import dtypes as KD
from ._kernels.fused import Plan, plan

if TYPE_CHECKING:
    from ..backends.base import Backend


def matrices(x: Any, what: str, *, square: bool = False) -> Array:
    """``x`` as a stack of matrices (..., M, N) (square: M == N), numeric; typed errors otherwise."""
    if not isinstance(x, Array):
        raise ArgumentTypeError(f"{what}: expected a vyre array, got {type(x).__name__}",
                                fix="convert with vyre.array.asarray first")
    if x.ndim < 2:
        raise InvalidArgumentError(f"{what}: needs an array of at least 2 dimensions, got shape {list(x.shape)}",
                                   fix="reshape it to (..., M, N)")
    if square and x.shape[-1] != x.shape[-2]:
        raise InvalidArgumentError(f"{what}: needs square matrices (..., M, M), got shape {list(x.shape)}",
                                   fix="pass a stack of square matrices")
    if x.dtype == D.bool:
        raise ArgumentTypeError(f"{what}: needs a numeric array, got bool", fix="convert with astype(x, float32)")
    if x.dtype.kind == "c":
        raise UnsupportedDTypeError(f"{what}: complex matrices are not supported here (the complex forms of the "
                                    "decompositions are vyre/array/_linalg_complex.py's)",
                                    fix="pass a real matrix (e.g. the real block form [[A, -B], [B, A]])")
    return x


def is_complex(x: Any) -> bool:
    """``x`` is a complex vyre array (the decompositions route it to their complex forms)."""
    return isinstance(x, Array) and x.dtype.kind == "c"


def compute_dtype(x: Array) -> KD.DType:
    """The dtype the decomposition runs in: float32, or float64 where vyre arrays have it (integers and
    float16 run in float32; float16 results are cast back by :func:`result`)."""
    f64: KD.DType | None = getattr(KD, "float64", None)
    if f64 is not None and x.dtype == f64:
        return f64
    return D.float32


def result(v: Array, like: Array) -> Array:
    """``v`` in the standard's result dtype for input ``like`` (float16 in, float16 out)."""
    return D.astype(v, D.float16, copy=False) if like.dtype == D.float16 else v


def ir(dt: KD.DType) -> str:
    return KD.ir_type(dt).value


def work(x: Array, dt: KD.DType) -> tuple[Array, Plan, Any]:
    """A fresh contiguous copy of ``x`` in ``dt`` (the kernels overwrite it), the plan computing it (the
    decomposition's steps are appended to it) and its handle."""
    w = D.astype(x, dt, copy=True)
    p = plan([w], x.device)
    return w, p, w._allocate()


def scratch(shape: tuple[int, ...], dt: KD.DType, dev: Backend) -> tuple[Array, Any]:
    """A new zeroed array the kernels write (and its handle)."""
    a = Array(shape, dt, dev)
    return a, a._allocate(zeroed=True)


def batch_count(shape: tuple[int, ...]) -> int:
    return math.prod(shape[:-2])


def flags(raw: np.ndarray, dt: KD.DType, stride: int, at: int) -> np.ndarray:
    """Element ``at`` of every ``stride``-sized record of a downloaded info buffer (raw bytes)."""
    vals = np.frombuffer(np.ascontiguousarray(raw).tobytes(), dtype=dt)
    return vals[at::stride]


__all__ = ["is_complex", "matrices", "compute_dtype", "result", "ir", "work", "scratch", "batch_count", "flags"]
