"""The thin float32 matmul kernel (vyre/array/_kernels/matmul_thin.py): one small side (M or N <= 16) held
in registers, rows or columns mode, split along K with a fixed-order second pass where K is long and the
output small; and the tiled split-K (vyre/array/_kernels/matmul_split.py: the GEMM per K-slice, then the
same fixed-order sum) for a long K into a few tiles. Each shape below is checked to pick the path it names,
then against a float64 numpy product on the reference backend and on the GPU (lavapipe here).

Tolerance: each element of C is a chain of at most ``depth`` f32 roundings (the slice's sequential sum,
then the S partials), so |C - exact| <= (depth + 1) * 2^-24 * (|A| @ |B|) elementwise (the standard
bound gamma_n for recursive summation, with margin 1): the bound states what the kernels promise.
"""

from __future__ import annotations

import numpy as np
import pytest

import vyre.array as xp
from vyre.array._kernels import matmul_split as S
from vyre.array._kernels import matmul_thin as T

EPS = 2.0 ** -24


def _check(a: np.ndarray, b: np.ndarray, got: np.ndarray, depth: int) -> None:
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    exact = a64 @ b64
    bound = (depth + 1) * EPS * (np.abs(a64) @ np.abs(b64)) + 1e-30
    assert got.shape == exact.shape and got.dtype == np.float32
    worst = float(np.max(np.abs(got - exact) / bound))
    assert worst <= 1.0, f"error {worst:.2f} x the bound"


# (batch or None, m, k, n, rows mode, slices > 1)
CASES = [
    (None, 300, 9, 8, True, False),      # skinny N, short K: rows mode, K unrolled
    (None, 8, 40, 300, False, False),    # skinny M, K looped: columns mode
    (None, 9, 3000, 8, True, True),      # long K, tiny output: split (a weight gradient's shape)
    (None, 5, 2048, 12, False, True),    # split, columns mode (M the smaller side)
    (None, 1, 700, 1, True, True),       # a dot product as a matmul, split, a partial last slice
    (6, 8, 9, 20, False, False),         # batched (a convolution's shape), columns mode
    (4, 7, 64, 3, True, False),          # batched, rows mode
    (3, 4, 1500, 6, False, True),        # batched and split
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(str(v) for v in c[:4] if v is not None))
def test_thin_paths_match_numpy(xb, case):
    batch, m, k, n, rows, split = case
    lead = () if batch is None else (batch,)
    s = T.thin_shape(batch or 1, m, k, n, batch is not None, batch is not None)
    assert s is not None and s.rows == rows and (s.slices > 1) == split, s
    if split:  # loops stay short, and the slices cover K exactly once
        assert s.slice_len <= T.MAX_SLICE and (s.slices - 1) * s.slice_len < k <= s.slices * s.slice_len
    r = np.random.default_rng(m * 1000 + k + n)
    a = r.standard_normal(lead + (m, k)).astype(np.float32)
    b = r.standard_normal(lead + (k, n)).astype(np.float32)
    got = np.asarray(xp.matmul(xp.asarray(a), xp.asarray(b)))
    _check(a, b, got, T.depth(s))


def test_stack_times_one_matrix_folds_into_rows(xb):
    """(batch, m, k) @ (k, n) with small n: the stack folds into M (one (batch*m, k) operand)."""
    r = np.random.default_rng(7)
    a = r.standard_normal((5, 30, 600)).astype(np.float32)
    b = r.standard_normal((600, 4)).astype(np.float32)
    s = T.thin_shape(1, 150, 600, 4, False, False)
    assert s is not None and s.rows and s.slices > 1
    got = np.asarray(xp.matmul(xp.asarray(a), xp.asarray(b)))
    _check(a.reshape(150, 600), b, got.reshape(150, 4), T.depth(s))


def test_split_is_the_same_every_run(gpu):
    """The partials are summed in a fixed order: bit-identical results run to run."""
    r = np.random.default_rng(3)
    a = r.standard_normal((9, 20000)).astype(np.float32)
    b = r.standard_normal((20000, 8)).astype(np.float32)
    s = T.thin_shape(1, 9, 20000, 8, False, False)
    assert s is not None and s.slices > 1
    with xp.use(gpu):
        x, y = xp.asarray(a), xp.asarray(b)
        first = np.asarray(xp.matmul(x, y))
        for _ in range(3):
            assert np.array_equal(np.asarray(xp.matmul(x, y)), first)
    _check(a, b, first, T.depth(s))


def test_wide_products_keep_the_tiled_gemm():
    assert T.thin_shape(1, 64, 64, 64, False, False) is None
    assert T.thin_shape(1, 4096, 4096, 4096, False, False) is None
    assert T.thin_shape(1, 17, 5000, 17, False, False) is None  # both sides over THIN


def test_transposed_and_pending_operands(xb):
    """Operands that are views or pending expressions are evaluated first, in the same submission."""
    r = np.random.default_rng(11)
    a = r.standard_normal((1000, 6)).astype(np.float32)
    b = r.standard_normal((1000, 5)).astype(np.float32)
    got = np.asarray(xp.matmul(xp.matrix_transpose(xp.asarray(a)) * 2.0, xp.asarray(b) + 1.0))
    s = T.thin_shape(1, 6, 1000, 5, False, False)
    assert s is not None
    _check(a.T * 2.0, b + 1.0, got, T.depth(s))


@pytest.mark.parametrize("m,k,n", [(40, 4099, 24), (70, 4096, 65)])
def test_tiled_split_k_matches_numpy(xb, m, k, n):
    """Both sides over 16, a long K into a few tiles: the GEMM per K-slice, then the fixed-order sum
    (4099: the last slice is partial, its tail read as zeros)."""
    s = S.split_shape(m, k, n)
    assert s is not None and s.slices > 1 and s.slice_len % 8 == 0
    assert (s.slices - 1) * s.slice_len < k <= s.slices * s.slice_len
    r = np.random.default_rng(k + m)
    a = r.standard_normal((m, k)).astype(np.float32)
    b = r.standard_normal((k, n)).astype(np.float32)
    x, y = xp.asarray(a), xp.asarray(b)
    got = np.asarray(xp.matmul(x, y))
    _check(a, b, got, S.depth(s))
    assert np.array_equal(np.asarray(xp.matmul(x, y)), got)  # the same bits again


def test_tiled_split_k_only_for_few_tiles():
    assert S.split_shape(64, 2048, 64) is None  # short K
    assert S.split_shape(1024, 8192, 1024) is None  # many tiles: workgroups enough


# the GPU-adapter policy (many short K-slices): shapes of a training step's weight gradients and heads
GPU_CASES = [(None, 10, 256, 256), (None, 512, 1024, 10), (None, 10, 512, 1024), (None, 16, 16384, 9),
             (3, 4, 700, 6)]


@pytest.mark.parametrize("case", GPU_CASES, ids=lambda c: "x".join(str(v) for v in c[1:]))
def test_gpu_adapter_policy_splits_finer_and_matches_numpy(gpu, case):
    """On a GPU adapter the thin kernel splits K into slices of >= GPU_MIN_SLICE for ~GPU_TARGET invocations;
    run here (lavapipe) by marking the backend as a GPU one, restored afterwards."""
    batch, m, k, n = case
    lead = () if batch is None else (batch,)
    cpu = T.thin_shape(batch or 1, m, k, n, batch is not None, batch is not None)
    s = T.thin_shape(batch or 1, m, k, n, batch is not None, batch is not None, gpu=True)
    assert s is not None and cpu is not None and s.slices > cpu.slices and s.slice_len >= T.GPU_MIN_SLICE
    assert (s.slices - 1) * s.slice_len < k <= s.slices * s.slice_len
    r = np.random.default_rng(k + n)
    a = r.standard_normal(lead + (m, k)).astype(np.float32)
    b = r.standard_normal(lead + (k, n)).astype(np.float32)
    before = getattr(gpu, "_vyre_gpu_adapter", None)
    gpu._vyre_gpu_adapter = True
    try:
        with xp.use(gpu):
            got = np.asarray(xp.matmul(xp.asarray(a), xp.asarray(b)))
    finally:
        gpu._vyre_gpu_adapter = before
    _check(a, b, got, T.depth(s))
