"""Sharded array ops on two Ray workers against numpy, within each op's tolerance (integers exact),
and reproducible bit for bit run to run."""

from __future__ import annotations

import numpy as np
import pytest

from vyre.errors import DispatchError, InvalidArgumentError, VyreError
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


# issue 27: errors the work raises on a worker came back as Ray's RayTaskError(DispatchError), carrying a
# coloured remote traceback; the docs promise them unchanged (same class, message and fix)
WORKER_ERRORS = [
    ("reduce.sum", lambda p, *a: p.reduce("sum", *a), [np.ones(0, np.float32)]),
    ("reduce.max", lambda p, *a: p.reduce("max", *a), [np.ones(0, np.int32)]),
    ("sort.radix", lambda p, *a: p.sort(*a), [np.ones(10, np.float32)]),
    ("scan.inclusive", lambda p, *a: p.scan(*a), [np.ones(0, np.float32)]),
    ("scan.exclusive", lambda p, *a: p.scan(*a, exclusive=True), [np.ones(0, np.float32)]),
    ("zip.add", lambda p, *a: p.elementwise("zip.add", *a), [np.ones(40, np.float32), np.ones(40, np.int32)]),
    ("map.sqrt", lambda p, *a: p.elementwise("map.sqrt", *a), [np.ones(40, np.int32)]),
    ("matmul", lambda p, *a: p.matmul(*a), [np.ones((4, 4), np.float64), np.ones((4, 4), np.float64)]),
]


@pytest.mark.parametrize("op,call,args", WORKER_ERRORS, ids=[f"{w[0]}-{k}" for k, w in enumerate(WORKER_ERRORS)])
def test_worker_errors_come_back_unchanged(ray_pool, gpu, op, call, args):
    import ray

    from vyre import ops
    from vyre.ops.api import function_name

    with pytest.raises(VyreError) as local:
        getattr(ops, function_name(op))(gpu, *args)  # what one backend raises for the same work
    with pytest.raises(VyreError) as remote:
        call(ray_pool, *args)
    want, got = local.value, remote.value
    assert type(got) is type(want), type(got).__mro__
    assert not isinstance(got, ray.exceptions.RayTaskError)
    assert got.fix == want.fix and got.code == want.code
    assert got.message.startswith(want.message + " (on worker host "), got.message
    assert ", adapter " in got.message and got.worker in got.message
    assert str(got) == f"{got.message}\nFix: {got.fix}"
    assert "Traceback" not in str(got) and "\x1b" not in str(got)  # no remote traceback, no colour codes


@pytest.mark.parametrize("call,builtin", [
    (lambda p: p.reduce("median", np.ones(4, np.float32)), ValueError),
    (lambda p: p.reduce(3, np.ones(4, np.float32)), TypeError),
    (lambda p: p.elementwise("zip.nope", np.ones(4, np.float32)), ValueError),
    (lambda p: p.elementwise(["zip.add"], np.ones(4, np.float32)), TypeError),
    (lambda p: p.elementwise("reduce.sum", np.ones(4, np.float32)), ValueError),
    (lambda p: p.matmul(np.ones(4, np.float32), np.ones(4, np.float32)), ValueError),
    (lambda p: p.sort(np.ones((2, 2), np.uint32)), ValueError),
])
def test_pool_argument_errors_are_builtin_errors(ray_pool, call, builtin):
    with pytest.raises(InvalidArgumentError) as info:
        call(ray_pool)
    assert isinstance(info.value, builtin) and isinstance(info.value, DispatchError) and info.value.fix
    assert getattr(info.value, "worker", None) is None  # raised here, before any worker call
