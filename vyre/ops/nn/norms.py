"""layernorm and rmsnorm over the last axis of a (rows, cols) f32 matrix.

layernorm: ``y = (x - mean) / sqrt(var + eps) * gamma + beta`` (biased variance, like
PyTorch); rmsnorm: ``y = x / sqrt(mean(x^2) + eps) * gamma``. ``eps`` is a build param
(default 1e-5), baked into the program as an f32 literal.

Kernel: one workgroup per row (``_rowreduce``), workgroup tree reductions. layernorm is
two-pass: the mean first, then the mean of squared deviations from it (the one-pass
E[x^2] - E[x]^2 cancels catastrophically for rows far from zero), then a third pass writes
the output. Both passes work on ``x - x[0]`` (exact for values near each other), so a row
like 1000 + noise keeps full precision instead of losing the ulp of 1000. rmsnorm needs one reduction.

Tolerance: rel(2e-5, 2e-5). The sums are reordered (a tree instead of numpy's pairwise
float64), and 1/sqrt is a few ulp; normalized outputs are O(1) (|y| <= sqrt(cols) * |gamma|),
so the error is a few f32 ulps of that plus a cols-scaled summation term.
Variant ``subgroup`` (needs the adapter feature ``subgroup``): the same passes with the row sums taken
through subgroup operations (``_subgroup_rows``), same tolerance.
Not witnessed: NaN/inf inputs (they propagate to the whole row through the mean; nothing
op-specific to check).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ...backends.schedule import Pipeline
from ...ir.builder import ProgramBuilder, Val
from ...ir.values import BufRef
from ..pipeline import single
from ..registry import OpSpec, Witness, register, rel
from ._rowreduce import Reducer, allreduce, check_matrix, check_rows_cols, check_vector, row_workgroup
from ._subgroup_rows import variant

DEFAULT_EPS = 1e-5


def _start(name: str, rows: int, cols: int, eps: float,
           inputs: tuple[str, ...]) -> tuple[ProgramBuilder, int, list[BufRef], BufRef, BufRef, Val, Val]:
    check_rows_cols(name, rows, cols)
    if not float(eps) >= 0.0:
        raise ValueError(f"{name}: eps must be >= 0, got {eps}")
    wg = row_workgroup(cols)
    b = ProgramBuilder(name, workgroup_size=wg)
    bufs = [b.buffer("x", "f32", count=rows * cols)] + [b.buffer(n, "f32", count=cols) for n in inputs]
    y = b.buffer("y", "f32", "write", count=rows * cols)
    scratch = b.workgroup_array("scratch", "f32", wg)
    lid = b.let(b.local_index(), "lid")
    base = b.let(b.workgroup_id(0) * cols, "base")
    return b, wg, bufs, y, scratch, lid, base


def _row_sum(b: ProgramBuilder, scratch: BufRef, lid: Val, wg: int, cols: int, term: Callable[[Val], Val], name: str,
             reducer: Reducer) -> Val:
    part = b.var("f32", 0.0, name=name + "_part")
    with b.for_range(lid, cols, step=wg) as j:
        part += term(j)
    return reducer(b, scratch, lid, part, wg, "add", name)


def _build_layernorm(rows: int, cols: int, eps: float = DEFAULT_EPS, reducer: Reducer = allreduce) -> Pipeline:
    b, wg, (x, gamma, beta), y, scratch, lid, base = _start("layernorm", rows, cols, eps, ("gamma", "beta"))
    # Deviations are taken as (x - x[0]) - mean(x - x[0]): x - x[0] is exact for the
    # values of a row near each other, so rows far from zero keep full precision.
    shift = b.let(x[base], "shift")
    mu = b.let(_row_sum(b, scratch, lid, wg, cols, lambda j: x[base + j] - shift, "sum", reducer) / float(cols),
               "mu")

    def sq_dev(j: Val) -> Val:
        d = b.let((x[base + j] - shift) - mu)
        return d * d

    var = b.let(_row_sum(b, scratch, lid, wg, cols, sq_dev, "sq_sum", reducer) / float(cols), "variance")
    rstd = b.let(1.0 / (var + float(eps)).sqrt(), "rstd")
    with b.for_range(lid, cols, step=wg) as j:
        y[base + j] = ((x[base + j] - shift) - mu) * rstd * gamma[j] + beta[j]
    return single(b.build(), grid=(rows, 1, 1), output_shapes={"y": (rows, cols)})



def build_layernorm(rows: int, cols: int, eps: float = DEFAULT_EPS) -> Pipeline:
    """The generic kernel (row sums through workgroup memory)."""
    return _build_layernorm(rows, cols, eps)

def _build_rmsnorm(rows: int, cols: int, eps: float = DEFAULT_EPS, reducer: Reducer = allreduce) -> Pipeline:
    b, wg, (x, gamma), y, scratch, lid, base = _start("rmsnorm", rows, cols, eps, ("gamma",))

    def sq(j: Val) -> Val:
        v = b.let(x[base + j])
        return v * v

    ms = b.let(_row_sum(b, scratch, lid, wg, cols, sq, "sq_sum", reducer) / float(cols), "mean_sq")
    rinv = b.let(1.0 / (ms + float(eps)).sqrt(), "rinv")
    with b.for_range(lid, cols, step=wg) as j:
        y[base + j] = x[base + j] * rinv * gamma[j]
    return single(b.build(), grid=(rows, 1, 1), output_shapes={"y": (rows, cols)})



def build_rmsnorm(rows: int, cols: int, eps: float = DEFAULT_EPS) -> Pipeline:
    """The generic kernel (row sums through workgroup memory)."""
    return _build_rmsnorm(rows, cols, eps)

def reference_layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = DEFAULT_EPS,
                        **params: Any) -> list[np.ndarray]:
    x = np.asarray(x, np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return [((x - mean) / np.sqrt(var + np.float32(eps)) * gamma + beta).astype(np.float32)]


def reference_rmsnorm(x: np.ndarray, gamma: np.ndarray, eps: float = DEFAULT_EPS,
                      **params: Any) -> list[np.ndarray]:
    x = np.asarray(x, np.float64)
    ms = (x * x).mean(axis=1, keepdims=True)
    return [(x / np.sqrt(ms + np.float32(eps)) * gamma).astype(np.float32)]


def params_for_layernorm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray,
                         eps: float = DEFAULT_EPS) -> dict[str, Any]:
    rows, cols = check_matrix("layernorm", x)
    check_vector("layernorm", "gamma", gamma, cols)
    check_vector("layernorm", "beta", beta, cols)
    return {"rows": rows, "cols": cols, "eps": float(eps)}


def params_for_rmsnorm(x: np.ndarray, gamma: np.ndarray, eps: float = DEFAULT_EPS) -> dict[str, Any]:
    rows, cols = check_matrix("rmsnorm", x)
    check_vector("rmsnorm", "gamma", gamma, cols)
    return {"rows": rows, "cols": cols, "eps": float(eps)}


def _matrices() -> list[tuple[str, np.ndarray, float]]:
    r = np.random.default_rng(4201)
    return [
        ("1x1", np.array([[2.5]], np.float32), 1e-5),
        ("3x17", r.standard_normal((3, 17)).astype(np.float32), 1e-5),
        ("7x300_offset_1000", (1000 + r.standard_normal((7, 300))).astype(np.float32), 1e-5),
        ("2x4099_multi_stride", (r.standard_normal((2, 4099)) * 4).astype(np.float32), 1e-6),
        ("500x64_many_rows", r.uniform(-3, 3, (500, 64)).astype(np.float32), 1e-3),
        ("2x40_constant_rows", np.array([[5.0] * 40, [0.0] * 20 + [-0.0] * 20], np.float32), 1e-5),
    ]


def witnesses_layernorm() -> list[Witness]:
    r = np.random.default_rng(4202)
    out = []
    for name, x, eps in _matrices():
        cols = int(x.shape[1])
        gamma = r.uniform(0.5, 1.5, cols).astype(np.float32)
        beta = r.uniform(-1, 1, cols).astype(np.float32)
        out.append(Witness(name, {"rows": x.shape[0], "cols": cols, "eps": eps}, (x, gamma, beta)))
    return out


def witnesses_rmsnorm() -> list[Witness]:
    r = np.random.default_rng(4203)
    return [Witness(name, {"rows": x.shape[0], "cols": x.shape[1], "eps": eps},
                    (x, r.uniform(0.5, 1.5, int(x.shape[1])).astype(np.float32))) for name, x, eps in _matrices()]


register(OpSpec(
    id="layernorm", category="nn",
    summary="Layer normalization over the last axis of (rows, cols) f32 with gamma, beta and eps (two-pass).",
    build=build_layernorm, reference=reference_layernorm, witnesses=witnesses_layernorm,
    params_for=params_for_layernorm, tolerance=rel(2e-5, 2e-5),
    variants=(variant(_build_layernorm, "row sums with subgroupAdd and one barrier across subgroups"),),
))

register(OpSpec(
    id="rmsnorm", category="nn",
    summary="RMS normalization over the last axis of (rows, cols) f32 with gamma and eps.",
    build=build_rmsnorm, reference=reference_rmsnorm, witnesses=witnesses_rmsnorm,
    params_for=params_for_rmsnorm, tolerance=rel(2e-5, 2e-5),
    variants=(variant(_build_rmsnorm, "row sum of squares with subgroupAdd and one barrier across subgroups"),),
))
