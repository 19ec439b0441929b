"""Lifecycle: shared()/new(), threads on the shared backend, shutdown, flush, device loss and
recovery (including refusing a changed adapter), capabilities and the stats() layout."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

import vyre
from vyre.backends.wgpu import adapter as adapter_mod
from vyre.backends.wgpu.backend import WgpuBackend
from vyre.errors import BackendError, DeviceLostError, NoAdapterError
from vyre.ir.builder import ProgramBuilder

from gpu_policy import skip_or_fail


def fresh(**kw) -> WgpuBackend:
    try:
        return WgpuBackend.new(**kw)
    except NoAdapterError as exc:
        skip_or_fail(f"no GPU adapter: {exc}")


def poly(k: int):
    b = ProgramBuilder(f"poly{k}", 64)
    x = b.buffer("x", "u32")
    y = b.buffer("y", "u32", access="write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = x[i] * x[i] + k
    return b.build()


def run_poly(gpu, k: int, n: int, seed: int = 0):
    xs = np.random.default_rng(seed).integers(0, 1 << 16, n, dtype=np.uint32)
    (y,) = gpu.dispatch(poly(k), [xs])
    np.testing.assert_array_equal(y, xs * xs + np.uint32(k))


@pytest.fixture
def shared_reset():
    """Restore the process-wide backend slot after a test that replaces it."""
    saved = WgpuBackend._shared
    yield
    WgpuBackend._shared = saved


def test_shared_is_one_backend_and_new_is_not(shared_reset):
    try:
        s = WgpuBackend.shared()
    except NoAdapterError as exc:
        skip_or_fail(f"no GPU adapter: {exc}")
    assert WgpuBackend.shared() is s and vyre.WgpuBackend.shared() is s
    n = fresh(disk_cache=False)
    assert n is not s and n.device_queue()[0] is not s.device_queue()[0]
    s.shutdown()
    s2 = WgpuBackend.shared()
    assert s2 is not s and not s2.is_shut_down
    run_poly(s2, 1, 10)


def test_eight_threads_on_shared(shared_reset):
    try:
        gpu = WgpuBackend.shared()
    except NoAdapterError as exc:
        skip_or_fail(f"no GPU adapter: {exc}")
    errors: list = []
    barrier = threading.Barrier(8)

    def worker(t):
        try:
            barrier.wait(30)
            for j in range(6):
                mine = WgpuBackend.shared()
                assert mine is gpu
                run_poly(mine, t % 3, 50 + 31 * t + j, seed=t * 10 + j)  # shared programs, varying shapes
            results = mine.dispatch_batch([(poly(t), [np.full(9, t, np.uint32)])])
            np.testing.assert_array_equal(results[0][0], np.full(9, t * t + t, np.uint32))
        except BaseException as exc:  # noqa: BLE001
            errors.append((t, exc))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not errors, errors
    assert not any(th.is_alive() for th in threads)


def test_shutdown_then_use_raises():
    gpu = fresh(disk_cache=False)
    run_poly(gpu, 2, 20)
    gpu.prepare()
    gpu.shutdown()
    gpu.shutdown()  # idempotent
    assert gpu.is_shut_down and "shut down" in repr(gpu)
    xs = np.zeros(4, np.uint32)
    for call in (lambda: gpu.dispatch(poly(2), [xs]), lambda: gpu.compile(poly(2)), gpu.flush, gpu.prepare,
                 lambda: gpu.dispatch_batch([(poly(2), [xs])]), lambda: gpu.probe_op("sqrt", [1.0]),
                 lambda: gpu.dispatch_wgsl("@compute @workgroup_size(1) fn main() {}", [], [], 1),
                 gpu.try_recover, gpu.force_device_lost):
        with pytest.raises(BackendError, match="shut down") as ei:
            call()
        assert not isinstance(ei.value, DeviceLostError) and "new()" in ei.value.fix
    s = gpu.stats()  # still readable
    assert s["shut_down"] and s["buffer_pool"]["bytes"] == 0 and s["pipeline_cache"]["entries"] == 0


def test_persistent_pipeline_after_shutdown_raises():
    gpu = fresh(disk_cache=False)
    pp = gpu.compile_persistent(poly(3))
    gpu.shutdown()
    with pytest.raises(BackendError, match="shut down"):
        pp.dispatch([np.zeros(4, np.uint32)])


def test_flush():
    gpu = fresh(disk_cache=False)
    run_poly(gpu, 4, 100)
    gpu.flush()
    run_poly(gpu, 4, 100)


def test_loss_then_recovery(tmp_path):
    gpu = fresh(disk_cache=tmp_path)
    p = poly(5)
    xs = np.arange(300, dtype=np.uint32)
    (before,) = gpu.dispatch(p, [xs])
    pp = gpu.compile_persistent(poly(6))
    art = gpu.compile(poly(7))
    gen = gpu.stats()["generation"]
    gpu.force_device_lost()
    assert gpu.device_lost() and gpu.stats()["generation"] == gen + 1
    for call in (lambda: gpu.dispatch(p, [xs]), lambda: gpu.compile(p), lambda: pp.dispatch([xs]),
                 lambda: gpu.dispatch_compiled(art, [xs]), gpu.flush, lambda: gpu.probe_op("abs", [1.0]),
                 lambda: gpu.dispatch_batch([(p, [xs])])):
        with pytest.raises(DeviceLostError) as ei:
            call()
        assert "try_recover" in ei.value.fix
    gpu.try_recover()
    assert not gpu.device_lost() and gpu.stats()["generation"] == gen + 2
    s = gpu.stats()
    assert s["pipeline_cache"]["entries"] == 0 and s["buffer_pool"]["bytes"] == 0  # memory caches were dropped
    (after,) = gpu.dispatch(p, [xs])
    np.testing.assert_array_equal(after, before)
    s = gpu.stats()
    assert s["disk_cache"]["hits"] >= 1 and s["lowerings"] == 3  # the disk cache stayed valid
    (y,) = pp.dispatch([xs])  # persistent pipelines are rebuilt and pinned again
    np.testing.assert_array_equal(y, xs * xs + 6)
    assert pp.pinned
    (y,) = gpu.dispatch_compiled(art, [xs])
    np.testing.assert_array_equal(y, xs * xs + 7)
    gpu.try_recover()  # not lost: nothing to do
    assert gpu.stats()["generation"] == gen + 2


class _Changed:
    """Wraps an adapter with other limits."""

    def __init__(self, adapter, limits):
        self._adapter = adapter
        self.limits = limits

    def __getattr__(self, name):
        return getattr(self._adapter, name)


@pytest.mark.parametrize("change", ["driver", "device", "limits"])
def test_try_recover_refuses_a_changed_adapter(monkeypatch, change):
    gpu = fresh(disk_cache=False)
    run_poly(gpu, 8, 10)
    gpu.force_device_lost()
    real = adapter_mod.select_adapter

    def changed(index=None):
        choice = real(index)
        info = dict(choice.info)
        if change == "limits":
            limits = dict(choice.adapter.limits)
            limits["max-storage-buffer-binding-size"] = limits["max-storage-buffer-binding-size"] // 2
            return dataclasses.replace(choice, adapter=_Changed(choice.adapter, limits))
        info[change] = info[change] + " (updated)"
        return dataclasses.replace(choice, info=info)

    monkeypatch.setattr(adapter_mod, "select_adapter", changed)
    with pytest.raises(DeviceLostError, match="cannot recover") as ei:
        gpu.try_recover()
    assert ("limits changed" in str(ei.value)) == (change == "limits")
    assert "new()" in ei.value.fix
    assert gpu.device_lost()
    with pytest.raises(DeviceLostError):
        run_poly(gpu, 8, 10)
    monkeypatch.undo()
    gpu.try_recover()
    run_poly(gpu, 8, 10)


def test_capabilities_and_profile():
    gpu = fresh(disk_cache=False)
    lim = gpu.device_limits
    assert gpu.max_workgroup_size() == tuple(lim[f"max-compute-workgroup-size-{a}"] for a in "xyz")
    assert gpu.max_storage_buffer_bytes() == lim["max-storage-buffer-binding-size"] >= 128 << 20
    assert gpu.max_compute_workgroups_per_dimension() == lim["max-compute-workgroups-per-dimension"] >= 65535
    for name in ("supports_f16", "supports_subgroup_ops", "supports_timestamps"):
        assert isinstance(getattr(gpu, name)(), bool)
    prof = gpu.device_profile()
    info = gpu.adapter_info
    assert (prof.device, prof.backend, prof.adapter_type, prof.vendor) == (
        info["device"], info["backend_type"], info["adapter_type"], info["vendor"])
    assert prof.features == tuple(sorted(gpu.features))
    assert prof.limits["max-storage-buffer-binding-size"] == gpu.max_storage_buffer_bytes()
    assert prof.supports_f16 == gpu.supports_f16()
    d = prof.to_dict()
    assert d["driver"] == info["driver"] and isinstance(d["limits"], dict)
    if "llvmpipe" in info["device"]:  # lavapipe reports its subgroup size range
        assert prof.subgroup_min_size and prof.subgroup_max_size >= prof.subgroup_min_size


def test_stats_layout():
    gpu = fresh(disk_cache=False)
    run_poly(gpu, 9, 1000)
    s = gpu.stats()
    assert set(s["pipeline_cache"]) >= {"entries", "capacity", "hits", "misses", "evictions", "hit_rate"}
    assert set(s["disk_cache"]) >= {"enabled", "hits", "misses", "writes", "corrupt"}
    assert set(s["buffer_pool"]) >= {"bytes", "buffers", "hits", "misses", "cap_bytes"}
    assert s["resident"] == {"bytes": 0, "handles": 0}
    assert s["adapter"]["device"] == gpu.adapter_info["device"]
    assert s["dispatches"] == 1 and s["bytes_uploaded"] >= 4000 and s["bytes_read_back"] == 4000
    assert s["buffer_pool"]["bytes"] == s["pooled_bytes"] > 0
    h = gpu.allocate_resident(4096)
    assert gpu.stats()["resident"] == {"bytes": 4096, "handles": 1}
    gpu.free_resident(h)
    assert gpu.stats()["resident"] == {"bytes": 0, "handles": 0}
