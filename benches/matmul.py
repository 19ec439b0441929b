"""Matmul TFLOP/s: ``matmul`` (f32), ``matmul.f16`` and ``matmul.f16_fast`` (packed f16
multiply-adds, rows "matmul f16 packed N^3", vyre only) at n x n x n (2 n^3 flops per launch).

vyre: the op on resident buffers (only the kernel is timed, never the transfers), device
time per launch. Correctness first: a small product (256^3) is checked in full against the
op's numpy reference and tolerance, and at every benchmark size a few rows of C are checked.
Baselines: torch ``torch.matmul`` (f32 without TF32) and cupy ``cp.matmul`` (CUDA events);
numpy ``np.matmul`` (f32 up to 4096, f16 only at small sizes: numpy has no fast f16 matmul);
raw wgpu-py: a naive WGSL kernel (16x16 workgroups, one output per invocation, f32
accumulation), up to 4096 (8192 would take seconds per launch); Taichi on Vulkan (f32 only,
benches/_taichi.py): a naive kernel (up to 4096) and a tiled one with shared-memory tiles.
"""

from __future__ import annotations

import numpy as np

from . import _taichi
from ._harness import Context, Outcome, ResidentOp, over_binding_limit, record

NAME = "matmul"
CHECK_N = 256
RAW_MAX_N = 4096
NUMPY_MAX_N = {"f32": 4096, "f16": 512}
NP_DTYPE = {"f32": np.float32, "f16": np.float16, "f16_fast": np.float16}
OP_ID = {"f32": "matmul", "f16": "matmul.f16", "f16_fast": "matmul.f16_fast"}
LABEL = {"f32": "f32", "f16": "f16", "f16_fast": "f16 packed"}

RAW_MATMUL = """
{enable}
const M: u32 = {m}u;
const N: u32 = {n}u;
const K: u32 = {k}u;
@group(0) @binding(0) var<storage, read> a: array<{t}>;
@group(0) @binding(1) var<storage, read> b: array<{t}>;
@group(0) @binding(2) var<storage, read_write> c: array<{t}>;
@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {{
    let row = gid.y;
    let col = gid.x;
    if (row >= M || col >= N) {{ return; }}
    var acc = 0.0;
    for (var kk = 0u; kk < K; kk++) {{ acc += f32(a[row * K + kk]) * f32(b[kk * N + col]); }}
    c[row * N + col] = {t}(acc);
}}
"""


def sizes(ctx: Context) -> list[int]:
    return [256, 512] if ctx.quick else [1024, 2048, 4096, 8192]


def dtypes(ctx: Context) -> list[str]:
    return ["f32", "f16", "f16_fast"]


def plan(ctx: Context) -> int:
    return len(sizes(ctx)) * len(dtypes(ctx))


def _op_id(dtype: str) -> str:
    return OP_ID[dtype]


def _mats(ctx: Context, n: int, dtype: str):
    a = (ctx.rng.random((n, n), dtype=np.float32) * 2 - 1).astype(NP_DTYPE[dtype])
    b = (ctx.rng.random((n, n), dtype=np.float32) * 2 - 1).astype(NP_DTYPE[dtype])
    return a, b


def full_check(ctx: Context, dtype: str, n: int = CHECK_N) -> dict:
    """The whole product at a small size against the op's numpy reference and tolerance."""
    from vyre.ops.registry import compare, get

    a, b = _mats(ctx, n, dtype)
    params = {"m": n, "k": n, "n": n}
    op = ResidentOp(ctx.gpu, _op_id(dtype), params, [a, b])
    try:
        ctx.gpu.dispatch_resident_sequence(op.steps)
        got = op.output()
    finally:
        op.free()
    spec = get(_op_id(dtype))
    ok, err, desc = compare(got, spec.reference(a, b, **params)[0], spec.tolerance_of(params))
    return {"ok": bool(ok), "n": n, "error": err, "detail": desc, "tolerance": spec.tolerance_of(params).describe()}


def row_check(op: ResidentOp, a, b, dtype: str, n: int) -> dict:
    """A few rows of C (first, middle, last) against float64 products, with the op's tolerance."""
    rows = sorted({0, n // 2, n - 1})
    item = np.dtype(NP_DTYPE[dtype]).itemsize
    h = op.handles["c"]
    got = np.stack([op.gpu.download_resident_range(h, r * n * item, n * item).view(NP_DTYPE[dtype]) for r in rows])
    return rows_check(got, rows, a, b, dtype, n)


def rows_check(got: np.ndarray, rows: list[int], a, b, dtype: str, n: int) -> dict:
    """``got`` (rows ``rows`` of C) against float64 products, with the op's tolerance."""
    from vyre.ops.registry import compare, get

    want = (a[rows].astype(np.float64) @ b.astype(np.float64)).astype(NP_DTYPE[dtype])
    spec = get(_op_id(dtype))
    params = {"m": n, "k": n, "n": n}
    ok, err, desc = compare(got, want, spec.tolerance_of(params))
    return {"ok": bool(ok), "rows": rows, "error": err, "detail": desc}


def measure(ctx: Context, n: int, dtype: str, *, bench: str = NAME, metric: str | None = None,
            small: dict | None = None, baselines=("numpy", "torch", "cupy", "raw_wgpu", "taichi")) -> dict:
    metric = metric or f"matmul.{dtype}"
    name = f"matmul {LABEL[dtype]} {n}^3"
    params = {"op": _op_id(dtype), "dtype": dtype, "n": n, "m": n, "k": n, "flops": 2 * n ** 3}
    why = "adapter has no shader-f16" if dtype != "f32" and not ctx.gpu.supports_f16() else \
        over_binding_limit(ctx.gpu, n * n * np.dtype(NP_DTYPE[dtype]).itemsize)
    if why:
        return record(bench=bench, name=name, metric=metric, params=params, unit="TFLOP/s",
                      vyre=Outcome.missing(why), work=2 * n ** 3, scale=1e12)
    a, b = _mats(ctx, n, dtype)
    op = ResidentOp(ctx.gpu, _op_id(dtype), {"m": n, "k": n, "n": n}, [a, b])
    try:
        vy = Outcome(ctx.kernel(op.steps, max_k=200))
        rows = row_check(op, a, b, dtype, n)
    finally:
        op.free()
    check = {"ok": rows["ok"] and (small is None or small["ok"]), "rows": rows,
             "against": "numpy float64 products with the op's tolerance"}
    if small is not None:
        check["small"] = small
    base: dict[str, Outcome] = {}
    slow = n >= 2048
    if "numpy" in baselines:
        if n <= NUMPY_MAX_N[dtype]:
            c = np.empty((n, n), NP_DTYPE[dtype])
            base["numpy"] = ctx.numpy(lambda: np.matmul(a, b, out=c), reps=3 if slow else None, budget_s=4.0)
        else:
            base["numpy"] = Outcome.missing(f"skipped above {NUMPY_MAX_N[dtype]} (too slow for the run's budget)")
    if "torch" in baselines:
        def make_torch(torch):
            ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
            tc = torch.empty_like(ta)
            return lambda: torch.matmul(ta, tb, out=tc)
        base["torch"] = ctx.torch(make_torch, max_k=200)
        if base["torch"].timing is not None and dtype == "f32":
            base["torch"].label = "fp32, TF32 off"
    if "cupy" in baselines:
        def make_cupy(cp):
            ca, cb = cp.asarray(a), cp.asarray(b)
            cc = cp.empty_like(ca)
            return lambda: cp.matmul(ca, cb, out=cc)
        base["cupy"] = ctx.cupy(make_cupy, max_k=200)
    if "raw_wgpu" in baselines:
        raw = ctx.base.raw
        if n > RAW_MAX_N:
            base["raw_wgpu"] = Outcome.missing(f"naive kernel skipped above {RAW_MAX_N} (seconds per launch)")
        elif dtype == "f16" and not raw.f16:
            base["raw_wgpu"] = Outcome.missing("adapter has no shader-f16")
        else:
            t = {"f32": "f32", "f16": "f16"}[dtype]
            wgsl = RAW_MATMUL.format(enable="enable f16;" if dtype == "f16" else "", m=n, n=n, k=n, t=t)
            bufs = [raw.storage(a.nbytes, a), raw.storage(b.nbytes, b), raw.storage(a.nbytes)]
            pipe = raw.pipeline(wgsl)
            bg = raw.bind(pipe, bufs)
            g = -(-n // 16)
            tm = raw.kernel_timing([(pipe, bg, (g, g, 1))], reps=3 if slow else ctx.reps, target_s=ctx.target_s,
                                   max_k=200)
            base["raw_wgpu"] = Outcome(tm, label="naive: one output per invocation, 16x16 workgroups")
            for buf in bufs:
                buf.destroy()
    if "taichi" in baselines and dtype == "f32":
        picked = sorted({0, n // 2, n - 1})
        base.update(_taichi.matmul(ctx, a, b, naive_max_n=RAW_MAX_N, reps=3 if slow else ctx.reps,
                                   check=lambda c: rows_check(c[picked], picked, a, b, dtype, n)))
    ctx.release()
    return record(bench=bench, name=name, metric=metric, params=params, unit="TFLOP/s", vyre=vy, baselines=base,
                  work=2 * n ** 3, scale=1e12, check=check)


BASELINES = ("numpy", "torch", "cupy", "raw_wgpu", "taichi")


def run(ctx: Context):
    for dtype in dtypes(ctx):
        small = full_check(ctx, dtype) if (dtype == "f32" or ctx.gpu.supports_f16()) else None
        for n in sizes(ctx):
            # the packed kernel's baselines are the f16 rows' (same inputs, same work)
            yield measure(ctx, n, dtype, small=small, baselines=() if dtype == "f16_fast" else BASELINES)
