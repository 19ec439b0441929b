"""Batched complex FFT GFLOP/s: ``fft.fft`` on complex64 rows (5 n log2 n flops per row).

vyre: the op's pipeline on resident buffers (twiddle table, then one workgroup-memory pass for
n <= 2048 or the two four-step passes above), device time per launch; the result is checked in
full against numpy's float64 FFT with the op's tolerance. Baseline: torch ``torch.fft.fft``
(cuFFT) on the same data, CUDA events. Issue 15's target: 2^20 points x 16 at >= 0.5x torch.
Measured on the H200 (Vulkan, 2026-12-01), ``python -m benches --only fft`` with the register
passes at 16 points per invocation: 2^20 x 16 in 0.201 ms vs torch 0.183 ms (0.91x, target met);
2^10 x 16384 in 0.078 ms vs 0.069 ms (0.89x). The same timing at 32 points per invocation (the
default since): 0.189 ms vs 0.183 ms (0.97x) and 0.075 ms vs 0.069 ms (0.92x). Before (radix-4
workgroup-memory passes): 0.562 ms (0.33x) and 0.213 ms (0.32x).
"""

from __future__ import annotations

import math

import numpy as np

from ._harness import Context, Outcome, ResidentOp, over_binding_limit, record

NAME = "fft"


def sizes(ctx: Context) -> list[tuple[int, int]]:
    """(n, batch) pairs: the target size, and one single-pass size of the same volume."""
    return [(1 << 12, 4), (1000, 4)] if ctx.quick else [(1 << 20, 16), (1 << 10, 1 << 14)]


def plan(ctx: Context) -> int:
    return len(sizes(ctx))


def measure(ctx: Context, n: int, batch: int) -> dict:
    from vyre.ops.registry import compare, get

    label = f"2^{n.bit_length() - 1}" if n & (n - 1) == 0 else str(n)
    name = f"fft.fft complex64 n={label} x {batch}"
    flops = 5.0 * n * math.log2(n) * batch
    rparams = {"op": "fft.fft", "n": n, "batch": batch, "bytes": 8 * n * batch, "flops": flops}
    too_big = over_binding_limit(ctx.gpu, 8 * n * batch)
    if too_big:
        return record(bench=NAME, name=name, metric="fft.gflops", params=rparams, unit="GFLOP/s",
                      vyre=Outcome.missing(too_big), work=flops, scale=1e9)
    pairs = ctx.rng.uniform(-1.0, 1.0, (batch, n, 2)).astype(np.float32)
    params = {"n": n, "batch": batch}
    op = ResidentOp(ctx.gpu, "fft.fft", params, [pairs])
    try:
        vy = Outcome(ctx.kernel(op.steps), label=f"{len(op.steps)} dispatches per launch")
        got = op.output()
        spec = get("fft.fft")
        tol = spec.tolerance_of(params)
        ok, err, desc = compare(got, spec.reference(pairs, **params)[0], tol)
        check = {"ok": bool(ok), "against": "numpy.fft.fft in float64", "error": err, "detail": desc,
                 "tolerance": tol.describe()}
    finally:
        op.free()
    base: dict[str, Outcome] = {}

    def make_torch(torch):
        t = torch.from_numpy(pairs).cuda().view(torch.complex64).reshape(batch, n)
        return lambda: torch.fft.fft(t)
    base["torch"] = ctx.torch(make_torch)
    ctx.release()
    return record(bench=NAME, name=name, metric="fft.gflops", params=rparams, unit="GFLOP/s",
                  vyre=vy, baselines=base, work=flops, scale=1e9, check=check)


def run(ctx: Context):
    for n, batch in sizes(ctx):
        yield measure(ctx, n, batch)
