"""Full-reduction bandwidth: ``reduce.sum`` over f32 (bytes read per second).

vyre: the op's pipeline (two passes) on resident buffers, device time per launch. Baselines:
numpy ``np.sum``; torch ``torch.sum`` and cupy ``cp.sum`` (CUDA events); Taichi on Vulkan
(the ``+=`` reduction idiom, benches/_taichi.py); raw wgpu-py: a hand-written two-pass tree
reduction (256 invocations per workgroup, grid-stride loads, a shared-memory tree, one
partial per workgroup (up to 1024 workgroups), then one workgroup over the partials).

Reductions over the leading axis (``reduce.axis0``): ``x.sum(axis=0)`` of a device array (vyre.array's
column-tiled kernels, vyre/array/_kernels/reduce_columns.py) for f32 8192 x 8192 and 2^26 x 4 (quick:
512 x 512, 2^16 x 4), device time of the kernels the array namespace runs for it (the same programs and
grid, on the array's buffer); baselines torch ``torch.sum(t, dim=0)`` and cupy ``cp.sum(c, axis=0)`` (CUDA
events), numpy ``np.sum(x, axis=0)``. Check: every column against a float64 numpy sum, within the
kernel's own bound (depth + 1) * 2^-24 * sum |x| (reduce.depth), and ``np.asarray(x.sum(axis=0))``
identical to the timed kernels' output.
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
    return len(sizes(ctx)) + len(axis0_shapes(ctx))


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


def axis0_shapes(ctx: Context) -> list[tuple[int, int]]:
    return [(512, 512), (1 << 16, 4)] if ctx.quick else [(8192, 8192), (1 << 26, 4)]


def _axis0_steps(x, host_shape: tuple[int, int]):
    """The steps ``x.sum(axis=0)`` runs (vyre/array/_kernels/reduce.py's column path), on x's buffer; returns
    (steps, output handle, partials handle or None, rounding depth)."""
    from vyre.array._kernels import reduce_columns as C
    from vyre.array._kernels.nodes import Leaf
    from vyre.array._kernels.reduction import Reduction

    leaf = Leaf(x)
    c = C.columns_for(leaf.shape, (0,))
    assert c is not None, f"{host_shape}: not the column path"
    red = Reduction("sum", "f32", np.dtype(np.float32))
    c = C.vec_columns(red, leaf, c)  # as vyre/array/_kernels/reduce.py picks it
    gpu = x.device
    out = gpu.allocate_resident(4 * c.lanes * c.cols)
    first = C.first_program(red, leaf, c)
    if c.blocks == 1:
        return [(first, [leaf.handle(), out], c.grid())], out, None, C.depth(c)
    part = gpu.allocate_resident(4 * c.lanes * c.blocks * c.cols)
    second, pc = C.partials_program(red, c)
    return ([(first, [leaf.handle(), part], c.grid()), (second, [part, out], pc.grid())], out, part, C.depth(c))


def measure_axis0(ctx: Context, rows: int, cols: int) -> dict:
    import vyre.array as xp

    label = f"2^{rows.bit_length() - 1}" if rows > 8192 else str(rows)
    name = f"sum(axis=0) f32 {label}x{cols}"
    nbytes = 4 * rows * cols
    params = {"op": "sum(axis=0)", "dtype": "f32", "rows": rows, "cols": cols, "n": rows * cols, "bytes": nbytes}
    too_big = over_binding_limit(ctx.gpu, nbytes)
    if too_big:
        return record(bench=NAME, name=name, metric="reduce.axis0", params=params, unit="GB/s",
                      vyre=Outcome.missing(too_big), work=nbytes, scale=1e9)
    host = ctx.rng.random((rows, cols), dtype=np.float32) - np.float32(0.5)
    gpu = ctx.gpu
    with xp.use(gpu):
        x = xp.asarray(host)
        steps, out, part, depth = _axis0_steps(x, (rows, cols))
        kernels = [st[0].name for st in steps]
        try:
            vy = Outcome(ctx.kernel(steps), label="vyre.array column-tiled kernels (x.sum(axis=0))")
            gpu.dispatch_resident_sequence(steps)
            got = gpu.download_resident(out).view(np.float32)
            via_api = np.asarray(x.sum(axis=0))
        finally:
            gpu.free_resident(out)
            if part is not None:
                gpu.free_resident(part)
        del x
    want = host.sum(axis=0, dtype=np.float64)
    bound = (depth + 1) * 2.0 ** -24 * np.abs(host).sum(axis=0, dtype=np.float64)
    err = np.abs(got.astype(np.float64) - want)
    check = {"ok": bool(np.all(err <= bound)) and bool(np.array_equal(got.view(np.uint32), via_api.view(np.uint32))),
             "against": "float64 numpy column sums, |err| <= (depth + 1) * 2^-24 * sum|x| per column; the array "
                        "API's result bit-identical", "depth": depth, "max_err_over_bound": float(np.max(err / bound)),
             "kernels": kernels}
    base: dict[str, Outcome] = {"numpy": ctx.numpy(lambda: np.sum(host, axis=0), method="np.sum(x, axis=0)")}

    def make_torch(torch):
        t = torch.from_numpy(host).cuda()
        return lambda: torch.sum(t, dim=0)

    def make_cupy(cp):
        c = cp.asarray(host)
        return lambda: cp.sum(c, axis=0)

    base["torch"] = ctx.torch(make_torch)
    base["cupy"] = ctx.cupy(make_cupy)
    ctx.release()
    return record(bench=NAME, name=name, metric="reduce.axis0", params=params, unit="GB/s", vyre=vy,
                  baselines=base, work=nbytes, scale=1e9, check=check)


def run(ctx: Context):
    for n in sizes(ctx):
        yield measure(ctx, n)
    for rows, cols in axis0_shapes(ctx):
        yield measure_axis0(ctx, rows, cols)
