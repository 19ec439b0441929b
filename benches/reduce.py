"""Full-reduction bandwidth: ``reduce.sum`` over f32 (bytes read per second).

vyre: the op's pipeline (two passes) on resident buffers, device time per launch. Baselines:
numpy ``np.sum``; torch ``torch.sum`` and cupy ``cp.sum`` (CUDA events); Taichi on Vulkan
(the ``+=`` reduction idiom, benches/_taichi.py); raw wgpu-py: a hand-written two-pass tree
reduction (256 invocations per workgroup, grid-stride loads, a shared-memory tree, one
partial per workgroup (up to 1024 workgroups), then one workgroup over the partials).
"""

from __future__ import annotations

import numpy as np

from . import _taichi
from ._harness import Context, Outcome, ResidentOp, over_binding_limit, record

NAME = "reduce"

RAW_SUM = """
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
var<workgroup> part: array<f32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let n = arrayLength(&x);
    let stride = nwg.x * 256u;
    var acc = 0.0;
    for (var i = wid.x * 256u + lid; i < n; i += stride) { acc += x[i]; }
    part[lid] = acc;
    workgroupBarrier();
    for (var s = 128u; s > 0u; s >>= 1u) {
        if (lid < s) { part[lid] += part[lid + s]; }
        workgroupBarrier();
    }
    if (lid == 0u) { out[wid.x] = part[0]; }
}
"""
RAW_PARTIALS = 1024


def sizes(ctx: Context) -> list[int]:
    return [1 << 22] if ctx.quick else [1 << 26]


def plan(ctx: Context) -> int:
    return len(sizes(ctx))


def measure(ctx: Context, n: int, *, bench: str = NAME, metric: str = "reduce.bandwidth",
            baselines: tuple[str, ...] = ("numpy", "torch", "cupy", "raw_wgpu", "taichi")) -> dict:
    from vyre.ops.registry import compare, get

    name = f"reduce.sum f32 n=2^{n.bit_length() - 1}"
    rparams = {"op": "reduce.sum", "dtype": "f32", "n": n, "bytes": 4 * n}
    too_big = over_binding_limit(ctx.gpu, 4 * n)
    if too_big:
        return record(bench=bench, name=name, metric=metric, params=rparams, unit="GB/s",
                      vyre=Outcome.missing(too_big), work=4 * n, scale=1e9)
    x = (ctx.rng.random(n, dtype=np.float32) - np.float32(0.5))
    params = {"shape": (n,), "dtype": "f32"}
    op = ResidentOp(ctx.gpu, "reduce.sum", params, [x])
    try:
        vy = Outcome(ctx.kernel(op.steps))
        got = op.output()
        spec = get("reduce.sum")
        ok, err, desc = compare(np.asarray(got).reshape(()), spec.reference(x, **params)[0], spec.tolerance_of(params))
        check = {"ok": bool(ok), "against": "numpy float64 sum", "error": err, "detail": desc,
                 "tolerance": spec.tolerance_of(params).describe()}
    finally:
        op.free()
    base: dict[str, Outcome] = {}
    if "numpy" in baselines:
        base["numpy"] = ctx.numpy(lambda: np.sum(x))
    if "torch" in baselines:
        def make_torch(torch):
            t = torch.from_numpy(x).cuda()
            return lambda: torch.sum(t)
        base["torch"] = ctx.torch(make_torch)
    if "cupy" in baselines:
        def make_cupy(cp):
            c = cp.asarray(x)
            return lambda: cp.sum(c)
        base["cupy"] = ctx.cupy(make_cupy)
    if "raw_wgpu" in baselines:
        raw = ctx.base.raw
        groups = min(RAW_PARTIALS, -(-n // 256))
        xb, pb, ob = raw.storage(x.nbytes, x), raw.storage(4 * groups), raw.storage(4)  # zero-filled padding
        pipe = raw.pipeline(RAW_SUM)
        pass1, pass2 = raw.bind(pipe, [xb, pb]), raw.bind(pipe, [pb, ob])
        t = raw.kernel_timing([(pipe, pass1, (groups, 1, 1)), (pipe, pass2, (1, 1, 1))],
                              reps=ctx.reps, target_s=ctx.target_s)
        raw_sum = float(np.frombuffer(raw.queue.read_buffer(ob, 0, 4), np.float32)[0])
        base["raw_wgpu"] = Outcome(t, label="two-pass shared-memory tree, up to 1024 partials",
                                   extra={"result_rel_err": abs(raw_sum - float(np.sum(x, dtype=np.float64)))
                                          / max(1e-30, float(np.sum(np.abs(x), dtype=np.float64)))})
        for b in (xb, pb, ob):
            b.destroy()
    if "taichi" in baselines:
        base.update(_taichi.reduce_sum(ctx, x, get("reduce.sum").tolerance_of(params)))
    ctx.release()
    return record(bench=bench, name=name, metric=metric, params=rparams, unit="GB/s",
                  vyre=vy, baselines=base, work=4 * n, scale=1e9, check=check)


def run(ctx: Context):
    for n in sizes(ctx):
        yield measure(ctx, n)
