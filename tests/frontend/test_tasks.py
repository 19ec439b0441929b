"""The three tasks of issue 10, each written as a kernel in at most half the lines of its builder
version (both are here, and both run): a 3x3 blur on 512x512 (2-D launch, edges clamped), a 2^20-value
u32 histogram with atomics, and a 100-step loop on resident data (one upload, one download). No kernel
works out a grid by hand. The line counts compare the kernel (decorator and def included) with the
builder's program and its grid; the launch and the resident transfers are the same lines in both."""

from __future__ import annotations

import inspect

import numpy as np

import vyre
from vyre import DispatchConfig, In, InOut, Out, ProgramBuilder, f32, i32, tid, u32

H = W = 512
RNG = np.random.default_rng(3)


def kernel_lines(k) -> int:
    """Non-blank lines of a kernel, decorator and def included."""
    return len([ln for ln in inspect.getsource(k.fn).splitlines() if ln.strip()])


def builder_lines(fn) -> int:
    """Non-blank lines of a builder version: the program and its hand-worked grid (not the def line)."""
    return len([ln for ln in inspect.getsource(fn).splitlines()[1:] if ln.strip()])


# ---- 3x3 blur -------------------------------------------------------------------------------
@vyre.kernel
def blur(img: In[f32], out: Out[f32]):
    y, x, acc = i32(tid(0)), i32(tid(1)), 0.0
    for k in range(9):  # the 3x3 neighbours, rows and columns clamped to the image
        acc += img[min(max(y + k // 3 - 1, 0), i32(len(img)) - 1), min(max(x + k % 3 - 1, 0), img.shape[1] - 1)]
    out[y, x] = acc / 9.0


def blur_builder(h, w):
    b = ProgramBuilder("blur_b", workgroup_size=(16, 16))
    src = b.buffer("img", "f32")
    out = b.buffer("out", "f32", access="write")
    x, y = b.global_id(0), b.global_id(1)
    with b.if_((x < w) & (y < h)):
        acc = b.var("f32", 0.0, name="acc")
        with b.for_range(-1, 2) as dy:
            with b.for_range(-1, 2) as dx:
                yy = b.min(b.max(y.cast("i32") + dy, 0), h - 1)
                xx = b.min(b.max(x.cast("i32") + dx, 0), w - 1)
                acc += src[yy * w + xx]
        out[y * w + x] = acc / 9.0
    return b.build(), DispatchConfig(grid=(-(-w // 16), -(-h // 16)), counts={"out": h * w})


def test_blur(backend):
    img = RNG.uniform(0, 1, (H, W)).astype(np.float32)
    p = np.pad(img, 1, mode="edge")
    want = sum(p[dy:dy + H, dx:dx + W] for dy in range(3) for dx in range(3)) / 9
    (got,) = blur[img.shape](img, np.zeros_like(img), backend=backend)
    assert np.allclose(got, want, atol=1e-5)
    prog, config = blur_builder(H, W)
    (ref,) = backend.dispatch(prog, [img.reshape(-1)], config)
    assert np.allclose(ref.reshape(H, W), want, atol=1e-5)
    assert 2 * kernel_lines(blur) <= builder_lines(blur_builder), (kernel_lines(blur), builder_lines(blur_builder))


# ---- histogram ------------------------------------------------------------------------------
@vyre.kernel
def histogram(values: In[u32], hist: InOut[u32]):
    vyre.atomic_add(hist, values[tid()] % 256, 1)


def histogram_builder():
    b = ProgramBuilder("hist_b", workgroup_size=256)
    vals = b.buffer("values", "u32")
    hist = b.buffer("hist", "u32", access="read_write")
    b.set_grid_from(vals)  # the grid: one invocation per value
    i = b.global_index()
    with b.if_(i < vals.len()):
        hist.atomic_add(vals[i] % 256, 1, discard=True)
    return b.build()


def test_histogram(backend):
    values = RNG.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32)
    want = np.bincount(values % 256, minlength=256)
    (got,) = histogram[len(values)](values, np.zeros(256, np.uint32), backend=backend)
    assert np.array_equal(got, want)
    assert np.array_equal(backend.dispatch(histogram_builder(), [values, np.zeros(256, np.uint32)])[0], want)
    assert 2 * kernel_lines(histogram) <= builder_lines(histogram_builder)


# ---- 100 steps on resident data ------------------------------------------------------------
@vyre.kernel
def step(x: InOut[f32]):
    x[tid()] = x[tid()] * 0.5 + 1.0


def step_builder(n):
    b = ProgramBuilder("step_b", workgroup_size=256)
    xs = b.buffer("x", "f32", access="read_write")
    i = b.global_index()
    with b.if_(i < xs.len()):
        xs[i] = xs[i] * 0.5 + 1.0
    return b.build(), -(-n // 256)


def run_resident(x, gpu, launch):
    h = gpu.allocate_resident(x.nbytes)
    try:
        gpu.upload_resident(h, x)
        for _ in range(100):
            launch(h)
        return gpu.download_resident(h).view(np.float32)
    finally:
        gpu.free_resident(h)


def test_resident_loop(backend):
    x = RNG.uniform(-100, 100, 1 << 16).astype(np.float32)
    want = x.copy()
    for _ in range(100):
        want = want * np.float32(0.5) + np.float32(1)
    counted = hasattr(backend, "stats")
    before = backend.stats() if counted else None
    got = run_resident(x, backend, lambda h: step[len(x)](h, backend=backend))
    if counted:
        after = backend.stats()
        # the data goes up once and comes back once; the params uniforms (the kernel's dims, the dispatch's
        # hidden words) are the backend's shared buffers of those words, written when created (mapped, no
        # upload), once for the 100 launches
        assert after["bytes_uploaded"] - before["bytes_uploaded"] == x.nbytes
        assert after.get("params_buffers_created", 0) - before.get("params_buffers_created", 0) <= 2
        assert after["bytes_read_back"] - before["bytes_read_back"] == x.nbytes
    assert np.allclose(got, want, rtol=1e-6)
    prog, grid = step_builder(len(x))
    assert np.allclose(run_resident(x, backend, lambda h: backend.dispatch_resident(prog, [h], grid)), want, rtol=1e-6)
    assert 2 * kernel_lines(step) <= builder_lines(step_builder)
