"""memory.transpose: ``out[c, r] = x[r, c]`` for a 2-D u32/i32/f32 array (rows, cols).

Tiled through workgroup memory: a 32x8 workgroup moves one 32x32 tile, each invocation
four rows of it. Reads walk along source rows and writes along output rows (consecutive
invocations touch consecutive addresses: coalesced both ways); the tile is stored with a
row pitch of 33 words so the column-wise reads of the second phase fall into different
banks. Pure data movement: bit-exact.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...errors import DispatchError
from ...ir.builder import ProgramBuilder
from ..pipeline import single
from ..registry import EXACT, OpSpec, Witness, register
from ._common import DTYPES, dtype_name, values

TILE = 32
ROWS_PER_PASS = 8  # workgroup is TILE x ROWS_PER_PASS invocations
PITCH = TILE + 1  # padding: column reads of the tile hit distinct banks


def build(rows: int, cols: int, dtype: str) -> Pipeline:
    if dtype not in DTYPES:
        raise ValueError(f"memory.transpose: dtype must be one of {DTYPES}, got {dtype!r}")
    if rows < 1 or cols < 1:
        raise ValueError(f"memory.transpose: shape must be at least 1x1, got ({rows}, {cols})")
    b = ProgramBuilder(f"memory_transpose_{dtype}_{rows}x{cols}", (TILE, ROWS_PER_PASS))
    x = b.buffer("x", dtype, count=rows * cols)
    out = b.buffer("out", dtype, access="write", count=rows * cols)
    tile = b.workgroup_array("tile", dtype, TILE * PITCH)
    tx, ty = b.local_id(0), b.local_id(1)
    col0 = b.let(b.workgroup_id(0) * TILE, "col0")  # tile origin in the source
    row0 = b.let(b.workgroup_id(1) * TILE, "row0")
    for k in range(0, TILE, ROWS_PER_PASS):
        r, c = b.let(row0 + ty + k), b.let(col0 + tx)
        with b.if_((r < rows) & (c < cols)):
            tile[(ty + k) * PITCH + tx] = x[r * cols + c]
    b.barrier()
    for k in range(0, TILE, ROWS_PER_PASS):
        r, c = b.let(col0 + ty + k), b.let(row0 + tx)  # output row = source column
        with b.if_((r < cols) & (c < rows)):
            out[r * rows + c] = tile[tx * PITCH + ty + k]
    grid = (-(-cols // TILE), -(-rows // TILE), 1)
    return single(b.build(), grid=grid, output_shapes={"out": (cols, rows)})


def reference(x: np.ndarray, rows: int, cols: int, dtype: str) -> list[np.ndarray]:
    return [np.ascontiguousarray(np.asarray(x).reshape(rows, cols).T)]


def params_for(x: np.ndarray) -> dict[str, Any]:
    if x.ndim != 2 or x.size == 0:
        raise DispatchError(f"memory.transpose takes a non-empty 2-D array, got shape {x.shape}",
                            fix="pass x.reshape(rows, cols)")
    return {"rows": int(x.shape[0]), "cols": int(x.shape[1]), "dtype": dtype_name("memory.transpose", "x", x)}


def witnesses() -> list[Witness]:
    r = np.random.default_rng(53)
    shapes = [("1x1", (1, 1), "f32"), ("1xn", (1, 1000), "u32"), ("nx1", (777, 1), "i32"),
              ("33x65", (33, 65), "f32"), ("64x32_exact_tiles", (64, 32), "u32"),
              ("300x257", (300, 257), "i32"), ("512x500_large", (512, 500), "f32")]
    return [Witness(name, {"rows": s[0], "cols": s[1], "dtype": d}, (values(r, d, s[0] * s[1]).reshape(s),))
            for name, s, d in shapes]


register(OpSpec(
    id="memory.transpose", category="memory",
    summary="Transpose a 2-D u32/i32/f32 array (tiled 32x32 through padded workgroup memory).",
    build=build, reference=reference, witnesses=witnesses, params_for=params_for, tolerance=EXACT,
))
