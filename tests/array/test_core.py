"""vyre.Array core: creation, dtypes, devices, fusion counts and caching, tree limits, leaks, views,
run_pipeline_on; on the reference backend and the GPU (the ``xb`` fixture)."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import vyre
from vyre import array_api as xp
from vyre.array._kernels import fused as _fuse
from vyre.errors import DeviceMismatchError, DispatchError, UnsupportedDTypeError

from gpu_policy import skip_or_fail


def _resident_handles(backend) -> int:
    if backend.name == "wgpu":
        return backend.stats()["resident"]["handles"]
    return backend._resident.handles


def test_creation(xb):
    a = xp.asarray([[1, 2], [3, 4]])
    assert a.dtype == xp.int32 and a.shape == (2, 2) and a.ndim == 2 and a.size == 4 and a.nbytes == 16
    assert a.device is xb and len(a) == 2
    np.testing.assert_array_equal(np.asarray(a), [[1, 2], [3, 4]])
    assert xp.asarray(1.5).dtype == xp.float32 and float(xp.asarray(1.5)) == 1.5
    assert bool(xp.asarray(True)) and int(xp.asarray(7)) == 7 and [0, 1, 2][xp.asarray(2)] == 2
    np.testing.assert_array_equal(np.asarray(xp.zeros((2, 3))), np.zeros((2, 3), np.float32))
    np.testing.assert_array_equal(np.asarray(xp.ones(5, dtype=xp.uint32)), np.ones(5, np.uint32))
    np.testing.assert_array_equal(np.asarray(xp.full((2, 2), 7)), np.full((2, 2), 7, np.int32))
    np.testing.assert_array_equal(np.asarray(xp.full(3, True)), [True] * 3)
    np.testing.assert_array_equal(np.asarray(xp.arange(10)), np.arange(10, dtype=np.int32))
    np.testing.assert_array_equal(np.asarray(xp.arange(1.0, 2.0, 0.25)), np.arange(1.0, 2.0, 0.25, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(xp.linspace(0, 1, 7)), np.linspace(0, 1, 7).astype(np.float32))
    np.testing.assert_array_equal(np.asarray(xp.eye(3, 4, k=1)), np.eye(3, 4, k=1, dtype=np.float32))
    b = xp.asarray(np.arange(6, dtype=np.uint32).reshape(2, 3))
    for fn, want in [(xp.zeros_like, 0), (xp.ones_like, 1), (xp.empty_like, 0)]:
        r = fn(b)
        assert r.dtype == xp.uint32 and r.shape == (2, 3)
        np.testing.assert_array_equal(np.asarray(r), np.full((2, 3), want, np.uint32))
    np.testing.assert_array_equal(np.asarray(xp.full_like(b, 9)), np.full((2, 3), 9, np.uint32))
    assert xp.asarray(b) is b and xp.asarray(b, copy=True) is not b
    np.testing.assert_array_equal(np.asarray(xp.asarray(memoryview(np.arange(4, dtype=np.float32)))), np.arange(4))
    assert xp.zeros(0).size == 0 and np.asarray(xp.zeros((0, 3)) + 1).shape == (0, 3)
    assert "Array([[0, 1, 2]" in repr(b) and b.__array_namespace__() is xp
    np.testing.assert_array_equal(np.asarray(b.T), np.arange(6).reshape(2, 3).T)


def test_dtype_errors(xb):
    for bad in (np.int8, np.uint16):  # 64-bit dtypes: tests/array/test_float64.py; complex: test_complex.py
        with pytest.raises(UnsupportedDTypeError, match="WGSL has no|hold bool"):
            xp.zeros(3, dtype=bad)
        with pytest.raises(UnsupportedDTypeError, match="astype"):
            xp.asarray(np.zeros(3, dtype=bad))
    np.testing.assert_array_equal(np.asarray(xp.asarray(np.arange(3.0), dtype=xp.float32)), [0, 1, 2])
    with pytest.raises(UnsupportedDTypeError):
        xp.asarray([2**40])
    with pytest.raises(UnsupportedDTypeError, match="out of range"):
        xp.asarray(np.zeros(3, np.uint32)) + (-1)
    with pytest.raises(UnsupportedDTypeError, match="out of range"):
        xp.asarray(np.zeros(3, np.int32)) * 2**31
    i = xp.asarray(np.arange(3, dtype=np.int32))
    assert (i * 0.5).dtype == xp.float32 and (i + 1).dtype == xp.int32
    np.testing.assert_array_equal(np.asarray(i * 0.5), [0, 0.5, 1])
    assert (xp.asarray([True, False]) + 2).dtype == xp.int32
    with pytest.raises(UnsupportedDTypeError):
        i & 1.5
    if not xb.capabilities().f16:
        with pytest.raises(UnsupportedDTypeError, match="shader-f16"):
            xp.zeros(3, dtype=xp.float16)
    assert xp.result_type(xp.int32, xp.float32) == xp.float32 and xp.can_cast(xp.float16, xp.float32)
    assert xp.isdtype(xp.uint32, "integral") and not xp.isdtype(xp.float32, ("bool", "integral"))
    assert xp.finfo(xp.float32).eps == np.finfo(np.float32).eps and xp.iinfo(xp.int32).max == 2**31 - 1


def test_float16(xb):
    if not xb.capabilities().f16:
        skip_or_fail("no shader-f16")
    x = np.linspace(-3, 3, 101).astype(np.float16)
    a = xp.asarray(x)
    np.testing.assert_array_equal(np.asarray(a * 2 + 1), x * np.float16(2) + np.float16(1))
    np.testing.assert_allclose(np.asarray(xp.exp(a)), np.exp(x.astype(np.float64)), rtol=1e-3)


def test_device_mismatch_and_use(ref_backend):
    other = vyre.ReferenceBackend()
    a = xp.asarray([1.0], device=ref_backend)
    b = xp.asarray([1.0], device=other)
    with pytest.raises(DeviceMismatchError, match="to_device"):
        a + b
    np.testing.assert_array_equal(np.asarray(a + b.to_device(ref_backend)), [2.0])
    with vyre.use(other):
        assert xp.zeros(1).device is other
        with vyre.use(ref_backend):
            assert xp.zeros(1).device is ref_backend
        assert xp.zeros(1).device is other
    seen = {}

    def worker(k, backend):
        with vyre.use(backend):
            for _ in range(20):
                assert xp.zeros(1).device is backend
            seen[k] = True

    ts = [threading.Thread(target=worker, args=(k, (ref_backend, other)[k % 2])) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(seen) == 4


def test_fusion_counts_and_cache(xb):
    a, b, c = (xp.asarray(np.arange(1000, dtype=np.float32) + k) for k in range(3))
    expr = (a * 2 + b) * c - 1
    assert expr.is_lazy and expr.explain().startswith("1 kernel(s)")
    before = xp.fusion_stats()
    got = np.asarray(expr)
    after = xp.fusion_stats()
    assert after["kernels_dispatched"] - before["kernels_dispatched"] == 1
    assert after["submissions"] - before["submissions"] == 1
    an, bn, cn = (np.arange(1000, dtype=np.float32) + k for k in range(3))
    np.testing.assert_array_equal(got, (an * 2 + bn) * cn - 1)
    # the same expression on new data (and a new scalar): nothing built, nothing compiled
    stats0 = xb.stats() if xb.name == "wgpu" else None
    built0 = xp.fusion_stats()["kernels_built"]
    d, e, f = (xp.asarray(np.full(1000, k, np.float32)) for k in (1, 2, 3))
    np.testing.assert_array_equal(np.asarray((d * 5 + e) * f - 4), np.full(1000, 17, np.float32))
    assert xp.fusion_stats()["kernels_built"] == built0
    if stats0 is not None:
        stats1 = xb.stats()
        assert stats1["lowerings"] == stats0["lowerings"]
        assert stats1["pipelines_compiled"] == stats0["pipelines_compiled"]
        assert stats1["pipeline_cache"]["misses"] == stats0["pipeline_cache"]["misses"]


def test_deep_chain_is_cut(xb):
    x = xp.asarray(np.zeros(16, np.int32))
    y = x
    for _ in range(3000):
        y = y + 1
    assert y._expr.size <= _fuse.MAX_NODES
    before = xp.fusion_stats()
    np.testing.assert_array_equal(np.asarray(y), np.full(16, 3000, np.int32))
    after = xp.fusion_stats()
    assert after["submissions"] - before["submissions"] == 1
    assert 3000 // _fuse.MAX_NODES <= after["kernels_dispatched"] - before["kernels_dispatched"] <= 3000 // 30


def test_many_leaves_are_cut(xb):
    arrs = [xp.asarray(np.full(8, k, np.float32)) for k in range(12)]
    s = arrs[0]
    for a in arrs[1:]:
        s = s + a
    np.testing.assert_array_equal(np.asarray(s), np.full(8, sum(range(12)), np.float32))


def test_no_leaks(xb):
    (xp.asarray(np.zeros(4, np.float32)) + 1).evaluate()  # caches the parameter buffer of "+ 1"
    gc.collect()
    start = _resident_handles(xb)
    for k in range(2000):
        a = xp.asarray(np.full(4, k, np.float32))
        b = (a + 1).evaluate()
        del a, b
    gc.collect()
    assert _resident_handles(xb) == start


def test_inplace_keeps_pending_values(xb):
    x = xp.asarray(np.arange(4, dtype=np.float32))
    y = x * 10
    x += 1
    x *= 2
    np.testing.assert_array_equal(np.asarray(x), (np.arange(4) + 1) * 2)
    np.testing.assert_array_equal(np.asarray(y), np.arange(4) * 10)
    with pytest.raises(DispatchError):
        i = xp.asarray([1, 2])
        i /= 2


def test_views(xb):
    m = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    a = xp.asarray(m)
    np.testing.assert_array_equal(np.asarray(xp.broadcast_to(xp.asarray([1, 2, 3, 4]), (3, 4))),
                                  np.broadcast_to([1, 2, 3, 4], (3, 4)))
    np.testing.assert_array_equal(np.asarray(xp.reshape(a, (4, -1)) * 2), m.reshape(4, -1) * 2)
    np.testing.assert_array_equal(np.asarray(xp.permute_dims(a, (2, 0, 1)) + 1), m.transpose(2, 0, 1) + 1)
    np.testing.assert_array_equal(np.asarray(xp.reshape(xp.permute_dims(a, (1, 0, 2)), (6, 4))),
                                  m.transpose(1, 0, 2).reshape(6, 4))
    np.testing.assert_array_equal(np.asarray(a.mT), m.transpose(0, 2, 1))
    with pytest.raises(DispatchError):
        xp.broadcast_to(a, (3, 4))


def test_same_code_on_both_backends(ref_backend, gpu):
    rng = np.random.default_rng(3)
    x, y = rng.uniform(-5, 5, (64, 33)).astype(np.float32), rng.integers(-99, 99, (33,)).astype(np.int32)
    out = []
    for backend in (ref_backend, gpu):
        with vyre.use(backend):
            a, b = xp.asarray(x), xp.asarray(y)
            f = xp.where(a > 0, xp.sqrt(xp.abs(a)) * b, xp.expm1(a)) - xp.atan2(a, 2.0)
            i = (b * 3) // 7 + (b % 5) ^ 12
            out.append((np.asarray(f), np.asarray(i)))
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_allclose(out[0][0], out[1][0], rtol=1e-5, atol=1e-5)


def test_run_pipeline_on(xb):
    from vyre.ops.registry import get
    x = np.arange(10, dtype=np.float32)
    a = xp.asarray(x) * 2  # pending: evaluated in the same submission
    spec = get("map.neg")
    pipe = spec.build(shape=(10,), dtype="f32")
    (out,) = xp.run_pipeline_on(pipe, [a])
    assert out.device is xb and out.dtype == xp.float32
    np.testing.assert_array_equal(np.asarray(out), -2 * x)
    np.testing.assert_array_equal(np.asarray(a), 2 * x)
