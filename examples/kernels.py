"""Kernels written as typed Python functions with ``@vyre.kernel``, checked against numpy.

A 3x3 blur launched over the image's shape (``blur[h, w](...)``: vyre picks the workgroup size and
the grid and skips the threads past the edge), and a histogram with an atomic add. The bodies are
read, not run: each kernel becomes a vyre Program, so the same code runs on the GPU and on the
reference interpreter. Run from anywhere with the project's venv: ``.venv/bin/python examples/kernels.py``.
"""

import sys

import numpy as np

import vyre
from vyre import In, InOut, Out, f32, i32, u32


@vyre.kernel
def blur(img: In[f32], out: Out[f32]):
    y, x = vyre.tid2()  # this thread's pixel: row, column
    h, w = i32(img.shape[0]), i32(img.shape[1])
    acc = 0.0
    for dy in range(-1, 2):
        for dx in range(-1, 2):
            yy = min(max(i32(y) + dy, 0), h - 1)  # clamp to the image
            xx = min(max(i32(x) + dx, 0), w - 1)
            acc += img[yy, xx]
    out[y, x] = acc / 9.0


@vyre.kernel
def histogram(values: In[u32], hist: InOut[u32]):
    vyre.atomic_add(hist, values[vyre.tid()] % 256, 1)


gpu = vyre.WgpuBackend.acquire()  # the best adapter, or the one VYRE_ADAPTER names
rng = np.random.default_rng(1)

image = rng.random((480, 640), dtype=np.float32)
(smooth,) = blur[image.shape](image, np.empty_like(image), backend=gpu)
padded = np.pad(image, 1, mode="edge")
expected = sum(padded[dy:dy + 480, dx:dx + 640] for dy in range(3) for dx in range(3)) / np.float32(9)
blur_ok = np.allclose(smooth, expected, rtol=1e-5, atol=1e-6)

values = rng.integers(0, 2**32, 1 << 20, dtype=np.uint64).astype(np.uint32)
(hist,) = histogram[len(values)](values, np.zeros(256, np.uint32), backend=gpu)
hist_ok = np.array_equal(hist, np.bincount(values % 256, minlength=256))

print(f"blur 640x480: max |error| {np.abs(smooth - expected).max():.2e}: {'OK' if blur_ok else 'MISMATCH'}")
print(f"histogram of {len(values)} values, {hist.sum()} counted: {'OK' if hist_ok else 'MISMATCH'}")
print(f"blur ran as workgroups of {blur.program(image, smooth, dim=image.shape).workgroup_size[:2]}")
sys.exit(0 if blur_ok and hist_ok else 1)
