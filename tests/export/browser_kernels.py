"""The kernels of docs/kernels.md (as written there), for the browser check's kernel exports.

Each entry of :data:`LAUNCHES`: (label, kernel, arguments from a fixed seed, dim, numpy reference of the
outputs by parameter name, tolerance).
"""

from __future__ import annotations

import numpy as np

import vyre
from vyre import In, InOut, Out, f32, i32, tid, u32
from vyre.ops.registry import EXACT, rel

WG = 256


@vyre.kernel
def saxpy(x: In[f32], y: InOut[f32], a: f32):
    i = tid()
    y[i] = a * x[i] + y[i]


@vyre.kernel
def blur(img: In[f32], out: Out[f32]):
    y, x = vyre.tid2()
    h, w = i32(len(img)), i32(img.shape[1])
    acc = 0.0
    for dy in range(-1, 2):
        for dx in range(-1, 2):
            yy = min(max(i32(y) + dy, 0), h - 1)
            xx = min(max(i32(x) + dx, 0), w - 1)
            acc += img[yy, xx]
    out[y, x] = acc / 9.0


@vyre.kernel
def histogram(values: In[u32], hist: InOut[u32]):
    vyre.atomic_add(hist, values[tid()] % 256, 1)


@vyre.kernel(workgroup_size=WG)
def block_sums(x: In[u32], sums: Out[u32]):
    tile = vyre.shared(u32, WG)
    i, t = tid(), vyre.local_id()
    tile[t] = x[i] if i < len(x) else 0
    vyre.barrier()
    stride = u32(WG // 2)
    while stride > 0:
        if t < stride:
            tile[t] += tile[t + stride]
        vyre.barrier()
        stride //= 2
    if t == 0:
        sums[vyre.group_id()] = tile[0]


@vyre.kernel
def clip_shift(x: In[i32], out: Out[i32], lo: i32, hi: i32, shift: u32, negate: vyre.bool_):
    v = min(max(x[tid()], lo), hi) << shift
    out[tid()] = -v if negate else v


@vyre.func
def sigmoid(v: f32) -> f32:
    return 1.0 / (1.0 + vyre.exp(-v))


@vyre.func
def clamp(v, lo, hi):
    return min(max(v, lo), hi)


@vyre.kernel
def activate(x: In[f32], gate: Out[f32], ticks: In[i32], kept: Out[i32]):
    i = tid()
    gate[i] = x[i] * sigmoid(x[i])
    kept[i] = clamp(ticks[i], 0, 9)


@vyre.kernel
def step(x: InOut[f32]):
    x[tid()] = x[tid()] * 0.5 + 1.0


def _blur_ref(img: np.ndarray) -> np.ndarray:
    h, w = img.shape
    padded = np.pad(img, 1, mode="edge")
    return (sum(padded[dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3)) / 9).astype(np.float32)


def launches() -> list[tuple]:
    rng = np.random.default_rng(20260)
    n = 3000
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    img = rng.random((61, 83), dtype=np.float32)
    vals = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    small = rng.integers(0, 1000, 10_000).astype(np.uint32)
    groups = -(-len(small) // WG)
    xi = np.arange(-50, 50, dtype=np.int32)
    xf = np.linspace(-5, 5, 1000, dtype=np.float32)
    ticks = np.arange(-500, 500, dtype=np.int32)
    data = rng.uniform(-100, 100, 4096).astype(np.float32)
    return [
        ("saxpy", saxpy, (x, y, 2.5), n, {"y": (2.5 * x + y).astype(np.float32)}, rel(1e-6, 1e-6)),
        ("blur", blur, (img, np.zeros_like(img)), img.shape, {"out": _blur_ref(img)}, rel(1e-5, 1e-6)),
        ("histogram", histogram, (vals, np.zeros(256, np.uint32)), len(vals),
         {"hist": np.bincount(vals % 256, minlength=256).astype(np.uint32)}, EXACT),
        ("block_sums", block_sums, (small, np.zeros(groups, np.uint32)), len(small),
         {"sums": np.add.reduceat(small, np.arange(0, len(small), WG)).astype(np.uint32)}, EXACT),
        ("clip_shift", clip_shift, (xi, np.zeros_like(xi), -10, 20, 2, True), len(xi),
         {"out": -(np.clip(xi, -10, 20) << 2).astype(np.int32)}, EXACT),
        ("activate", activate, (xf, np.zeros_like(xf), ticks, np.zeros_like(ticks)), 1000,
         {"gate": (xf / (1 + np.exp(-xf))).astype(np.float32), "kept": np.clip(ticks, 0, 9).astype(np.int32)},
         rel(1e-5, 1e-6)),
        ("step", step, (data,), len(data), {"x": (data * np.float32(0.5) + np.float32(1)).astype(np.float32)},
         rel(1e-6, 0)),
    ]


__all__ = ["launches", "saxpy", "blur", "histogram", "block_sums", "clip_shift", "activate", "step"]
