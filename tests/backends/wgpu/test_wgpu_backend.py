"""Tests of vyre.WgpuBackend (vyre/backends/wgpu/).

Two lowerings drive the backend: ``handwritten`` (WGSL written here, shaped like the
lowering contract, so the backend is tested on its own) and ``vyre.lower`` (the real one,
end to end). The module-scoped ``backend`` fixture fails under ``CI=true`` when no adapter
exists, and skips otherwise.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import dataclass

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import vyre  # noqa: E402
from vyre.backends.config import DispatchConfig  # noqa: E402
from vyre.backends.wgpu import adapter as adapter_mod  # noqa: E402
from vyre.backends.wgpu.device import translate_error  # noqa: E402
from vyre.errors import (  # noqa: E402
    DeviceLostError,
    DispatchError,
    LoweringError,
    NoAdapterError,
    OutOfMemoryError,
    UnsupportedFeatureError,
    ValidationError,
    VyreError,
)
from vyre.ir.builder import ProgramBuilder  # noqa: E402
from vyre.ir.types import Access, DataType  # noqa: E402

from gpu_policy import skip_or_fail  # noqa: E402


# ----------------------------------------------------------------------------- hand-written lowering
@dataclass(frozen=True)
class FakeBinding:
    group: int
    binding: int
    name: str
    kind: str
    dtype: object
    access: object
    atomic: bool = False


@dataclass(frozen=True)
class FakeLowered:
    wgsl: str
    entry_point: str
    bindings: tuple
    features: frozenset
    workgroup_size: tuple
    fingerprint: str
    lowering_version: str = "handwritten-1"


_KIND = {Access.READ: "read-only-storage", Access.READ_WRITE: "storage", Access.WRITE: "storage",
         Access.UNIFORM: "uniform"}

# Bodies by program name. In scope: gi (global_index), li, w (linear workgroup index),
# and len_<buffer> (element count from the params uniform).
BODIES: dict[str, str] = {
    "saxpy": "if (gi < len_y) { y[gi] = a[0].x * x[gi] + y[gi]; }",
    "iota": "if (gi < len_out) { out[gi] = gi; }",
    "evens": "if (gi < len_out && (gi % 2u) == 0u) { out[gi] = gi + 1u; }",
    "types": """
        if (gi < len_v3) { ov3[gi] = v3[gi] * 2.0; }
        if (gi < len_bl) { obl[gi] = select(1u, 0u, bl[gi] != 0u); }
        if (gi < len_h) { oh[gi] = h[gi] + 1.0h; }
        if (gi < len_v2) { ov2[gi] = v2[gi].yx; }
    """,
    "broken": "if (gi < len_out) { out[gi] = 1.5; }",  # u32 <- f32: the GPU rejects it
}


def _storage_type(d: DataType) -> str:
    s = d.storage_scalar.value
    return s if d.lanes == 1 else f"vec{d.lanes}<{s}>"


def handwritten_lower(program) -> FakeLowered:
    decls = program.sorted_buffers
    uses_f16 = any(b.dtype.uses_f16 for b in decls)
    lines = ["enable f16;"] if uses_f16 else []
    n_lens = max(1, (len(decls) + 3) // 4)
    lines.append(f"struct VyreParams {{ grid: vec4<u32>, lens: array<vec4<u32>, {n_lens}> }}")
    bindings = []
    for k, b in enumerate(decls):
        t = _storage_type(b.dtype)
        if b.access is Access.UNIFORM:
            n = max(1, (b.count + 3) // 4)
            lines.append(f"@group(0) @binding({k}) var<uniform> {b.name}: array<vec4<{t}>, {n}>;")
        else:
            mode = "read" if b.access is Access.READ else "read_write"
            lines.append(f"@group(0) @binding({k}) var<storage, {mode}> {b.name}: array<{t}>;")
        bindings.append(FakeBinding(0, k, b.name, _KIND[b.access], b.dtype, b.access))
    bindings.append(FakeBinding(1, 0, "_vyre", "uniform", None, None))
    lines.append("@group(1) @binding(0) var<uniform> _vyre: VyreParams;")
    wx, wy, wz = program.workgroup_size
    lens = "\n".join(f"  let len_{b.name} = _vyre.lens[{k // 4}][{k % 4}];" for k, b in enumerate(decls))
    lines.append(f"""@compute @workgroup_size({wx}, {wy}, {wz})
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nw: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {{
  let w = wid.x + wid.y * nw.x + wid.z * nw.x * nw.y;
  if (w >= _vyre.grid.w) {{ return; }}
  let gi = w * {wx * wy * wz}u + li;
{lens}
  {BODIES[program.name]}
}}""")
    return FakeLowered(wgsl="\n".join(lines), entry_point="main", bindings=tuple(bindings),
                       features=frozenset({"shader-f16"} if uses_f16 else ()),
                       workgroup_size=program.workgroup_size, fingerprint=program.fingerprint)


def _real_lowering_available() -> bool:
    try:
        from vyre.lower import lower  # noqa: F401
    except ImportError:
        return False
    return True


# ----------------------------------------------------------------------------- fixtures
def _acquire(**kw):
    try:
        return vyre.WgpuBackend(**kw)
    except NoAdapterError as exc:
        skip_or_fail(f"no GPU adapter: {exc}")


@pytest.fixture(scope="module")
def backend():
    """The backend with the real lowering (vyre.lower)."""
    if not _real_lowering_available():
        skip_or_fail("vyre.lower.lower does not exist yet")
    return _acquire()


@pytest.fixture(scope="module")
def hand():
    """A backend whose lowering is the hand-written WGSL above."""
    return _acquire(lower=handwritten_lower)


@pytest.fixture(params=["handwritten", "vyre.lower"])
def any_backend(request):
    return request.getfixturevalue("hand" if request.param == "handwritten" else "backend")


# ----------------------------------------------------------------------------- programs
def saxpy_program():
    b = ProgramBuilder("saxpy", 64)
    a = b.buffer("a", "f32", access="uniform", count=1)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="read_write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = a[0] * x[i] + y[i]
    return b.build(validate=False)


def iota_program(wg=64):
    b = ProgramBuilder("iota", wg)
    out = b.buffer("out", "u32", access="write")
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = i
    return b.build(validate=False)


def evens_program():
    b = ProgramBuilder("evens", 64)
    out = b.buffer("out", "u32", access="write")
    i = b.global_index()
    with b.if_((i < out.len()) & ((i % 2) == 0)):
        out[i] = i + 1
    return b.build(validate=False)


def types_program():
    b = ProgramBuilder("types", 64)
    v3 = b.buffer("v3", "vec3<f32>")
    bl = b.buffer("bl", "bool")
    h = b.buffer("h", "f16")
    v2 = b.buffer("v2", "vec2<u32>")
    ov3 = b.buffer("ov3", "vec3<f32>", access="write")
    obl = b.buffer("obl", "bool", access="write")
    oh = b.buffer("oh", "f16", access="write")
    ov2 = b.buffer("ov2", "vec2<u32>", access="write")
    i = b.global_index()
    with b.if_(i < v3.len()):
        ov3[i] = v3[i] * 2.0
    with b.if_(i < bl.len()):
        obl[i] = ~bl[i]
    with b.if_(i < h.len()):
        oh[i] = h[i] + 1.0
    with b.if_(i < v2.len()):
        ov2[i] = b.vec("vec2<u32>", v2[i].y, v2[i].x)
    return b.build(validate=False)


def saxpy_inputs(n, seed=0, a=2.5):
    r = np.random.default_rng(seed)
    return [np.array([a], np.float32), r.standard_normal(n, dtype=np.float32), r.standard_normal(n, dtype=np.float32)]


def saxpy_expected(inputs):
    a, x, y = inputs
    return a[0] * x + y


class CreateBufferCounter:
    """Counts device.create_buffer calls (wraps the device class's method)."""

    def __init__(self, monkeypatch, backend):
        self.calls = 0
        dev_cls = type(backend.device_queue()[0])
        orig = dev_cls.create_buffer
        counter = self

        def wrapped(self_, *a, **kw):
            counter.calls += 1
            return orig(self_, *a, **kw)

        monkeypatch.setattr(dev_cls, "create_buffer", wrapped)


# ----------------------------------------------------------------------------- import / adapters
def test_import_does_not_touch_wgpu():
    code = ("import sys, vyre, vyre.backends.wgpu; vyre.WgpuBackend; "
            "assert 'wgpu' not in sys.modules, 'wgpu imported'; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr


def test_picks_native_adapter_not_opengl(hand):
    import wgpu

    infos = [adapter_mod.adapter_info(a) for a in wgpu.gpu.enumerate_adapters_sync()]
    info = hand.adapter_info
    assert set(info) >= {"device", "vendor", "backend_type", "adapter_type", "description", "driver"}
    if os.environ.get(adapter_mod.ENV_VAR):
        return
    if any(i["backend_type"] in adapter_mod.NATIVE_BACKENDS for i in infos):
        assert info["backend_type"] in adapter_mod.NATIVE_BACKENDS, info
    if any("llvmpipe" in i["device"] and i["backend_type"] == "Vulkan" for i in infos) and not any(
            i["adapter_type"] in ("DiscreteGPU", "IntegratedGPU") and i["backend_type"] in adapter_mod.NATIVE_BACKENDS
            for i in infos):
        assert info["backend_type"] == "Vulkan" and "llvmpipe" in info["device"]


def test_backend_properties(hand):
    assert hand.name == "wgpu"
    lim = hand.device_limits
    assert lim["max-compute-workgroups-per-dimension"] >= 65535
    assert lim["max-storage-buffer-binding-size"] >= 128 << 20
    assert isinstance(hand.features, frozenset)
    assert hand.supports_f16() == ("shader-f16" in hand.features)
    # capabilities are methods (like the Rust API), read from the device's limits and features
    assert hand.supports_subgroup_ops() == ("subgroup" in hand.features)
    assert hand.supports_timestamps() == ("timestamp-query" in hand.features)
    assert hand.max_workgroup_size() == tuple(lim[f"max-compute-workgroup-size-{a}"] for a in "xyz")
    assert hand.max_storage_buffer_bytes() == lim["max-storage-buffer-binding-size"]
    assert hand.max_compute_workgroups_per_dimension() == lim["max-compute-workgroups-per-dimension"]
    assert hand.max_compute_invocations_per_workgroup() == lim["max-compute-invocations-per-workgroup"]
    assert "wgpu" in repr(hand) or "WgpuBackend" in repr(hand)
    from vyre.backends.base import Backend

    assert isinstance(hand, Backend)


class _FakeAdapter:
    def __init__(self, device, backend_type, adapter_type):
        self.info = {"device": device, "vendor": "v", "backend_type": backend_type, "adapter_type": adapter_type,
                     "description": "d"}


def test_adapter_ranking():
    gl = _FakeAdapter("llvmpipe", "OpenGL", "CPU")
    vk_cpu = _FakeAdapter("llvmpipe", "Vulkan", "CPU")
    gl_gpu = _FakeAdapter("Big GPU", "OpenGL", "DiscreteGPU")
    igpu = _FakeAdapter("Intel", "Vulkan", "IntegratedGPU")
    dgpu = _FakeAdapter("NVIDIA", "Vulkan", "DiscreteGPU")
    null = _FakeAdapter("null", "Null", "Unknown")
    assert adapter_mod.choose([gl, vk_cpu]).index == 1
    assert adapter_mod.choose([gl_gpu, vk_cpu]).index == 1  # never OpenGL when a native backend exists
    assert adapter_mod.choose([vk_cpu, igpu, gl]).index == 1
    assert adapter_mod.choose([vk_cpu, igpu, dgpu]).index == 2
    assert adapter_mod.choose([gl]).index == 0  # OpenGL only as a last resort
    assert adapter_mod.choose([gl, vk_cpu], forced="0").index == 0
    assert adapter_mod.choose([gl, vk_cpu, dgpu], forced="llvm").index == 1  # best match of the substring
    assert adapter_mod.choose([gl, vk_cpu], forced="opengl").index == 0
    with pytest.raises(NoAdapterError):
        adapter_mod.choose([null])
    with pytest.raises(NoAdapterError, match="VYRE_ADAPTER"):
        adapter_mod.choose([gl, vk_cpu], forced="no-such-gpu")
    with pytest.raises(NoAdapterError):
        adapter_mod.choose([gl, vk_cpu], forced="7")


def test_no_adapter_error_message(monkeypatch):
    import wgpu

    monkeypatch.setattr(wgpu.gpu, "enumerate_adapters_sync", lambda: [])
    monkeypatch.delenv(adapter_mod.ENV_VAR, raising=False)
    with pytest.raises(NoAdapterError) as ei:
        vyre.WgpuBackend.acquire()
    err = ei.value
    assert "mesa-vulkan-drivers" in str(err) and "XDG_RUNTIME_DIR" in str(err)
    assert err.fix and "mesa-vulkan-drivers" in err.fix
    assert err.code == "VYRE-E301"
    with pytest.raises(NoAdapterError):
        vyre.WgpuBackend.acquire_adapter(0)


def test_no_adapter_when_enumeration_crashes(monkeypatch):
    import wgpu

    def boom():
        raise RuntimeError("loader exploded")

    monkeypatch.setattr(wgpu.gpu, "enumerate_adapters_sync", boom)
    with pytest.raises(NoAdapterError, match="loader exploded"):
        vyre.WgpuBackend.acquire()


@pytest.mark.parametrize("bad", [99, -1, "0", 1.0, None, True])
def test_acquire_adapter_bad_index(bad):
    with pytest.raises(NoAdapterError):
        vyre.WgpuBackend.acquire_adapter(bad)


def test_acquire_adapter_index_and_env(monkeypatch, hand):
    b = vyre.WgpuBackend.acquire_adapter(hand.adapter_index)
    assert b.adapter_info == hand.adapter_info
    monkeypatch.setenv(adapter_mod.ENV_VAR, str(hand.adapter_index))
    assert vyre.WgpuBackend.acquire().adapter_index == hand.adapter_index
    monkeypatch.setenv(adapter_mod.ENV_VAR, "definitely-not-an-adapter")
    with pytest.raises(NoAdapterError, match="definitely-not-an-adapter"):
        vyre.WgpuBackend.acquire()


# ----------------------------------------------------------------------------- dispatch
def test_saxpy_end_to_end(any_backend):
    p = saxpy_program()
    for n in (1, 63, 64, 65, 1000, 100_003):
        ins = saxpy_inputs(n, seed=n)
        (y,) = any_backend.dispatch(p, ins)
        assert y.dtype == np.float32 and y.shape == (n,)
        np.testing.assert_allclose(y, saxpy_expected(ins), rtol=1e-6, atol=1e-6)
    # inputs by name, and the inputs are not modified
    ins = saxpy_inputs(100, seed=7)
    keep = [a.copy() for a in ins]
    (y,) = any_backend.dispatch(p, {"a": ins[0], "x": ins[1], "y": ins[2]})
    np.testing.assert_allclose(y, saxpy_expected(ins), rtol=1e-6, atol=1e-6)
    for a, k in zip(ins, keep):
        np.testing.assert_array_equal(a, k)


def test_saxpy_large_uses_mapped_upload(any_backend):
    n = 4 << 20  # 16 MiB per buffer: above the write_buffer threshold
    ins = saxpy_inputs(n, seed=3)
    before = any_backend.stats().get("uploads_mapped", 0)
    (y,) = any_backend.dispatch(saxpy_program(), ins)
    np.testing.assert_allclose(y, saxpy_expected(ins), rtol=1e-6, atol=1e-6)
    assert any_backend.stats()["staging_bytes"] >= 2 * 4 * n
    assert any_backend.stats()["uploads_mapped"] == before + 2  # x and y; the 4-byte uniform goes direct


def test_write_only_output_sizing(any_backend):
    p = iota_program()
    (o,) = any_backend.dispatch(p, [], DispatchConfig(counts={"out": 1000}))
    assert o.dtype == np.uint32 and o.shape == (1000,)
    np.testing.assert_array_equal(o, np.arange(1000, dtype=np.uint32))
    with pytest.raises(DispatchError, match="runtime-sized"):
        any_backend.dispatch(p, [])
    # fixed count
    b = ProgramBuilder("iota", 64)
    out = b.buffer("out", "u32", access="write", count=77)
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = i
    (o,) = any_backend.dispatch(b.build(validate=False), [])
    np.testing.assert_array_equal(o, np.arange(77, dtype=np.uint32))


def test_write_only_outputs_are_zeroed_on_reuse(any_backend):
    p = evens_program()
    cfg = DispatchConfig(counts={"out": 500})
    (o1,) = any_backend.dispatch(p, [], cfg)
    # fill the pooled buffer with non-zero data through another size, then dispatch again
    (o2,) = any_backend.dispatch(p, [], cfg)
    want = np.where(np.arange(500) % 2 == 0, np.arange(500) + 1, 0).astype(np.uint32)
    np.testing.assert_array_equal(o1, want)
    np.testing.assert_array_equal(o2, want)


def test_types_round_trip(any_backend):
    if not any_backend.supports_f16():
        skip_or_fail("adapter without shader-f16")
    p = types_program()
    r = np.random.default_rng(5)
    n = 301
    v3 = r.standard_normal((n, 3)).astype(np.float32)
    bl = r.integers(0, 2, n).astype(bool)
    h = r.standard_normal(n).astype(np.float16)  # odd count: the f16 buffer is padded
    v2 = r.integers(0, 2**32, (n, 2), dtype=np.uint64).astype(np.uint32)
    ov3, obl, oh, ov2 = any_backend.dispatch(p, [v3, bl, h, v2])
    assert ov3.shape == (n, 3) and ov3.dtype == np.float32
    np.testing.assert_allclose(ov3, v3 * 2, rtol=1e-6)
    assert obl.dtype == np.bool_ and obl.shape == (n,)
    np.testing.assert_array_equal(obl, ~bl)
    assert oh.dtype == np.float16 and oh.shape == (n,)
    np.testing.assert_allclose(oh.astype(np.float32), (h + np.float16(1)).astype(np.float32), rtol=1e-3, atol=1e-3)
    np.testing.assert_array_equal(ov2, v2[:, ::-1])
    # flat vector inputs are accepted too
    ov3b, *_ = any_backend.dispatch(p, [v3.reshape(-1), bl, h, v2.reshape(-1)])
    np.testing.assert_array_equal(ov3b, ov3)


def test_grid_fold_70000_workgroups(any_backend):
    wg = 64
    groups = 70_000
    p = iota_program(wg)
    n = groups * wg
    (o,) = any_backend.dispatch(p, [], DispatchConfig(counts={"out": n}, grid=(groups, 1, 1)))
    np.testing.assert_array_equal(o, np.arange(n, dtype=np.uint32))
    # the default grid folds the same way
    (o,) = any_backend.dispatch(p, [], DispatchConfig(counts={"out": n}))
    np.testing.assert_array_equal(o, np.arange(n, dtype=np.uint32))


def test_zero_grid_is_a_dispatch_error(any_backend, monkeypatch):
    # a zero grid used to run nothing and return the inputs as outputs (issue 9)
    p = saxpy_program()
    ins = saxpy_inputs(10)
    any_backend.dispatch(p, ins)  # compile first
    submits = any_backend.stats().get("dispatches", 0)
    for grid in ((0, 1, 1), 0, (4, 0), (1, 1, 0)):
        with pytest.raises(DispatchError, match="dimension of 0") as info:
            any_backend.dispatch(p, ins, DispatchConfig(grid=grid) if grid != 0 else grid)
        assert "Fix:" in str(info.value)
    with pytest.raises(DispatchError, match="dimension of 0"):
        any_backend.dispatch(iota_program(), [], DispatchConfig(counts={"out": 5}, grid=(0, 1, 1)))
    assert any_backend.stats().get("dispatches", 0) == submits


def test_empty_inputs(any_backend):
    p = saxpy_program()
    a = np.array([1.0], np.float32)
    (y,) = any_backend.dispatch(p, [a, np.zeros(0, np.float32), np.zeros(0, np.float32)])
    assert y.shape == (0,) and y.dtype == np.float32


@pytest.mark.parametrize("case", ["count", "dtype", "size", "vector-shape", "names", "unknown-count"])
def test_bad_inputs_fail_before_gpu_work(any_backend, monkeypatch, case):
    p = saxpy_program()
    good = saxpy_inputs(64)
    bad_program = p
    cfg = None
    if case == "count":
        ins = good[:2]
    elif case == "dtype":
        ins = [good[0], good[1].astype(np.float64), good[2]]
    elif case == "size":
        ins = [np.array([1.0, 2.0], np.float32), good[1], good[2]]  # a is declared count=1
    elif case == "vector-shape":
        bad_program = types_program()
        ins = [np.zeros((4, 2), np.float32), np.zeros(4, bool), np.zeros(4, np.float16), np.zeros((4, 2), np.uint32)]
    elif case == "names":
        ins = {"a": good[0], "x": good[1]}
    else:
        ins = good
        cfg = DispatchConfig(counts={"nope": 3})
    stats0 = any_backend.stats()
    counter = CreateBufferCounter(monkeypatch, any_backend)
    with pytest.raises(DispatchError) as ei:
        any_backend.dispatch(bad_program, ins, cfg)
    assert ei.value.fix
    assert counter.calls == 0
    stats1 = any_backend.stats()
    for k in ("buffers_created", "dispatches", "pipelines_compiled", "bytes_uploaded"):
        assert stats1.get(k, 0) == stats0.get(k, 0), k


def test_storage_limit_checked_before_gpu_work(hand, monkeypatch):
    counter = CreateBufferCounter(monkeypatch, hand)
    monkeypatch.setitem(hand._dev.limits, "max-storage-buffer-binding-size", 1024)
    monkeypatch.setattr(hand._bindings, "_limits", None)  # plan limits are read once per device: read them again
    with pytest.raises(DispatchError, match="storage binding limit"):
        hand.dispatch(saxpy_program(), saxpy_inputs(1000))
    assert counter.calls == 0


def _binding_program(name: str, binding: int):
    b = ProgramBuilder(name, 64)
    x = b.buffer("x", "u32", binding=binding)
    y = b.buffer("y", "u32", access="write", binding=0)
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = x[i] + 1
    return b.build(validate=False)


def test_binding_over_the_adapter_limit_is_a_validation_error(backend, monkeypatch):
    """Issue 9: a binding past the device's maxBindingsPerBindGroup is a ValidationError before any
    GPU work, never "a vyre lowering bug" from the bind group layout."""
    limit = int(backend._dev.limits["max-bindings-per-bind-group"])
    counter = CreateBufferCounter(monkeypatch, backend)
    with pytest.raises(ValidationError, match="max_bindings_per_bind_group") as info:
        backend.dispatch(_binding_program("bind_far", limit + 3000), [np.arange(4, dtype=np.uint32)])
    assert info.value.rules == ["binding"] and "lowering bug" not in str(info.value)
    # an adapter whose own limit is lower than the portable 1000
    monkeypatch.setitem(backend._dev.limits, "max-bindings-per-bind-group", 4)
    with pytest.raises(ValidationError, match="below 4"):
        backend.dispatch(_binding_program("bind_low", 6), [np.arange(4, dtype=np.uint32)])
    # and more storage buffers than the device's per-stage limit
    monkeypatch.setitem(backend._dev.limits, "max-storage-buffers-per-shader-stage", 1)
    with pytest.raises(ValidationError, match="max_storage_buffers_per_shader_stage") as info:
        backend.dispatch(_binding_program("bind_many", 1), [np.arange(4, dtype=np.uint32)])
    assert info.value.rules == ["buffer-limit"]
    assert counter.calls == 0
    monkeypatch.undo()
    (y,) = backend.dispatch(_binding_program("bind_ok", 6), [np.arange(4, dtype=np.uint32)])
    np.testing.assert_array_equal(y, np.arange(1, 5))


def test_pipeline_cache_reuse(any_backend, monkeypatch):
    b = ProgramBuilder("saxpy", 64)  # a fresh, distinct program (other body text → other fingerprint)
    a = b.buffer("a", "f32", access="uniform", count=1)
    x = b.buffer("x", "f32")
    y = b.buffer("y", "f32", access="read_write")
    i = b.global_index()
    with b.if_(i < y.len()):
        y[i] = a[0] * x[i] + y[i] + 0.0
    p = b.build(validate=False)
    ins = saxpy_inputs(256)
    any_backend.dispatch(p, ins)
    s0 = any_backend.stats()
    counter = CreateBufferCounter(monkeypatch, any_backend)
    for seed in range(3):
        ins = saxpy_inputs(256, seed=seed)
        (y,) = any_backend.dispatch(p, ins)
        np.testing.assert_allclose(y, saxpy_expected(ins), rtol=1e-6, atol=1e-6)
    s1 = any_backend.stats()
    assert s1["pipelines_compiled"] == s0["pipelines_compiled"]
    assert s1["pipeline_cache_hits"] >= s0["pipeline_cache_hits"] + 3
    assert s1["bind_groups_created"] == s0["bind_groups_created"]
    assert s1["buffers_created"] == s0["buffers_created"]
    assert counter.calls == 0
    # an equal program built again hits the same pipeline (cache keyed by fingerprint)
    p2 = type(p).from_wire(p.to_wire())
    any_backend.dispatch(p2, ins)
    assert any_backend.stats()["pipelines_compiled"] == s0["pipelines_compiled"]
    assert any_backend.compile(p2) is any_backend.compile(p)


def test_outputs_do_not_alias_staging(any_backend):
    p = saxpy_program()
    ins = saxpy_inputs(1000, seed=11)
    (y1,) = any_backend.dispatch(p, ins)
    assert y1.flags.writeable and y1.flags.c_contiguous
    y1[:] = 12345.0
    (y2,) = any_backend.dispatch(p, ins)
    np.testing.assert_allclose(y2, saxpy_expected(ins), rtol=1e-6, atol=1e-6)
    assert np.all(y1 == 12345.0)
    ins3 = saxpy_inputs(1000, seed=12)
    (y3,) = any_backend.dispatch(p, ins3)
    np.testing.assert_allclose(y2, saxpy_expected(ins), rtol=1e-6, atol=1e-6)  # y2 untouched by y3's readback
    np.testing.assert_allclose(y3, saxpy_expected(ins3), rtol=1e-6, atol=1e-6)


def test_threads_share_one_backend(any_backend):
    p = saxpy_program()
    errors: list = []
    results: dict = {}

    def worker(t):
        try:
            for k in range(5):
                n = 100 + 37 * t + k
                ins = saxpy_inputs(n, seed=t * 100 + k, a=float(t))
                (y,) = any_backend.dispatch(p, ins)
                np.testing.assert_allclose(y, saxpy_expected(ins), rtol=1e-6, atol=1e-6)
            results[t] = True
        except BaseException as exc:  # noqa: BLE001
            errors.append((t, exc))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not errors, errors
    assert len(results) == 8


# ----------------------------------------------------------------------------- features and errors
def test_f16_without_shader_f16_is_unsupported(any_backend, monkeypatch):
    monkeypatch.setattr(any_backend._dev, "features", frozenset(f for f in any_backend.features if f != "shader-f16"))
    assert not any_backend.supports_f16()
    with pytest.raises(UnsupportedFeatureError) as ei:
        any_backend.dispatch(types_program(), [np.zeros((1, 3), np.float32), np.zeros(1, bool),
                                               np.zeros(1, np.float16), np.zeros((1, 2), np.uint32)])
    assert "shader-f16" in str(ei.value) and ei.value.fix and "f32" in ei.value.fix


def test_shader_error_becomes_lowering_error(hand):
    b = ProgramBuilder("broken", 64)
    out = b.buffer("out", "u32", access="write")
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = i
    p = b.build(validate=False)
    with pytest.raises(LoweringError) as ei:
        hand.dispatch(p, [], DispatchConfig(counts={"out": 4}))
    msg = str(ei.value)
    assert "WGSL line" in msg and "1.5" in msg
    assert ei.value.fix
    # the backend still works afterwards
    (y,) = hand.dispatch(saxpy_program(), saxpy_inputs(10))
    assert y.shape == (10,)


def test_lowering_crash_is_wrapped():
    def crash(program):
        raise KeyError("boom")

    b = _acquire(lower=crash)
    with pytest.raises(LoweringError, match="boom"):
        b.dispatch(saxpy_program(), saxpy_inputs(4))


def test_translate_error():
    import wgpu

    assert isinstance(translate_error(wgpu.GPUOutOfMemoryError("oom"), stage="dispatch"), OutOfMemoryError)
    assert isinstance(translate_error(wgpu.GPUValidationError("Parent device is lost"), stage="dispatch"),
                      DeviceLostError)
    assert isinstance(translate_error(RuntimeError("Device lost: VK_ERROR_DEVICE_LOST"), stage="compile"),
                      DeviceLostError)
    assert isinstance(translate_error(wgpu.GPUValidationError(
        "In wgpuDeviceCreateBuffer\n Buffer size 9 is greater than the maximum buffer size (8)"), stage="dispatch"),
        OutOfMemoryError)
    e = translate_error(wgpu.GPUValidationError("bad\n ┌─ wgsl:2:3"), stage="compile", wgsl="line one\nlet x = 1;")
    assert isinstance(e, LoweringError) and "WGSL line 2: let x = 1;" in str(e)
    assert isinstance(translate_error(wgpu.GPUValidationError("bind group mismatch"), stage="dispatch"),
                      DispatchError)
    assert isinstance(translate_error(ValueError("x"), stage="dispatch"), DispatchError)
    for e in (translate_error(RuntimeError("x"), stage="dispatch"),):
        assert isinstance(e, VyreError) and e.fix


def test_gpu_failure_inside_dispatch_is_translated(monkeypatch):
    b = _acquire(lower=handwritten_lower)
    b.dispatch(saxpy_program(), saxpy_inputs(8))
    import wgpu

    dev_cls = type(b.device_queue()[0])

    def fail(self_, *a, **kw):
        raise wgpu.GPUValidationError("In wgpuDeviceCreateCommandEncoder\n  something odd")

    monkeypatch.setattr(dev_cls, "create_command_encoder", fail)
    with pytest.raises(DispatchError, match="something odd"):
        b.dispatch(saxpy_program(), saxpy_inputs(8))
    monkeypatch.undo()
    (y,) = b.dispatch(saxpy_program(), saxpy_inputs(8, seed=2))
    np.testing.assert_allclose(y, saxpy_expected(saxpy_inputs(8, seed=2)), rtol=1e-6, atol=1e-6)


def test_device_lost_and_recover():
    b = _acquire(lower=handwritten_lower)
    p = saxpy_program()
    b.dispatch(p, saxpy_inputs(8))
    b.force_device_lost()
    assert b.device_lost()
    with pytest.raises(DeviceLostError) as ei:
        b.dispatch(p, saxpy_inputs(8))
    assert ei.value.fix
    b.try_recover()
    assert not b.device_lost()
    ins = saxpy_inputs(8, seed=4)
    (y,) = b.dispatch(p, ins)
    np.testing.assert_allclose(y, saxpy_expected(ins), rtol=1e-6, atol=1e-6)


def test_validation_runs_with_device_limits(any_backend):
    from vyre.errors import ValidationError

    b = ProgramBuilder("iota", (2048, 1, 1))  # over max-compute-invocations-per-workgroup
    out = b.buffer("out", "u32", access="write")
    i = b.global_index()
    with b.if_(i < out.len()):
        out[i] = i
    with pytest.raises(ValidationError):
        any_backend.dispatch(b.build(validate=False), [], DispatchConfig(counts={"out": 4}))


def test_clear_cache_and_stats(hand):
    hand.dispatch(saxpy_program(), saxpy_inputs(32))
    s = hand.stats()
    assert s["pipelines_cached"] >= 1 and s["pooled_bytes"] > 0
    hand.clear_cache()
    s = hand.stats()
    assert s["pipelines_cached"] == 0 and s["pooled_bytes"] == 0 and s["staging_bytes"] == 0
    ins = saxpy_inputs(32, seed=9)
    (y,) = hand.dispatch(saxpy_program(), ins)
    np.testing.assert_allclose(y, saxpy_expected(ins), rtol=1e-6, atol=1e-6)


def test_pool_budget_releases_lru_buffers(monkeypatch):
    b = _acquire(lower=handwritten_lower)
    monkeypatch.setattr(b, "pool_budget_bytes", 1)
    p1, p2 = saxpy_program(), iota_program()
    for _ in range(2):
        ins = saxpy_inputs(100)
        (y,) = b.dispatch(p1, ins)
        np.testing.assert_allclose(y, saxpy_expected(ins), rtol=1e-6, atol=1e-6)
        (o,) = b.dispatch(p2, [], DispatchConfig(counts={"out": 100}))
        np.testing.assert_array_equal(o, np.arange(100, dtype=np.uint32))
    assert b.stats().get("pool_releases", 0) >= 3
