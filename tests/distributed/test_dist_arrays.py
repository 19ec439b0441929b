"""Sharded array ops on two Ray workers against numpy, within each op's tolerance (integers exact),
and reproducible bit for bit run to run."""

from __future__ import annotations

import numpy as np
import pytest

from vyre.errors import DispatchError
from vyre.ops.registry import compare, get


def within(op_id: str, got, want, *arrays, **params) -> None:
    spec = get(op_id)
    tol = spec.tolerance_of(spec.params_for(*arrays, **params))
    ok, worst, detail = compare(np.asarray(got), np.asarray(want), tol)
    assert ok, f"{op_id}: {detail} (worst {worst})"


RNG = np.random.default_rng(2026)
F = RNG.random((1001, 8), dtype=np.float32)
G = RNG.random((1001, 8), dtype=np.float32)
INTS = RNG.integers(-(2**31), 2**31, (1001, 8), dtype=np.int64).astype(np.int32)


@pytest.mark.parametrize("op,args,want", [
    ("zip.add", (F, G), F + G),
    ("zip_mul", (F, G[0]), F * G[0]),  # a row broadcast along axis 0 goes whole to every worker
    ("zip.sub", (INTS, INTS[:1]), INTS - INTS[:1]),  # integers wrap
    ("map.sqrt", (F,), np.sqrt(F)),
    ("bits.popcount", (INTS.view(np.uint32),), np.bitwise_count(INTS.view(np.uint32))),
])
def test_elementwise(ray_pool, op, args, want):
    got = ray_pool.elementwise(op, *args)
    assert got.shape == want.shape
    within(op.replace("_", ".", 1), got, want.astype(got.dtype), *args)


def test_elementwise_refuses_what_cannot_be_split(ray_pool):
    with pytest.raises(DispatchError, match="rows"):
        ray_pool.elementwise("zip.add", F, G[:10])
    with pytest.raises(DispatchError, match="not an elementwise op"):
        ray_pool.elementwise("matmul", F, G.T)
    with pytest.raises(DispatchError, match="no vyre op"):
        ray_pool.elementwise("zip.nothing", F)


def test_matmul_rows_split_b_shared(ray_pool):
    a = RNG.standard_normal((257, 64)).astype(np.float32)
    b = RNG.standard_normal((64, 33)).astype(np.float32)
    got = ray_pool.matmul(a, b)
    within("matmul", got, a @ b, a, b)
    assert np.array_equal(ray_pool.matmul(a, b), got)
    with pytest.raises(DispatchError, match=r"\(m, k\) @ \(k, n\)"):
        ray_pool.matmul(a, b.T)


@pytest.mark.parametrize("op,fn", [("sum", np.sum), ("min", np.min), ("max", np.max)])
def test_reductions(ray_pool, op, fn):
    x = RNG.random(100_003, dtype=np.float32)
    got = ray_pool.reduce(op, x)
    assert got.shape == () and got.dtype == np.float32
    within(f"reduce.{op}", got, np.asarray(fn(x, dtype=np.float64) if op == "sum" else fn(x), np.float32), x)
    assert ray_pool.reduce(op, x).tobytes() == got.tobytes()  # fixed shard order: same bits every run
    xi = INTS.reshape(-1)
    want = np.asarray(fn(xi) if op != "sum" else xi.sum(dtype=np.int32))  # int32 sums wrap
    assert ray_pool.reduce(op, INTS) == want and ray_pool.reduce(op, INTS).dtype == np.int32
    with pytest.raises(DispatchError, match="unknown reduction"):
        ray_pool.reduce("median", x)


@pytest.mark.parametrize("exclusive", [False, True])
def test_scans(ray_pool, exclusive):
    xi = RNG.integers(0, 2**32, 50_001, dtype=np.uint64).astype(np.uint32)
    inclusive = np.cumsum(xi, dtype=np.uint32)  # wraps like the op
    want = np.r_[np.uint32(0), inclusive[:-1]] if exclusive else inclusive
    got = ray_pool.scan(xi, exclusive=exclusive)
    assert got.dtype == np.uint32 and np.array_equal(got, want)
    x = RNG.random(20_000, dtype=np.float32)
    inc = np.cumsum(x, dtype=np.float64).astype(np.float32)
    wantf = np.r_[np.float32(0), inc[:-1]] if exclusive else inc
    gotf = ray_pool.scan(x, exclusive=exclusive)
    within("scan.exclusive" if exclusive else "scan.inclusive", gotf, wantf, x)
    assert ray_pool.scan(x, exclusive=exclusive).tobytes() == gotf.tobytes()


def test_sort_merges_the_shards(ray_pool):
    keys = RNG.integers(0, 2**32, 20_001, dtype=np.uint64).astype(np.uint32)
    keys[::7] = 12345  # many equal keys across shards
    got = ray_pool.sort(keys)
    assert got.dtype == np.uint32 and np.array_equal(got, np.sort(keys))
    assert np.array_equal(ray_pool.sort(keys[:1]), keys[:1])
    with pytest.raises(DispatchError, match="1-D"):
        ray_pool.sort(keys.reshape(-1, 3)[:, :2])
