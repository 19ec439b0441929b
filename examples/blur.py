"""A 3x3 box blur of a 2-D image with a 2-D grid, checked against numpy.

Each invocation computes one pixel: x from ``global_id(0)``, y from ``global_id(1)``. A program that
reads axis 1 of the grid needs an explicit grid (the default grid only covers one axis), so the
dispatch passes ``grid=(ceil(w / 8), ceil(h / 8))`` workgroups of 8x8. Edges clamp.
"""

import sys

import numpy as np

from vyre import DispatchConfig, ProgramBuilder, WgpuBackend

WG = 8
b = ProgramBuilder("blur3x3", workgroup_size=(WG, WG))
src = b.buffer("src", "f32")                               # the image, row-major
size = b.buffer("size", "u32", access="uniform", count=2)  # width, height
dst = b.buffer("dst", "f32", access="write")               # sized like the first input: the image
w, h = size[0], size[1]
x, y = b.global_id(0), b.global_id(1)
with b.if_((x < w) & (y < h)):
    acc = b.var("f32", 0.0, name="acc")
    with b.for_range(0, 3) as dy:
        # clamp the row and column to the image (u32 arithmetic: y + dy - 1 without going below 0)
        yy = b.let(b.min(b.max(y + dy, 1) - 1, h - 1))
        with b.for_range(0, 3) as dx:
            xx = b.let(b.min(b.max(x + dx, 1) - 1, w - 1))
            acc += src[yy * w + xx]
    dst[y * w + x] = acc / 9.0
program = b.build()

height, width = 480, 640
image = np.random.default_rng(1).random((height, width), dtype=np.float32)

gpu = WgpuBackend.acquire()
grid = (-(-width // WG), -(-height // WG))  # ceil division: whole workgroups over the image
(out,) = gpu.dispatch(program, [image.ravel(), np.uint32([width, height])], DispatchConfig(grid=grid))
out = out.reshape(height, width)

padded = np.pad(image, 1, mode="edge")
expected = sum(padded[dy:dy + height, dx:dx + width] for dy in range(3) for dx in range(3)) / np.float32(9)
ok = np.allclose(out, expected, rtol=1e-5, atol=1e-6)
print(f"blur {width}x{height} with grid {grid}: max |error| {np.abs(out - expected).max():.2e}: "
      f"{'OK' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
