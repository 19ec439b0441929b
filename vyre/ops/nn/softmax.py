"""softmax: numerically stable row-wise softmax over the last axis of a (rows, cols) f32 matrix.

Kernel: one workgroup per row (``_rowreduce``): pass 1 takes the row maximum (private
maxima, then a workgroup tree reduction), pass 2 sums ``exp(x - max)`` the same way,
pass 3 writes ``exp(x - max) / sum``. Subtracting the maximum keeps every exp in [0, 1],
so rows of large magnitude (+-80 and beyond) neither overflow nor lose the largest terms;
-inf entries (masked positions) give exactly 0.

Not portable, so not witnessed: NaN inputs (WGSL leaves max() with NaN operands
unspecified) and rows that are entirely -inf (0/0: NaN on IEEE hardware).

Tolerance: rel(1e-5, 1e-7). The GPU's exp is a few ulp off numpy's and the sums are
added in another order (cols * 2^-24 relative at worst: 2.5e-4 for 4096 columns, far less
in practice since the terms are positive and summed in a tree); outputs are <= 1, so an
absolute 1e-7 covers the tiny probabilities whose relative exp error is largest.

Variant ``subgroup`` (needs the adapter feature ``subgroup``): the same passes with the row max and
sum taken through subgroup operations (``_subgroup_rows``), same tolerance.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...ir.builder import ProgramBuilder
from ..pipeline import single
from ..registry import OpSpec, Witness, register, rel
from ._rowreduce import Reducer, allreduce, check_matrix, check_rows_cols, row_workgroup
from ._subgroup_rows import variant


def _build(rows: int, cols: int, reducer: Reducer) -> Pipeline:
    check_rows_cols("softmax", rows, cols)
    wg = row_workgroup(cols)
    b = ProgramBuilder("softmax", workgroup_size=wg)
    x = b.buffer("x", "f32", count=rows * cols)
    y = b.buffer("y", "f32", "write", count=rows * cols)
    scratch = b.workgroup_array("scratch", "f32", wg)
    lid = b.let(b.local_index(), "lid")
    base = b.let(b.workgroup_id(0) * cols, "base")

    m_part = b.var("f32", float("-inf"), name="m_part")
    with b.for_range(lid, cols, step=wg) as j:
        m_part.set(b.max(m_part, x[base + j]))
    m = reducer(b, scratch, lid, m_part, wg, "max", "row_max")

    s_part = b.var("f32", 0.0, name="s_part")
    with b.for_range(lid, cols, step=wg) as j:
        s_part += (x[base + j] - m).exp()
    s = reducer(b, scratch, lid, s_part, wg, "add", "row_sum")

    with b.for_range(lid, cols, step=wg) as j:
        y[base + j] = (x[base + j] - m).exp() / s
    return single(b.build(), grid=(rows, 1, 1), output_shapes={"y": (rows, cols)})



def build(rows: int, cols: int) -> Pipeline:
    """The generic kernel (row max and sum through workgroup memory)."""
    return _build(rows, cols, allreduce)

def reference(x: np.ndarray, **params: Any) -> list[np.ndarray]:
    x = np.asarray(x, np.float64)
    with np.errstate(invalid="ignore"):  # a row of all -inf is 0/0 = NaN, like the kernel on IEEE hardware
        e = np.exp(x - x.max(axis=1, keepdims=True))
        return [(e / e.sum(axis=1, keepdims=True)).astype(np.float32)]


def params_for(x: np.ndarray) -> dict[str, Any]:
    rows, cols = check_matrix("softmax", x)
    return {"rows": rows, "cols": cols}


def witnesses() -> list[Witness]:
    r = np.random.default_rng(4101)
    cases = [
        ("1x1", np.array([[3.5]], np.float32)),
        ("3x17_normal", r.standard_normal((3, 17)).astype(np.float32)),
        ("5x300_pm80", r.uniform(-80, 80, (5, 300)).astype(np.float32)),
        ("2x33_large_offset", (r.standard_normal((2, 33)) * 3 + np.array([[1e4], [-1e4]])).astype(np.float32)),
        ("4x4099_multi_stride", r.standard_normal((4, 4099)).astype(np.float32)),
        ("600x40_many_rows", r.uniform(-5, 5, (600, 40)).astype(np.float32)),
    ]
    masked = r.uniform(-80, 80, (6, 257)).astype(np.float32)
    masked[r.random(masked.shape) < 0.5] = -np.inf  # masked positions
    masked[np.arange(6), r.integers(0, 257, 6)] = 1.0  # every row keeps a finite entry
    masked[0, 1:] = -np.inf  # a row with a single unmasked entry -> exactly 1
    cases.append(("6x257_neg_inf_masked", masked))
    cases.append(("2x64_equal_and_negzero", np.array([[0.0] * 32 + [-0.0] * 32, [7.0] * 64], np.float32)))
    return [Witness(name, {"rows": a.shape[0], "cols": a.shape[1]}, (a,)) for name, a in cases]


register(OpSpec(
    id="softmax", category="nn",
    summary="Row-wise numerically stable softmax of a (rows, cols) f32 matrix (over the last axis).",
    build=build, reference=reference, witnesses=witnesses, params_for=params_for,
    tolerance=rel(1e-5, 1e-7),
    variants=(variant(_build, "row max and sum with subgroupMax/subgroupAdd and one barrier across subgroups"),),
))
