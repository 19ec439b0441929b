"""Interop: an Array's wgpu buffer bound by plain wgpu-py code (shader module, bind group, dispatch) on a
device the test creates and vyre shares (``WgpuBackend.from_device``), arrays from a wgpu buffer, and
``@vyre.kernel`` launches on Arrays (no host copies; Out/InOut written in place)."""

from __future__ import annotations

import numpy as np
import pytest

import vyre
from vyre import In, InOut, Out, f32, i32, tid
from vyre import array_api as xp
from vyre.array._interop import from_wgpu_buffer, wgpu_buffer  # not yet exported by vyre.array (the lead wires it)
from vyre.errors import DeviceMismatchError, DispatchError

from gpu_policy import skip_or_fail

DOUBLE_PLUS_ONE = """
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < arrayLength(&dst)) { dst[gid.x] = src[gid.x] * 2.0 + 1.0; }
}
"""


@pytest.fixture(scope="module")
def user_device(gpu):
    """A wgpu device created by "someone else" (the test), on the GPU fixture's adapter."""
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        skip_or_fail("no wgpu adapter")
    return adapter.request_device_sync(label="user-device")


def _run_user_shader(device, src_buf, dst_buf, n):
    """The user's own wgpu-py program: dst = src * 2 + 1 over n floats."""
    module = device.create_shader_module(code=DOUBLE_PLUS_ONE)
    pipeline = device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    group = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=[
        {"binding": 0, "resource": {"buffer": src_buf, "offset": 0, "size": n * 4}},
        {"binding": 1, "resource": {"buffer": dst_buf, "offset": 0, "size": n * 4}}])
    enc = device.create_command_encoder()
    cp = enc.begin_compute_pass()
    cp.set_pipeline(pipeline)
    cp.set_bind_group(0, group)
    cp.dispatch_workgroups((n + 63) // 64)
    cp.end()
    device.queue.submit([enc.finish()])


def test_user_wgpu_reads_an_array_buffer(user_device):
    import wgpu

    backend = vyre.WgpuBackend.from_device(user_device)
    xn = np.arange(100, dtype=np.float32)
    x = xp.asarray(xn, device=backend) - 10  # a pending expression: wgpu_buffer evaluates it
    buf = x.wgpu_buffer
    assert isinstance(buf, wgpu.GPUBuffer) and buf.size >= x.nbytes
    bu = wgpu.BufferUsage
    assert buf.usage & (bu.STORAGE | bu.COPY_SRC | bu.COPY_DST) == bu.STORAGE | bu.COPY_SRC | bu.COPY_DST
    assert wgpu_buffer(x) is buf
    out = user_device.create_buffer(size=400, usage=bu.STORAGE | bu.COPY_SRC)
    _run_user_shader(user_device, buf, out, 100)
    got = np.frombuffer(user_device.queue.read_buffer(out), np.float32)
    np.testing.assert_array_equal(got, (xn - 10) * 2 + 1)


def test_user_wgpu_writes_buffers_vyre_reads(user_device):
    import wgpu

    backend = vyre.WgpuBackend.from_device(user_device)
    bu = wgpu.BufferUsage
    src = user_device.create_buffer_with_data(data=np.arange(64, dtype=np.float32), usage=bu.STORAGE)
    # into an array's own buffer (written in place by the user's program) ...
    y = xp.zeros(64, dtype=xp.float32, device=backend)
    _run_user_shader(user_device, src, y.wgpu_buffer, 64)
    np.testing.assert_array_equal(np.asarray(y), np.arange(64, dtype=np.float32) * 2 + 1)
    # ... and into the user's buffer, then copied on the device into a new array
    dst = user_device.create_buffer(size=256, usage=bu.STORAGE | bu.COPY_SRC)
    _run_user_shader(user_device, src, dst, 64)
    z = from_wgpu_buffer(dst, (8, 8), xp.float32, device=backend)
    np.testing.assert_array_equal(np.asarray(z + 1), (np.arange(64, dtype=np.float32) * 2 + 2).reshape(8, 8))
    with pytest.raises(DispatchError, match="COPY_SRC"):
        from_wgpu_buffer(src, 64, xp.float32, device=backend)
    with pytest.raises(DispatchError, match="bytes"):
        from_wgpu_buffer(dst, 65, xp.float32, device=backend)


def test_from_device_shares_and_never_destroys(user_device):
    import wgpu

    backend = vyre.WgpuBackend.from_device(user_device)
    assert backend.device_queue()[0] is user_device
    assert backend.features <= frozenset(str(f) for f in user_device.features)
    a = xp.asarray(np.ones((4, 4), np.float32), device=backend)
    np.testing.assert_array_equal(np.asarray(a @ a), np.full((4, 4), 4, np.float32))
    backend.shutdown()
    # the user's device still works after vyre let go of it
    buf = user_device.create_buffer_with_data(data=np.arange(4, dtype=np.float32),
                                              usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    np.testing.assert_array_equal(np.frombuffer(user_device.queue.read_buffer(buf), np.float32), np.arange(4))
    with pytest.raises(DispatchError, match="GPUDevice"):
        vyre.WgpuBackend.from_device("not a device")


def test_wgpu_buffer_needs_the_gpu(ref_backend):
    with pytest.raises(DispatchError, match="no wgpu buffers"):
        wgpu_buffer(xp.asarray(np.ones(3, np.float32), device=ref_backend))


# ---- @vyre.kernel launches on Arrays ------------------------------------------------------------

@vyre.kernel
def axpy_into(x: In[f32], y: InOut[f32], out: Out[f32], a: f32):
    i = tid()
    y[i] = a * x[i] + y[i]
    out[i] = y[i] * 2.0


@vyre.kernel
def add_one(x: InOut[i32]):
    i = tid()
    x[i] = x[i] + 1


def test_kernel_on_arrays_in_place(xb):
    xn, yn = np.arange(10, dtype=np.float32), np.ones(10, np.float32)
    x, y, out = xp.asarray(xn) * 1.5, xp.asarray(yn), xp.zeros(10, dtype=xp.float32)
    y_handle = y.handle
    assert axpy_into[10](x, y, out, 2.0) is None  # runs on the Arrays' backend (xb), no host copy
    assert y.handle is y_handle  # written in place
    np.testing.assert_allclose(np.asarray(y), 2.0 * xn * 1.5 + 1, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(out), (2.0 * xn * 1.5 + 1) * 2, rtol=1e-6)


def test_kernel_on_arrays_keeps_pending_expressions(xb):
    x = xp.asarray(np.arange(6, dtype=np.int32))
    before = x + 10  # recorded before the launch: must see the old values
    add_one[6](x)
    np.testing.assert_array_equal(np.asarray(x), np.arange(6) + 1)
    np.testing.assert_array_equal(np.asarray(before), np.arange(6) + 10)


def test_kernel_on_arrays_errors(xb, gpu, ref_backend):
    x = xp.asarray(np.zeros(4, np.float32))
    with pytest.raises(DispatchError, match="mixes numpy arrays"):
        axpy_into[4](x, np.zeros(4, np.float32), xp.zeros(4, dtype=xp.float32), 1.0)
    with pytest.raises(DispatchError, match="float32"):
        add_one[4](x)
    other = gpu if xb is ref_backend else ref_backend
    with pytest.raises(DeviceMismatchError):
        add_one[4](xp.asarray(np.zeros(4, np.int32)), backend=other)
    with pytest.raises(DeviceMismatchError):
        axpy_into[4](x, xp.asarray(np.zeros(4, np.float32), device=other), x, 1.0)
