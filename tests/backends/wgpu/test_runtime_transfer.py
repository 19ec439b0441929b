"""Transfers and buffer reuse: the hot path creates no buffer and no bind group, readback never goes
through queue.read_buffer, and the device buffer pool (size classes, byte cap)."""

from __future__ import annotations

import numpy as np
import pytest

import vyre
from vyre.backends.wgpu.pool import MIN_CLASS, BufferPool, size_class
from vyre.backends.wgpu.transfer import Stats
from vyre.errors import NoAdapterError
from vyre.ir.builder import ProgramBuilder

from gpu_policy import skip_or_fail


@pytest.fixture(scope="module")
def gpu():
    try:
        return vyre.WgpuBackend.new(disk_cache=False)
    except NoAdapterError as exc:
        skip_or_fail(f"no GPU adapter: {exc}")


def scale_program(name="scale"):
    b = ProgramBuilder(name, 64)
    x = b.buffer("x", "f32")
    s = b.buffer("s", "f32", access="uniform", count=1)
    y = b.buffer("y", "f32", access="write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = x[i] * s[0]
    return b.build()


class DeviceCalls:
    """Counts create_buffer and create_bind_group calls on the device class, and forbids queue.read_buffer."""

    def __init__(self, monkeypatch, backend):
        self.calls = {"create_buffer": 0, "create_bind_group": 0}
        device, queue = backend.device_queue()
        for name in self.calls:
            orig = getattr(type(device), name)
            monkeypatch.setattr(type(device), name, self._counting(name, orig))

        def no_read_buffer(*a, **kw):
            raise AssertionError("queue.read_buffer used on the dispatch path")

        monkeypatch.setattr(type(queue), "read_buffer", no_read_buffer)

    def _counting(self, name, orig):
        def wrapped(self_, *a, **kw):
            self.calls[name] += 1
            return orig(self_, *a, **kw)

        return wrapped


def test_repeated_shapes_create_nothing(gpu, monkeypatch):
    p = scale_program()
    r = np.random.default_rng(0)
    gpu.dispatch(p, [np.zeros(1000, np.float32), np.float32([1])])  # warm: buffers and bind groups
    s0 = gpu.stats()
    calls = DeviceCalls(monkeypatch, gpu)
    # smaller shapes that fit the same size classes keep the buffers; each new element count gets its params
    # uniform (the shared buffer of its words, written once) and the bind group 1 holding it, once
    for n in (700, 513):
        gpu.dispatch(p, [np.zeros(n, np.float32), np.float32([1])])
    assert calls.calls == {"create_buffer": 2, "create_bind_group": 2}
    calls.calls = {"create_buffer": 0, "create_bind_group": 0}
    s0 = gpu.stats()
    # then the same shapes again, in any order: nothing new is created
    for n in (1000, 1000, 700, 513, 1000):
        xs = r.standard_normal(n, dtype=np.float32)
        (y,) = gpu.dispatch(p, [xs, np.float32([3])])
        np.testing.assert_allclose(y, xs * 3, rtol=1e-6)
    assert calls.calls == {"create_buffer": 0, "create_bind_group": 0}
    s1 = gpu.stats()
    for key in ("buffers_created", "bind_groups_created", "bind_group_layouts_created", "staging_buffers_created"):
        assert s1.get(key, 0) == s0.get(key, 0), key
    assert s1["pipeline_cache"]["compiled"] == s0["pipeline_cache"]["compiled"]
    assert s1["dispatches"] == s0["dispatches"] + 5 and s1["submits"] == s0["submits"] + 5
    # a larger input needs larger x and y buffers and a new bind group 0; its count, a params uniform and a
    # bind group 1
    (y,) = gpu.dispatch(p, [np.ones(5000, np.float32), np.float32([2])])
    np.testing.assert_allclose(y, 2.0)
    assert calls.calls == {"create_buffer": 3, "create_bind_group": 2}


def test_programs_with_one_interface_share_layouts(gpu):
    # the first program of this interface creates its layouts (unless an earlier test did); then none more
    gpu.dispatch(scale_program(), [np.ones(8, np.float32), np.float32([1])])
    before = gpu.stats()["bind_group_layouts_created"]
    assert before >= 2  # group 0 (x, s, y) and group 1 (the hidden params)
    for k in range(3):
        gpu.dispatch(scale_program(f"scale_{k}"), [np.ones(8, np.float32), np.float32([1])])
    assert gpu.stats()["bind_group_layouts_created"] == before  # same (binding, kind) signature as "scale"


def test_size_classes():
    assert size_class(1) == MIN_CLASS == 256
    assert size_class(256) == 256 and size_class(257) == 512
    assert size_class(1000) == 1024 and size_class(1 << 20) == 1 << 20 and size_class((1 << 20) + 1) == 2 << 20
    assert size_class(100_000, cap=65536) == 100_000  # above the binding limit: exact (16-byte aligned)
    assert size_class(100_001, cap=65536) == 100_016


def test_pool_reuse_and_cap(gpu):
    device, _ = gpu.device_queue()
    pool = BufferPool(device, Stats(), cap_bytes=4096)
    a = pool.acquire("storage", 1000)
    assert a.size == 1024 and (pool.hits, pool.misses, pool.bytes) == (0, 1, 1024)
    pool.release(a)
    b = pool.acquire("storage", 600)  # same class: the same buffer
    assert b is a and pool.hits == 1
    u = pool.acquire("uniform", 600)  # another kind: another buffer
    assert u is not a and pool.misses == 2
    pool.release(b)
    pool.release(u)
    big = [pool.acquire("storage", 2048) for _ in range(2)]  # 1024 + 1024 + 4096 bytes > cap
    assert pool.bytes == 6144 and pool.free_buffers == 2
    pool.trim()
    # the free buffers go, least recently released first, until under the cap... or none is left
    assert pool.free_buffers == 0 and pool.bytes == 4096 and pool.destroyed == 2
    for buf in big:
        pool.release(buf)
    pool.trim()
    assert pool.bytes == 4096 and pool.buffers == 2  # at the cap, not over it
    pool.cap_bytes = 2048
    pool.trim()
    assert pool.bytes == 2048 and pool.buffers == 1 and pool.destroyed == 3
    snap = pool.snapshot()
    assert snap["bytes"] == pool.bytes and snap["hits"] == 1 and snap["misses"] == 4
    pool.clear()
    assert pool.bytes == 0 and pool.buffers == 0


def test_pool_cap_returns_least_recently_used_pipelines_buffers(monkeypatch):
    try:
        gpu = vyre.WgpuBackend.new(disk_cache=False, pool_cap_bytes=64 << 10)
    except NoAdapterError as exc:
        skip_or_fail(f"no GPU adapter: {exc}")
    assert gpu.pool_budget_bytes == 64 << 10
    n = 6000  # 24 KB per buffer: 32 KiB classes, two per program (x, y)
    progs = [scale_program(f"cap_{k}") for k in range(3)]
    for k, p in enumerate(progs):
        xs = np.full(n, k, np.float32)
        (y,) = gpu.dispatch(p, [xs, np.float32([2])])
        np.testing.assert_allclose(y, 2.0 * k)
        pool = gpu.stats()["buffer_pool"]
        assert pool["bytes"] <= (64 << 10) + 2 * 256  # only the running job's buffers may exceed the cap
    assert gpu.stats()["pool_releases"] >= 2
    # the released pipelines still run (their buffers come back from the pool)
    (y,) = gpu.dispatch(progs[0], [np.ones(n, np.float32), np.float32([3])])
    np.testing.assert_allclose(y, 3.0)


def test_large_inputs_use_the_mapped_staging_buffer(gpu):
    n = 1 << 20  # 4 MiB per input: over the write_buffer threshold
    xs = np.arange(n, dtype=np.float32)
    before = gpu.stats()
    (y,) = gpu.dispatch(scale_program(), [xs, np.float32([0.5])])
    np.testing.assert_allclose(y, xs * 0.5, rtol=1e-6)
    after = gpu.stats()
    assert after["uploads_mapped"] == before["uploads_mapped"] + 1  # x; the 4-byte uniform goes direct
    assert after["bytes_read_back"] - before["bytes_read_back"] == 4 * n
    assert after["bytes_uploaded"] - before["bytes_uploaded"] >= 4 * n + 4
