"""Shared pieces of the row-wise nn ops (softmax, layernorm, rmsnorm).

One workgroup per row of a (rows, cols) matrix: every invocation walks the row with a
stride of the workgroup size, keeps a private partial result, and a workgroup tree
reduction (log2(wg) steps, unrolled at build time) combines the partials. The reduced
value is read back by every invocation, so it can drive the next pass over the row.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import DispatchError
from ...ir.builder import ProgramBuilder, Val
from ...ir.values import BufRef

MAX_WG = 256


def row_workgroup(cols: int) -> int:
    """Invocations per row: the next power of two >= cols, between 32 and 256."""
    wg = 32
    while wg < cols and wg < MAX_WG:
        wg *= 2
    return wg


#: ``allreduce(b, scratch, lid, value, wg, kind, name)``: the generic kernel's or a variant's (``_subgroup_rows``).
Reducer = Callable[[ProgramBuilder, BufRef, Val, Val, int, str, str], Val]


def allreduce(b: ProgramBuilder, scratch: BufRef, lid: Val, value: Val, wg: int, kind: str, name: str) -> Val:
    """Combine ``value`` over the workgroup (tree in workgroup memory) by ``kind`` (``"add"`` or
    ``"max"``); every invocation gets the result. ``scratch`` is a workgroup array of ``wg`` f32; it is
    free again on return."""
    if kind not in ("add", "max"):
        raise ValueError(f"kind must be 'add' or 'max', got {kind!r}")

    def combine(p: Val, q: Val) -> Val:
        return b.max(p, q) if kind == "max" else p + q

    scratch[lid] = value
    b.barrier()
    step = wg // 2
    while step >= 1:
        with b.if_(lid < step):
            scratch[lid] = combine(scratch[lid], scratch[lid + step])
        b.barrier()
        step //= 2
    out = b.let(scratch[0], name)
    b.barrier()  # everyone has read scratch[0] before it is reused
    return out


def check_matrix(op: str, x: np.ndarray) -> tuple[int, int]:
    if x.dtype != np.float32:
        raise DispatchError(f"{op}: x has dtype {x.dtype}, expected float32", fix="pass x.astype(np.float32)")
    if x.ndim != 2 or x.size == 0:
        raise DispatchError(f"{op}: x has shape {x.shape}; expected a non-empty 2-D (rows, cols) array",
                            fix="reshape to (rows, cols), e.g. x.reshape(-1, x.shape[-1]) to act on the last axis")
    return int(x.shape[0]), int(x.shape[1])


def check_vector(op: str, name: str, v: np.ndarray, cols: int) -> None:
    if v.dtype != np.float32 or v.shape != (cols,):
        raise DispatchError(f"{op}: {name} has dtype {v.dtype} and shape {v.shape}; expected float32 of shape "
                            f"({cols},)", fix=f"pass {name} as a float32 vector with one entry per column")


def check_rows_cols(op: str, rows: int, cols: int) -> None:
    if int(rows) < 1 or int(cols) < 1:
        raise ValueError(f"{op}: rows and cols must be >= 1, got {rows} and {cols}")
