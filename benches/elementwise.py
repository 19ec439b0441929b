"""Elementwise bandwidth: ``zip.add`` over f32 (c = a + b), bytes read + written per second.

vyre: the op's pipeline on resident buffers, device time per launch (see _harness).
Baselines: numpy ``np.add(a, b, out=c)``; torch ``torch.add(a, b, out=c)`` and cupy
``cp.add(a, b, out=c)`` (CUDA events); Taichi on Vulkan (``c[i] = a[i] + b[i]``,
benches/_taichi.py); raw wgpu-py: a hand-written scalar WGSL kernel (256 invocations per
workgroup, one element each), timed like vyre.
"""

from __future__ import annotations

import numpy as np

from . import _taichi
from ._harness import Context, Outcome, ResidentOp, over_binding_limit, record

NAME = "elementwise"

RAW_ADD = """
@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * 256u;
    if (i < arrayLength(&c)) { c[i] = a[i] + b[i]; }
}
"""


def grid2d(invocations: int, wg: int = 256, x_max: int = 32768) -> tuple[int, int, int]:
    """A 2-D grid covering ``invocations`` (x at most ``x_max`` workgroups; the kernel folds y into x)."""
    groups = -(-invocations // wg)
    x = min(groups, x_max)
    return (x, -(-groups // x), 1)


def sizes(ctx: Context) -> list[int]:
    return [1 << 22] if ctx.quick else [1 << 26]


def plan(ctx: Context) -> int:
    return len(sizes(ctx))


def measure(ctx: Context, n: int, *, bench: str = NAME, metric: str = "elementwise.bandwidth",
            baselines: tuple[str, ...] = ("numpy", "torch", "cupy", "raw_wgpu", "taichi")) -> dict:
    nbytes = 3 * 4 * n
    params = {"op": "zip.add", "dtype": "f32", "n": n, "bytes": nbytes}
    name = f"zip.add f32 n=2^{n.bit_length() - 1}"
    too_big = over_binding_limit(ctx.gpu, 4 * n)
    if too_big:
        return record(bench=bench, name=name, metric=metric, params=params, unit="GB/s",
                      vyre=Outcome.missing(too_big), work=nbytes, scale=1e9)
    a = ctx.rng.random(n, dtype=np.float32)
    b = ctx.rng.random(n, dtype=np.float32)
    op = ResidentOp(ctx.gpu, "zip.add", {"shape_x": (n,), "shape_y": (n,), "dtype": "f32"}, [a, b])
    try:
        vy = Outcome(ctx.kernel(op.steps))
        got = op.output()
        want = a + b
        ok = bool(np.array_equal(got, want))
        check = {"ok": ok, "against": "numpy a + b", "kind": "bit-exact"}
    finally:
        op.free()
    base: dict[str, Outcome] = {}
    if "numpy" in baselines:
        c = np.empty_like(a)
        base["numpy"] = ctx.numpy(lambda: np.add(a, b, out=c))
        del c
    if "torch" in baselines:
        def make_torch(torch):
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            tc = torch.empty_like(ta)
            return lambda: torch.add(ta, tb, out=tc)
        base["torch"] = ctx.torch(make_torch)
    if "cupy" in baselines:
        def make_cupy(cp):
            ca, cb = cp.asarray(a), cp.asarray(b)
            cc = cp.empty_like(ca)
            return lambda: cp.add(ca, cb, out=cc)
        base["cupy"] = ctx.cupy(make_cupy)
    if "raw_wgpu" in baselines:
        raw = ctx.base.raw
        bufs = [raw.storage(a.nbytes, a), raw.storage(b.nbytes, b), raw.storage(a.nbytes)]
        pipe = raw.pipeline(RAW_ADD)
        bg = raw.bind(pipe, bufs)
        t = raw.kernel_timing([(pipe, bg, grid2d(n))], reps=ctx.reps, target_s=ctx.target_s)
        base["raw_wgpu"] = Outcome(t, label="scalar WGSL kernel, 256 invocations per workgroup")
        for buf in bufs:
            buf.destroy()
    if "taichi" in baselines:
        base["taichi"] = _taichi.elementwise_add(ctx, a, b)
    ctx.release()
    return record(bench=bench, name=name, metric=metric, params=params,
                  unit="GB/s", vyre=vy, baselines=base, work=nbytes, scale=1e9, check=check)


def run(ctx: Context):
    for n in sizes(ctx):
        yield measure(ctx, n)
